"""Requests that once crashed the apiserver (a 500, or a stream where none belongs):
each now gets a Status that names the problem."""

from __future__ import annotations

import json

import httpx
from robustkit import assert_status_answer

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
