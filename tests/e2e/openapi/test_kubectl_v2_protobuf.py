"""kubectl 1.27 and 1.28 read only the protobuf form of /openapi/v2
(`openapi_v2_protobuf`): with it `explain` walks the schemas, and `create -f` finds the
fieldValidation parameter and leaves validation to the server."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from draemu.apiserver.server.lifecycle import APIServer

KUBECTL_DIR = Path(os.path.realpath(shutil.which("kubectl") or "/usr/bin/kubectl")).parent
KUBECTLS = [p for p in (KUBECTL_DIR / "kubectl.1.27", KUBECTL_DIR / "kubectl.1.28")
            if p.exists()]
pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(not KUBECTLS, reason="kubectl 1.27/1.28 are not installed")]


@pytest.fixture(scope="module")
def kubeconfig(module_apiserver: APIServer) -> Path:
    """One apiserver for the module on a background thread, so that kubectl can run
    synchronously."""
    return Path(module_apiserver.kubeconfig_path)


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
