"""The `process` runtime: containers are local processes, confined the way a container
runtime confines them, without images.

- An image map (kubelet/runtime/imagemap.py) says which local executable or folder
  stands for an image. A container whose image is not mapped behaves as on the fake
  runtime (nothing executes) and the pod's events say so. With no image map at all,
  every container runs its command in a root made of this machine's system folders
  (kubelet/runtime/podroot.py says what each image's root is made of).
- Each pod runs in a user namespace of its own (kubelet/runtime/userns.py: its root is
  an unprivileged user of this machine); each container in its own mount, PID, IPC and
  UTS namespaces, pivoted into its own root with the pod's volumes and nothing else of
  this machine, with the user, groups and capabilities of its securityContext
  (kubelet/security.py, kubelet/runtime/launch.py). Each pod not on the host network has
  its own network namespace (kubelet/runtime/netns.py): on the pod network (a node's
  `NodeNetwork`, draemu/podnetwork.py) attached to its node with an address of the
  node's podCIDR, else with the apiserver forwarded in. On the pod network hostNetwork
  pods share their node's namespace and its user namespace (root of the node, not of
  this machine: a privileged one, kube-proxy, may change the node's network).
  Namespaces need root; where the machine cannot make user namespaces (or ID-mapped
  mounts on the node's file system) the runtime refuses to start unless told to run
  pods unconfined (`--runtime-unconfined`: without a user namespace, as this machine's
  root), and never falls back by itself.
- stdout and stderr become the container log (CRI format); the exit code, or 128 plus
  the signal, the container's state. Stopping: SIGTERM to the container's process
  group (its init passes it to the command), SIGKILL after the grace period; the
  container's PID namespace ends with its command.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from draemu.kubelet.runtime import podroot
from draemu.kubelet.runtime.base import (
    Container,
    ContainerConfig,
    ContainerSecurity,
    CRILogWriter,
    NetworkNotReady,
    RuntimeError_,
)
from draemu.kubelet.runtime.fake import FakeRuntime
from draemu.kubelet.runtime.imagemap import ImageMap, ImageMapError
from draemu.kubelet.runtime.netns import Sandbox, launcher_argv
from draemu.kubelet.runtime.userns import IdRanges, NoFreeRange
from draemu.log import get_logger

if TYPE_CHECKING:
    from draemu.podnetwork import NodeNetwork

log = get_logger("kubelet.runtime")
BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
LAUNCH_ERROR = "draemu-launch: "
UNCONFINED_EXIT = 3  # launch.py check: namespaces, but no user namespaces or ID maps


class NamespacesUnavailable(RuntimeError):
    """The machine cannot give the process runtime its namespaces."""


def _existing(folder: Path) -> Path:
    folder = folder.absolute()
    while not folder.exists():
        folder = folder.parent
    return folder


def preflight(node_folder: Path | None = None, unconfined: bool = False) -> None:
    """What the runtime needs, checked once at start-up: root and namespaces, and, unless
    `unconfined`, user namespaces and ID-mapped mounts on the file system of
    `node_folder` (where the node's volumes are)."""
    folder = _existing(node_folder or Path.cwd())
    spec = json.dumps({"mode": "check", "idmap": str(folder)}).encode()
    result = subprocess.run([*launcher_argv()], input=spec, capture_output=True, timeout=30,
                            check=False)
    detail = result.stderr.decode(errors="replace").strip().replace(LAUNCH_ERROR, "")
    if result.returncode == UNCONFINED_EXIT:
        if unconfined:
            log.warning("pods run unconfined: without a user namespace, as this machine's "
                        "root", reason=detail)
            return
        raise NamespacesUnavailable(
            f"--runtime process cannot start: this machine cannot give pods a user namespace "
            f"of their own ({detail}); --runtime-unconfined runs them without one, as this "
            "machine's root (anyone who may create pods then controls this machine)")
    if result.returncode != 0:
        raise NamespacesUnavailable(
            f"--runtime process cannot start: {detail or 'namespace check failed'}")


def user_spec(security: ContainerSecurity) -> dict[str, Any]:
    """The container's identity as the launcher takes it (confine/identity.py)."""
    return {"uid": security.run_as_user or 0, "gid": security.run_as_group or 0,
            "groups": security.groups, "caps": security.capabilities,
            "noNewPrivs": security.no_new_privs}




def service_env(api_server: tuple[str, int] | None) -> dict[str, str]:
    """The `kubernetes` Service's variables, as the kubelet gives every container."""
    if api_server is None:
        return {}
    host, port = api_server
    url = f"tcp://{host}:{port}"
    return {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": str(port),
            "KUBERNETES_SERVICE_PORT_HTTPS": str(port), "KUBERNETES_PORT": url,
            f"KUBERNETES_PORT_{port}_TCP": url, f"KUBERNETES_PORT_{port}_TCP_PROTO": "tcp",
            f"KUBERNETES_PORT_{port}_TCP_PORT": str(port),
            f"KUBERNETES_PORT_{port}_TCP_ADDR": host}


class ProcessRuntime:
    name = "process"

    def __init__(self, image_map: ImageMap | None = None,
                 api_server: tuple[str, int] | None = None, check: bool = True,
                 unconfined: bool = False, node_folder: Path | None = None,
                 network: NodeNetwork | None = None) -> None:
        if check:
            preflight(node_folder, unconfined)
        self.image_map = image_map if image_map is not None else ImageMap()
        self.api_server = api_server
        self.unconfined = unconfined
        self.network = network
        self._ranges = IdRanges()
        self._fake = FakeRuntime()
        self._procs: dict[str, asyncio.subprocess.Process] = {}
        self._faked: set[str] = set()
        self._exec_specs: dict[str, dict[str, Any]] = {}
        self._sandboxes: dict[str, Sandbox] = {}
        self._sandbox_locks: dict[str, asyncio.Lock] = {}

    # ---- the pod's sandbox

    async def sandbox(self, pod_uid: str) -> Sandbox:
        lock = self._sandbox_locks.setdefault(pod_uid, asyncio.Lock())
        async with lock:
            box = self._sandboxes.get(pod_uid)
            if box is None or box.proc is None or box.proc.returncode is not None:
                box = Sandbox(pod_uid, self.network)
                # Without kube-proxy on the pod network, the apiserver is forwarded in.
                forward = self.api_server if self.network is None or \
                    not self.network.networks.services else None
                try:
                    await box.start(forward)
                except OSError as err:
                    await box.stop()
                    raise RuntimeError_(str(err)) from err
                self._sandboxes[pod_uid] = box
            return box

    async def run_pod_sandbox(self, pod_uid: str, host_network: bool) -> str | None:
        """The pod's sandbox, made before its containers (CRI's RunPodSandbox): its IP
        on the pod network; None without one (the kubelet then picks one)."""
        if self.network is None:
            return None
        if host_network:
            return self.network.ip
        if not self.network.ready:
            raise NetworkNotReady()
        return (await self.sandbox(pod_uid)).ip

    @property
    def host_netns(self) -> str | None:
        """Where hostNetwork pods run: their node's namespace (None: this machine's)."""
        return self.network.netns if self.network is not None else None

    def netns(self, pod_uid: str) -> str | None:
        box = self._sandboxes.get(pod_uid)
        return box.netns if box is not None and box.proc is not None else None

    async def remove_pod(self, pod_uid: str) -> None:
        box = self._sandboxes.pop(pod_uid, None)
        self._sandbox_locks.pop(pod_uid, None)
        if box is not None:
            await box.stop()
        self._ranges.release(pod_uid)

    async def close(self) -> None:
        for uid in list(self._sandboxes):
            await self.remove_pod(uid)
        self._ranges.close()

    # ---- containers

    def _plan(self, config: ContainerConfig
              ) -> tuple[list[str], list[str], str | None, dict[str, Any] | None] | None:
        """(argv, PATH folders, the image's root folder, the image's executable as a
        mount) for the container, or None when its image is not mapped."""
        mapped = self.image_map.lookup(config.image)
        if mapped is None:
            if self.image_map:
                return None
            if not config.command:
                raise RuntimeError_(f"container {config.name}: without an image map the "
                                    "process runtime needs an explicit command")
            return [*config.command, *config.args], [], None, None
        try:
            argv = [*mapped.resolve(config.command), *config.args]
        except ImageMapError as err:
            raise RuntimeError_(str(err)) from err
        if mapped.is_folder:
            return argv, [], str(mapped.path), None
        return argv, mapped.path_dirs(), None, podroot.executable_mount(str(mapped.path))

    async def start(self, config: ContainerConfig, init: bool = False) -> Container:
        plan = self._plan(config)
        if plan is None:
            container = await self._fake.start(config, init)
            self._faked.add(container.id)
            container.notes.append(
                f'image "{config.image}" is not in the image map (--image-map): container '
                f"{config.name} does not execute and behaves as on the fake runtime")
            return container
        argv, path_dirs, image_folder, executable = plan
        netns = self.host_netns
        if not config.host_network:
            box = await self.sandbox(config.pod_uid)
            netns = box.netns
            for host_ip, host_port, container_port in config.host_ports:
                try:
                    await box.publish(host_ip, host_port, container_port)
                except OSError as err:
                    raise RuntimeError_(
                        f"hostPort {host_port}/TCP of container {config.name} cannot be "
                        f"published on {host_ip}: {os.strerror(err.errno or 0)} (another "
                        "pod or program on this machine listens there)") from err
        scratch = config.log_path.parent / f".mounts-{config.restart_count}"
        scratch.mkdir(parents=True, exist_ok=True)
        env = {"PATH": ":".join([*path_dirs, BASE_PATH]), "HOME": "/root",
               **service_env(self.api_server), **config.env}
        security = config.security
        try:
            userns = None if self.unconfined else self._userns(config)
        except NoFreeRange as err:
            raise RuntimeError_(str(err)) from err
        user, cwd = user_spec(security), config.working_dir or "/"
        user["groups"] = list(dict.fromkeys([*user["groups"], *config.edits.additional_gids]))
        spec: dict[str, Any] = {
            "mode": "run", "argv": argv, "env": env, "netns": netns,
            "userns": userns,
            "namespaces": {"pid": not security.host_pid, "ipc": not security.host_ipc},
            "hostname": config.hostname,
            "root": podroot.root_spec(image_folder, security.read_only_root,
                                      security.masked_paths),
            "mounts": [*config.mounts, *([executable] if executable else [])],
            "devices": config.devices, "sysfs": config.sysfs, "scratch": str(scratch), "cwd": cwd,
            "user": user, "hooks": config.hooks,
            "id": f"{config.pod_uid}-{config.name}-{config.restart_count}"}
        proc, init_pid = await self._launch(spec, config.name)
        container = Container(pid=init_pid or proc.pid, env=env)
        self._procs[container.id] = proc
        self._exec_specs[container.id] = {"pid": container.pid, "user": user, "cwd": cwd}
        asyncio.create_task(self._collect(proc, container, config))
        return container

    def _userns(self, config: ContainerConfig) -> dict[str, Any]:
        """The user namespace the container runs in: its pod's own, or on the pod network
        for a hostNetwork pod its node's."""
        network = self.network
        if config.host_network and network is not None and network.id_range is not None:
            base, size = network.id_range
            return {"path": network.userns, "base": base, "size": size}
        return self._ranges.for_pod(config.pod_uid).spec()

    async def _launch(self, spec: dict[str, Any], name: str
                      ) -> tuple[asyncio.subprocess.Process, int | None]:
        """The launcher running `spec`, and the container's init (its PID here) once the
        command runs in its namespaces (None: it never got that far)."""
        started_r, started_w = os.pipe()
        spec["started_fd"] = started_w
        try:
            proc = await asyncio.create_subprocess_exec(
                *launcher_argv(), stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                start_new_session=True, pass_fds=(started_w,), env={"PATH": BASE_PATH})
        except OSError as err:
            os.close(started_r)
            raise RuntimeError_(f"failed to start container {name}: {err}") from err
        finally:
            os.close(started_w)
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(spec).encode())
        proc.stdin.close()
        # The pipe gets the init's PID and closes when the command's exec succeeds (or
        # anything before it fails): only then are exec and probes able to enter.
        reader = asyncio.StreamReader()
        transport, _ = await asyncio.get_running_loop().connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), open(started_r, "rb", 0))
        try:
            written = await asyncio.wait_for(reader.read(), 30)
        except TimeoutError:
            log.warning("container start not confirmed in 30s", container=name)
            written = b""
        finally:
            transport.close()
        text = written.decode(errors="replace").strip()
        return proc, int(text) if text.isdigit() else None

    async def _collect(self, proc: asyncio.subprocess.Process, container: Container,
                       config: ContainerConfig) -> None:
        writer = CRILogWriter(config.log_path)
        launch_error = ""

        async def pump(stream: asyncio.StreamReader | None, name: str) -> None:
            nonlocal launch_error
            assert stream is not None
            async for raw in stream:
                line = raw.decode(errors="replace").rstrip("\n")
                if name == "stderr" and line.startswith(LAUNCH_ERROR):
                    launch_error = line.removeprefix(LAUNCH_ERROR)
                writer.write_line(line, name)

        try:
            await asyncio.gather(pump(proc.stdout, "stdout"), pump(proc.stderr, "stderr"))
            code = await proc.wait()
        finally:
            writer.close()
            self._procs.pop(container.id, None)
            self._exec_specs.pop(container.id, None)
        if launch_error and code == 127:
            # The container never started its command (upstream: StartError, 128).
            container.finish(128, "StartError", launch_error)
            return
        exit_code = code if code >= 0 else 128 - code
        container.finish(exit_code, "Completed" if exit_code == 0 else "Error")

    async def kill(self, container: Container, grace_seconds: float) -> None:
        if container.id in self._faked:
            self._faked.discard(container.id)
            await self._fake.kill(container, grace_seconds)
            return
        proc = self._procs.get(container.id)
        if proc is None or proc.returncode is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            await asyncio.wait_for(asyncio.shield(container.exit_code), grace_seconds)
        except (TimeoutError, ProcessLookupError):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            await container.exit_code

    def exec_argv(self, container: Container, argv: list[str]) -> list[str]:
        """argv in the container: its namespaces, root, identity and working folder."""
        spec = self._exec_specs.get(container.id)
        if spec is None or container.exit_code.done():
            raise RuntimeError_("container is not running")
        return [*launcher_argv(), "exec", json.dumps({**spec, "argv": argv})]

    async def exec(self, container: Container, argv: list[str], timeout: float,
                   env: dict[str, str] | None = None) -> tuple[int, bytes]:
        """Run argv in the container (exec probes): exit code and output."""
        proc = await asyncio.create_subprocess_exec(
            *self.exec_argv(container, argv),
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=env or container.env or container_env(container.pid or 0))
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), timeout)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise
        return proc.returncode or 0, out


def container_env(pid: int) -> dict[str, str]:
    """The environment the container's process started with."""
    try:
        raw = open(f"/proc/{pid}/environ", "rb").read()
    except OSError:
        return {"PATH": BASE_PATH}
    pairs = (item.partition(b"=") for item in raw.split(b"\0") if item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, _, v in pairs}
