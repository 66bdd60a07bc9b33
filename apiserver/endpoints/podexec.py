"""`pods/exec` over WebSocket, the way kubectl (1.30+) and client-go speak it (the
protocol: draemu/remotecommand.py).

A kubelet in this process runs the command through its provider (`pod_exec`, see
kubelet/server.py); any other kubelet through its own API (`/exec/...` on its HTTPS
port), which the apiserver connects to and relays frame by frame, as kube-apiserver
proxies the upgraded connection to the kubelet. Clients that only speak SPDY get a 400
that says so.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import aiohttp
from aiohttp import web

from draemu.api.errors import StatusError, bad_request, not_found_error
from draemu.api.types import Obj
from draemu.apiserver.endpoints.kubeletclient import KubeletClient
from draemu.apiserver.endpoints.scope import Scope
from draemu.apiserver.genericregistry.store import Store
from draemu.remotecommand import PROTOCOLS, ExecSession, exit_status, serve_session

__all__ = ["PROTOCOLS", "exit_status", "pod_exec"]


def _flag(scope: Scope, name: str) -> bool:
    return scope.query.get(name, "").lower() in ("true", "1")


def _spdy_only() -> StatusError:
    return bad_request("pods/exec is served over WebSocket only (subprotocol "
                       f"{' or '.join(PROTOCOLS)}); this client asked for an upgrade "
                       "draemu does not speak (SPDY)")


async def pod_exec(scope: Scope, store: Store, providers: Any, container_of: Any,
                   kubelets: KubeletClient | None = None) -> web.StreamResponse:
    pod = await store.storage.get(scope.resource, scope.namespace, scope.name)
    if pod is None:
        raise not_found_error("pods", "", scope.name)
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        raise bad_request(f"cannot exec into a container in a completed pod; current phase "
                          f"is {phase}")
    container = container_of(pod, scope.name, scope.query.get("container", ""))
    command = scope.request.query.getall("command", [])
    if not command:
        raise bad_request("you must specify at least 1 command")
    stdin, tty = _flag(scope, "stdin"), _flag(scope, "tty")
    if not (stdin or _flag(scope, "stdout") or _flag(scope, "stderr")):
        raise bad_request("you must specify at least 1 of stdin, stdout, stderr")
    node = (pod.get("spec") or {}).get("nodeName")
    if not node:
        raise bad_request(f"pod {scope.name} does not have a host assigned")
    provider = providers.get(node)
    ws = web.WebSocketResponse(protocols=PROTOCOLS, autoping=True)
    upgradable = ws.can_prepare(scope.request).ok
    if provider is None or not hasattr(provider, "pod_exec"):
        if kubelets is None:
            raise StatusError(503, "ServiceUnavailable",
                              f'no exec provider for node "{node}": the node\'s kubelet is '
                              "not connected to this apiserver")
        node_obj = store.objects.lookup("nodes", "", "", node)
        if node_obj is None:
            raise not_found_error("nodes", "", node)
        return await _relay(scope, kubelets, node_obj, container, command, upgradable)
    if not upgradable:
        # What the kubelet would refuse comes first (kubectl retries over SPDY when the
        # WebSocket upgrade fails, and shows this answer).
        await provider.pod_exec(scope.namespace, scope.name, container, [], stdin, tty)
        raise _spdy_only()
    session: ExecSession = await provider.pod_exec(scope.namespace, scope.name, container,
                                                   command, stdin, tty)
    await ws.prepare(scope.request)
    await serve_session(ws, session, command)
    return ws


async def _relay(scope: Scope, kubelets: KubeletClient, node_obj: Obj, container: str,
                 command: list[str], upgradable: bool) -> web.StreamResponse:
    """Connect to the node's kubelet (its refusal, before any upgrade, is the answer) and
    relay the frames both ways until either end closes."""
    query = [(k, v) for k in ("stdin", "stdout", "stderr", "tty")
             if (v := scope.query.get(k))] + [("command", c) for c in command]
    offered = [p.strip() for p in scope.request.headers.get("Sec-WebSocket-Protocol", "")
               .split(",") if p.strip() in PROTOCOLS] if upgradable else []
    upstream = await kubelets.exec(node_obj, scope.namespace, scope.name, container, query,
                                   offered, verify=not _flag(scope, "insecureSkipTLSVerifyBackend"))
    if upstream is None:  # the kubelet would run it, but this client cannot upgrade
        raise _spdy_only()
    try:
        ws = web.WebSocketResponse(protocols=(upstream.protocol,) if upstream.protocol
                                   else PROTOCOLS, autoping=True)
        await ws.prepare(scope.request)
        to_kubelet = asyncio.create_task(_pump_to_kubelet(ws, upstream))
        try:
            async for msg in upstream:
                if msg.type == aiohttp.WSMsgType.BINARY:
                    await ws.send_bytes(msg.data)
                elif msg.type == aiohttp.WSMsgType.TEXT:
                    await ws.send_str(msg.data)
                else:
                    break
        except (ConnectionError, RuntimeError):
            pass
        finally:
            to_kubelet.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await to_kubelet
            await ws.close()
        return ws
    finally:
        await upstream.close()


async def _pump_to_kubelet(ws: web.WebSocketResponse,
                           upstream: aiohttp.ClientWebSocketResponse) -> None:
    try:
        async for msg in ws:
            if msg.type == aiohttp.WSMsgType.BINARY:
                await upstream.send_bytes(msg.data)
            elif msg.type == aiohttp.WSMsgType.TEXT:
                await upstream.send_str(msg.data)
    except (ConnectionError, RuntimeError):
        pass
    # The client went away: closing the kubelet's end kills the command there.
    await upstream.close()
