"""End to end with real kubectl: the DRA examples (dra-api.md §12) in every served
version, the 1.31 v1alpha3 shape, validation errors, /status and server-side apply."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from draemu.cmd.testing.apiserver import ServerThread

KUBECTL_DIR = Path(os.path.realpath(shutil.which("kubectl") or "/usr/bin/kubectl")).parent
KUBECTLS = [p for p in (KUBECTL_DIR / "kubectl", KUBECTL_DIR / "kubectl.1.33") if p.exists()]
pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not KUBECTLS, reason="kubectl is not installed")]

CLAIM_V1 = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: NAME, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com, allocationMode: ExactCount, count: 1}
    - name: nic
      firstAvailable:
      - {name: fast, deviceClassName: nic-fast, allocationMode: ExactCount, count: 1}
      - {name: slow, deviceClassName: nic-slow, allocationMode: ExactCount, count: 1}
    constraints:
    - {requests: [gpu, nic], matchAttribute: resource.kubernetes.io/pcieRoot}
"""
CLAIM_V1BETA1 = """
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: NAME, namespace: default}
spec:
  devices:
    requests:
    - {name: gpu, deviceClassName: gpu.example.com, allocationMode: ExactCount, count: 1}
    - name: nic
      firstAvailable:
      - {name: fast, deviceClassName: nic-fast, allocationMode: ExactCount, count: 1}
      - {name: slow, deviceClassName: nic-slow, allocationMode: ExactCount, count: 1}
    constraints:
    - {requests: [gpu, nic], matchAttribute: resource.kubernetes.io/pcieRoot}
"""
SLICE_V1ALPHA3 = """
apiVersion: resource.k8s.io/v1alpha3
kind: ResourceSlice
metadata: {name: NAME}
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, generation: 0, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    basic:
      attributes: {model: {string: A100}}
      capacity: {memory: 40Gi}
"""
SLICE_V1 = """
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: NAME}
spec:
  driver: gpu.example.com
  nodeName: node-2
  pool: {name: node-2, generation: 0, resourceSliceCount: 1}
  devices:
  - {name: gpu-0, attributes: {model: {string: A100}}, capacity: {memory: {value: 40Gi}}}
"""


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One apiserver for the module, on its own event loop in a thread, so that the
    tests can run kubectl synchronously. It serves the 1.31-shape v1alpha3 too."""
    thread = ServerThread(tmp_path_factory.mktemp("apiserver"), legacy_versions=True)
    server = thread.start()
    yield Path(server.kubeconfig_path)
    thread.stop()


@pytest.fixture(params=KUBECTLS, ids=lambda p: p.name)
def kubectl(request: pytest.FixtureRequest, kubeconfig: Path) -> Callable[..., str]:
    binary: Path = request.param

    def run(*args: str, stdin: str = "", ok: bool = True, stdout_only: bool = False) -> str:
        done = subprocess.run([str(binary), f"--kubeconfig={kubeconfig}", *args], input=stdin,
                              capture_output=True, text=True, timeout=60)
        if ok and done.returncode != 0:
            raise AssertionError(done.stderr)
        return done.stdout if stdout_only else done.stdout + done.stderr
    return run


def named(manifest: str, name: str) -> str:
    return manifest.replace("NAME", name)


def get_json(kubectl: Callable[..., str], resource: str, name: str) -> dict:
    return json.loads(kubectl("get", resource, name, "-o", "json", "-n", "default",
                              stdout_only=True))


@pytest.mark.parametrize("manifest", [CLAIM_V1, CLAIM_V1BETA1], ids=["v1", "v1beta1"])
def test_claim_applies_and_reads_back_in_every_version(kubectl: Callable[..., str],
                                                       manifest: str,
                                                       request: pytest.FixtureRequest) -> None:
    name = f"c-{request.node.callspec.id.replace('[', '-').replace(']', '')}".lower()[:60]
    kubectl("apply", "-f", "-", stdin=named(manifest, name))
    v1 = get_json(kubectl, "resourceclaims.v1.resource.k8s.io", name)
    assert v1["spec"]["devices"]["requests"][0] == {"name": "gpu", "exactly": {
        "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}}
    assert v1["status"] == {}
    beta = get_json(kubectl, "resourceclaims.v1beta1.resource.k8s.io", name)
    assert beta["spec"]["devices"]["requests"][1]["deviceClassName"] == ""
    assert "pending" in kubectl("get", "resourceclaim", name, "-n", "default")


def test_v1alpha3_131_slice_applies_and_reads_back_in_v1(kubectl: Callable[..., str],
                                                         request: pytest.FixtureRequest) -> None:
    name = f"s-{request.node.callspec.id}".replace(".", "-")
    out = kubectl("apply", "-f", "-", stdin=named(SLICE_V1ALPHA3, name))
    assert ("resource.k8s.io/v1alpha3 ResourceSlice is served by draemu for old manifests; "
            "Kubernetes 1.34+ does not serve it") in out
    device = get_json(kubectl, "resourceslices.v1.resource.k8s.io", name)["spec"]["devices"][0]
    assert device["capacity"] == {"memory": {"value": "40Gi"}}
    alpha = get_json(kubectl, "resourceslices.v1alpha3.resource.k8s.io", name)
    assert alpha["spec"]["devices"][0]["basic"]["capacity"] == {"memory": "40Gi"}


def test_slice_server_side_apply_and_columns(kubectl: Callable[..., str],
                                             request: pytest.FixtureRequest) -> None:
    name = f"ssa-{request.node.callspec.id}".replace(".", "-")
    assert "serverside-applied" in kubectl("apply", "--server-side", "-f",
                                           "-", stdin=named(SLICE_V1, name))
    table = kubectl("get", "resourceslices", name)
    assert table.split("\n")[0].split() == ["NAME", "NODE", "DRIVER", "POOL", "AGE"]
    assert table.split("\n")[1].split()[:4] == [name, "node-2", "gpu.example.com", "node-2"]
    assert name in kubectl("get", "resourceslices", "--field-selector", "spec.nodeName=node-2")


def test_invalid_claim_reports_every_cause(kubectl: Callable[..., str]) -> None:
    bad = named(CLAIM_V1, "bad").replace("resource.kubernetes.io/pcieRoot", "numa-node")
    bad = bad.replace("count: 1}\n    - name: nic", "count: -1}\n    - name: nic")
    out = kubectl("apply", "-f", "-", stdin=bad, ok=False)
    assert 'The ResourceClaim "bad" is invalid' in out
    assert ("spec.devices.requests[0].exactly.count: Invalid value: -1: must be greater than "
            "zero") in out
    assert ('spec.devices.constraints[0].matchAttribute: Invalid value: "numa-node": a fully '
            "qualified name must be a domain and a name separated by a slash") in out


def test_status_patch_allocates_and_spec_stays_immutable(kubectl: Callable[..., str],
                                                         request: pytest.FixtureRequest) -> None:
    name = f"st-{request.node.callspec.id}".replace(".", "-")
    kubectl("apply", "-f", "-", stdin=named(CLAIM_V1, name))
    status = {"status": {
        "allocation": {"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com",
                                                "pool": "node-1", "device": "gpu-0"}]}},
        "reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}]}}
    kubectl("patch", "resourceclaim", name, "-n", "default", "--subresource=status",
            "--type=merge", "-p", json.dumps(status))
    assert "allocated,reserved" in kubectl("get", "resourceclaim", name, "-n", "default")
    out = kubectl("patch", "resourceclaim", name, "-n", "default", "--type=merge", "-p",
                  '{"spec":{"devices":{"constraints":[]}}}', ok=False)
    assert "field is immutable" in out


def test_unknown_field_is_an_error_under_strict_validation(kubectl: Callable[..., str]) -> None:
    manifest = named(CLAIM_V1, "strict").replace("count: 1}\n    - name: nic",
                                                 "count: 1, cuont: 2}\n    - name: nic")
    out = kubectl("apply", "--validate=strict", "-f", "-", stdin=manifest, ok=False)
    assert 'strict decoding error: unknown field "spec.devices.requests[0].exactly.cuont"' in out


@pytest.mark.parametrize("field,version,expected", [
    ("resourceclaim.spec.devices.requests.exactly", "resource.k8s.io/v1", "deviceClassName"),
    ("resourceslice.spec.devices.basic", "resource.k8s.io/v1beta1", "attributes"),
    ("resourceslice.spec.devices.basic.capacity", "resource.k8s.io/v1alpha3", "map[string]"),
])
def test_explain_describes_each_version(kubectl: Callable[..., str], field: str, version: str,
                                        expected: str) -> None:
    out = kubectl("explain", field, f"--api-version={version}")
    assert f"VERSION:    {version.split('/')[1]}" in out and expected in out


def test_wrongly_typed_field_is_a_decoding_error(kubectl: Callable[..., str]) -> None:
    manifest = named(CLAIM_V1, "typed").replace("count: 1}\n    - name: nic",
                                                'count: "x"}\n    - name: nic')
    out = kubectl("apply", "--validate=false", "-f", "-", stdin=manifest, ok=False)
    assert ('ResourceClaim in version "v1" cannot be handled as a ResourceClaim: json: cannot '
            "unmarshal string into Go struct field ExactDeviceRequest.spec.devices.requests."
            "exactly.count of type int64") in out
