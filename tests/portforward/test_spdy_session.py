"""The SPDY/3.1 port-forwarding session against a client that frames as client-go's
spdystream does: streams answered with SYN_REPLY, the data stream copied both ways with
half-closes, a port that cannot be dialled said on the error stream, PINGs echoed, and
the header dictionary byte for byte."""

from __future__ import annotations

import asyncio
import hashlib
import struct

import pytest

from draemu.portforward import (
    DICTIONARY,
    FLAG_FIN,
    PING,
    SYN_REPLY,
    SYN_STREAM,
    Codec,
    PortForwardSession,
    StreamConnection,
    control,
    data_frame,
    read_frames,
)

pytestmark = pytest.mark.unit


class Pipe:
    """One direction of a byte stream."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[bytes] = asyncio.Queue()

    async def recv(self) -> bytes:
        return await self.queue.get()

    async def send(self, data: bytes) -> None:
        await self.queue.put(data)


class Ends:
    """The server's transport: it reads `inward`, writes `outward`."""

    def __init__(self) -> None:
        self.inward, self.outward = Pipe(), Pipe()

    async def recv(self) -> bytes:
        return await self.inward.recv()

    async def send(self, data: bytes) -> None:
        await self.outward.send(data)


def test_the_header_dictionary_is_spdy3s() -> None:
    assert len(DICTIONARY) == 1423
    assert hashlib.sha256(DICTIONARY).hexdigest() == \
        "51d27341373f923f3cd88e1eb7162aeaa3723d7585ff2399201dc06498407f02"


def _syn(codec: Codec, stream: int, kind: str, port: int, request: str = "0") -> bytes:
    headers = codec.encode({"streamtype": [kind], "port": [str(port)],
                            "requestid": [request]})
    return control(SYN_STREAM, 0, struct.pack(">IIBB", stream, 0, 0, 0) + headers)


async def _frames(ends: Ends, count: int) -> list[tuple[bool, int, int, bytes]]:
    got = []
    frames = read_frames(ends.outward)
    while len(got) < count:
        got.append(await asyncio.wait_for(anext(frames), 5))
    return got


async def _echo_server() -> tuple[asyncio.base_events.Server, int]:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        data = await reader.read()  # until the client's half-close
        writer.write(b"echo:" + data)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


async def test_a_forwarded_connection_copies_both_ways_and_ends_with_fin() -> None:
    server, port = await _echo_server()

    async def dial(wanted: int) -> StreamConnection:
        return StreamConnection(*await asyncio.open_connection("127.0.0.1", wanted))

    ends, client = Ends(), Codec()
    session = asyncio.create_task(PortForwardSession(ends, dial, lambda p, r: r).serve())
    await ends.inward.send(_syn(client, 1, "error", port) + _syn(client, 3, "data", port))
    await ends.inward.send(data_frame(3, 0, b"hello") + data_frame(3, FLAG_FIN, b""))
    frames = await _frames(ends, 5)
    replies = [f for f in frames if f[0] and f[1] == SYN_REPLY]
    assert [struct.unpack(">I", f[3][:4])[0] for f in replies] == [1, 3]
    data = [(f[1], f[2], f[3]) for f in frames if not f[0]]
    assert data == [(3, 0, b"echo:hello"), (3, FLAG_FIN, b""), (1, FLAG_FIN, b"")]
    await ends.inward.send(b"")
    await session
    server.close()


async def test_a_port_that_cannot_be_dialled_is_said_on_the_error_stream() -> None:
    async def dial(wanted: int) -> StreamConnection:
        raise ConnectionRefusedError(111, f"connection refused ({wanted})")

    ends, client = Ends(), Codec()
    session = asyncio.create_task(PortForwardSession(
        ends, dial, lambda p, r: f"error forwarding port {p}: {r}").serve())
    await ends.inward.send(_syn(client, 1, "error", 9) + _syn(client, 3, "data", 9))
    frames = [f for f in await _frames(ends, 5) if not f[0]]
    assert (3, FLAG_FIN, b"") in [(f[1], f[2], f[3]) for f in frames]
    error = b"".join(f[3] for f in frames if f[1] == 1)
    assert error == b"error forwarding port 9: [Errno 111] connection refused (9)"
    await ends.inward.send(b"")
    await session


async def test_pings_are_echoed_and_bad_headers_reset_the_stream() -> None:
    async def dial(wanted: int) -> StreamConnection:
        raise AssertionError("nothing to dial")

    ends, client = Ends(), Codec()
    session = asyncio.create_task(PortForwardSession(ends, dial, lambda p, r: r).serve())
    await ends.inward.send(control(PING, 0, struct.pack(">I", 7)))
    await ends.inward.send(_syn(client, 5, "data", 70000))
    frames = await _frames(ends, 3)
    assert frames[0] == (True, PING, 0, struct.pack(">I", 7))
    assert frames[2][:2] == (True, 3)  # RST_STREAM for the port out of range
    await ends.inward.send(b"")
    await session
