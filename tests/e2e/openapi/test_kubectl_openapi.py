"""Real kubectl against the apiserver: explain and validation read our OpenAPI v3
documents; patches and server-side apply go through the patch library."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from draemu.apiserver.server.lifecycle import APIServer

KUBECTL_DIR = Path(os.path.realpath(shutil.which("kubectl") or "/usr/bin/kubectl")).parent
KUBECTLS = [p for p in (KUBECTL_DIR / "kubectl", KUBECTL_DIR / "kubectl.1.29") if p.exists()]
pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not KUBECTLS, reason="kubectl is not installed")]

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: NAME, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: NAME}}
  template:
    metadata: {labels: {app: NAME}}
    spec:
      containers:
      - {name: web, image: nginx}
      - {name: side, image: busybox}
"""


@pytest.fixture(scope="module")
def kubeconfig(module_apiserver: APIServer) -> Path:
    """One apiserver for the module on a background thread, so that kubectl can run
    synchronously."""
    return Path(module_apiserver.kubeconfig_path)


@pytest.fixture(params=KUBECTLS, ids=lambda p: p.name)
def kubectl(request: pytest.FixtureRequest, kubeconfig: Path,
            tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    binary: Path = request.param
    env = {**os.environ, "KUBERC": "off", "HOME": str(tmp_path)}

    def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(binary), f"--kubeconfig={kubeconfig}",
                               f"--cache-dir={tmp_path / 'cache'}", *args], input=stdin,
                              capture_output=True, text=True, timeout=60, env=env)
    return run


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_explain_walks_into_nested_fields(kubectl):
    out = ok(kubectl("explain", "pods.spec.containers"))
    assert "KIND:       Pod" in out
    assert "FIELD: containers <[]Container>" in out
    assert "name\t<string> -required-" in out
    assert "resources\t<ResourceRequirements>" in out


def test_explain_a_deployment_field(kubectl):
    out = ok(kubectl("explain", "deployments.spec.replicas"))
    assert "apps" in out and "replicas" in out and "<integer>" in out


def test_create_with_an_unknown_field_fails_strict_validation(kubectl, request):
    name = f"strict-{request.node.callspec.id.replace('.', '-')}"
    manifest = DEPLOYMENT.replace("NAME", name).replace("replicas: 1", "replicas: 1\n  bogus: 2")
    done = kubectl("create", "-f", "-", stdin=manifest)
    assert done.returncode != 0
    assert 'unknown field "spec.bogus"' in done.stderr


def test_strategic_patch_merges_containers_by_name(kubectl, request):
    name = f"smp-{request.node.callspec.id.replace('.', '-')}"
    ok(kubectl("create", "-f", "-", stdin=DEPLOYMENT.replace("NAME", name)))
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "web",
                                                              "image": "nginx:2"}]}}}}
    ok(kubectl("patch", "deployment", name, "-n", "default", "-p", json.dumps(patch)))
    obj = json.loads(ok(kubectl("get", "deployment", name, "-n", "default", "-o", "json")))
    images = {c["name"]: c["image"] for c in obj["spec"]["template"]["spec"]["containers"]}
    assert images == {"web": "nginx:2", "side": "busybox"}


def test_server_side_apply_conflicts_and_force(kubectl, request):
    name = f"ssa-{request.node.callspec.id.replace('.', '-')}"
    manifest = DEPLOYMENT.replace("NAME", name)
    ok(kubectl("apply", "--server-side", "--field-manager=alice", "-f", "-", stdin=manifest))
    changed = manifest.replace("replicas: 1", "replicas: 3")
    done = kubectl("apply", "--server-side", "--field-manager=bob", "-f", "-", stdin=changed)
    assert done.returncode != 0
    assert 'conflict with "alice"' in done.stderr and ".spec.replicas" in done.stderr
    ok(kubectl("apply", "--server-side", "--field-manager=bob", "--force-conflicts", "-f", "-",
               stdin=changed))
    obj = json.loads(ok(kubectl("get", "deployment", name, "-n", "default", "-o", "json",
                                "--show-managed-fields")))
    assert obj["spec"]["replicas"] == 3
    managers = {e["manager"]: e["operation"] for e in obj["metadata"]["managedFields"]}
    assert managers.get("bob") == "Apply"


def test_client_side_apply_removes_a_container_and_reorders(kubectl, request):
    name = f"csa-{request.node.callspec.id.replace('.', '-')}"
    manifest = DEPLOYMENT.replace("NAME", name)
    ok(kubectl("apply", "-f", "-", stdin=manifest))
    changed = manifest.replace("      - {name: side, image: busybox}\n", "").replace(
        "- {name: web, image: nginx}", "- {name: extra, image: redis}\n      - {name: web, "
        "image: nginx:3}")
    ok(kubectl("apply", "-f", "-", stdin=changed))
    obj = json.loads(ok(kubectl("get", "deployment", name, "-n", "default", "-o", "json")))
    containers = [(c["name"], c["image"]) for c in obj["spec"]["template"]["spec"]["containers"]]
    assert containers == [("extra", "redis"), ("web", "nginx:3")]


def test_moving_from_client_side_to_server_side_apply_needs_no_force(kubectl, request):
    name = f"upgrade-{request.node.callspec.id.replace('.', '-')}"
    manifest = DEPLOYMENT.replace("NAME", name)
    ok(kubectl("apply", "-f", "-", stdin=manifest))
    ok(kubectl("apply", "--server-side", "-f", "-",
               stdin=manifest.replace("replicas: 1", "replicas: 4")))
    obj = json.loads(ok(kubectl("get", "deployment", name, "-n", "default", "-o", "json")))
    assert obj["spec"]["replicas"] == 4


def test_explain_describes_dra_fields_in_words_not_their_names(kubectl):
    """Issue 36, point 10: `kubectl explain` said 'Capacity of the exact device request.'"""
    out = ok(kubectl("explain", "resourceclaims.spec.devices.requests.exactly.capacity"))
    assert "Amounts of the devices' capacities each device must provide" in out
    out = ok(kubectl("explain", "resourceslices.spec.devices.consumesCounters"))
    assert "partitionable devices" in out
    out = ok(kubectl("explain", "resourceclaims.spec.devices.constraints.matchAttribute"))
    assert "resource.kubernetes.io/numaNode" in out
    out = ok(kubectl("explain", "deviceclasses"))
    assert "A kind of device a claim can ask for" in out
