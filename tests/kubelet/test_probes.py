"""The prober's httpGet over HTTPS: TLS without checking the certificate, as the
kubelet's (a webhook's or an operator's self-signed serving certificate)."""

import asyncio
import ssl

import pytest

from draemu import pki
from draemu.kubelet.probes import ProbeRunner

pytestmark = pytest.mark.unit


async def _tls_server(tmp_path, status: int) -> asyncio.base_events.Server:
    pair = pki.make_kubelet_serving_cert(pki.make_ca(), "probe", ["127.0.0.1"])
    (tmp_path / "tls.crt").write_bytes(pair.cert_pem)
    (tmp_path / "tls.key").write_bytes(pair.key_pem)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(f"HTTP/1.1 {status} X\r\nContent-Length: 0\r\n\r\n".encode())
        await writer.drain()
        writer.close()

    return await asyncio.start_server(answer, "127.0.0.1", 0, ssl=context)


async def _dial(host: str, port: int, timeout: float):
    return await asyncio.open_connection(host, port)


async def _exec(_argv: list[str], _timeout: float) -> tuple[int, bytes]:
    raise AssertionError("no exec probe here")


@pytest.mark.parametrize(("status", "ok"), [(200, True), (500, False)])
async def test_an_https_probe_takes_a_self_signed_certificate(tmp_path, status, ok):
    server = await _tls_server(tmp_path, status)
    port = server.sockets[0].getsockname()[1]
    runner = ProbeRunner({"name": "c", "ports": []}, _dial, _exec)
    try:
        verdict = await runner.run({"httpGet": {"path": "/readyz", "port": port,
                                                "scheme": "HTTPS"}, "timeoutSeconds": 5})
    finally:
        server.close()
    assert verdict.ok is ok, verdict.message
