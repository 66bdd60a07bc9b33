"""Pod lifecycle on one node: the kubelet's pod workers.

For each pod bound to the node: Pending (containers ContainerCreating) → DRA prepare
(a Warning event `FailedPrepareDynamicResources` and a retry with backoff on failure) →
pod IP → init containers one by one → containers → Running → Succeeded/Failed by exit
codes and restart policy. Deletion kills the containers within the grace period,
unprepares the pod's claims (the pod stays Terminating until that succeeds), posts the
final status and removes the pod object, as a kubelet does.
"""

from __future__ import annotations

import asyncio
import ipaddress
import time
from pathlib import Path
from typing import Any

from draemu.api.types import Obj
from draemu.client import ApiError, Client, EventRecorder, Informer, WorkQueue, key_of
from draemu.client.workqueue import ShutDown
from draemu.kubelet.cdi import CDIError, CDIRegistry, ContainerEdits
from draemu.kubelet.dra.manager import DRAError, DRAManager
from draemu.kubelet.dra.plugins import DRAPluginManager
from draemu.kubelet.envvars import EnvBuilder, EnvError, expand
from draemu.kubelet.execsession import ExecError, ExecSession
from draemu.kubelet.logs import container_log_path
from draemu.kubelet.podfiles import (
    CLUSTER_DOMAIN,
    pod_file_mounts,
    remove_pod_files,
    write_pod_files,
)
from draemu.kubelet.podfiles import hostname as pod_hostname
from draemu.kubelet.podstatus import (
    ContainerRecord,
    PodState,
    build_status,
    terminated_state,
)
from draemu.kubelet.probes import ContainerProber, ProbeRunner
from draemu.kubelet.runtime.base import (
    Container,
    ContainerConfig,
    NetworkNotReady,
    Runtime,
    RuntimeError_,
)
from draemu.kubelet.runtime.process import container_env
from draemu.kubelet.security import (
    container_security,
    host_port_conflicts,
    unenforced_settings,
)
from draemu.kubelet.volumes import VolumeError, VolumeManager, container_mounts
from draemu.log import get_logger
from draemu.netns import dial as netns_dial

log = get_logger("kubelet.pods")

BACKOFF_START, BACKOFF_MAX = 10.0, 300.0  # CrashLoopBackOff, as upstream


class Retry(Exception):
    """The pod's sync could not finish; requeue with backoff."""


class PodWorkers:
    def __init__(self, client: Client, node_name: str, host_ip: str, pod_cidr: str | None,
                 pods_dir: Path, dra: DRAManager, plugins: DRAPluginManager,
                 cdi: CDIRegistry, runtime: Runtime, events: EventRecorder, *,
                 health_enabled: bool = False, health_messages: bool = False,
                 workers: int = 4, crash_backoff: float = BACKOFF_START,
                 volumes: VolumeManager | None = None,
                 cluster_dns: list[str] | None = None,
                 cluster_domain: str = CLUSTER_DOMAIN) -> None:
        self.client = client
        self.node_name = node_name
        self.host_ip = host_ip
        self.pods_dir = pods_dir
        self.dra = dra
        self.plugins = plugins
        self.cdi = cdi
        self.runtime = runtime
        self.events = events
        self.health_enabled = health_enabled
        self.health_messages = health_messages
        self.crash_backoff = crash_backoff
        self.env = EnvBuilder(client)
        # The kubelet's --cluster-dns and --cluster-domain (pods' resolv.conf).
        self.cluster_dns = list(cluster_dns or [])
        self.cluster_domain = cluster_domain
        # Set for runtimes that mount a pod's volumes (the process runtime).
        self.volumes = volumes
        self.states: dict[str, PodState] = {}
        self.queue = WorkQueue(base_delay=0.2, max_delay=30.0)
        self.informer = Informer(client, "v1", "pods",
                                 field_selector=f"spec.nodeName={node_name}")
        self.informer.add_handler(on_add=self._enqueue,
                                  on_update=lambda _o, n: self._enqueue(n),
                                  on_delete=self._enqueue)
        # Pod IPs the kubelet picks itself, when the runtime has no pod network.
        self._free_ips = [str(ip) for ip in list(ipaddress.ip_network(
            pod_cidr, strict=False).hosts())[1:]] if pod_cidr else []
        self._owns_ips = bool(pod_cidr)
        self._workers = workers
        self._tasks: list[asyncio.Task[None]] = []

    def _enqueue(self, pod: Obj) -> None:
        self.queue.add(key_of(pod))

    async def start(self) -> None:
        await self.informer.start()
        await self.informer.wait_synced()
        await self._release_orphans()
        self._tasks = [asyncio.create_task(self._worker(), name=f"podworker-{i}")
                       for i in range(self._workers)]

    async def stop(self) -> None:
        self.queue.shutdown()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.informer.stop()
        if self.runtime.name != "process":
            return  # fake containers "keep running" and are adopted by the next kubelet
        for state in self.states.values():
            for rec in state.containers.values():
                if rec.prober is not None:
                    rec.prober.stop()
                if rec.handle is not None and not rec.handle.exit_code.done():
                    await self.runtime.kill(rec.handle, 1.0)
            await self.runtime.remove_pod(state.uid)
        if self.volumes is not None:
            self.volumes.close()

    def retry_pending(self) -> None:
        """A driver (re)registered: pods waiting to be prepared try again now, not after
        their backoff."""
        for key, state in self.states.items():
            if state.stage == "pending":
                self.queue.forget(key)
                self.queue.add(key)

    async def health_changed(self, _driver: str) -> None:
        for key in self.states:
            self.queue.add(key)

    async def _release_orphans(self) -> None:
        """Claims cached for pods that no longer exist (deleted while we were down)."""
        live = {p["metadata"]["uid"] for p in self.informer.list()}
        for uid in self.dra.cache.pod_uids() - live:
            try:
                await self.dra.unprepare_resources(uid)
            except DRAError as err:
                log.warning("releasing claims of a gone pod failed", pod_uid=uid,
                            error=str(err))

    async def _worker(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except ShutDown:
                return
            try:
                await self.sync(key)
                self.queue.forget(key)
            except Retry:
                self.queue.add_rate_limited(key)
            except asyncio.CancelledError:
                raise
            except Exception as err:  # one pod's failure must not stop others
                log.error("pod sync failed", pod=key, error=repr(err))
                self.queue.add_rate_limited(key)
            finally:
                self.queue.done(key)

    # ---- the sync

    async def sync(self, key: str) -> None:
        pod = self.informer.get(key)
        state = self.states.get(key)
        if state is not None and (pod is None or pod["metadata"]["uid"] != state.uid):
            await self._kill_all(state, 0)
            try:
                await self._unprepare(state.uid, None)
            except Retry:
                if pod is None:
                    raise
                # A new pod of the same name (the old one force-deleted): as the kubelet's
                # pod workers go by UID, it does not wait for the old one's teardown; the
                # old claims are released as an orphan's (`_release_orphans`), and until
                # then the new pod's claim of the same name cannot be prepared.
                log.warning("releasing claims of a replaced pod failed", pod=key,
                            pod_uid=state.uid)
            await self._forget(key, state)
            state = None
        if pod is None:
            return
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            await self._terminate(key, pod, state)
            return
        if state is None:
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                await self._unprepare(meta["uid"], pod)
                return
            state = self._new_state(pod)
            self.states[key] = state
        try:
            await self._advance(key, pod, state)
        finally:
            await self._post_status(pod, state)

    def _new_state(self, pod: Obj) -> PodState:
        meta, spec = pod["metadata"], pod.get("spec") or {}
        state = PodState(meta["uid"], meta["namespace"], meta["name"])
        for c in spec.get("initContainers") or []:
            state.containers[c["name"]] = ContainerRecord(c["name"], c.get("image", ""), True,
                                                          waiting_reason="PodInitializing")
        for c in spec.get("containers") or []:
            reason = "PodInitializing" if spec.get("initContainers") else "ContainerCreating"
            state.containers[c["name"]] = ContainerRecord(c["name"], c.get("image", ""), False,
                                                          waiting_reason=reason)
        if spec.get("initContainers"):
            state.containers[spec["initContainers"][0]["name"]].waiting_reason = \
                "PodInitializing"
        self._adopt(pod, state)
        return state

    def _adopt(self, pod: Obj, state: PodState) -> None:
        """After a kubelet restart, running fake containers are still "running"."""
        status = pod.get("status") or {}
        if self.runtime.name != "fake" or status.get("phase") != "Running":
            return
        statuses = status.get("containerStatuses") or []
        if len(statuses) != len((pod.get("spec") or {}).get("containers") or []) or \
                not all("running" in (s.get("state") or {}) for s in statuses):
            return
        for s in statuses:
            rec = state.containers.get(s["name"])
            if rec is None:
                return
            rec.handle = Container(id=s.get("containerID", "").removeprefix("draemu://"),
                                   started_at=s["state"]["running"].get("startedAt", ""))
            rec.restart_count = s.get("restartCount", 0)
        for s in status.get("initContainerStatuses") or []:
            rec = state.containers.get(s["name"])
            if rec is not None and "terminated" in (s.get("state") or {}):
                rec.final = s["state"]["terminated"]
        state.stage = "running"
        state.prepared = True
        state.init_index = len([r for r in state.containers.values() if r.init])
        state.start_time = status.get("startTime", state.start_time)
        state.ip = status.get("podIP")
        if state.ip in self._free_ips:
            self._free_ips.remove(state.ip)

    async def _advance(self, key: str, pod: Obj, state: PodState) -> None:
        spec = pod.get("spec") or {}
        if state.stage == "pending":
            try:
                await self.dra.prepare_resources(pod)
            except DRAError as err:
                await self.events.event(pod, "Warning", "FailedPrepareDynamicResources",
                                        f"Failed to prepare dynamic resources: {err}")
                await self._release_orphans()  # what may stand in the way, such as a
                raise Retry from err  # force-deleted pod's claim of the same name
            state.prepared = True
            await self._sandbox(pod, state)
            if self.volumes is not None and state.volumes is None:
                try:
                    state.volumes = await self.volumes.setup(pod, self.host_ip, state.ip)
                except (VolumeError, OSError) as err:
                    await self.events.event(pod, "Warning", "FailedMount", str(err))
                    raise Retry from err
                state.pod_files = write_pod_files(self.pods_dir / state.uid, pod,
                                                  [state.ip] if state.ip else [],
                                                  self.node_name, self.cluster_dns,
                                                  self.cluster_domain)
            state.stage = "init"
        if state.stage == "init":
            inits = spec.get("initContainers") or []
            while state.init_index < len(inits):
                c = inits[state.init_index]
                rec = state.containers[c["name"]]
                if rec.handle is None:
                    await self._start(key, pod, c, rec)
                if not rec.handle.exit_code.done():  # type: ignore[union-attr]
                    return
                if await self._exited(key, pod, rec):
                    return
                if rec.final is not None and rec.final["exitCode"] != 0:
                    state.stage = "finished"
                    break
                state.init_index += 1
            else:
                state.stage = "running"
        if state.stage == "running":
            regular = [state.containers[c["name"]] for c in spec.get("containers") or []]
            for c, rec in zip(spec.get("containers") or [], regular, strict=True):
                if rec.final is None and rec.handle is None:
                    if rec.next_start > time.monotonic():
                        self.queue.add_after(key, rec.next_start - time.monotonic())
                        continue
                    await self._start(key, pod, c, rec)
            for rec in regular:
                if rec.handle is not None and rec.handle.exit_code.done() and rec.final is None:
                    await self._exited(key, pod, rec)
            if regular and all(r.final is not None for r in regular):
                state.stage = "finished"
        if state.stage == "finished" and state.prepared:
            await self._unprepare(state.uid, pod)
            state.prepared = False

    async def _sandbox(self, pod: Obj, state: PodState) -> None:
        """The pod's sandbox and IP: the runtime's on its pod network, else one of ours."""
        host_network = bool((pod.get("spec") or {}).get("hostNetwork"))
        try:
            ip = await self.runtime.run_pod_sandbox(state.uid, host_network)
        except NetworkNotReady as err:
            await self.events.event(pod, "Warning", "NetworkNotReady", str(err))
            raise Retry from err
        except RuntimeError_ as err:
            await self.events.event(pod, "Warning", "FailedCreatePodSandBox",
                                    f"Failed to create pod sandbox: {err}")
            raise Retry from err
        if ip is not None:
            state.ip = ip
        elif host_network:
            state.ip = self.host_ip
        elif not state.ip and self._free_ips:
            state.ip = self._free_ips.pop(0)

    def _node_files(self, state: PodState, container: Obj, edits: ContainerEdits
                    ) -> tuple[list[Obj], list[Obj], Obj | None, list[Obj]]:
        """What the container mounts of its node (for runtimes that mount volumes): its
        volumes, the pod's /etc files and CDI mounts; its CDI device nodes; the node's
        own /sys when it has one; the CDI hooks, programs of the node."""
        if self.volumes is None or state.volumes is None:
            return [], [], None, []
        mounts = [m.spec() for m in [
            *container_mounts(container, state.volumes),
            *pod_file_mounts(state.pod_files or {}, container),
            *self.volumes.cdi_mounts(edits.mounts)]]
        privileged = bool((container.get("securityContext") or {}).get("privileged"))
        return (mounts, self.volumes.cdi_devices(edits.device_nodes),
                self.volumes.sysfs(privileged), self.volumes.cdi_hooks(edits.hooks))

    async def _start(self, key: str, pod: Obj, container: Obj, rec: ContainerRecord) -> None:
        meta = pod["metadata"]
        state = self.states[key]
        try:
            cdi_ids = self.dra.container_cdi_ids(pod, container)
            edits = self.cdi.resolve(cdi_ids)
            env = await self.env.build(pod, container, self.host_ip, state.ip)
            env.update(edits.env_map())
            spec = pod.get("spec") or {}
            mounts, devices, sysfs, hooks = self._node_files(state, container, edits)
            if self.volumes is not None and spec.get("hostNetwork"):
                host_netns = getattr(self.runtime, "host_netns", None)
                taken = await asyncio.to_thread(host_port_conflicts, container, host_netns)
                if taken:
                    where = f"on node {self.node_name}" if host_netns else \
                        "on this machine (hostNetwork pods of every emulated node share its " \
                        "ports)"
                    raise RuntimeError_(f"host port(s) {', '.join(taken)} of container "
                                        f"{container['name']} already in use {where}")
            pod_sc, sc = spec.get("securityContext") or {}, container.get("securityContext") or {}
            security = container_security(pod, container)
            if self.volumes is not None and sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")) \
                    and not security.run_as_user:
                # The process runtime's images run as root unless runAsUser says otherwise.
                raise EnvError(f'container has runAsNonRoot and image will run as root (pod: '
                               f'"{meta["name"]}_{meta["namespace"]}({meta["uid"]})", '
                               f'container: {container["name"]})')
            config = ContainerConfig(
                pod_namespace=meta["namespace"], pod_name=meta["name"], name=container["name"],
                image=container.get("image", ""),
                command=[expand(c, env) for c in container.get("command") or []],
                args=[expand(a, env) for a in container.get("args") or []], env=env,
                working_dir=container.get("workingDir"), cdi_devices=cdi_ids, edits=edits,
                log_path=container_log_path(self.pods_dir, meta["namespace"], meta["name"],
                                            meta["uid"], container["name"], rec.restart_count),
                restart_count=rec.restart_count,
                annotations=dict(meta.get("annotations") or {}),
                pod_uid=meta["uid"], host_network=bool(spec.get("hostNetwork")), mounts=mounts,
                devices=devices, sysfs=sysfs, hooks=hooks,
                security=security, hostname=pod_hostname(pod, self.node_name),
                host_ports=[(p.get("hostIP") or "0.0.0.0", int(p["hostPort"]),
                             int(p["containerPort"])) for p in container.get("ports") or []
                            if p.get("hostPort") and (p.get("protocol") or "TCP") == "TCP"])
            handle = await self.runtime.start(config, init=rec.init)
        except (CDIError, EnvError, RuntimeError_, VolumeError) as err:
            rec.waiting_reason = "CreateContainerError" if not isinstance(err, EnvError) \
                else "CreateContainerConfigError"
            rec.waiting_message = str(err)
            await self.events.event(pod, "Warning", "Failed", f"Error: {err}",
                                    field_path=f"spec.containers{{{container['name']}}}")
            raise Retry from err
        rec.handle = handle
        rec.waiting_reason, rec.waiting_message = "", ""
        handle.exit_code.add_done_callback(lambda _f: self.queue.add(key))
        field_path = ("spec.initContainers" if rec.init else "spec.containers") + \
            f"{{{container['name']}}}"
        image = container.get("image", "")
        await self.events.event(pod, "Normal", "Pulled",
                                f'Container image "{image}" already present on machine',
                                field_path=field_path)
        await self.events.event(pod, "Normal", "Created",
                                f"Created container: {container['name']}", field_path=field_path)
        await self.events.event(pod, "Normal", "Started",
                                f"Started container {container['name']}", field_path=field_path)
        for note in handle.notes:
            await self.events.event(pod, "Warning", "ImageNotMapped", note, field_path=field_path)
        if self.volumes is not None and handle.pid is not None:
            missing = unenforced_settings(pod, container)
            if missing:
                await self.events.event(pod, "Warning", "SecurityContextNotEnforced",
                                        missing, field_path=field_path)
            if not rec.init:
                self._start_probes(key, pod, container, rec, field_path)

    def _start_probes(self, key: str, pod: Obj, container: Obj, rec: ContainerRecord,
                      field_path: str) -> None:
        if not any(k in container for k in ("startupProbe", "livenessProbe",
                                            "readinessProbe")):
            return
        handle = rec.handle
        assert handle is not None
        runtime: Any = self.runtime
        netns = runtime.host_netns if (pod.get("spec") or {}).get("hostNetwork") else \
            runtime.netns(pod["metadata"]["uid"])

        async def dial(host: str, port: int, timeout: float) -> Any:
            return await netns_dial(netns, host, port, timeout)

        async def run(argv: list[str], timeout: float) -> tuple[int, bytes]:
            return await runtime.exec(handle, argv, timeout)

        async def event(reason: str, message: str) -> None:
            await self.events.event(pod, "Warning", reason, message, field_path=field_path)

        async def failed(message: str) -> None:
            await self.events.event(pod, "Normal", "Killing", message, field_path=field_path)
            grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
            await self.runtime.kill(handle, grace)

        prober = ContainerProber(container, ProbeRunner(container, dial, run),
                                 lambda: self.queue.add(key), event, failed)
        rec.prober = prober
        handle.exit_code.add_done_callback(lambda _f: prober.stop())
        prober.start()

    async def _exited(self, key: str, pod: Obj, rec: ContainerRecord) -> bool:
        """Record a container's exit; True when it will be restarted later."""
        assert rec.handle is not None
        terminated = terminated_state(rec.handle)
        policy = (pod.get("spec") or {}).get("restartPolicy", "Always")
        if rec.init and policy == "Always":
            policy = "OnFailure"  # init containers are re-run only when they fail
        code = terminated["exitCode"]
        if policy == "Always" or (policy == "OnFailure" and code != 0):
            delay = min(self.crash_backoff * 2 ** rec.restart_count, BACKOFF_MAX)
            rec.last_terminated = terminated
            rec.restart_count += 1
            rec.handle = None
            rec.waiting_reason = "CrashLoopBackOff"
            rec.waiting_message = (f"back-off {int(delay)}s restarting failed container="
                                   f"{rec.name} pod={pod['metadata']['name']}_"
                                   f"{pod['metadata']['namespace']}({pod['metadata']['uid']})")
            rec.next_start = time.monotonic() + delay
            self.queue.add_after(key, delay)
            return True
        rec.final = terminated
        return False

    async def _terminate(self, key: str, pod: Obj, state: PodState | None) -> None:
        meta = pod["metadata"]
        grace = meta.get("deletionGracePeriodSeconds")
        if state is not None:
            await self._kill_all(state, 30 if grace is None else grace, pod)
            state.stage = "finished"
        await self._unprepare(meta["uid"], pod)
        if state is not None:
            state.prepared = False
            await self._post_status(pod, state)
        try:
            await self.client.delete("v1", "pods", meta["name"], meta["namespace"],
                                     grace_period_seconds=0,
                                     preconditions={"uid": meta["uid"]})
        except ApiError as err:
            if err.code not in (404, 409):
                raise
        if state is not None:
            await self._forget(key, state)

    async def _kill_all(self, state: PodState, grace: float, pod: Obj | None = None) -> None:
        running = [r for r in state.containers.values()
                   if r.handle is not None and not r.handle.exit_code.done()]
        for rec in running:
            if pod is not None:
                await self.events.event(pod, "Normal", "Killing",
                                        f"Stopping container {rec.name}",
                                        field_path=f"spec.containers{{{rec.name}}}")
        await asyncio.gather(*(self.runtime.kill(r.handle, grace) for r in running
                               if r.handle is not None))
        for rec in state.containers.values():
            if rec.handle is not None and rec.handle.exit_code.done() and rec.final is None:
                rec.final = terminated_state(rec.handle)

    async def _unprepare(self, pod_uid: str, pod: Obj | None) -> None:
        if not self.dra.cache.for_pod(pod_uid):
            return
        try:
            await self.dra.unprepare_resources(pod_uid)
        except DRAError as err:
            if pod is not None:
                await self.events.event(pod, "Warning", "FailedUnprepareDynamicResources",
                                        f"Failed to unprepare dynamic resources: {err}")
            raise Retry from err

    async def _forget(self, key: str, state: PodState) -> None:
        self.states.pop(key, None)
        await self.runtime.remove_pod(state.uid)
        if self.volumes is not None:
            self.volumes.teardown(state.uid)
            remove_pod_files(self.pods_dir / state.uid)
        if state.ip and state.ip != self.host_ip and self._owns_ips:
            self._free_ips.append(state.ip)
        self.events.forget(state.uid)

    # ---- status

    def _health(self, pod: Obj) -> dict[str, list[Obj]]:
        if not self.health_enabled:
            return {}
        out: dict[str, list[Obj]] = {}
        for container in (pod.get("spec") or {}).get("containers") or []:
            entries: dict[str, list[Obj]] = {}
            for entry, driver, device in self.dra.container_devices(pod, container):
                resource_id = device.cdi_device_ids[0] if device.cdi_device_ids else \
                    f"{driver}/{device.pool_name}/{device.device_name}"
                known = self.plugins.device_health(driver, device.pool_name,
                                                   device.device_name)
                item: Obj = {"resourceID": resource_id,
                             "health": known.health if known else "Unknown"}
                if self.health_messages and known and known.message:
                    item["message"] = known.message
                resources = entries.setdefault(entry, [])
                if all(r["resourceID"] != resource_id for r in resources):
                    resources.append(item)
            statuses = [{"name": name, "resources": res} for name, res in entries.items() if res]
            if statuses:
                out[container["name"]] = statuses
        return out

    async def _post_status(self, pod: Obj, state: PodState) -> None:
        status = build_status(pod, state, self.host_ip, self._health(pod))
        if status == state.last_posted:
            return
        meta = pod["metadata"]
        try:
            await self.client.patch("v1", "pods", meta["name"], {"status": status},
                                    namespace=meta["namespace"], subresource="status")
            state.last_posted = status
        except ApiError as err:
            if err.code != 404:
                raise

    # ---- for pods/exec

    async def exec(self, namespace: str, name: str, container: str, argv: list[str],
                   stdin: bool, tty: bool) -> ExecSession | None:
        """`argv` in the container; with no argv, only whether that is possible."""
        state = self.states.get(f"{namespace}/{name}")
        rec = state.containers.get(container) if state else None
        handle = rec.handle if rec is not None else None
        if handle is None or handle.exit_code.done():
            raise ExecError(f'container not found ("{container}")')
        if handle.pid is None and self.runtime.name == "fake":
            raise ExecError(f'container "{container}" of pod "{name}" does not execute: this '
                            "node runs the fake runtime (draemu up --runtime process runs "
                            "containers as local processes, which exec reaches)")
        if handle.pid is None:
            raise ExecError(f'container "{container}" of pod "{name}" does not execute '
                            "(its image is not in --image-map, so it runs as on the fake "
                            "runtime): nothing to exec into")
        if not argv:
            return None
        try:
            command = self.runtime.exec_argv(handle, argv)
        except RuntimeError_ as err:
            raise ExecError(f'container not found ("{container}")') from err
        return await ExecSession.start(command, handle.env or container_env(handle.pid),
                                       stdin, tty)

    # ---- for pods/portforward

    def pod_netns(self, namespace: str, name: str) -> str | None:
        """The network namespace a running pod's ports are in (None: this process's);
        OSError when the pod runs nothing there."""
        state = self.states.get(f"{namespace}/{name}")
        pod = self.informer.get(f"{namespace}/{name}")
        if state is None or pod is None or not any(
                r.handle is not None and r.handle.pid is not None
                and not r.handle.exit_code.done() for r in state.containers.values()):
            raise OSError(f'pod "{name}" has no running container to forward a port to')
        runtime: Any = self.runtime
        if (pod.get("spec") or {}).get("hostNetwork"):
            return runtime.host_netns
        netns = runtime.netns(state.uid)
        if netns is None:
            raise OSError(f'pod "{name}" has no network namespace')
        return netns

    # ---- for pods/log

    def log_instance(self, namespace: str, name: str, container: str, previous: bool
                     ) -> int | None:
        """Which instance (restart count) of a container `pods/log` reads, as the kubelet
        picks it from the container's status: the running or finished one, else the last
        terminated one; with `previous`, the last terminated one. -1: none; None: the
        container is not known here."""
        state = self.states.get(f"{namespace}/{name}")
        rec = state.containers.get(container) if state else None
        if rec is None:
            return None
        if previous:
            return rec.restart_count - 1 if rec.last_terminated else -1
        if rec.handle is not None or rec.final is not None:
            return rec.restart_count
        return rec.restart_count - 1 if rec.last_terminated else -1

    def container_running(self, namespace: str, name: str, container: str) -> bool:
        state = self.states.get(f"{namespace}/{name}")
        rec = state.containers.get(container) if state else None
        return bool(rec and rec.handle is not None and not rec.handle.exit_code.done())
