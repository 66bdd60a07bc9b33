"""The scheduler and the controllers of `draemu up` in a process of their own.

One slow request, or one expensive scheduling cycle, must not stall the others: in one
process the apiserver, the scheduler and the controllers shared one event loop (and one
core). So `draemu up` runs them here, in a child process, as API clients over the
apiserver's loopback socket with the per-identity tokens the apiserver issued (they stay
in the two processes' memory: the child reads them on its standard input).

    parent                                   child (python -m draemu.cmd.controlplane)
    ControlPlaneProcess.start(server, ...) → reads its config (one JSON line) on stdin,
                                             starts the controllers and the scheduler,
    ControlPlaneProcess.wait_ready()       ← prints "ready" on stdout
    ControlPlaneProcess.stop()             → closes stdin: the child stops them and exits
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from dataclasses import dataclass
from typing import Any

from draemu import aio, log
from draemu.client import Client
from draemu.features import FeatureGates
from draemu.log import get_logger

logger = get_logger("controlplane")

READY = "ready"
STOP_TIMEOUT = 10.0


@dataclass
class _Config:
    socket: str
    scheduler_token: str | None
    controllers_token: str | None
    gates: dict[str, bool]
    emulated_version: str
    controller_settings: dict[str, float]
    log_format: str
    log_level: str
    # The cluster CA (PEM), which the root CA publisher puts in every kube-root-ca.crt.
    ca_pem: str | None = None
    scheduler_config: str | None = None  # KubeSchedulerConfiguration text


class ControlPlaneProcess:
    """The parent's handle on the child."""

    def __init__(self) -> None:
        self.process: asyncio.subprocess.Process | None = None
        self._watch: asyncio.Task[None] | None = None

    async def start(self, server: Any, gates: FeatureGates, *, scheduler: bool,
                    controllers: bool, controller_settings: dict[str, float],
                    scheduler_config: str | None = None) -> None:
        log_format, log_level = log.settings()
        config = _Config(
            socket=server.loopback_path,
            scheduler_token=server.loopback_token() if scheduler else None,
            controllers_token=server.loopback_token() if controllers else None,
            gates=gates.overrides(), emulated_version=gates.emulated_version,
            controller_settings=controller_settings, log_format=log_format,
            log_level=log_level,
            ca_pem=server.pki.ca.cert_pem.decode() if server.pki is not None else None,
            scheduler_config=scheduler_config)
        self.process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "draemu.cmd.controlplane", stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE)
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(config.__dict__).encode() + b"\n")
        await self.process.stdin.drain()

    async def wait_ready(self) -> None:
        """Until the child has started its components (it starts while the parent goes
        on: its Python start-up overlaps the nodes')."""
        assert self.process is not None and self.process.stdout is not None
        line = await self.process.stdout.readline()
        if line.strip() != READY.encode():
            code = await self.process.wait()
            raise RuntimeError(f"the scheduler and controllers process exited ({code}) "
                               "before it was ready")
        self._watch = asyncio.create_task(self._watch_exit())

    async def _watch_exit(self) -> None:
        assert self.process is not None
        code = await self.process.wait()
        logger.error("the scheduler and controllers process exited", code=code)

    async def stop(self) -> None:
        if self.process is None:
            return
        if self._watch is not None:
            self._watch.cancel()
        if self.process.returncode is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                await asyncio.wait_for(self.process.wait(), STOP_TIMEOUT)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
        self.process = None


async def _serve(config: _Config) -> None:
    from draemu.controllers.manager import ControllerManager
    from draemu.scheduler import Scheduler

    gates = FeatureGates(config.gates, config.emulated_version)
    parts: list[Any] = []
    clients: list[Client] = []

    def client(token: str, user_agent: str) -> Client:
        c = Client("http://localhost", token=token, user_agent=user_agent,
                   unix_socket=config.socket,
                   ca_pem=config.ca_pem.encode() if config.ca_pem else None)
        clients.append(c)
        return c

    try:
        if config.controllers_token:
            manager = ControllerManager(client(config.controllers_token,
                                               "draemu-controller-manager"), gates,
                                        settings=config.controller_settings)
            await manager.start()
            parts.append(manager)
        if config.scheduler_token:
            from draemu.scheduler.config import load

            scheduler = Scheduler(client(config.scheduler_token, "draemu-scheduler"), gates,
                                  config=load(config.scheduler_config)
                                  if config.scheduler_config else None)
            await scheduler.start()
            parts.append(scheduler)
        print(READY, flush=True)
        # Runs until the parent closes our standard input (or dies).
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.buffer.read)
    finally:
        for part in reversed(parts):
            try:
                await part.stop()
            except Exception:
                logger.exception("stopping a component failed")
        for c in clients:
            await c.close()


def main() -> int:
    # Ctrl-C reaches the whole process group: the parent decides when we stop (it closes
    # our standard input), so that it can stop the nodes first.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    config = _Config(**json.loads(sys.stdin.buffer.readline()))
    log.configure(config.log_format, config.log_level)
    aio.run(_serve(config))
    return 0


if __name__ == "__main__":
    sys.exit(main())
