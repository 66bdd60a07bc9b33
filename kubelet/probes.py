"""Container probes (startup, liveness, readiness) of kind exec, httpGet, tcpSocket and
grpc, run as the kubelet's prober does: after `initialDelaySeconds`, every
`periodSeconds`, each try bounded by `timeoutSeconds`; `failureThreshold` failures in a
row fail the probe, `successThreshold` successes pass it. Liveness and readiness wait
for the startup probe. A failed startup or liveness probe restarts the container.

Network probes dial from inside the pod's network namespace (the runtime's `dial`),
to 127.0.0.1 unless the probe names a host.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from draemu.api.types import Obj
from draemu.log import get_logger

log = get_logger("kubelet.probes")
Dial = Callable[[str, int, float], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]
Exec = Callable[[list[str], float], Awaitable[tuple[int, bytes]]]
KINDS = ("exec", "httpGet", "tcpSocket", "grpc")
# grpc.health.v1.HealthCheckResponse.ServingStatus
SERVING = 1
HEALTH_STATUS = {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}


def _health_request(service: str) -> bytes:
    """grpc.health.v1.HealthCheckRequest{service} in protobuf wire format."""
    data = service.encode()
    if not data:
        return b""
    length, out = len(data), bytearray(b"\x0a")
    while True:
        byte, length = length & 0x7F, length >> 7
        out.append(byte | (0x80 if length else 0))
        if not length:
            return bytes(out) + data


def _health_status(message: bytes) -> int:
    """The `status` (field 1, varint) of a grpc.health.v1.HealthCheckResponse."""
    i, status = 0, 0
    while i < len(message):
        key = message[i]
        i += 1
        value = shift = 0
        if key & 7 == 0:
            while True:
                value |= (message[i] & 0x7F) << shift
                shift += 7
                i += 1
                if not message[i - 1] & 0x80:
                    break
            if key >> 3 == 1:
                status = value
        else:
            return status  # no other fields in this message
    return status


@dataclass
class Verdict:
    ok: bool
    message: str = ""


def _port(container: Obj, port: Any) -> int:
    if isinstance(port, int):
        return port
    if isinstance(port, str) and port.isdigit():
        return int(port)
    for p in container.get("ports") or []:
        if p.get("name") == port:
            return int(p["containerPort"])
    raise ValueError(f"port {port!r} is not a port of the container")


class ProbeRunner:
    """Runs one try of a probe against one container."""

    def __init__(self, container: Obj, dial: Dial, exec_: Exec) -> None:
        self.container = container
        self.dial = dial
        self.exec = exec_

    async def run(self, probe: Obj) -> Verdict:
        timeout = float(probe.get("timeoutSeconds") or 1)
        try:
            if "exec" in probe:
                code, out = await self.exec(list(probe["exec"].get("command") or []), timeout)
                text = out.decode(errors="replace").strip()
                return Verdict(code == 0, text if code == 0 else
                               f"command {probe['exec'].get('command')} exited with {code}: "
                               f"{text}".rstrip(": "))
            if "tcpSocket" in probe:
                tcp = probe["tcpSocket"]
                port = _port(self.container, tcp.get("port"))
                _r, w = await asyncio.wait_for(
                    self.dial(tcp.get("host") or "127.0.0.1", port, timeout), timeout)
                w.close()
                return Verdict(True)
            if "httpGet" in probe:
                return await asyncio.wait_for(self._http(probe["httpGet"], timeout), timeout)
            if "grpc" in probe:
                return await asyncio.wait_for(self._grpc(probe["grpc"], timeout), timeout)
        except TimeoutError:
            return Verdict(False, f"timeout: probe did not answer within {timeout:g}s")
        except (OSError, ValueError) as err:
            return Verdict(False, str(err))
        return Verdict(False, f"probe has none of {', '.join(KINDS)}")

    async def _http(self, get: Obj, timeout: float) -> Verdict:
        host = get.get("host") or "127.0.0.1"
        port = _port(self.container, get.get("port"))
        path = get.get("path") or "/"
        reader, writer = await self.dial(host, port, timeout)
        if (get.get("scheme") or "HTTP").upper() == "HTTPS":
            # As the kubelet's prober: TLS without checking the certificate.
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            await writer.start_tls(context, server_hostname=host)
        headers = {"Host": f"{host}:{port}", "User-Agent": "kube-probe/1.37",
                   "Accept": "*/*", "Connection": "close"}
        for h in get.get("httpHeaders") or []:
            headers[h["name"]] = h["value"]
        writer.write((f"GET {path} HTTP/1.1\r\n" + "".join(
            f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n").encode())
        await writer.drain()
        status_line = (await reader.readline()).decode(errors="replace").strip()
        writer.close()
        parts = status_line.split(" ", 2)
        if len(parts) < 2 or not parts[1].isdigit():
            return Verdict(False, f"HTTP probe failed: bad response {status_line!r}")
        code = int(parts[1])
        if 200 <= code < 400:
            return Verdict(True)
        return Verdict(False, f"HTTP probe failed with statuscode: {code}")

    async def _grpc(self, spec: Obj, timeout: float) -> Verdict:
        import grpc

        port = int(spec["port"])
        # grpc dials by address: a loopback listener here splices into the pod's port.
        server = await asyncio.start_server(
            lambda r, w: self._splice(r, w, port, timeout), "127.0.0.1", 0)
        local = server.sockets[0].getsockname()[1]
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{local}") as channel:
                check = channel.unary_unary("/grpc.health.v1.Health/Check",
                                            request_serializer=None,
                                            response_deserializer=None)
                answer = await check(_health_request(spec.get("service") or ""),
                                     timeout=timeout)
        except grpc.aio.AioRpcError as err:
            return Verdict(False, f"rpc error: code = {err.code().name.title()} desc = "
                           f"{err.details()}")
        finally:
            server.close()
        status = _health_status(answer)
        if status != SERVING:
            name = HEALTH_STATUS.get(status, str(status))
            return Verdict(False, f'service unhealthy (responded with "{name}")')
        return Verdict(True)

    async def _splice(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                      port: int, timeout: float) -> None:
        from draemu.streams import splice

        try:
            upstream = await self.dial("127.0.0.1", port, timeout)
        except (OSError, TimeoutError):
            writer.close()
            return
        await splice((reader, writer), upstream)


class ContainerProber:
    """The probes of one running container. `on_change()` when readiness or startedness
    changes; `on_failure(kind, message)` when a startup or liveness probe fails (the
    caller restarts the container)."""

    def __init__(self, container: Obj, runner: ProbeRunner,
                 on_change: Callable[[], None],
                 on_event: Callable[[str, str], Awaitable[None]],
                 on_failure: Callable[[str], Awaitable[None]]) -> None:
        self.container = container
        self.runner = runner
        self.on_change = on_change
        self.on_event = on_event
        self.on_failure = on_failure
        self.started = "startupProbe" not in container
        self.ready = "readinessProbe" not in container
        self._tasks: list[asyncio.Task[None]] = []
        self._started_event = asyncio.Event()
        if self.started:
            self._started_event.set()

    def start(self) -> None:
        for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
            if kind in self.container:
                self._tasks.append(asyncio.create_task(self._loop(kind), name=kind))

    def stop(self) -> None:
        for task in self._tasks:
            task.cancel()

    async def _loop(self, kind: str) -> None:
        probe = self.container[kind]
        period = float(probe.get("periodSeconds") or 10)
        failures_needed = int(probe.get("failureThreshold") or 3)
        successes_needed = int(probe.get("successThreshold") or 1)
        if kind != "startupProbe":
            await self._started_event.wait()
        await asyncio.sleep(float(probe.get("initialDelaySeconds") or 0))
        failures = successes = 0
        label = {"startupProbe": "Startup", "livenessProbe": "Liveness",
                 "readinessProbe": "Readiness"}[kind]
        while True:
            verdict = await self.runner.run(probe)
            if verdict.ok:
                failures, successes = 0, successes + 1
                if successes >= successes_needed:
                    self._passed(kind)
                    if kind == "startupProbe":
                        return
            else:
                successes, failures = 0, failures + 1
                with contextlib.suppress(Exception):
                    await self.on_event("Unhealthy", f"{label} probe failed: {verdict.message}")
                if failures >= failures_needed and not await self._failed(kind, label):
                    return
            await asyncio.sleep(period)

    async def _failed(self, kind: str, label: str) -> bool:
        """A probe past its failure threshold: readiness turns the container unready (and
        keeps probing: True); startup and liveness restart it (the loop ends: False)."""
        if kind == "readinessProbe":
            if self.ready:
                self.ready = False
                self.on_change()
            return True
        await self.on_failure(f"Container {self.container['name']} failed "
                              f"{label.lower()} probe, will be restarted")
        return False

    def _passed(self, kind: str) -> None:
        if kind == "startupProbe" and not self.started:
            self.started = True
            self._started_event.set()
            self.on_change()
        elif kind == "readinessProbe" and not self.ready:
            self.ready = True
            self.on_change()
