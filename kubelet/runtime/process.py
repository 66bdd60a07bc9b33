"""The opt-in `process` runtime: a container's command runs as a local process.

Only with `--runtime process`: the command and args of the pod spec run with the
container's environment (spec env plus CDI edits, on top of a minimal PATH); stdout
and stderr become the container log; the exit code becomes the container state.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from draemu.kubelet.runtime.base import Container, ContainerConfig, CRILogWriter, RuntimeError_

_BASE_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}


class ProcessRuntime:
    name = "process"

    def __init__(self) -> None:
        self._procs: dict[str, asyncio.subprocess.Process] = {}

    async def start(self, config: ContainerConfig, init: bool = False) -> Container:
        argv = [*config.command, *config.args]
        if not config.command:
            raise RuntimeError_(f"container {config.name}: the process runtime needs an "
                                "explicit command (images are not run)")
        config.log_path.parent.mkdir(parents=True, exist_ok=True)
        cwd = config.working_dir if config.working_dir and Path(config.working_dir).is_dir() \
            else str(config.log_path.parent)
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, env={**_BASE_ENV, **config.env}, cwd=cwd,
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, start_new_session=True)
        except OSError as err:
            raise RuntimeError_(f"failed to start container {config.name}: {err}") from err
        container = Container()
        self._procs[container.id] = proc
        asyncio.create_task(self._collect(proc, container, config.log_path))
        return container

    async def _collect(self, proc: asyncio.subprocess.Process, container: Container,
                       log_path: Path) -> None:
        writer = CRILogWriter(log_path)

        async def pump(stream: asyncio.StreamReader | None, name: str) -> None:
            assert stream is not None
            async for raw in stream:
                writer.write_line(raw.decode(errors="replace").rstrip("\n"), name)

        try:
            await asyncio.gather(pump(proc.stdout, "stdout"), pump(proc.stderr, "stderr"))
            code = await proc.wait()
        finally:
            writer.close()
            self._procs.pop(container.id, None)
        # A signal death is reported like a shell would: 128 + signal number.
        exit_code = code if code >= 0 else 128 - code
        container.finish(exit_code, "Completed" if exit_code == 0 else "Error")

    async def kill(self, container: Container, grace_seconds: float) -> None:
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
