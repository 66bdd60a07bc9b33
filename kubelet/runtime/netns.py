"""A pod's network namespace (its sandbox) for the process runtime.

Each pod that is not on the host network gets its own network namespace with only a
loopback interface, held by a `launch.py` sandbox process (upstream's pause container),
so that two pods may listen on the same port, as on a real cluster. The kubelet reaches
into it with sockets created there (a thread joins the namespace, opens the socket and
leaves): probes dial the pod's ports, and the apiserver is forwarded to
`127.0.0.1:<its port>` inside, the address `KUBERNETES_SERVICE_HOST/PORT` give (the
apiserver's serving certificate names 127.0.0.1).
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from draemu.log import get_logger
from draemu.streams import splice

log = get_logger("kubelet.runtime")
LAUNCHER = Path(__file__).with_name("launch.py")
CLONE_NEWNET = 0x40000000
T = TypeVar("T")
_libc = ctypes.CDLL(None, use_errno=True)


def launcher_argv() -> list[str]:
    return [sys.executable, "-I", "-S", str(LAUNCHER)]


def in_netns(netns: str, fn: Callable[[], T]) -> T:
    """Call `fn` on a thread that has joined the network namespace `netns` (sockets it
    creates belong there)."""
    result: list[T] = []
    error: list[BaseException] = []

    def body() -> None:
        # A thread of its own, which ends with the call: it never goes back to the host's
        # namespace, so no other code can run in the pod's by mistake.
        fd = os.open(netns, os.O_RDONLY | os.O_CLOEXEC)
        try:
            if _libc.setns(fd, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), f"setns {netns}")
            result.append(fn())
        except BaseException as err:  # re-raised in the caller
            error.append(err)
        finally:
            os.close(fd)

    thread = threading.Thread(target=body, name="netns", daemon=True)
    thread.start()
    thread.join()
    if error:
        raise error[0]
    return result[0]


async def dial(netns: str | None, host: str, port: int, timeout: float = 5.0
               ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A TCP connection to host:port as seen from inside the namespace (None: the host's)."""
    if netns is None:
        return await asyncio.wait_for(asyncio.open_connection(host, port), timeout)

    def connect() -> socket.socket:
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        sock.settimeout(timeout)
        try:
            sock.connect((host, port))
        except OSError:
            sock.close()
            raise
        sock.setblocking(False)
        return sock

    sock = await asyncio.to_thread(in_netns, netns, connect)
    return await asyncio.open_connection(sock=sock)


class Sandbox:
    """One pod's network namespace and the apiserver forwarded into it."""

    def __init__(self, pod_uid: str) -> None:
        self.pod_uid = pod_uid
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
        if forward is not None:
            await self._forward(*forward)

    async def _forward(self, host: str, port: int) -> None:
        def listen() -> socket.socket:
            sock = socket.socket(socket.AF_INET)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", port))
            sock.listen(128)
            sock.setblocking(False)
            return sock

        sock = await asyncio.to_thread(in_netns, self.netns, listen)

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
        """A hostPort: connections to host_ip:host_port on this machine go to the pod's
        container_port (upstream: the CNI portmap plugin)."""
        if (host_ip, host_port) in self._published:
            return

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter
                             ) -> None:
            try:
                inside = await dial(self.netns, "127.0.0.1", container_port)
            except (OSError, TimeoutError):
                writer.close()
                return
            await splice((reader, writer), inside)

        self._servers.append(await asyncio.start_server(connection, host_ip, host_port,
                                                        reuse_address=True))
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
