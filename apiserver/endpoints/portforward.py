"""`pods/portforward`: kubectl port-forward and client-go's port forwarders, over SPDY/3.1
(an upgraded connection, `Upgrade: SPDY/3.1`) or SPDY tunnelled in a WebSocket
(subprotocol `SPDY/3.1+portforward.k8s.io`, what kubectl 1.31+ tries first). The
apiserver serves the SPDY session itself (draemu/portforward.py) and reaches the pod's
ports through its node's kubelet: a kubelet in this process through its provider, any
other through its API (`/portForward/...`), one kubelet connection per forwarded
connection, as kube-apiserver's streams end at the kubelet.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import WSMsgType, web

from draemu.api.errors import bad_request, not_found_error
from draemu.api.types import Obj
from draemu.apiserver.endpoints.kubeletclient import KubeletClient
from draemu.apiserver.endpoints.scope import Scope
from draemu.apiserver.genericregistry.store import Store
from draemu.portforward import (
    PROTOCOL,
    SPDY,
    TUNNELED,
    PortConnection,
    PortForwardSession,
    kubelet_error,
)


class WebSocketTransport:
    """The SPDY byte stream in a WebSocket's binary messages."""

    def __init__(self, ws: web.WebSocketResponse) -> None:
        self.ws = ws

    async def recv(self) -> bytes:
        async for msg in self.ws:
            if msg.type == WSMsgType.BINARY and msg.data:
                return bytes(msg.data)
            if msg.type != WSMsgType.BINARY:
                break
        return b""

    async def send(self, data: bytes) -> None:
        await self.ws.send_bytes(data)


class UpgradedTransport:
    """The SPDY byte stream of an upgraded HTTP connection: what arrives after the
    request is fed here (the connection's parser, RequestHandler.set_parser)."""

    def __init__(self, request: web.Request) -> None:
        self.request = request
        self.incoming: asyncio.Queue[bytes] = asyncio.Queue()

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        self.incoming.put_nowait(bytes(data))
        return False, b""

    def feed_eof(self) -> None:
        self.incoming.put_nowait(b"")

    async def recv(self) -> bytes:
        return await self.incoming.get()

    async def send(self, data: bytes) -> None:
        transport = self.request.transport
        if transport is None or transport.is_closing():
            raise ConnectionResetError("the client went away")
        transport.write(data)


def _offered(request: web.Request, header: str) -> list[str]:
    return [p.strip() for value in request.headers.getall(header, [])
            for p in value.split(",") if p.strip()]


async def pod_port_forward(scope: Scope, store: Store, providers: Any,
                           kubelets: KubeletClient) -> web.StreamResponse:
    pod = await store.storage.get(scope.resource, scope.namespace, scope.name)
    if pod is None:
        raise not_found_error("pods", "", scope.name)
    node = (pod.get("spec") or {}).get("nodeName")
    if not node:
        raise bad_request(f"pod {scope.name} does not have a host assigned")
    request = scope.request
    dial = _dialer(scope, store, providers, kubelets, node)
    uid = pod["metadata"]["uid"]
    name = f"{scope.name}_{scope.namespace}"

    def describe(port: int, reason: str) -> str:
        return kubelet_error(port, name, uid, reason)

    ws = web.WebSocketResponse(protocols=(TUNNELED,), autoping=True, max_msg_size=0)
    if ws.can_prepare(request).ok and TUNNELED in _offered(request, "Sec-WebSocket-Protocol"):
        await ws.prepare(request)
        await PortForwardSession(WebSocketTransport(ws), dial, describe).serve()
        await ws.close()
        return ws
    if request.headers.get("Upgrade", "").lower() != SPDY.lower():
        raise bad_request("unable to upgrade connection: missing upgrade headers in request")
    protocols = _offered(request, "X-Stream-Protocol-Version")
    if protocols and PROTOCOL not in protocols:
        raise bad_request(f"unable to upgrade connection: unable to negotiate protocol: "
                          f"client supports {protocols}, server supports [{PROTOCOL}]")
    response = web.StreamResponse(status=101, headers={
        "Connection": "Upgrade", "Upgrade": SPDY, "X-Stream-Protocol-Version": PROTOCOL})
    await response.prepare(request)
    transport = UpgradedTransport(request)
    request.protocol.set_parser(transport)  # type: ignore[arg-type]
    try:
        await PortForwardSession(transport, dial, describe).serve()
    finally:
        if request.transport is not None:
            request.transport.close()
    return response


def _dialer(scope: Scope, store: Store, providers: Any, kubelets: KubeletClient,
            node: str) -> Any:
    """dial(port): a connection to the pod's port through its node's kubelet."""
    provider = providers.get(node)
    verify = scope.query.get("insecureSkipTLSVerifyBackend", "").lower() not in ("true", "1")

    async def dial(port: int) -> PortConnection:
        if provider is not None and hasattr(provider, "pod_port_forward"):
            return await provider.pod_port_forward(scope.namespace, scope.name, port)
        node_obj: Obj | None = store.objects.lookup("nodes", "", "", node)
        if node_obj is None:
            raise OSError(f'node "{node}" not found')
        return await kubelets.port_forward(node_obj, scope.namespace, scope.name, port,
                                           verify=verify)

    return dial
