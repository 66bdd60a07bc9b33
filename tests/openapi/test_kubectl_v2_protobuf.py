"""kubectl 1.27 and 1.28 read only the protobuf form of /openapi/v2
(`openapi_v2_protobuf`): with it `explain` walks the schemas, and `create -f` finds the
fieldValidation parameter and leaves validation to the server."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from draemu.apiserver.server import APIServer, APIServerOptions

KUBECTL_DIR = Path(os.path.realpath(shutil.which("kubectl") or "/usr/bin/kubectl")).parent
KUBECTLS = [p for p in (KUBECTL_DIR / "kubectl.1.27", KUBECTL_DIR / "kubectl.1.28")
            if p.exists()]
pytestmark = pytest.mark.skipif(not KUBECTLS, reason="kubectl 1.27/1.28 are not installed")


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One apiserver for the module on its own event loop in a thread, so that kubectl
    can run synchronously."""
    loop = asyncio.new_event_loop()
    server = APIServer(APIServerOptions(data_dir=tmp_path_factory.mktemp("apiserver"),
                                        store_url="sqlite://:memory:"))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(server.start(), loop).result(timeout=60)
    yield Path(server.kubeconfig_path)
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
