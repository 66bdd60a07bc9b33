"""`pods/exec` over WebSocket, the way kubectl (1.30+) and client-go speak it: the
`v5.channel.k8s.io` (or `v4.channel.k8s.io`) subprotocol, binary messages whose first
byte is the stream (0 stdin, 1 stdout, 2 stderr, 3 error, 4 resize; v5: 255 closes a
stream, `[255, 0]` ends stdin). The command's end is a `Status` on stream 3: Success, or
Failure with reason NonZeroExitCode and the exit code as an ExitCode cause, as the
kubelet sends it.

In-process kubelets run the command through their provider (`pod_exec`, see
kubelet/server.py). Clients that only speak SPDY get a 400 that says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any, Protocol

from aiohttp import WSMsgType, web

from draemu.api.errors import StatusError, bad_request, not_found_error
from draemu.api.types import Obj
from draemu.apiserver.scope import Scope
from draemu.apiserver.storage import Storage

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255


class ExecSession(Protocol):
    def output(self) -> Any: ...
    async def write(self, data: bytes) -> None: ...
    def close_stdin(self) -> None: ...
    def resize(self, width: int, height: int) -> None: ...
    async def wait(self) -> int: ...
    def kill(self) -> None: ...


STREAM_SETUP_GRACE = 0.2  # seconds between the upgrade and the first output frame


def _flag(scope: Scope, name: str) -> bool:
    return scope.query.get(name, "").lower() in ("true", "1")


def exit_status(code: int, command: list[str]) -> Obj:
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {"metadata": {}, "status": "Failure",
            "message": f"command terminated with non-zero exit code: error executing command "
                       f"[{' '.join(command)}], exit code {code}",
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}


async def pod_exec(scope: Scope, storage: Storage, providers: Any,
                   container_of: Any) -> web.StreamResponse:
    pod = await storage.get(scope.resource, scope.namespace, scope.name)
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
    if provider is None or not hasattr(provider, "pod_exec"):
        raise StatusError(503, "ServiceUnavailable",
                          f'no exec provider for node "{node}": the node\'s kubelet is not '
                          "in this apiserver's process")
    ws = web.WebSocketResponse(protocols=PROTOCOLS, autoping=True)
    if not ws.can_prepare(scope.request).ok:
        # What the kubelet would refuse comes first (kubectl retries over SPDY when the
        # WebSocket upgrade fails, and shows this answer).
        await provider.pod_exec(scope.namespace, scope.name, container, [], stdin, tty)
        raise bad_request("pods/exec is served over WebSocket only (subprotocol "
                          f"{' or '.join(PROTOCOLS)}); this client asked for an upgrade "
                          "draemu does not speak (SPDY)")
    session: ExecSession = await provider.pod_exec(scope.namespace, scope.name, container,
                                                   command, stdin, tty)
    await ws.prepare(scope.request)
    v5 = ws.ws_protocol == PROTOCOLS[0]
    reader = asyncio.create_task(_client_frames(ws, session, v5))
    try:
        # Older client-go WebSocket executors (kubectl 1.32's, say) start reading frames
        # before they have created their stdout/stderr streams and drop frames for a
        # stream they do not know yet ("Unknown stream, discarding message"; v0.37 waits
        # for its streams first): a command that writes at once would lose its first
        # lines. Give such clients that moment.
        await asyncio.sleep(STREAM_SETUP_GRACE)
        async for channel, data in session.output():
            await ws.send_bytes(bytes([channel]) + data)
        code = await session.wait()
        await ws.send_bytes(bytes([ERROR]) + json.dumps(exit_status(code, command)).encode())
    except (ConnectionError, RuntimeError):
        session.kill()
    finally:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader
        await ws.close()
    return ws


async def _client_frames(ws: web.WebSocketResponse, session: ExecSession, v5: bool) -> None:
    async for msg in ws:
        if msg.type != WSMsgType.BINARY or not msg.data:
            continue
        channel, payload = msg.data[0], msg.data[1:]
        if channel == STDIN:
            await session.write(payload)
        elif channel == RESIZE:
            with contextlib.suppress(ValueError, KeyError, TypeError):
                size = json.loads(payload)
                session.resize(int(size["Width"]), int(size["Height"]))
        elif v5 and channel == CLOSE and payload[:1] == bytes([STDIN]):
            session.close_stdin()
    session.kill()  # the client went away
