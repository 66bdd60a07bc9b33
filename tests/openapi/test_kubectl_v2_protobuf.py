"""kubectl 1.27 and 1.28 read only the protobuf form of /openapi/v2. A small proxy in
front of the apiserver answers that one request with `openapi_v2_protobuf` (and passes
everything else through), so the real binaries check our encoding: `explain` walks the
schemas, and `create -f` finds the fieldValidation parameter and leaves validation to
the server."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from draemu import openapi
from draemu.apiserver.registry import discover
from draemu.apiserver.server import APIServer, APIServerOptions

KUBECTL_DIR = Path(os.path.realpath(shutil.which("kubectl") or "/usr/bin/kubectl")).parent
KUBECTLS = [p for p in (KUBECTL_DIR / "kubectl.1.27", KUBECTL_DIR / "kubectl.1.28")
            if p.exists()]
pytestmark = pytest.mark.skipif(not KUBECTLS, reason="kubectl 1.27/1.28 are not installed")
HOP_HEADERS = {"host", "content-length", "transfer-encoding", "connection",
               "content-encoding", "accept-encoding"}


def proxy_app(upstream: str) -> web.Application:
    strategies = discover()

    async def handle(request: web.Request) -> web.StreamResponse:
        accept = request.headers.get("Accept", "")
        if request.path == "/openapi/v2" and "protobuf" in accept:
            return web.Response(body=openapi.openapi_v2_protobuf(strategies),
                                headers={"Content-Type": openapi.V2_PROTOBUF_CONTENT_TYPE})
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_HEADERS}
        async with aiohttp.ClientSession() as session, session.request(
                request.method, upstream + request.path_qs, headers=headers,
                data=await request.read()) as reply:
            body = await reply.read()
            kept = {k: v for k, v in reply.headers.items() if k.lower() not in HOP_HEADERS}
            return web.Response(status=reply.status, body=body, headers=kept)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    data = tmp_path_factory.mktemp("apiserver")
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = APIServer(APIServerOptions(data_dir=data, store_url="sqlite://:memory:",
                                        insecure_http=True))

    async def start() -> web.AppRunner:
        await server.start()
        runner = web.AppRunner(proxy_app(server.url))
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        return runner

    runner = asyncio.run_coroutine_threadsafe(start(), loop).result(timeout=60)
    port = runner.addresses[0][1]
    config = data / "proxy-kubeconfig"
    config.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: proxy, cluster: {{server: "http://127.0.0.1:{port}"}}}}]
users: [{{name: anonymous, user: {{}}}}]
contexts: [{{name: proxy, context: {{cluster: proxy, user: anonymous, namespace: default}}}}]
current-context: proxy
""")
    yield config
    asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=60)
    asyncio.run_coroutine_threadsafe(server.stop(), loop).result(timeout=60)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=10)


@pytest.fixture(params=KUBECTLS, ids=lambda p: p.name)
def kubectl(request: pytest.FixtureRequest, kubeconfig: Path,
            tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    binary: Path = request.param
    env = {**os.environ, "HOME": str(tmp_path)}

    def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(binary), f"--kubeconfig={kubeconfig}",
                               f"--cache-dir={tmp_path / 'cache'}", *args], input=stdin,
                              capture_output=True, text=True, timeout=60, env=env)
    return run


def test_explain_reads_the_protobuf_document(kubectl):
    done = kubectl("explain", "pods.spec.containers")
    assert done.returncode == 0, done.stderr
    assert "FIELD: containers <[]Container>" in done.stdout
    assert "name\t<string> -required-" in done.stdout


def test_create_leaves_field_validation_to_the_server(kubectl, request):
    name = f"cm-{request.node.callspec.id.replace('.', '-')}"
    manifest = f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\ndata: {{a: b}}\n"
    done = kubectl("create", "-f", "-", stdin=manifest + "bogus: 1\n")
    assert done.returncode != 0
    assert 'strict decoding error: unknown field "bogus"' in done.stderr
    done = kubectl("create", "-f", "-", stdin=manifest)
    assert done.returncode == 0, done.stderr
