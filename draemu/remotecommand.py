"""The remote-command protocol of `pods/exec` over WebSocket, shared by the kubelet (which
runs the command) and the apiserver (which relays it, or runs it through an in-process
kubelet): the `v5.channel.k8s.io` (or `v4.channel.k8s.io`) subprotocol, binary messages
whose first byte is the stream (0 stdin, 1 stdout, 2 stderr, 3 error, 4 resize; v5: 255
closes a stream, `[255, 0]` ends stdin). The command's end is a `Status` on stream 3:
Success, or Failure with reason NonZeroExitCode and the exit code as an ExitCode cause,
as the kubelet sends it (k8s.io/client-go/tools/remotecommand, kubelet's
cri/streaming/remotecommand).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any, Protocol

from aiohttp import WSMsgType, web

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
# Query parameters of pods/exec that the kubelet's /exec understands.
EXEC_PARAMETERS = ("command", "stdin", "stdout", "stderr", "tty")
# Seconds between the upgrade and the first output frame. Older client-go WebSocket
# executors (kubectl 1.32's, say) start reading frames before they have created their
# stdout/stderr streams and drop frames for a stream they do not know yet ("Unknown
# stream, discarding message"; v0.37 waits for its streams first): a command that writes
# at once would lose its first lines. Give such clients that moment.
STREAM_SETUP_GRACE = 0.2


class ExecSession(Protocol):
    def output(self) -> Any: ...
    async def write(self, data: bytes) -> None: ...
    def close_stdin(self) -> None: ...
    def resize(self, width: int, height: int) -> None: ...
    async def wait(self) -> int: ...
    def kill(self) -> None: ...


def exit_status(code: int, command: list[str]) -> dict[str, Any]:
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {"metadata": {}, "status": "Failure",
            "message": f"command terminated with non-zero exit code: error executing command "
                       f"[{' '.join(command)}], exit code {code}",
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}


async def serve_session(ws: web.WebSocketResponse, session: ExecSession,
                        command: list[str]) -> None:
    """Stream a started session over a prepared WebSocket until the command ends (its
    exit Status on the error stream) or the caller goes away (the command is killed)."""
    v5 = ws.ws_protocol == PROTOCOLS[0]
    reader = asyncio.create_task(_client_frames(ws, session, v5))
    try:
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
