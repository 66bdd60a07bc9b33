"""A pod's network namespace (its sandbox) for the process runtime.

Each pod that is not on the host network gets its own network namespace, held by a
`launch.py` sandbox process (upstream's pause container), so that two pods may listen on
the same port, as on a real cluster. On the pod network (draemu/podnetwork.py, a node's
`NodeNetwork`) the namespace is attached to its node as a CNI plugin attaches it: an
address of the node's podCIDR on eth0, routes to the node; hostPorts are published on the
node's addresses (the CNI portmap plugin's job). Without one it has only a loopback
interface: the apiserver is forwarded to `127.0.0.1:<its port>` inside, the address
`KUBERNETES_SERVICE_HOST/PORT` give (the apiserver's serving certificate names
127.0.0.1), and hostPorts are published on this machine. The kubelet reaches into it with
sockets created there (draemu/netns.py): probes dial the pod's ports.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from draemu.log import get_logger
from draemu.netns import dial, listening_socket
from draemu.streams import splice

if TYPE_CHECKING:
    from draemu.podnetwork import NodeNetwork

log = get_logger("kubelet.runtime")
LAUNCHER = Path(__file__).with_name("launch.py")


def launcher_argv() -> list[str]:
    return [sys.executable, "-I", "-S", str(LAUNCHER)]


class Sandbox:
    """One pod's network namespace and the apiserver forwarded into it."""

    def __init__(self, pod_uid: str, network: NodeNetwork | None = None) -> None:
        self.pod_uid = pod_uid
        self.network = network
        self.ip: str | None = None  # on the pod network
        self.proc: asyncio.subprocess.Process | None = None
        self._servers: list[asyncio.base_events.Server] = []
        self._published: set[tuple[str, int]] = set()

    @property
    def netns(self) -> str:
        assert self.proc is not None
        return f"/proc/{self.proc.pid}/ns/net"

    async def start(self, forward: tuple[str, int] | None) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            *launcher_argv(), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, start_new_session=True)
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr
        self.proc.stdin.write(b'{"mode": "sandbox"}')
        self.proc.stdin.close()
        line = await asyncio.wait_for(self.proc.stdout.readline(), 10)
        if line.strip() != b"ready":
            error = (await self.proc.stderr.read()).decode(errors="replace").strip()
            raise OSError(f"the pod's network namespace could not be made: {error}")
        if self.network is not None:
            from draemu.podnetwork import NetworkError

            try:
                self.ip = await self.network.attach_pod(self.pod_uid, self.proc.pid)
            except NetworkError as err:
                raise OSError(f"failed to set up the pod's network: {err}") from err
        if forward is not None:
            await self._forward(*forward)

    async def _forward(self, host: str, port: int) -> None:
        sock = await asyncio.to_thread(listening_socket, self.netns, "127.0.0.1", port)

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter
                             ) -> None:
            try:
                upstream = await dial(None, host, port)
            except (OSError, TimeoutError):
                writer.close()
                return
            await splice((reader, writer), upstream)

        self._servers.append(await asyncio.start_server(connection, sock=sock))

    async def publish(self, host_ip: str, host_port: int, container_port: int) -> None:
        """A hostPort: connections to host_ip:host_port on the node (on the pod network;
        else on this machine) go to the pod's container_port (upstream: the CNI portmap
        plugin)."""
        if (host_ip, host_port) in self._published:
            return
        where = self.network.netns if self.network is not None else None
        sock = await asyncio.to_thread(listening_socket, where, host_ip, host_port)

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter
                             ) -> None:
            try:
                inside = await dial(self.netns, "127.0.0.1", container_port)
            except (OSError, TimeoutError):
                writer.close()
                return
            await splice((reader, writer), inside)

        self._servers.append(await asyncio.start_server(connection, sock=sock))
        self._published.add((host_ip, host_port))

    async def stop(self) -> None:
        for server in self._servers:
            server.close()
        if self.proc is not None and self.proc.returncode is None:
            try:
                self.proc.terminate()
            except ProcessLookupError:
                pass
            await self.proc.wait()
        if self.network is not None:
            self.network.release_pod(self.pod_uid)
