"""HTTP/1.1 for the requests of draemu's components: over the apiserver's loopback Unix
socket (components in `draemu up`'s child, the apiserver's own loopback clients), or over
TCP with TLS (`draemu scheduler`, `draemu controllers`, `draemu kubelet` and every other
client of a kubeconfig).

aiohttp's client costs about 100 us of CPU per request (URL building, request and
response objects, timers); the scheduler and the controllers make six requests per pod,
on one core with everything else they do (a third of a standalone scheduler's samples
were in aiohttp's client and TLS). Here a request is one write of its head and body and
a read of the response on a kept-alive connection: status line, headers, a body by
Content-Length or chunked. Watches still go through aiohttp (one request each, then a
stream).

Errors are aiohttp's, so callers' `except aiohttp.ClientError` clauses hold: a
connection that cannot be made (refused, a TLS handshake or certificate that fails) is
`ClientConnectionError`, a connection closed before the whole response came is
`ServerDisconnectedError`, a malformed response `ClientResponseError`.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from urllib.parse import quote, urlencode, urlsplit

import aiohttp

# Connections open at once (aiohttp's connector had limit=64).
LIMIT = 64
CONNECT_TIMEOUT = 10.0  # seconds, as the aiohttp session's sock_connect
_MAX_HEAD = 1 << 16

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]


def over_unix(path: str, headers: dict[str, str]) -> LightHTTP:
    """Requests to the server on the Unix socket at `path`."""
    return LightHTTP(lambda: asyncio.open_unix_connection(path, limit=_MAX_HEAD),
                     "localhost", path, headers)


def over_tcp(server: str, ssl_context: ssl.SSLContext | None,
             headers: dict[str, str]) -> LightHTTP:
    """Requests to `server` (`https://host:port`, `http://...`, with a path prefix if the
    apiserver is behind a proxy that adds one), with TLS when it is https (`ssl_context`,
    or the system's defaults)."""
    url = urlsplit(server)
    secure = url.scheme == "https"
    host = url.hostname or "localhost"
    port = url.port or (443 if secure else 80)
    context = (ssl_context or ssl.create_default_context()) if secure else None

    def connect() -> Awaitable[Streams]:
        return asyncio.open_connection(host, port, ssl=context, limit=_MAX_HEAD,
                                       server_hostname=host if context else None)

    return LightHTTP(connect, url.netloc.rpartition("@")[2], server, headers,
                     prefix=url.path.rstrip("/"))


class LightHTTP:
    def __init__(self, connect: Callable[[], Awaitable[Streams]], host: str, where: str,
                 headers: dict[str, str], *, prefix: str = "", limit: int = LIMIT) -> None:
        self._connect = connect
        self._prefix = prefix  # of every request's path
        self._host = host  # the Host header
        self._where = where  # for messages
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
        target = self._prefix + path
        if not target.isascii():  # as aiohttp's URL did: UTF-8, percent-encoded
            target = quote(target, safe="/%:@!$&'()*+,;=~")
        if params:
            target += "?" + urlencode(params)
        head = [f"{method} {target} HTTP/1.1\r\nHost: {self._host}\r\n"]
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
            async with asyncio.timeout(CONNECT_TIMEOUT):
                reader, writer = await self._connect()
        except (OSError, TimeoutError) as e:  # ssl.SSLError is an OSError
            raise aiohttp.ClientConnectionError(
                f"cannot connect to {self._where}: {e or 'timed out'}") from e
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
