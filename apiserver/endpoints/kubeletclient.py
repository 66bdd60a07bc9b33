"""The apiserver's client of kubelets in their own process: `pods/log` is proxied to
`GET https://<node address>:<kubelet port>/containerLogs/<ns>/<pod>/<container>`,
`pods/exec` to a WebSocket on `/exec/<ns>/<pod>/<container>`, as kube-apiserver does it,
and each connection `pods/portforward` forwards to a WebSocket on
`/portForward/<ns>/<pod>?port=P` (the kubelet's port-forwarding channels,
draemu/portforward.py).

The apiserver shows its kube-apiserver-kubelet-client certificate (O=system:masters)
and verifies the kubelet's serving certificate against the cluster CA (as with
`--kubelet-certificate-authority`), unless the caller asked to skip that
(`insecureSkipTLSVerifyBackend`). The address is the first of the Node's InternalIP,
ExternalIP, Hostname (kubeadm's `--kubelet-preferred-address-types`: a kubelet alone on
a host publishes the address its API listens on as InternalIP).

An apiserver serving plain HTTP (`--insecure-http`, loopback only) has no certificates:
it reaches kubelets over plain HTTP, which is how the kubelets `draemu up` starts beside
such an apiserver serve (on loopback addresses).
"""

from __future__ import annotations

import contextlib
import os
import ssl
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

import aiohttp

from draemu.api.errors import StatusError, bad_request
from draemu.log import get_logger
from draemu.pki import PKI
from draemu.portforward import DATA_CHANNEL, ERROR_CHANNEL, KUBELET_PROTOCOL

if TYPE_CHECKING:
    from draemu.netns import NetnsDialer

log = get_logger("apiserver")

PREFERRED_ADDRESS_TYPES = ("InternalIP", "ExternalIP", "Hostname")
DEFAULT_KUBELET_PORT = 10250
# Query parameters of pods/log that the kubelet's /containerLogs understands.
LOG_PARAMETERS = ("follow", "previous", "timestamps", "tailLines", "sinceSeconds",
                  "sinceTime", "limitBytes")
_MAX_ERROR_BODY = 50000
_CONNECT_TIMEOUT = 10.0


def kubelet_endpoint(node: dict[str, Any]) -> tuple[str, int]:
    """The address and port of a Node's kubelet API."""
    status = node.get("status") or {}
    by_type: dict[str, str] = {}
    for item in status.get("addresses") or []:
        by_type.setdefault(item.get("type", ""), item.get("address", ""))
    address = next((by_type[t] for t in PREFERRED_ADDRESS_TYPES if by_type.get(t)), "")
    if not address:
        name = (node.get("metadata") or {}).get("name", "")
        raise bad_request(f'node "{name}" has no address of the preferred types '
                          f'[{" ".join(PREFERRED_ADDRESS_TYPES)}]')
    endpoint = (status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}
    return address, int(endpoint.get("Port") or DEFAULT_KUBELET_PORT)


class KubeletClient:
    def __init__(self, pki: PKI | None, dialer: NetnsDialer | None = None) -> None:
        """`pki` None: plain HTTP, no client certificate. `dialer`: where kubelets on
        the pod network are dialled from (None: this namespace)."""
        self.scheme = "https" if pki is not None else "http"
        self._pki = pki
        self._dialer = dialer
        # Made on first use (loading certificates is a fifth of a second of start-up).
        self._contexts: dict[bool, ssl.SSLContext] = {}
        self._sessions: dict[bool, aiohttp.ClientSession] = {}

    @staticmethod
    def _context(pki: PKI, verify: bool) -> ssl.SSLContext:
        if verify:
            ctx = ssl.create_default_context(cadata=pki.ca.cert_pem.decode())
        else:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        ctx.load_cert_chain(pki.kubelet_client_cert_path, pki.kubelet_client_key_path)
        return ctx

    def _session(self, verify: bool) -> aiohttp.ClientSession:
        session = self._sessions.get(verify)
        if session is None or session.closed:
            # No connection limit: every follow holds one for as long as it lasts.
            context = None
            if self._pki is not None:
                context = self._contexts.get(verify)
                if context is None:
                    context = self._contexts[verify] = self._context(self._pki, verify)
            connector = aiohttp.TCPConnector(
                ssl=context if context is not None else False, limit=0,
                socket_factory=self._dialer.socket_factory if self._dialer else None)
            session = aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(
                total=None, sock_connect=_CONNECT_TIMEOUT))
            self._sessions[verify] = session
        return session

    async def container_logs(self, node: dict[str, Any], namespace: str, pod: str,
                             container: str, query: dict[str, str], verify: bool = True
                             ) -> AsyncGenerator[bytes, None]:
        """Open the kubelet's log stream; errors before the first byte are StatusErrors
        worded as kube-apiserver words them."""
        url, address, port = self._url(node, "containerLogs", namespace, pod, container)
        if query:
            url += "?" + urlencode(query)
        async with _transport_errors(url, address, port):
            resp = await self._session(verify).get(url)
        if not 200 <= resp.status <= 206:
            async with resp:
                body = (await resp.content.read(_MAX_ERROR_BODY)).decode(errors="replace")
            raise _kubelet_error(resp.status, body, pod, "pods/log")
        return _stream(resp)

    async def exec(self, node: dict[str, Any], namespace: str, pod: str, container: str,
                   query: list[tuple[str, str]], protocols: list[str], verify: bool = True
                   ) -> aiohttp.ClientWebSocketResponse | None:
        """The kubelet's WebSocket for a command in a container (`protocols`: the
        subprotocols the caller offered). No protocols: only ask whether the kubelet
        would run it (its refusal is raised; None means it would)."""
        url, address, port = self._url(node, "exec", namespace, pod, container)
        url += "?" + urlencode(query)
        session = self._session(verify)
        async with _transport_errors(url, address, port):
            if not protocols:
                async with session.get(url) as resp:
                    body = (await resp.content.read(_MAX_ERROR_BODY)).decode(errors="replace")
                if resp.status == 400 and body.startswith(UPGRADE_REFUSAL):
                    return None
                raise _kubelet_error(resp.status, body, pod, "pods/exec")
            try:
                return await session.ws_connect(url, protocols=protocols, autoping=True,
                                                max_msg_size=0)
            except aiohttp.WSServerHandshakeError as e:
                # The kubelet's refusal (aiohttp drops the body of a failed handshake:
                # ask again without the upgrade to read it).
                async with session.get(url) as resp:
                    body = (await resp.content.read(_MAX_ERROR_BODY)).decode(errors="replace")
                raise _kubelet_error(resp.status if resp.status != 200 else e.status, body,
                                     pod, "pods/exec") from e

    async def port_forward(self, node: dict[str, Any], namespace: str, pod: str, port: int,
                           verify: bool = True) -> KubeletPortConnection:
        """A connection to the pod's port through its kubelet; OSError says why not."""
        url, address, kubelet_port = self._url(node, "portForward", namespace, pod)
        url += f"?port={port}"
        try:
            ws = await self._session(verify).ws_connect(url, protocols=(KUBELET_PROTOCOL,),
                                                        autoping=True, max_msg_size=0)
        except (aiohttp.ClientError, TimeoutError) as err:
            raise OSError(f"error dialing backend: dial tcp {address}:{kubelet_port}: "
                          f"{err}") from err
        connection = KubeletPortConnection(ws)
        await connection.handshake()
        return connection

    def _url(self, node: dict[str, Any], endpoint: str, *parts: str) -> tuple[str, str, int]:
        address, port = kubelet_endpoint(node)
        host = f"[{address}]" if ":" in address else address
        path = "/".join(quote(p, safe="") for p in parts)
        return f"{self.scheme}://{host}:{port}/{endpoint}/{path}", address, port

    async def close(self) -> None:
        for session in self._sessions.values():
            await session.close()
        self._sessions.clear()


class KubeletPortConnection:
    """A PortConnection (draemu/portforward.py) over the kubelet's port-forwarding
    WebSocket: the data channel's bytes; what the error channel says is raised."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self._prefixes = {DATA_CHANNEL, ERROR_CHANNEL}  # the port, first on each channel

    async def handshake(self) -> None:
        """The two port messages, then an error at once if the kubelet could not dial."""
        while self._prefixes:
            await self._next()

    async def _next(self) -> bytes | None:
        """The next data (b"" at the end); None for a message that carries none."""
        msg = await self.ws.receive()
        if msg.type != aiohttp.WSMsgType.BINARY or not msg.data:
            if msg.type == aiohttp.WSMsgType.BINARY:
                return None
            return b""
        channel, body = msg.data[0], msg.data[1:]
        if channel in self._prefixes:
            self._prefixes.discard(channel)
            return None
        if channel == ERROR_CHANNEL:
            if body:
                await self.ws.close()
                raise OSError(body.decode(errors="replace"))
            return None
        return body if body else None

    async def read(self) -> bytes:
        while True:
            data = await self._next()
            if data is not None:
                return data

    async def write(self, data: bytes) -> None:
        try:
            await self.ws.send_bytes(bytes([DATA_CHANNEL]) + data)
        except (ConnectionError, RuntimeError) as err:
            raise OSError(str(err)) from err

    async def close_write(self) -> None:
        """The kubelet's channels have no half-close: the pod's side stays open until it
        ends the connection."""

    async def close(self) -> None:
        await self.ws.close()


# How a kubelet answers /exec without an upgrade (upstream's httpstream handshake words).
UPGRADE_REFUSAL = "unable to upgrade"


@contextlib.asynccontextmanager
async def _transport_errors(url: str, address: str, port: int) -> AsyncIterator[None]:
    try:
        yield
    except aiohttp.ClientConnectorCertificateError as e:
        raise _unreachable(url, "tls: failed to verify certificate: x509: "
                           f"{e.certificate_error.args[-1]}") from e
    except aiohttp.ClientConnectorError as e:
        # Go's wording of the errno ("connection refused"), not asyncio's message.
        errno = e.os_error.errno
        reason = os.strerror(errno).lower() if errno else str(e.os_error)
        raise _unreachable(url, f"dial tcp {address}:{port}: connect: {reason}") from e
    except aiohttp.WSServerHandshakeError:
        raise
    except aiohttp.ClientError as e:
        raise _unreachable(url, str(e)) from e


def _unreachable(url: str, detail: str) -> StatusError:
    # kube-apiserver answers transport errors as a bare 500 with Go's url.Error text.
    return StatusError(500, "", f'Get "{url}": {detail}')


async def _stream(resp: aiohttp.ClientResponse) -> AsyncGenerator[bytes, None]:
    """The kubelet's answer, chunk by chunk. A kubelet that goes away mid-stream (its node
    stopped while `kubectl logs -f` followed) ends the stream, as a container that stops
    does: the client gets a complete response, this process no traceback."""
    async with resp:
        try:
            async for chunk in resp.content.iter_any():
                yield chunk
        except (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError) as e:
            log.debug("kubelet stream ended early", url=str(resp.url), error=str(e))


_GENERIC = {404: ("NotFound", "the server could not find the requested resource"),
            401: ("Unauthorized", "the server has asked for the client to provide credentials"),
            403: ("Forbidden", "the server does not allow access to the requested resource")}


def _kubelet_error(code: int, body: str, pod: str, kind: str) -> StatusError:
    """A kubelet's error answer as kube-apiserver relays it (its generic response
    checker): 400 and 500 carry the kubelet's text; others a generic message, the text
    as the cause."""
    if code == 400:
        return bad_request(body)
    if code == 500:
        return StatusError(500, "InternalError", f"Internal error occurred: {body}",
                           {"causes": [{"message": body}]})
    reason, message = _GENERIC.get(code, (
        "", f"the server responded with the status code {code} but did not return more "
        "information"))
    return StatusError(code, reason, f"{message} ( {kind} {pod})",
                       {"name": pod, "kind": kind,
                        "causes": [{"reason": "UnexpectedServerResponse", "message": body}]})
