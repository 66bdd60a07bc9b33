"""The `process` runtime: containers are local processes, isolated the way a container
runtime isolates them, without images.

- An image map (kubelet/runtime/imagemap.py) says which local executable or folder
  stands for an image. A container whose image is not mapped behaves as on the fake
  runtime (nothing executes) and the pod's events say so. With no image map at all,
  every image stands for this machine's own file system: the container's command runs
  as it is (the runtime's opt-in behaviour before image maps).
- Each pod not on the host network has its own network namespace (kubelet/runtime/
  netns.py) with the apiserver forwarded in; each container has its own mount
  namespace with the pod's volumes at their mount paths (kubelet/runtime/launch.py).
  Namespaces need root: without them the runtime refuses to start, never falls back.
- stdout and stderr become the container log (CRI format); the exit code, or 128 plus
  the signal, the container's state. Stopping: SIGTERM to the container's process
  group, SIGKILL after the grace period.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from typing import Any

from draemu.kubelet.execsession import nsenter_argv
from draemu.kubelet.runtime.base import Container, ContainerConfig, CRILogWriter, RuntimeError_
from draemu.kubelet.runtime.fake import FakeRuntime
from draemu.kubelet.runtime.imagemap import ImageMap, ImageMapError
from draemu.kubelet.runtime.netns import Sandbox, launcher_argv
from draemu.log import get_logger

log = get_logger("kubelet.runtime")
BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
LAUNCH_ERROR = "draemu-launch: "


class NamespacesUnavailable(RuntimeError):
    """The machine cannot give the process runtime its namespaces."""


def preflight() -> None:
    """What the runtime needs, checked once at start-up."""
    result = subprocess.run([*launcher_argv()], input=b'{"mode": "check"}', capture_output=True,
                            timeout=30, check=False)
    if result.returncode != 0:
        detail = result.stderr.decode(errors="replace").strip().removeprefix(LAUNCH_ERROR)
        raise NamespacesUnavailable(
            f"--runtime process cannot start: {detail or 'namespace check failed'}")


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
                 api_server: tuple[str, int] | None = None, check: bool = True) -> None:
        if check:
            preflight()
        self.image_map = image_map or ImageMap()
        self.api_server = api_server
        self._fake = FakeRuntime()
        self._procs: dict[str, asyncio.subprocess.Process] = {}
        self._faked: set[str] = set()
        self._sandboxes: dict[str, Sandbox] = {}
        self._sandbox_locks: dict[str, asyncio.Lock] = {}

    # ---- the pod's sandbox

    async def sandbox(self, pod_uid: str) -> Sandbox:
        lock = self._sandbox_locks.setdefault(pod_uid, asyncio.Lock())
        async with lock:
            box = self._sandboxes.get(pod_uid)
            if box is None or box.proc is None or box.proc.returncode is not None:
                box = Sandbox(pod_uid)
                try:
                    await box.start(self.api_server)
                except OSError as err:
                    await box.stop()
                    raise RuntimeError_(str(err)) from err
                self._sandboxes[pod_uid] = box
            return box

    def netns(self, pod_uid: str) -> str | None:
        box = self._sandboxes.get(pod_uid)
        return box.netns if box is not None and box.proc is not None else None

    async def remove_pod(self, pod_uid: str) -> None:
        box = self._sandboxes.pop(pod_uid, None)
        self._sandbox_locks.pop(pod_uid, None)
        if box is not None:
            await box.stop()

    async def close(self) -> None:
        for uid in list(self._sandboxes):
            await self.remove_pod(uid)

    # ---- containers

    def _argv(self, config: ContainerConfig) -> tuple[list[str], list[str]] | None:
        """(argv, PATH folders) for the container, or None when its image is not mapped."""
        if not self.image_map:
            if not config.command:
                raise RuntimeError_(f"container {config.name}: without an image map the "
                                    "process runtime needs an explicit command")
            return [*config.command, *config.args], []
        mapped = self.image_map.lookup(config.image)
        if mapped is None:
            return None
        try:
            return [*mapped.resolve(config.command), *config.args], mapped.path_dirs()
        except ImageMapError as err:
            raise RuntimeError_(str(err)) from err

    async def start(self, config: ContainerConfig, init: bool = False) -> Container:
        plan = self._argv(config)
        if plan is None:
            container = await self._fake.start(config, init)
            self._faked.add(container.id)
            container.notes.append(
                f'image "{config.image}" is not in the image map (--image-map): container '
                f"{config.name} does not execute and behaves as on the fake runtime")
            return container
        argv, path_dirs = plan
        netns = None
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
        mounts = list(config.mounts) + [
            {"source": m["hostPath"], "target": m["containerPath"],
             "readOnly": "ro" in (m.get("options") or []),
             "file": not os.path.isdir(m["hostPath"])}
            for m in config.edits.mounts if os.path.exists(m["hostPath"])]
        spec: dict[str, Any] = {
            "mode": "run", "argv": argv, "env": env, "netns": netns, "mounts": mounts,
            "scratch": str(scratch), "cwd": config.working_dir or "/",
            "uid": config.run_as_user, "gid": config.run_as_group,
            "groups": config.supplemental_groups}
        started_r, started_w = os.pipe()
        spec["started_fd"] = started_w
        try:
            proc = await asyncio.create_subprocess_exec(
                *launcher_argv(), stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                start_new_session=True, pass_fds=(started_w,))
        except OSError as err:
            os.close(started_r)
            raise RuntimeError_(f"failed to start container {config.name}: {err}") from err
        finally:
            os.close(started_w)
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(spec).encode())
        proc.stdin.close()
        # The pipe closes when the launcher execs the command (or dies): only then is
        # the container running in its namespaces, for exec and probes to enter.
        try:
            await asyncio.wait_for(asyncio.to_thread(os.read, started_r, 1), 30)
        except TimeoutError:
            log.warning("container start not confirmed in 30s", container=config.name)
        finally:
            os.close(started_r)
        container = Container(pid=proc.pid, env=env)
        self._procs[container.id] = proc
        asyncio.create_task(self._collect(proc, container, config))
        return container

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

    async def exec(self, container: Container, argv: list[str], timeout: float,
                   env: dict[str, str] | None = None) -> tuple[int, bytes]:
        """Run argv in the container's mount and network namespaces (nsenter)."""
        if container.pid is None or container.exit_code.done():
            raise RuntimeError_("container is not running")
        proc = await asyncio.create_subprocess_exec(
            *nsenter_argv(container.pid, argv),
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=env or container.env or container_env(container.pid))
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
