"""HTTP/1.1 over the apiserver's loopback Unix socket, for the requests of components in
`draemu up`'s child (and the apiserver's own loopback clients).

aiohttp's client costs about 100 us of CPU per request (URL building, request and
response objects, timers); the scheduler and the controllers make six requests per pod,
on one core with everything else they do. Here a request is one write of its head and
body and a read of the response on a kept-alive connection: status line, headers,
a body by Content-Length or chunked. Watches still go through aiohttp (one request
each, then a stream).

Errors are aiohttp's, so callers' `except aiohttp.ClientError` clauses hold: a
connection closed before the whole response came is `ServerDisconnectedError`, a
malformed response `ClientResponseError`.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlencode

import aiohttp

# Connections open at once (aiohttp's connector had limit=64).
LIMIT = 64
_MAX_HEAD = 1 << 16


class UnixHTTP:
    def __init__(self, path: str, headers: dict[str, str], limit: int = LIMIT) -> None:
        self._path = path
        self._headers = headers  # every request's, unless it gives its own of a name
        self._names = {k.lower() for k in headers}
        self._base = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self._slots = asyncio.Semaphore(limit)
        self._closed = False

    async def close(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for _reader, writer in idle:
            writer.close()

    async def request(self, method: str, path: str, params: dict[str, str] | None,
                      body: bytes | None, headers: dict[str, str],
                      timeout: float | None) -> tuple[int, dict[str, str], bytes]:
        target = f"{path}?{urlencode(params)}" if params else path
        head = [f"{method} {target} HTTP/1.1\r\nHost: localhost\r\n"]
        own = {k.lower() for k in headers} & self._names
        if own:
            head.extend(f"{k}: {v}\r\n" for k, v in self._headers.items()
                        if k.lower() not in own)
            head.extend(f"{k}: {v}\r\n" for k, v in headers.items())
        else:
            head.append(self._base)
            head.extend(f"{k}: {v}\r\n" for k, v in headers.items())
        head.append(f"Content-Length: {len(body)}\r\n\r\n" if body is not None
                    else ("Content-Length: 0\r\n\r\n"
                          if method in ("POST", "PUT", "PATCH") else "\r\n"))
        data = "".join(head).encode("latin-1")
        if body:
            data += body
        async with self._slots:
            if timeout is None:
                return await self._exchange(method, data)
            async with asyncio.timeout(timeout):
                return await self._exchange(method, data)

    async def _exchange(self, method: str, data: bytes) -> tuple[int, dict[str, str], bytes]:
        while self._idle:
            reader, writer = self._idle.pop()
            if reader.at_eof() or writer.is_closing():
                writer.close()
                continue
            try:
                return await self._send(reader, writer, method, data)
            except _ClosedBeforeAnswer:
                # The server closed the idle connection as we reused it: it read
                # nothing of this request, which goes on a fresh connection.
                continue
        try:
            reader, writer = await asyncio.open_unix_connection(self._path, limit=_MAX_HEAD)
        except OSError as e:
            raise aiohttp.ClientConnectionError(
                f"cannot connect to {self._path}: {e}") from e
        try:
            return await self._send(reader, writer, method, data)
        except _ClosedBeforeAnswer as e:
            raise aiohttp.ServerDisconnectedError() from e

    async def _send(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    method: str, data: bytes) -> tuple[int, dict[str, str], bytes]:
        keep = False
        try:
            writer.write(data)
            try:
                line = await reader.readline()
            except ConnectionError:
                line = b""
            if not line:
                raise _ClosedBeforeAnswer
            status, headers, body, keep = await _read_response(reader, line, method)
            return status, headers, body
        finally:
            if keep and not self._closed:
                self._idle.append((reader, writer))
            else:
                writer.close()


class _ClosedBeforeAnswer(Exception):
    pass


async def _read_response(reader: asyncio.StreamReader, line: bytes, method: str
                         ) -> tuple[int, dict[str, str], bytes, bool]:
    try:
        version, code, *_ = line.split(b" ", 2)
        status = int(code)
    except ValueError:
        raise aiohttp.ClientResponseError(
            None, (), message=f"malformed status line {line[:80]!r}") from None  # type: ignore[arg-type]
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        raise aiohttp.ServerDisconnectedError() from None
    headers: dict[str, str] = {}
    for field in raw[:-4].decode("latin-1").split("\r\n"):
        name, sep, value = field.partition(":")
        if sep:
            # Header names keep the server's case, as aiohttp's CIMultiDict shows them.
            headers[name.strip()] = value.strip()
    lower = {k.lower(): v for k, v in headers.items()}
    keep = version == b"HTTP/1.1" and lower.get("connection", "").lower() != "close"
    try:
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            body = b""
        elif "chunked" in lower.get("transfer-encoding", "").lower():
            body = await _read_chunked(reader)
        elif "content-length" in lower:
            body = await reader.readexactly(int(lower["content-length"]))
        else:
            body, keep = await reader.read(), False  # until the server closes
    except asyncio.IncompleteReadError:
        raise aiohttp.ServerDisconnectedError() from None
    return status, headers, body, keep


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts = []
    while True:
        size = int((await reader.readline()).split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(parts)
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)
