"""Requests that once crashed the apiserver (a 500, or a stream where none belongs):
each now gets a Status that names the problem."""

from __future__ import annotations

import json

import httpx
import pytest
from robustkit import assert_status_answer

pytestmark = pytest.mark.unit

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def _configmap(client: httpx.Client, name: str) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
    assert client.post(CONFIGMAPS, json=body).status_code == 201


def test_merge_patch_with_non_object_metadata_is_a_bad_request(http: httpx.Client) -> None:
    _configmap(http, "meta-number")
    reply = http.patch(f"{CONFIGMAPS}/meta-number", content=json.dumps({"metadata": 1.5}),
                       headers={"Content-Type": "application/merge-patch+json"})
    status = assert_status_answer(reply)
    assert reply.status_code == 400
    assert "ConfigMap.metadata" in status["message"]


def test_post_to_a_watch_path_is_method_not_allowed(http: httpx.Client) -> None:
    # Must answer at once: a watch stream here would hang the client.
    reply = http.post("/api/v1/watch/namespaces", content=b"{}", timeout=10,
                      headers={"Content-Type": "application/json"})
    assert_status_answer(reply)
    assert reply.status_code == 405


def test_deeply_nested_body_is_a_bad_request(http: httpx.Client) -> None:
    depth = 5000
    reply = http.post(CONFIGMAPS, content=b"[" * depth + b"]" * depth,
                      headers={"Content-Type": "application/json"})
    status = assert_status_answer(reply)
    assert reply.status_code == 400
    assert "exceeded max depth" in status["message"]


def test_unknown_field_with_a_control_character_warns_without_dropping_the_connection(
        http: httpx.Client) -> None:
    _configmap(http, "ctl-field")
    reply = http.patch(f"{CONFIGMAPS}/ctl-field", content=json.dumps({"\x1f": False}),
                       headers={"Content-Type": "application/merge-patch+json"})
    assert reply.status_code == 200
    assert 'unknown field' in reply.headers["Warning"]


def test_pod_with_spec_of_the_wrong_type_is_a_bad_request(http: httpx.Client) -> None:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": "x"}
    reply = http.post("/api/v1/namespaces/default/pods", json=body)
    assert_status_answer(reply)
    assert reply.status_code == 400


def test_deployment_with_template_of_the_wrong_type_is_a_bad_request(
        http: httpx.Client) -> None:
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"template": True}}
    reply = http.post("/apis/apps/v1/namespaces/default/deployments", json=body)
    assert_status_answer(reply)
    assert reply.status_code == 400


def test_eviction_with_metadata_of_the_wrong_type_is_a_bad_request(http: httpx.Client) -> None:
    reply = http.post("/api/v1/namespaces/default/pods/p/eviction",
                      json={"apiVersion": "policy/v1", "kind": "Eviction", "metadata": 1.5})
    status = assert_status_answer(reply)
    assert reply.status_code == 400
    assert "metadata" in status["message"]


def test_self_subject_review_with_metadata_string_is_a_bad_request(http: httpx.Client) -> None:
    reply = http.post("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                      json={"apiVersion": "authentication.k8s.io/v1",
                            "kind": "SelfSubjectReview", "metadata": "x"})
    assert_status_answer(reply)
    assert reply.status_code == 400


def test_invalid_create_in_a_non_storage_version_reaches_validation(
        http: httpx.Client) -> None:
    # A body whose only field is dropped tracks no managed fields: that once was a
    # KeyError (500) before validation could name the missing fields.
    reply = http.post("/apis/resource.k8s.io/v1alpha3/devicetaintrules",
                      params={"dryRun": "All"},
                      json={"metadata": {"name": "empty"}, "spec": {"$retainKeys": [1]}})
    status = assert_status_answer(reply)
    assert reply.status_code == 422
    assert "spec.taint.effect: Required value" in status["message"]


@pytest.mark.parametrize(("path", "body"), [
    ("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                            "metadata": {"name": "null-spec"}, "spec": None}),
    ("/apis/batch/v1/namespaces/default/jobs",
     {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "null-template"},
      "spec": {"template": None}}),
])
def test_null_struct_fields_read_as_absent(http: httpx.Client, path: str, body: dict) -> None:
    # Go decodes `null` to a zero value: the object is as if the field were not sent.
    reply = http.post(path, json=body, params={"dryRun": "All"})
    assert reply.status_code < 500, reply.text
    if body["kind"] == "Namespace":
        assert reply.status_code == 201
    else:
        status = assert_status_answer(reply)
        assert reply.status_code == 422
        assert "spec.template.spec.containers: Required value" in status["message"]


def test_access_review_with_spec_of_the_wrong_type_is_a_bad_request(
        http: httpx.Client) -> None:
    reply = http.post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                      json={"apiVersion": "authorization.k8s.io/v1",
                            "kind": "SelfSubjectAccessReview", "spec": "x"})
    status = assert_status_answer(reply)
    assert reply.status_code == 400
    assert "cannot unmarshal string" in status["message"]


def test_lone_surrogate_escape_is_stored_as_the_replacement_character(
        http: httpx.Client) -> None:
    body = (b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"surrogate",'
            b'"annotations":{"a":"\\ud800x"}}}')
    reply = http.post(CONFIGMAPS, content=body, headers={"Content-Type": "application/json"})
    assert reply.status_code == 201, reply.text
    assert reply.json()["metadata"]["annotations"] == {"a": "\ufffdx"}


def test_lone_surrogate_in_a_mismatched_kind_gets_a_status(http: httpx.Client) -> None:
    reply = http.post(CONFIGMAPS, content=b'{"kind":"\\udc00"}',
                      headers={"Content-Type": "application/json"})
    status = assert_status_answer(reply)
    assert reply.status_code == 400
    assert "does not match the expected kind" in status["message"]


def test_scale_with_metadata_of_the_wrong_type_is_a_bad_request(http: httpx.Client) -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "sc"},
                  "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
                      "metadata": {"labels": {"a": "b"}},
                      "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    deployments = "/apis/apps/v1/namespaces/default/deployments"
    assert http.post(deployments, json=deployment).status_code == 201
    reply = http.put(f"{deployments}/sc/scale", json={"metadata": True, "spec": {"replicas": 2}})
    status = assert_status_answer(reply)
    assert reply.status_code == 400
    assert "Scale" in status["message"]


@pytest.mark.parametrize("method", ["DELETE", "PUT", "PATCH"])
def test_a_name_with_a_nul_character_is_not_found(http: httpx.Client, method: str) -> None:
    ctype = "application/merge-patch+json" if method == "PATCH" else "application/json"
    reply = http.request(method, f"{CONFIGMAPS}/%00", content=b'{"data":{}}',
                         headers={"Content-Type": ctype})
    assert_status_answer(reply)
    assert reply.status_code == 404, reply.text
