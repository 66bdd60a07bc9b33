"""Sockets in another network namespace, for a process that stays in its own.

A socket belongs to the network namespace its creator was in when it made it, and keeps
it: so a short-lived thread joins the namespace (setns), makes the socket and ends, and
the socket is then used from anywhere (the event loop's thread connects, reads and
writes it). The thread never returns to the process's namespace, so no other code can
run in the other one by mistake. The kubelet dials pods' ports this way (probes,
port-forward), and the apiserver, which runs in the machine's namespace, reaches pods,
nodes and Services on the pod network (draemu/podnetwork.py) through its cluster
namespace.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
import threading
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

CLONE_NEWNET = 0x40000000
T = TypeVar("T")


def _setns(fd: int, netns: str) -> None:
    import ctypes  # here: an apiserver without a pod network never needs it

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"setns {netns}: {os.strerror(errno)}")


def in_netns(netns: str, fn: Callable[[], T]) -> T:
    """Call `fn` on a thread that has joined the network namespace `netns` (a path such
    as /proc/PID/ns/net); sockets it creates belong there."""
    result: list[T] = []
    error: list[BaseException] = []

    def body() -> None:
        try:
            fd = os.open(netns, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as err:
            error.append(err)
            return
        try:
            _setns(fd, netns)
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


def family_of(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


async def dial(netns: str | None, host: str, port: int, timeout: float = 5.0
               ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A TCP connection to host:port as seen from inside `netns` (None: this process's)."""
    if netns is None:
        return await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    sock = await asyncio.to_thread(in_netns, netns, lambda: socket.socket(family_of(host)))
    sock.setblocking(False)
    try:
        await asyncio.wait_for(asyncio.get_running_loop().sock_connect(sock, (host, port)),
                               timeout)
    except BaseException:
        sock.close()
        raise
    return await asyncio.open_connection(sock=sock)


def listening_socket(netns: str | None, host: str, port: int, backlog: int = 128
                     ) -> socket.socket:
    """A TCP socket listening on host:port inside `netns` (None: this process's),
    non-blocking, for asyncio.start_server(sock=...) or an aiohttp SockSite."""
    def make() -> socket.socket:
        sock = socket.socket(family_of(host))
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            sock.listen(backlog)
        except OSError:
            sock.close()
            raise
        sock.setblocking(False)
        return sock

    return make() if netns is None else in_netns(netns, make)


class NetnsDialer:
    """Where this process's outgoing connections to the pod network are made: sockets to
    addresses in `networks` are created in `netns`, all others here. `socket_factory`
    is the shape aiohttp's TCPConnector takes (an addrinfo tuple in, a socket out)."""

    def __init__(self, netns: str, networks: Iterable[str]) -> None:
        self.netns = netns
        self.networks = [ipaddress.ip_network(n, strict=False) for n in networks]

    def reaches(self, host: str) -> bool:
        """Whether `host` (an address; names are never on the pod network) is dialled
        from the namespace."""
        try:
            address = ipaddress.ip_address(host.strip("[]"))
        except ValueError:
            return False
        return any(address.version == n.version and address in n for n in self.networks)

    def socket_factory(self, addr_info: tuple[Any, ...]) -> socket.socket:
        family, kind, proto, _name, sockaddr = addr_info
        if not self.reaches(str(sockaddr[0])):
            return socket.socket(family, kind, proto)
        return in_netns(self.netns, lambda: socket.socket(family, kind, proto))

    async def dial(self, host: str, port: int, timeout: float = 5.0
                   ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await dial(self.netns if self.reaches(host) else None, host, port, timeout)
