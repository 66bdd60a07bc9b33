"""`Client` speaks HTTP/1.1 itself (draemu.client.lighthttp) for every request but watches,
over a Unix socket, TCP or TLS: requests and answers as aiohttp's client gave them,
kept-alive connections reused, and a connection the server closed meanwhile replaced
without losing the request."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from draemu import pki
from draemu.client import ApiError, Client

pytestmark = pytest.mark.unit


class _Server:
    def __init__(self) -> None:
        self.seen: list[dict] = []
        self.peers: list[object] = []  # the transports (kept, so that none is reused)
        self.runner: web.AppRunner | None = None


Connect = Callable[..., Client]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tls(tmp_path: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A server context with a certificate for 127.0.0.1, and a client context that
    trusts its CA only."""
    ca = pki.make_ca()
    serving = pki.make_serving_cert(ca, "127.0.0.1")
    (tmp_path / "tls.crt").write_bytes(serving.cert_pem)
    (tmp_path / "tls.key").write_bytes(serving.key_pem)
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    return server, ssl.create_default_context(cadata=ca.cert_pem.decode())


@pytest.fixture(params=["unix", "tcp", "tls"])
async def server(request: pytest.FixtureRequest,
                 tmp_path: Path) -> AsyncIterator[tuple[_Server, Connect]]:
    """The echo server on one transport, and how to make a client of it (keyword
    arguments go to Client)."""
    srv = _Server()
    async def echo(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        transport = request.transport
        if not any(t is transport for t in srv.peers):
            srv.peers.append(transport)
        srv.seen.append({"method": request.method, "path": request.path,
                         "query": dict(request.query), "body": body,
                         "headers": dict(request.headers)})
        if request.path == "/chunked":
            resp = web.StreamResponse()
            resp.enable_chunked_encoding()
            await resp.prepare(request)
            for part in (b'{"a":', b' 1, "b": ', b'"' + b"x" * 3000 + b'"}'):
                await resp.write(part)
            await resp.write_eof()
            return resp
        if request.path == "/close":
            return web.json_response({"closed": True}, headers={"Connection": "close"})
        if request.path == "/slow":
            await asyncio.sleep(1)
        if request.path == "/missing":
            return web.json_response({"kind": "Status", "code": 404, "reason": "NotFound",
                                      "message": "nope"}, status=404)
        if request.path == "/empty":
            return web.Response(status=204)
        return web.json_response({"method": request.method, "len": len(body)},
                                 headers={"X-Echo": "yes"})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", echo)
    runner = web.AppRunner(app)
    await runner.setup()
    srv.runner = runner
    if request.param == "unix":
        sock = str(tmp_path / "api.sock")
        await web.UnixSite(runner, sock).start()

        def connect(**kw: Any) -> Client:
            return Client("http://localhost", unix_socket=sock, **kw)
    else:
        port = _free_port()
        server_ssl, client_ssl = _tls(tmp_path) if request.param == "tls" else (None, None)
        await web.TCPSite(runner, "127.0.0.1", port, ssl_context=server_ssl).start()
        scheme = "https" if server_ssl else "http"

        def connect(**kw: Any) -> Client:
            return Client(f"{scheme}://127.0.0.1:{port}", ssl_context=client_ssl, **kw)
    yield srv, connect
    await runner.cleanup()




async def test_methods_params_bodies_and_headers_arrive_as_sent(server) -> None:
    srv, connect = server
    async with connect(token="tok", user_agent="ua/1") as client:
        status, headers, body = await client.request(
            "PUT", "/apis/x/v1/things/a%2Fb", params={"labelSelector": "a=b,c in (d)"},
            json={"k": "é"})
        assert status == 200 and headers["X-Echo"] == "yes"
        assert json.loads(body) == {"method": "PUT", "len": len('{"k":"é"}'.encode())}
        got = srv.seen[-1]
        assert got["query"] == {"labelSelector": "a=b,c in (d)"}
        assert got["body"] == '{"k":"é"}'.encode()
        assert got["headers"]["Authorization"] == "Bearer tok"
        assert got["headers"]["User-Agent"] == "ua/1"
        assert got["headers"]["Content-Type"] == "application/json"
        # A request's own header replaces the client's of the same name, whatever case.
        await client.request("GET", "/t", headers={"accept": "application/yaml"})
        accepts = [v for k, v in srv.seen[-1]["headers"].items() if k.lower() == "accept"]
        assert accepts == ["application/yaml"]
        await client.request("POST", "/t", data="plain text")
        assert srv.seen[-1]["body"] == b"plain text"


async def test_chunked_empty_and_error_answers(server) -> None:
    _srv, connect = server
    async with connect() as client:
        status, _h, body = await client.request("GET", "/chunked")
        assert status == 200 and json.loads(body) == {"a": 1, "b": "x" * 3000}
        status, _h, body = await client.request("DELETE", "/empty")
        assert (status, body) == (204, b"")
        with pytest.raises(ApiError) as e:
            await client.get_json("/missing")
        assert (e.value.code, e.value.reason) == (404, "NotFound")


async def test_connections_are_kept_alive_and_reused(server) -> None:
    srv, connect = server
    async with connect() as client:
        for _ in range(5):
            await client.request("GET", "/t")
        assert len(srv.peers) == 1
        # Many at once: each on a connection of its own, all answered.
        results = await asyncio.gather(*(client.request("POST", "/t", data=b"x" * i)
                                         for i in range(40)))
        assert [json.loads(b)["len"] for _s, _h, b in results] == list(range(40))
    srv.peers.clear()
    async with connect() as client:
        # After "Connection: close" the next request opens a new connection.
        await client.request("GET", "/t")
        await client.request("GET", "/close")
        await client.request("GET", "/t")
        assert len(srv.peers) == 2


async def test_an_idle_connection_the_server_closed_is_replaced(server) -> None:
    srv, connect = server
    async with connect() as client:
        await client.request("GET", "/t")
        for proto in list(srv.runner.server.connections):  # type: ignore[union-attr]
            proto.transport.close()  # as the server's keep-alive timeout does
        status, _h, _b = await client.request("POST", "/t", data=b"once")
        assert status == 200
        assert [s["body"] for s in srv.seen].count(b"once") == 1


async def test_timeout_and_a_missing_socket_are_errors_callers_know(
        server, tmp_path: Path) -> None:
    _srv, connect = server
    async with connect() as client:
        with pytest.raises(TimeoutError):
            await client.request("GET", "/slow", timeout=0.2)
        assert (await client.request("GET", "/t"))[0] == 200  # the pool still works
    async with Client("http://localhost", unix_socket=str(tmp_path / "none.sock")) as client:
        with pytest.raises(aiohttp.ClientError):
            await client.request("GET", "/t")


async def test_an_answer_the_caller_does_not_read_is_not_decoded(server) -> None:
    _srv, connect = server
    async with connect() as client:
        assert await client.patch("v1", "pods", "p", {"a": 1}, namespace="ns",
                                  decode=False) == {}
        assert await client.create("v1", "pods", {"metadata": {"name": "p"}},
                                   namespace="ns", decode=False) == {}
        # An error is still decoded, with the server's Status.
        with pytest.raises(ApiError) as e:
            await client._call("GET", "/missing", decode=False)
        assert (e.value.code, e.value.message) == (404, "nope")


async def test_a_refused_connection_or_untrusted_certificate_is_a_client_error(
        tmp_path: Path) -> None:
    async with Client(f"http://127.0.0.1:{_free_port()}") as client:
        with pytest.raises(aiohttp.ClientConnectionError, match="cannot connect"):
            await client.request("GET", "/t")
    # A server whose certificate another CA signed: the handshake fails.
    server_ssl, _ = _tls(tmp_path)
    (tmp_path / "other").mkdir()
    _, other_ca = _tls(tmp_path / "other")

    async def ok(_request: web.Request) -> web.Response:
        return web.json_response({})

    app = web.Application()
    app.router.add_get("/t", ok)
    runner = web.AppRunner(app)
    await runner.setup()
    port = _free_port()
    await web.TCPSite(runner, "127.0.0.1", port, ssl_context=server_ssl).start()
    try:
        async with Client(f"https://127.0.0.1:{port}", ssl_context=other_ca) as client:
            with pytest.raises(aiohttp.ClientConnectionError, match="CERTIFICATE_VERIFY"):
                await client.request("GET", "/t")
    finally:
        await runner.cleanup()


async def test_the_server_url_gives_the_host_header_and_a_path_prefix() -> None:
    """An apiserver behind a proxy that serves it under a path (`server:
    https://proxy/k8s/clusters/c1` in a kubeconfig): every request's path follows it."""
    seen: list[tuple[str, str]] = []

    async def echo(request: web.Request) -> web.Response:
        seen.append((request.headers["Host"], request.path_qs))
        return web.json_response({})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", echo)
    runner = web.AppRunner(app)
    await runner.setup()
    port = _free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        async with Client(f"http://127.0.0.1:{port}/k8s/clusters/c1/") as client:
            await client.get("v1", "pods", "a b", namespace="ns")
            await client.list("v1", "pods", label_selector="app in (x,y)")
        assert seen == [(f"127.0.0.1:{port}", "/k8s/clusters/c1/api/v1/namespaces/ns/pods/a%20b"),
                        (f"127.0.0.1:{port}",
                         "/k8s/clusters/c1/api/v1/pods?labelSelector=app+in+%28x%2Cy%29")]
    finally:
        await runner.cleanup()
