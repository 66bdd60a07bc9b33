"""Serving container logs and exec to the apiserver: in process (a provider the
apiserver calls for `pods/log` and `pods/exec`) or, for a kubelet outside the
apiserver's process, over the kubelet's HTTP API.

`GET /containerLogs/{namespace}/{pod}/{container}` with the query parameters
kube-apiserver forwards for `pods/log` (follow, previous, timestamps, tailLines,
sinceSeconds, sinceTime, limitBytes); `GET /exec/{namespace}/{pod}/{container}` with
`command` (repeated), `stdin`, `stdout`, `stderr`, `tty`, upgraded to a WebSocket of the
remote-command protocol (draemu/remotecommand.py; a request without the upgrade gets the
kubelet's refusal if the command cannot run there, else a 400 "unable to upgrade");
`/portForward/{namespace}/{pod}?port=P`, a WebSocket of the kubelet's port-forwarding
channels for one connection to the pod's port (draemu/portforward.py); plus `/healthz`
and `/pods`. The port is published in the Node's
`status.daemonEndpoints.kubeletEndpoint.Port` and the address as its InternalIP, as on a
real node.

With TLS (`ServingTLS`, how `draemu kubelet` runs it) callers must present a client
certificate from the cluster CA, and only `system:masters` (the apiserver's
kube-apiserver-kubelet-client identity) may call: a real kubelet asks the apiserver
(SubjectAccessReview on nodes/proxy), which grants that to the same group by default.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import WSMsgType, web

from draemu.api.errors import bad_request
from draemu.identity import MASTERS, user_from_peercert
from draemu.kubelet.execsession import ExecError
from draemu.kubelet.logs import LogOptions, pick_log_file, pod_log_dir, stream_log
from draemu.kubelet.servingcert import ServingTLS
from draemu.netns import listening_socket
from draemu.portforward import DATA_CHANNEL, ERROR_CHANNEL, KUBELET_PROTOCOL, PortConnection
from draemu.remotecommand import PROTOCOLS, serve_session

# Which instance (restart count) of a container pods/log reads (PodWorkers.log_instance).
LogInstance = Callable[[str, str, str, bool], "int | None"]
# A connection to port P of pod NAMESPACE/NAME (Kubelet.port_forward).
PortForward = Callable[[str, str, int], Awaitable[PortConnection]]


def _int(value: str | None) -> int | None:
    return int(value) if value not in (None, "") else None


class KubeletServer:
    def __init__(self, pods_dir: Path, find_pod: Callable[[str, str], dict[str, Any] | None],
                 running: Callable[[str, str, str], bool], list_pods: Callable[[], list[Any]],
                 address: str = "127.0.0.1", port: int = 0, tls: ServingTLS | None = None,
                 instance: LogInstance = lambda _ns, _pod, _c, _prev: None,
                 exec_: Callable[..., Awaitable[Any]] | None = None,
                 netns: str | None = None, port_forward: PortForward | None = None) -> None:
        self.pods_dir = pods_dir
        self.netns = netns  # listen in this network namespace (its node's), not here
        self.port_forward = port_forward
        self.exec = exec_
        self.instance = instance
        self.find_pod = find_pod
        self.running = running
        self.list_pods = list_pods
        self.address = address
        self.port = port
        self.tls = tls
        self._runner: web.AppRunner | None = None
        self._stopping = False  # follow streams end (completely) when the kubelet stops

    async def start(self) -> None:
        app = web.Application(middlewares=[_authorize] if self.tls else [])
        app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", self._logs)
        app.router.add_get("/exec/{namespace}/{pod}/{container}", self._exec)
        app.router.add_route("*", "/portForward/{namespace}/{pod}", self._port_forward)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/pods", self._pods)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        sock = await asyncio.to_thread(listening_socket, self.netns, self.address, self.port)
        self.port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock,
                           ssl_context=self.tls.ssl_context() if self.tls else None).start()

    async def stop(self) -> None:
        self._stopping = True
        if self._runner:
            await self._runner.cleanup()

    async def _healthz(self, _request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _pods(self, _request: web.Request) -> web.Response:
        return web.json_response({"kind": "PodList", "apiVersion": "v1", "metadata": {},
                                  "items": self.list_pods()})

    async def _logs(self, request: web.Request) -> web.StreamResponse:
        ns, name, container = (request.match_info[k] for k in ("namespace", "pod", "container"))
        pod = self.find_pod(ns, name)
        if pod is None:
            return web.Response(status=404, text=f'pod "{name}" not found')
        uid = pod["metadata"]["uid"]
        q = request.query
        opts = LogOptions(follow=q.get("follow") == "true", previous=q.get("previous") == "true",
                          timestamps=q.get("timestamps") == "true",
                          tail_lines=_int(q.get("tailLines")),
                          since_seconds=_int(q.get("sinceSeconds")),
                          since_time=q.get("sinceTime") or None,
                          limit_bytes=_int(q.get("limitBytes")))
        path = pick_log_file(pod_log_dir(self.pods_dir, ns, name, uid) / container, opts.previous,
                             self.instance(ns, name, container, opts.previous))
        if path is None:
            return web.Response(status=400, text=_missing_log(name, container, opts.previous))
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        try:
            async for chunk in stream_log(
                    path, opts, lambda: not self._stopping and self.running(ns, name, container)):
                await response.write(chunk)
            await response.write_eof()
        except ConnectionResetError:  # the apiserver (its client) went away: nothing to say
            pass
        return response


    async def _exec(self, request: web.Request) -> web.StreamResponse:
        ns, name, container = (request.match_info[k] for k in ("namespace", "pod", "container"))
        if self.find_pod(ns, name) is None:
            return web.Response(status=404, text=f'pod "{name}" not found')
        command = request.query.getall("command", [])
        stdin = request.query.get("stdin", "").lower() in ("true", "1")
        tty = request.query.get("tty", "").lower() in ("true", "1")
        if not command:
            return web.Response(status=400, text="you must specify at least 1 command")
        if self.exec is None:
            return web.Response(status=400, text=f'container not found ("{container}")')
        try:
            await self.exec(ns, name, container, [], stdin, tty)  # can it run there?
        except ExecError as err:
            return web.Response(status=400, text=str(err))
        ws = web.WebSocketResponse(protocols=PROTOCOLS, autoping=True)
        if not ws.can_prepare(request).ok:
            return web.Response(status=400, text=f"{UPGRADE_REFUSAL}: missing upgrade "
                                "headers in request")
        try:
            session = await self.exec(ns, name, container, command, stdin, tty)
        except ExecError as err:
            return web.Response(status=400, text=str(err))
        await ws.prepare(request)
        await serve_session(ws, session, command)
        return ws


    async def _port_forward(self, request: web.Request) -> web.StreamResponse:
        """One connection to one port of the pod (`port`), over a WebSocket of the
        kubelet's port forwarding protocol (draemu/portforward.py)."""
        ns, name = request.match_info["namespace"], request.match_info["pod"]
        if request.method not in ("GET", "POST"):
            return web.Response(status=405, text="method not allowed")
        if self.find_pod(ns, name) is None:
            return web.Response(status=404, text=f'pod "{name}" not found')
        port_text = request.query.get("port") or request.query.get("ports", "")
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            return web.Response(status=400, text=f"invalid port {port_text!r}")
        port = int(port_text)
        ws = web.WebSocketResponse(protocols=(KUBELET_PROTOCOL,), autoping=True)
        if not ws.can_prepare(request).ok:
            return web.Response(status=400, text=f"{UPGRADE_REFUSAL}: missing upgrade "
                                "headers in request")
        await ws.prepare(request)
        prefix = port.to_bytes(2, "little")
        await ws.send_bytes(bytes([DATA_CHANNEL]) + prefix)
        await ws.send_bytes(bytes([ERROR_CHANNEL]) + prefix)
        try:
            if self.port_forward is None:
                raise OSError("port forwarding is not served by this kubelet")
            connection = await self.port_forward(ns, name, port)
        except (OSError, TimeoutError) as err:
            await ws.send_bytes(bytes([ERROR_CHANNEL]) + str(err).encode())
            await ws.close()
            return ws
        await relay_channels(ws, connection)
        return ws


async def relay_channels(ws: web.WebSocketResponse, connection: PortConnection) -> None:
    """The pod's bytes out on the data channel, the data channel's bytes in, until
    either side ends."""
    async def outward() -> None:
        while data := await connection.read():
            await ws.send_bytes(bytes([DATA_CHANNEL]) + data)
        await ws.close()

    sending = asyncio.create_task(outward())
    try:
        async for msg in ws:
            if msg.type == WSMsgType.BINARY and msg.data[:1] == bytes([DATA_CHANNEL]):
                await connection.write(msg.data[1:])
    except (ConnectionError, OSError, RuntimeError):
        pass
    finally:
        sending.cancel()
        with contextlib.suppress(asyncio.CancelledError, ConnectionError, RuntimeError):
            await sending
        await connection.close()


UPGRADE_REFUSAL = "unable to upgrade"


@web.middleware
async def _authorize(request: web.Request, handler: Callable[[web.Request], Any]
                     ) -> web.StreamResponse:
    ssl_object = request.transport.get_extra_info("ssl_object") if request.transport else None
    user = user_from_peercert(ssl_object.getpeercert()) if ssl_object else None
    if user is None:
        return web.Response(status=401, text="Unauthorized")
    if MASTERS not in user.groups:
        # The kubelet's wording (subresource "proxy" covers /containerLogs and /pods).
        return web.Response(status=403, text=f"Forbidden (user={user.name}, verb=get, "
                            "resource=nodes, subresource=proxy)")
    return await handler(request)


def _missing_log(name: str, container: str, previous: bool) -> str:
    if previous:
        return f'previous terminated container "{container}" in pod "{name}" not found'
    return f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating'


class LogProvider:
    """What the in-process apiserver asks for `pods/log`, `pods/exec` and
    `pods/portforward` on this node."""

    def __init__(self, pods_dir: Path, running: Callable[[str, str, str], bool],
                 instance: LogInstance = lambda _ns, _pod, _c, _prev: None,
                 exec_: Callable[..., Awaitable[Any]] | None = None,
                 port_forward: PortForward | None = None) -> None:
        self.pods_dir = pods_dir
        self.running = running
        self.instance = instance
        self.exec = exec_
        self.port_forward = port_forward

    async def pod_port_forward(self, namespace: str, pod: str, port: int) -> PortConnection:
        """A connection to the pod's port (inside its network namespace); OSError says
        why not."""
        if self.port_forward is None:
            raise OSError("port forwarding is not served by this kubelet")
        return await self.port_forward(namespace, pod, port)

    async def pod_exec(self, namespace: str, pod: str, container: str, command: list[str],
                       stdin: bool, tty: bool) -> Any:
        """An ExecSession (kubelet/execsession.py) running `command` in the container."""
        if self.exec is None:
            raise bad_request(f'container not found ("{container}")')
        try:
            return await self.exec(namespace, pod, container, command, stdin, tty)
        except ExecError as err:
            raise bad_request(str(err)) from err

    async def pod_log(self, namespace: str, pod: str, uid: str,
                      options: Any) -> AsyncGenerator[bytes, None]:
        opts = LogOptions(follow=options.follow, previous=options.previous,
                          timestamps=options.timestamps, tail_lines=options.tail_lines,
                          since_seconds=options.since_seconds,
                          limit_bytes=options.limit_bytes)
        container = options.container
        path = pick_log_file(pod_log_dir(self.pods_dir, namespace, pod, uid) / container,
                             opts.previous, self.instance(namespace, pod, container,
                                                          opts.previous))
        if path is None:
            raise bad_request(_missing_log(pod, container, opts.previous))
        async for chunk in stream_log(
                path, opts, lambda: not self._stopping and self.running(namespace, pod, container)):
            yield chunk
