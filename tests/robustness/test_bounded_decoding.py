"""Request bodies are decoded under limits whatever their content type (issue 15): a YAML
alias bomb, a self-containing anchor, an integer Python cannot print, duplicate keys, a
request line or header beyond the server's limits each get a 4xx Status at once."""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest
from robustkit import assert_status_answer

pytestmark = pytest.mark.unit

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"

# 9**7 = 4.8 million strings from 300 bytes once the aliases are expanded.
ALIAS_BOMB = (b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\n"
              b"a: &a [x,x,x,x,x,x,x,x,x]\n"
              + b"".join(f"{n}: &{n} [{','.join(['*' + p] * 9)}]\n".encode()
                         for p, n in zip("abcdef", "bcdefg", strict=True)))


def _fast(started: float) -> None:
    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize("content_type", ["application/yaml", "application/json"])
def test_an_alias_bomb_is_refused_at_once(http: httpx.Client, content_type: str) -> None:
    started = time.perf_counter()
    reply = http.post(CONFIGMAPS, content=ALIAS_BOMB, headers={"Content-Type": content_type})
    _fast(started)
    status = assert_status_answer(reply)
    assert reply.status_code == 400
    assert "excessive aliasing" in status["message"]
    assert http.get(f"{CONFIGMAPS}/bomb").status_code == 404


def test_an_alias_bomb_as_an_apply_patch_is_refused_at_once(http: httpx.Client) -> None:
    started = time.perf_counter()
    reply = http.patch(f"{CONFIGMAPS}/bomb", params={"fieldManager": "m"}, content=ALIAS_BOMB,
                       headers={"Content-Type": "application/apply-patch+yaml"})
    _fast(started)
    assert_status_answer(reply)
    assert "excessive aliasing" in reply.json()["message"]
    assert http.get(f"{CONFIGMAPS}/bomb").status_code == 404


def test_an_anchor_that_contains_itself_is_refused(http: httpx.Client) -> None:
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata: &m {name: loop, labels: *m}\n"
    reply = http.post(CONFIGMAPS, content=body, headers={"Content-Type": "application/yaml"})
    assert_status_answer(reply)
    assert 'anchor "m" value contains itself' in reply.json()["message"]


def test_a_few_aliases_are_fine(http: httpx.Client) -> None:
    body = (b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: aliased, labels: &l {a: b}, "
            b"annotations: *l}\ndata: {when: 2024-01-01}\n")
    reply = http.post(CONFIGMAPS, content=body, headers={"Content-Type": "application/yaml"})
    assert reply.status_code == 201, reply.text
    meta = reply.json()["metadata"]
    assert meta["labels"] == meta["annotations"] == {"a": "b"}
    assert reply.json()["data"] == {"when": "2024-01-01"}  # a date stays a string


def test_an_integer_of_5000_digits_in_json_is_a_bad_request_naming_the_field(
        http: httpx.Client) -> None:
    body = (b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big",'
            b'"generation":' + b"7" * 5000 + b"}}")
    reply = http.post(CONFIGMAPS, content=body, headers={"Content-Type": "application/json"})
    status = assert_status_answer(reply)
    assert reply.status_code == 400
    assert "5000 digits" in status["message"]
    assert status["details"]["causes"][0]["field"] == "metadata.generation"


@pytest.mark.parametrize("number", [b"7" * 5000, b"0x" + b"f" * 5000])
def test_an_integer_too_long_to_print_in_yaml_is_a_bad_request(http: httpx.Client,
                                                               number: bytes) -> None:
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big, generation: " + number \
        + b"}\n"
    reply = http.post(CONFIGMAPS, content=body, headers={"Content-Type": "application/yaml"})
    status = assert_status_answer(reply)
    assert reply.status_code == 400
    assert "too long" in status["message"]


def test_an_integer_of_5000_digits_in_a_merge_patch_is_a_bad_request(
        http: httpx.Client) -> None:
    http.post(CONFIGMAPS, json={"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": "patched-big"}})
    reply = http.patch(f"{CONFIGMAPS}/patched-big",
                       content=b'{"metadata":{"generation":' + b"1" * 5000 + b"}}",
                       headers={"Content-Type": "application/merge-patch+json"})
    assert_status_answer(reply)
    assert reply.status_code == 400


def test_binding_with_a_list_target_is_a_bad_request_naming_the_field(
        http: httpx.Client) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bind-me"},
           "spec": {"containers": [{"name": "c", "image": "i"}]}}
    assert http.post("/api/v1/namespaces/default/pods", json=pod).status_code == 201
    reply = http.post("/api/v1/namespaces/default/pods/bind-me/binding",
                      json={"apiVersion": "v1", "kind": "Binding",
                            "metadata": {"name": "bind-me"}, "target": [None, None]})
    status = assert_status_answer(reply)
    assert reply.status_code == 400
    assert "Binding.target" in status["message"]


def _with_duplicate_name() -> bytes:
    return (b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"twice","name":"twice"},'
            b'"data":{"a":"1","a":"2"}}')


def test_duplicate_keys_under_strict_field_validation_are_a_bad_request(
        http: httpx.Client) -> None:
    reply = http.post(CONFIGMAPS, params={"fieldValidation": "Strict"},
                      content=_with_duplicate_name(),
                      headers={"Content-Type": "application/json"})
    status = assert_status_answer(reply)
    assert reply.status_code == 400
    assert 'strict decoding error: duplicate field "metadata.name"' in status["message"]
    assert 'duplicate field "data.a"' in status["message"]


def test_duplicate_keys_under_warn_field_validation_are_warnings(http: httpx.Client) -> None:
    reply = http.post(CONFIGMAPS, params={"fieldValidation": "Warn"},
                      content=_with_duplicate_name(),
                      headers={"Content-Type": "application/json"})
    assert reply.status_code == 201, reply.text
    assert 'duplicate field \\"data.a\\"' in reply.headers["Warning"] or \
        'duplicate field "data.a"' in reply.headers["Warning"]
    assert reply.json()["data"] == {"a": "2"}


def test_duplicate_yaml_keys_under_strict_field_validation_are_a_bad_request(
        http: httpx.Client) -> None:
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: twice-yaml}\ndata: {a: '1'}\n" \
        b"data: {b: '2'}\n"
    reply = http.post(CONFIGMAPS, params={"fieldValidation": "Strict"}, content=body,
                      headers={"Content-Type": "application/yaml"})
    assert_status_answer(reply)
    assert 'duplicate field "data"' in reply.json()["message"]


def test_a_header_longer_than_aiohttps_default_is_served(http: httpx.Client) -> None:
    reply = http.get("/api/v1/namespaces", headers={"X-Long": "x" * 10_000})
    assert reply.status_code == 200


def test_a_header_beyond_the_limit_gets_a_431_status(http: httpx.Client) -> None:
    reply = http.get("/api/v1/namespaces", headers={"X-Long": "x" * (600 * 1024)})
    assert_status_answer(reply)
    assert reply.status_code == 431


def test_a_request_line_beyond_the_limit_gets_a_414_status(http: httpx.Client) -> None:
    # httpx refuses to send such a URL: write the request by hand.
    url = http.base_url
    with socket.create_connection((url.host, url.port), timeout=10) as conn:
        conn.sendall(b"GET /api/v1/namespaces?labelSelector=" + b"a" * (1100 * 1024)
                     + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.split(b" ", 2)[1] == b"414", head
    assert b"Content-Type: application/json\r\n" in head + b"\r\n"
    status = json.loads(body)
    assert status["kind"] == "Status" and status["code"] == 414


@pytest.mark.parametrize(("expression", "message"), [
    ("(" * 3000 + "true" + ")" * 3000, "expression recursion limit exceeded: 250"),
    ('device.driver.matches("a(")', "error parsing regexp: missing closing ): `a(`")])
def test_a_device_class_selector_beyond_cel_limits_is_invalid(
        http: httpx.Client, expression: str, message: str) -> None:
    body = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": "deep"},
            "spec": {"selectors": [{"cel": {"expression": expression}}]}}
    reply = http.post("/apis/resource.k8s.io/v1/deviceclasses", json=body)
    status = assert_status_answer(reply)
    assert reply.status_code == 422
    assert message in status["message"]
    assert status["details"]["causes"][0]["field"] == "spec.selectors[0].cel.expression"


def test_a_yaml_body_of_too_many_nodes_is_refused_early(http: httpx.Client) -> None:
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: many}\nx: [" \
        + b",".join([b"1"] * 500_000) + b"]\n"
    started = time.perf_counter()
    reply = http.post(CONFIGMAPS, content=body, headers={"Content-Type": "application/yaml"})
    assert time.perf_counter() - started < 3.0
    status = assert_status_answer(reply)
    assert reply.status_code == 413
    assert "more than 50000 nodes" in status["message"]
