"""Bodies recorded from real kubectl 1.32, 1.33 and 1.35 (`record_kubectl.py`) decode to
the JSON bodies kubectl 1.31 sends for the same commands (recorded with `-v=8`), less
its `creationTimestamp: null`, which the 1.37 Go types omit (`omitzero`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from draemu.apiserver.wire.protobuf import decode

pytestmark = pytest.mark.unit

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
    assert body(version, "namespace") == json.loads(
        '{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"pb-ns"},'
        '"spec":{},"status":{}}')


@pytest.mark.parametrize("version", VERSIONS)
def test_create_configmap_keeps_empty_values(version: str) -> None:
    assert body(version, "configmap") == json.loads(
        '{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"pb-cm"},'
        '"data":{"empty":"","k":"v"}}')


@pytest.mark.parametrize("version", VERSIONS)
def test_create_secret_data_is_base64(version: str) -> None:
    assert body(version, "secret")["data"] == {"password": "czNjcjN0"}


@pytest.mark.parametrize("version", VERSIONS)
def test_create_deployment_keeps_zero_replicas(version: str) -> None:
    assert body(version, "deployment") == json.loads(
        '{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"pb-deploy",'
        '"labels":{"app":"pb-deploy"}},"spec":{"replicas":0,'
        '"selector":{"matchLabels":{"app":"pb-deploy"}},"template":{"metadata":'
        '{"labels":{"app":"pb-deploy"}},"spec":{"containers":'
        '[{"name":"nginx","image":"nginx","ports":[{"containerPort":80}],"resources":{}}]}},'
        '"strategy":{}},"status":{}}')


@pytest.mark.parametrize("version", VERSIONS)
def test_create_job(version: str) -> None:
    pod = body(version, "job")["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    assert pod["containers"][0]["command"] == ["echo", "hi"]


@pytest.mark.parametrize("version", VERSIONS)
def test_auth_can_i_sends_resource_attributes(version: str) -> None:
    assert body(version, "can-i") == json.loads(
        '{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1",'
        '"metadata":{},"spec":{"resourceAttributes":{"namespace":'
        '"default","verb":"create","resource":"pods"}},"status":{"allowed":false}}')


@pytest.mark.parametrize("version", VERSIONS)
def test_auth_whoami_is_an_empty_review(version: str) -> None:
    assert body(version, "whoami") == json.loads(
        '{"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/v1",'
        '"metadata":{},"status":{"userInfo":{}}}')


@pytest.mark.parametrize("version", VERSIONS)
def test_auth_can_i_list_names_the_namespace(version: str) -> None:
    assert body(version, "can-i-list") == json.loads(
        '{"kind":"SelfSubjectRulesReview","apiVersion":"authorization.k8s.io/v1",'
        '"metadata":{},"spec":{"namespace":"default"},"status":{"incomplete":false}}')


@pytest.mark.parametrize("version", VERSIONS)
def test_create_serviceaccount(version: str) -> None:
    assert body(version, "serviceaccount") == {"kind": "ServiceAccount", "apiVersion": "v1",
                                               "metadata": {"name": "pb-sa"}}
