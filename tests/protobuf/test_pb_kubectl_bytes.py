"""Bodies recorded from real kubectl 1.32, 1.33 and 1.35 (`record_kubectl.py`) decode to
the objects those commands mean."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from draemu.apiserver.protobuf import decode

FIXTURES = Path(__file__).with_name("fixtures")
VERSIONS = ["kubectl-1.32", "kubectl-1.33", "kubectl-1.35"]


def body(version: str, name: str) -> dict:
    return decode((FIXTURES / version / f"{name}.pb").read_bytes(), "", "", "")


@pytest.mark.parametrize("version", VERSIONS)
def test_kubectl_sends_protobuf_with_a_json_fallback_accept(version: str) -> None:
    index = json.loads((FIXTURES / version / "index.json").read_text())
    assert {e["contentType"] for e in index.values()} == {"application/vnd.kubernetes.protobuf"}
    assert {e["accept"] for e in index.values()} == {
        "application/vnd.kubernetes.protobuf,application/json"}


@pytest.mark.parametrize("version", VERSIONS)
def test_create_namespace(version: str) -> None:
    assert body(version, "namespace") == {"kind": "Namespace", "apiVersion": "v1",
                                          "metadata": {"name": "pb-ns"}, "spec": {},
                                          "status": {}}


@pytest.mark.parametrize("version", VERSIONS)
def test_create_configmap_keeps_empty_values(version: str) -> None:
    assert body(version, "configmap") == {"kind": "ConfigMap", "apiVersion": "v1",
                                          "metadata": {"name": "pb-cm"},
                                          "data": {"empty": "", "k": "v"}}


@pytest.mark.parametrize("version", VERSIONS)
def test_create_secret_data_is_base64(version: str) -> None:
    assert body(version, "secret")["data"] == {"password": "czNjcjN0"}


@pytest.mark.parametrize("version", VERSIONS)
def test_create_deployment_keeps_zero_replicas(version: str) -> None:
    spec = body(version, "deployment")["spec"]
    assert spec["replicas"] == 0
    assert spec["template"]["spec"]["containers"] == [
        {"name": "nginx", "image": "nginx", "ports": [{"containerPort": 80}], "resources": {}}]


@pytest.mark.parametrize("version", VERSIONS)
def test_create_job(version: str) -> None:
    pod = body(version, "job")["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    assert pod["containers"][0]["command"] == ["echo", "hi"]


@pytest.mark.parametrize("version", VERSIONS)
def test_auth_can_i_sends_resource_attributes(version: str) -> None:
    review = body(version, "can-i")
    assert review["apiVersion"] == "authorization.k8s.io/v1"
    assert review["spec"] == {"resourceAttributes": {"namespace": "default", "verb": "create",
                                                     "resource": "pods"}}


@pytest.mark.parametrize("version", VERSIONS)
def test_auth_whoami_is_an_empty_review(version: str) -> None:
    assert body(version, "whoami") == {"kind": "SelfSubjectReview",
                                       "apiVersion": "authentication.k8s.io/v1",
                                       "metadata": {}, "status": {"userInfo": {}}}
