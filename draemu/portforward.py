"""Port forwarding (`pods/portforward`, protocol `portforward.k8s.io`) as kubectl and
client-go speak it: SPDY/3.1 streams, over an upgraded HTTP connection or tunnelled in a
WebSocket (subprotocol `SPDY/3.1+portforward.k8s.io`, each binary message a piece of
the SPDY byte stream). The apiserver serves the client's side (`PortForwardSession`)
and reaches the pod through its node's kubelet: one connection per forwarded connection.

SPDY/3.1, the part moby/spdystream (client-go's implementation) uses: control frames
(SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE) and
data frames, header blocks compressed with zlib and SPDY/3's dictionary, one
compression context per direction; no flow control (spdystream has none).

The client opens two streams per forwarded connection, with the headers `streamtype`
(`error` or `data`), `port` and `requestid`; the server answers each SYN_STREAM with a
SYN_REPLY, copies the data stream to and from the pod's port, writes what went wrong on
the error stream, and ends both with FIN.

The kubelet's side (`KUBELET_PROTOCOL`, the kubelet's WebSocket port forwarding for one
port): binary messages whose first byte is the channel, 0 the data, 1 the error; the
first message the kubelet sends on each channel is the port, two bytes little-endian.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import zlib
from collections.abc import Awaitable, Callable
from typing import Protocol

from draemu.log import get_logger

log = get_logger("portforward")

PROTOCOL = "portforward.k8s.io"
SPDY = "SPDY/3.1"
TUNNELED = f"{SPDY}+{PROTOCOL}"  # the WebSocket subprotocol
KUBELET_PROTOCOL = PROTOCOL
DATA_CHANNEL, ERROR_CHANNEL = 0, 1

SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS = 1, 2, 3, 4
PING, GOAWAY, HEADERS, WINDOW_UPDATE = 6, 7, 8, 9
FLAG_FIN = 0x01
CANCEL = 5
MAX_DATA = 32 * 1024
VERSION = 3

# SPDY/3's header compression dictionary: length-prefixed words, then a tail.
_WORDS = (
    "options head post put delete trace accept accept-charset accept-encoding "
    "accept-language accept-ranges age allow authorization cache-control connection "
    "content-base content-encoding content-language content-length content-location "
    "content-md5 content-range content-type date etag expect expires from host if-match "
    "if-modified-since if-none-match if-range if-unmodified-since last-modified location "
    "max-forwards pragma proxy-authenticate proxy-authorization range referer retry-after "
    "server te trailer transfer-encoding upgrade user-agent vary via warning "
    "www-authenticate method get status").split() + ["200 OK"] + \
    "version HTTP/1.1 url public set-cookie keep-alive origin".split()
_TAIL = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502"
    "504505203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad "
    "Request401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not "
    "Implemented503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec "
    "00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,"
    "image/gif,application/xml,application/xhtml+xml,text/plain,text/javascript,"
    "publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.")
DICTIONARY = b"".join(len(w).to_bytes(4, "big") + w.encode() for w in _WORDS) + \
    _TAIL.encode()


class Transport(Protocol):
    """The SPDY byte stream: an upgraded connection or a WebSocket's binary messages."""

    async def recv(self) -> bytes:
        """The next bytes; b"" at the end."""
        ...

    async def send(self, data: bytes) -> None: ...


class PortConnection(Protocol):
    """One connection to the pod's port."""

    async def read(self) -> bytes:
        """The next bytes; b"" at the end."""
        ...

    async def write(self, data: bytes) -> None: ...

    async def close_write(self) -> None:
        """No more bytes from the client (its FIN)."""
        ...

    async def close(self) -> None: ...


Dial = Callable[[int], Awaitable[PortConnection]]


class StreamConnection:
    """A PortConnection over asyncio streams (a socket into the pod's namespace)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def read(self) -> bytes:
        try:
            return await self.reader.read(MAX_DATA)
        except (ConnectionError, OSError):
            return b""

    async def write(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def close_write(self) -> None:
        with contextlib.suppress(OSError, RuntimeError):
            if self.writer.can_write_eof():
                self.writer.write_eof()

    async def close(self) -> None:
        with contextlib.suppress(OSError, RuntimeError):
            self.writer.close()


class Codec:
    """Header blocks of one SPDY session: a zlib context for each direction."""

    def __init__(self) -> None:
        self._inflate = zlib.decompressobj(zdict=DICTIONARY)
        self._deflate = zlib.compressobj(zdict=DICTIONARY)

    def decode(self, block: bytes) -> dict[str, list[str]]:
        raw = self._inflate.decompress(block)
        count = struct.unpack_from(">I", raw)[0]
        offset, out = 4, {}
        for _ in range(count):
            size = struct.unpack_from(">I", raw, offset)[0]
            name = raw[offset + 4:offset + 4 + size].decode()
            offset += 4 + size
            size = struct.unpack_from(">I", raw, offset)[0]
            value = raw[offset + 4:offset + 4 + size].decode()
            offset += 4 + size
            out[name.lower()] = value.split("\0")
        return out

    def encode(self, headers: dict[str, list[str]]) -> bytes:
        raw = struct.pack(">I", len(headers))
        for name, values in headers.items():
            for text in (name.lower(), "\0".join(values)):
                data = text.encode()
                raw += struct.pack(">I", len(data)) + data
        return self._deflate.compress(raw) + self._deflate.flush(zlib.Z_SYNC_FLUSH)


def control(kind: int, flags: int, body: bytes) -> bytes:
    return struct.pack(">HHI", 0x8000 | VERSION, kind, (flags << 24) | len(body)) + body


def data_frame(stream: int, flags: int, body: bytes) -> bytes:
    return struct.pack(">II", stream & 0x7FFFFFFF, (flags << 24) | len(body)) + body


async def read_frames(transport: Transport):  # type: ignore[no-untyped-def]
    """(is control, type or stream id, flags, body) for each frame of the byte stream."""
    buffer = b""
    while True:
        while len(buffer) < 8 or len(buffer) < 8 + (struct.unpack_from(">I", buffer, 4)[0]
                                                     & 0xFFFFFF):
            more = await transport.recv()
            if not more:
                return
            buffer += more
        first, second = struct.unpack_from(">II", buffer)
        length = second & 0xFFFFFF
        body, buffer = buffer[8:8 + length], buffer[8 + length:]
        if first & 0x80000000:
            yield True, first & 0xFFFF, second >> 24, body
        else:
            yield False, first & 0x7FFFFFFF, second >> 24, body


class _Pair:
    """The two streams of one forwarded connection."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.error: int | None = None
        self.data: int | None = None
        self.connection: PortConnection | None = None
        self.tasks: list[asyncio.Task[None]] = []
        # What the client sent before the pod's port answered: (bytes, flags), in order.
        self.pending: list[tuple[bytes, int]] = []
        self.ready = False


class PortForwardSession:
    """The server side of one port-forwarding SPDY session. `dial(port)` connects to the
    pod's port (raising OSError with the reason); `describe(port, reason)` words an
    error as the kubelet does."""

    def __init__(self, transport: Transport, dial: Dial,
                 describe: Callable[[int, str], str]) -> None:
        self.transport = transport
        self.dial = dial
        self.describe = describe
        self.codec = Codec()
        self._pairs: dict[str, _Pair] = {}
        self._by_stream: dict[int, str] = {}
        self._send_lock = asyncio.Lock()

    async def _send(self, frame: bytes) -> None:
        async with self._send_lock:
            await self.transport.send(frame)

    async def serve(self) -> None:
        try:
            async for is_control, kind, flags, body in read_frames(self.transport):
                if is_control:
                    if not await self._control(kind, flags, body):
                        break
                else:
                    await self._data(kind, flags, body)
        except (ConnectionError, OSError, struct.error, zlib.error, ValueError) as err:
            log.info("port forwarding session ended", error=str(err))
        finally:
            for pair in list(self._pairs.values()):
                await self._end(pair)

    async def _control(self, kind: int, flags: int, body: bytes) -> bool:
        """Handle one control frame; False ends the session (GOAWAY)."""
        if kind == SYN_STREAM:
            stream = struct.unpack_from(">I", body)[0] & 0x7FFFFFFF
            headers = self.codec.decode(body[10:])
            await self._send(control(SYN_REPLY, 0, struct.pack(">I", stream)
                                     + self.codec.encode({})))
            await self._opened(stream, headers)
        elif kind == RST_STREAM:
            stream = struct.unpack_from(">I", body)[0] & 0x7FFFFFFF
            key = self._by_stream.get(stream)
            if key is not None and key in self._pairs:
                await self._end(self._pairs[key])
        elif kind == PING:
            await self._send(control(PING, 0, body[:4]))
        elif kind == GOAWAY:
            return False
        return True  # SETTINGS, HEADERS, WINDOW_UPDATE: nothing to do here

    async def _opened(self, stream: int, headers: dict[str, list[str]]) -> None:
        kind = (headers.get("streamtype") or [""])[0]
        port_text = (headers.get("port") or [""])[0]
        key = (headers.get("requestid") or [str(stream)])[0]
        if kind not in ("error", "data") or not port_text.isdigit() or \
                not 0 < int(port_text) < 65536:
            await self._send(control(RST_STREAM, 0, struct.pack(">II", stream, 1)))
            return
        pair = self._pairs.setdefault(key, _Pair(int(port_text)))
        setattr(pair, kind, stream)
        self._by_stream[stream] = key
        if pair.data is not None and pair.error is not None and not pair.tasks:
            pair.tasks.append(asyncio.create_task(self._forward(key, pair)))

    async def _forward(self, key: str, pair: _Pair) -> None:
        assert pair.data is not None and pair.error is not None
        failure = b""
        try:
            pair.connection = await self.dial(pair.port)
            while pair.pending:
                body, flags = pair.pending.pop(0)
                await self._to_pod(pair, body, flags)
            pair.ready = True
            while data := await pair.connection.read():
                for start in range(0, len(data), MAX_DATA):
                    await self._send(data_frame(pair.data, 0, data[start:start + MAX_DATA]))
        except (OSError, TimeoutError) as err:
            failure = self.describe(pair.port, str(err) or type(err).__name__).encode()
        try:
            await self._send(data_frame(pair.data, FLAG_FIN, b""))
            if failure:
                await self._send(data_frame(pair.error, 0, failure))
            await self._send(data_frame(pair.error, FLAG_FIN, b""))
        except (ConnectionError, OSError):
            pass  # the client is gone
        if pair.connection is not None:
            await pair.connection.close()
        self._forget(key)

    async def _data(self, stream: int, flags: int, body: bytes) -> None:
        key = self._by_stream.get(stream)
        pair = self._pairs.get(key) if key is not None else None
        if pair is None or stream != pair.data:
            return  # the error stream carries nothing from the client
        if not pair.ready:
            pair.pending.append((body, flags))
            return
        await self._to_pod(pair, body, flags)

    async def _to_pod(self, pair: _Pair, body: bytes, flags: int) -> None:
        assert pair.connection is not None
        try:
            if body:
                await pair.connection.write(body)
            if flags & FLAG_FIN:
                await pair.connection.close_write()
        except (ConnectionError, OSError):
            await self._end(pair)

    def _forget(self, key: str) -> None:
        pair = self._pairs.pop(key, None)
        if pair is not None:
            for stream in (pair.data, pair.error):
                self._by_stream.pop(stream or 0, None)

    async def _end(self, pair: _Pair) -> None:
        for task in pair.tasks:
            if task is not asyncio.current_task():
                task.cancel()
        if pair.connection is not None:
            await pair.connection.close()
        for key, found in list(self._pairs.items()):
            if found is pair:
                self._forget(key)


def kubelet_error(port: int, pod: str, uid: str, reason: str) -> str:
    """The kubelet's words for a connection to the pod's port that failed."""
    return f"error forwarding port {port} to pod {pod}, uid {uid}: {reason}"
