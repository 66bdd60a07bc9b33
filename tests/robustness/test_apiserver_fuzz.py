"""Property-based fuzzing of a running apiserver over real HTTP: malformed bodies, wrong
types at every depth, malformed patches of every patch type, bad query parameters and
odd paths, on core kinds and every served resource.k8s.io version.

Invariants: no 5xx; every error is a `Status` with `Content-Type: application/json`
exactly and a message; the server keeps serving; a failed write leaves the store as it
was. Derandomized, so a run is repeatable and bounded."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from robustkit import assert_status_answer

pytestmark = [pytest.mark.slow, pytest.mark.unit]

FUZZ = settings(derandomize=True, deadline=None, database=None, max_examples=300,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
NAMESPACE = "default"
NAME = "fz"


@dataclass(frozen=True)
class Target:
    group_version: str  # "/api/v1" or "/apis/resource.k8s.io/v1beta2"
    resource: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return self.group_version.removeprefix("/api/").removeprefix("/apis/")

    @property
    def collection(self) -> str:
        where = f"/namespaces/{NAMESPACE}" if self.namespaced else ""
        return f"{self.group_version}{where}/{self.resource}"


# Kinds whose malformed writes the fuzzer aims at, each with a valid object to mutate.
SEEDS: dict[str, dict[str, Any]] = {
    "configmaps": {"data": {"a": "b"}},
    "pods": {"spec": {"containers": [{"name": "c", "image": "i", "resources": {
        "claims": [{"name": "gpu"}], "limits": {"cpu": "1"}}}],
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]}},
    "nodes": {"metadata": {"labels": {"a": "b"}}, "spec": {"taints": [
        {"key": "k", "effect": "NoSchedule"}]}},
    "deviceclasses": {"spec": {"selectors": [{"cel": {"expression": "device.driver == 'd'"}}]}},
    "resourceclaims": {"spec": {"devices": {
        "requests": [{"name": "r", "exactly": {"deviceClassName": "c", "count": 1,
                                               "allocationMode": "ExactCount"}}],
        "constraints": [{"requests": ["r"], "matchAttribute": "d.example.com/model"}],
        "config": [{"requests": ["r"], "opaque": {"driver": "d.example.com",
                                                  "parameters": {"a": 1}}}]}}},
    "resourceclaimtemplates": {"spec": {"spec": {"devices": {"requests": [
        {"name": "r", "exactly": {"deviceClassName": "c"}}]}}}},
    "deployments": {"spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
        "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c",
                                                                     "image": "i"}]}}}},
    "jobs": {"spec": {"template": {"spec": {"restartPolicy": "Never",
                                            "containers": [{"name": "c", "image": "i"}]}}}},
    "devicetaintrules": {"spec": {"taint": {"key": "example.com/k", "effect": "NoSchedule"}}},
    "resourceslices": {"spec": {"driver": "d.example.com", "nodeName": "n",
                                "pool": {"name": "p", "generation": 1,
                                         "resourceSliceCount": 1},
                                "devices": [{"name": "d0", "attributes": {
                                    "model": {"string": "x"}}}]}},
}

PATCH_TYPES = ["application/json-patch+json", "application/merge-patch+json",
               "application/strategic-merge-patch+json", "application/apply-patch+yaml"]
BODY_TYPES = ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf",
              "text/plain", "", "application/json; charset=utf-16", "multipart/form-data"]


def _targets(client: httpx.Client) -> list[Target]:
    groups = {"resource.k8s.io", "apps", "batch"}
    versions = ["/api/v1"] + [f"/apis/{g['name']}/{v['version']}"
                              for g in client.get("/apis").json()["groups"]
                              if g["name"] in groups for v in g["versions"]]
    found = []
    for gv in versions:
        for r in client.get(gv).json()["resources"]:
            if r["name"] in SEEDS:
                found.append(Target(gv, r["name"], r["kind"], r["namespaced"]))
    return found


def seed_object(target: Target, name: str = NAME) -> dict[str, Any]:
    seed = json.loads(json.dumps(SEEDS[target.resource]))
    return {"apiVersion": target.api_version, "kind": target.kind,
            **seed, "metadata": {**seed.get("metadata", {}), "name": name}}


@pytest.fixture(scope="module")
def targets(http: httpx.Client) -> list[Target]:
    found = _targets(http)
    assert {t.group_version for t in found} >= {"/api/v1", "/apis/resource.k8s.io/v1"}
    created: set[str] = set()
    for target in found:
        # One object per kind to update and patch, created in the first version whose
        # shape the seed has; every version serves it.
        if target.resource not in created:
            if http.post(target.collection, json=seed_object(target)).status_code == 201:
                created.add(target.resource)
    assert created == set(SEEDS)
    return found


# Wrong values for any field: every JSON type, huge and odd strings, deep nesting.
junk = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-2**70, max_value=2**70)
    | st.floats(allow_nan=False) | st.text(max_size=20)
    | st.sampled_from(["a" * 70_000, "é\u0000\u202e", "-x", "A B", "1Gi", "${x}", ""]),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8)
deep = st.integers(min_value=50, max_value=3000).map(lambda n: "[" * n + "]" * n)


@st.composite
def mutated(draw: st.DrawFn, obj: Any) -> Any:
    """`obj` with some values (at any depth) replaced by junk, or keys added."""
    if isinstance(obj, dict):
        out = {k: draw(junk) if draw(st.integers(0, 4)) == 0 else draw(mutated(v))
               for k, v in obj.items()}
        if draw(st.booleans()):
            out[draw(st.sampled_from(["spec", "status", "metadata", "devices", "x", "kind"]))] \
                = draw(junk)
        return out
    if isinstance(obj, list):
        return [draw(mutated(v)) for v in obj]
    return draw(junk) if draw(st.integers(0, 3)) == 0 else obj


raw_bodies = st.sampled_from([
    b"\xff\xfe\x00", b"{", b"[]", b"null", b"1", b'"x"', b'{"a":' * 3000, b"- a\n- b",
    b"a: [", b"!!python/object/apply:os.system ['true']", b"\xc3\x28", b"{}" * 2,
    b'{"apiVersion":"v1"}', b'{"kind":"Pod"}', b'\xef\xbb\xbf{"kind":1}'])


def _snapshot(client: httpx.Client, target: Target) -> Any:
    return client.get(target.collection).json()["items"]


def _check(client: httpx.Client, reply: httpx.Response, target: Target, before: Any) -> None:
    if reply.status_code >= 400:
        assert_status_answer(reply)
        assert _snapshot(client, target) == before, "a failed write changed the store"
    else:
        assert reply.status_code < 300, (reply.status_code, reply.text)


@given(data=st.data())
@FUZZ
def test_malformed_writes_get_a_status_and_change_nothing(
        http: httpx.Client, targets: list[Target], data: st.DataObject) -> None:
    target = data.draw(st.sampled_from(targets))
    method = data.draw(st.sampled_from(["POST", "PUT"]))
    kind = data.draw(st.sampled_from(["mutated", "raw", "deep", "yaml"]))
    if kind == "raw":
        body = data.draw(raw_bodies)
    elif kind == "deep":
        body = data.draw(deep).encode()
    else:
        obj = data.draw(mutated(seed_object(target)))
        body = json.dumps(obj).encode() if kind == "mutated" else \
            json.dumps(obj).encode()  # JSON is YAML: the YAML decoder reads it too
    ctype = data.draw(st.sampled_from(BODY_TYPES)) if data.draw(st.booleans()) else \
        ("application/yaml" if kind == "yaml" else "application/json")
    path = target.collection if method == "POST" else f"{target.collection}/{NAME}"
    before = _snapshot(http, target)
    reply = http.request(method, path, content=body, params={"dryRun": "All"},
                         headers={"Content-Type": ctype} if ctype else {})
    _check(http, reply, target, before)


SUBRESOURCE_WRITES = [("pods", "eviction", "POST"), ("pods", "binding", "POST"),
                      ("deployments", "scale", "PUT"), ("resourceclaims", "status", "PUT"),
                      ("pods", "status", "PUT"), ("jobs", "status", "PUT")]


@given(data=st.data())
@FUZZ
def test_malformed_subresource_writes_get_a_status_and_change_nothing(
        http: httpx.Client, targets: list[Target], data: st.DataObject) -> None:
    resource, subresource, method = data.draw(st.sampled_from(SUBRESOURCE_WRITES))
    target = next(t for t in targets if t.resource == resource)
    body = data.draw(mutated(seed_object(target)) | junk | raw_bodies.map(lambda b: b))
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    before = _snapshot(http, target)
    reply = http.request(method, f"{target.collection}/{NAME}/{subresource}",
                         content=content, params={"dryRun": "All"},
                         headers={"Content-Type": "application/json"})
    _check(http, reply, target, before)


@st.composite
def patches(draw: st.DrawFn, target: Target) -> tuple[str, Any]:
    ctype = draw(st.sampled_from(PATCH_TYPES))
    if ctype == "application/json-patch+json":
        op = st.fixed_dictionaries({
            "op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "x"]),
            "path": st.sampled_from(["/metadata/labels/a~1b", "/spec", "/spec/devices/-",
                                     "/metadata/name", "/x/y/z", "", "/metadata/labels/~2",
                                     "/spec/containers/99999999999999999999", "/status"])},
            optional={"value": junk, "from": st.sampled_from(["/spec", "/metadata", "/a"])})
        return ctype, draw(st.lists(op, max_size=3) | junk)
    directives = st.sampled_from([
        {"$patch": draw(st.sampled_from(["delete", "replace", "bogus", 1]))},
        {"$retainKeys": draw(junk)}, {"$setElementOrder/containers": draw(junk)},
        {"metadata": {"$deleteFromPrimitiveList/finalizers": draw(junk)}}])
    body = draw(mutated(seed_object(target)) | junk | directives)
    return ctype, body


@given(data=st.data())
@FUZZ
def test_malformed_patches_get_a_status_and_change_nothing(
        http: httpx.Client, targets: list[Target], data: st.DataObject) -> None:
    target = data.draw(st.sampled_from(targets))
    ctype, body = data.draw(patches(target))
    subresource = data.draw(st.sampled_from(["", "/status"]))
    params = {"fieldManager": "fuzz"} if ctype.startswith("application/apply") else {}
    before = _snapshot(http, target)
    reply = http.patch(f"{target.collection}/{NAME}{subresource}",
                       content=json.dumps(body).encode(), params=params,
                       headers={"Content-Type": ctype})
    # A well-formed patch may succeed; then undo nothing, but the answer is an object.
    if reply.status_code < 300:
        assert reply.json()["kind"] == target.kind
        return
    if ctype.startswith("application/apply") and reply.status_code == 500:
        # kube-apiserver's one 500 here: a configuration its field manager cannot type
        # (a field not in the schema, a list item without its key), outside its error
        # types. Still a Status, and nothing changed.
        assert reply.json()["message"].startswith("failed to create typed patch object ("), \
            reply.text
        assert _snapshot(http, target) == before, "a failed apply changed the store"
        return
    _check(http, reply, target, before)


BAD_QUERIES = st.sampled_from([
    {"limit": "-1"}, {"limit": "x"}, {"limit": "99999999999999999999999"},
    {"continue": "garbage"}, {"continue": "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MX0="},
    {"resourceVersion": "abc"}, {"resourceVersion": "-1"}, {"watch": "maybe"},
    {"labelSelector": "a in ("}, {"labelSelector": "!!"}, {"labelSelector": "a=b=c"},
    {"fieldSelector": "x=y"}, {"fieldSelector": "metadata.name==a,,"},
    {"resourceVersionMatch": "Exact"}, {"resourceVersionMatch": "Bogus"},
    {"timeoutSeconds": "x"}, {"dryRun": "Maybe"}, {"fieldValidation": "bogus"},
    {"propagationPolicy": "x"}, {"gracePeriodSeconds": "x"}, {"force": "yes"},
    {"sendInitialEvents": "true"}, {"allowWatchBookmarks": "x"}, {"orphanDependents": "x"}])


@given(data=st.data())
@FUZZ
def test_bad_query_parameters_get_a_status(http: httpx.Client, targets: list[Target],
                                           data: st.DataObject) -> None:
    target = data.draw(st.sampled_from(targets))
    query = data.draw(BAD_QUERIES | st.dictionaries(
        st.sampled_from(["limit", "continue", "labelSelector", "fieldSelector",
                         "timeoutSeconds"]), st.text(max_size=30),
        min_size=1, max_size=3))
    if query.get("watch") in ("1", "t", "true") or "sendInitialEvents" in query:
        query = {**query, "timeoutSeconds": "1"}
    method = data.draw(st.sampled_from(["GET", "DELETE"]))
    path = target.collection + data.draw(st.sampled_from(["", f"/{NAME}"]))
    if method == "DELETE":
        query = {**query, "dryRun": "All"}
    before = _snapshot(http, target)
    reply = http.request(method, path, params=query)
    _check(http, reply, target, before)


segment = st.sampled_from(["", "..", "%00", "watch", "namespaces", "x", "status", "a" * 300,
                           "%ff", "UPPER", "-", "proxy", "log", "scale", "binding"]) \
    | st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E,
                                     exclude_characters="/?#%"), max_size=12)


@given(data=st.data())
@FUZZ
def test_odd_paths_get_a_status(http: httpx.Client, targets: list[Target],
                                data: st.DataObject) -> None:
    target = data.draw(st.sampled_from(targets))
    tail = data.draw(st.lists(segment, min_size=1, max_size=5))
    method = data.draw(st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]))
    if method == "GET" and "watch" in tail:
        return  # a GET there may be a real watch stream, which is not an error
    path = "/".join([target.collection, *tail])
    before = _snapshot(http, target)
    reply = http.request(method, path, params={"dryRun": "All"} if method != "GET" else {},
                         content=b"{" if method in ("POST", "PUT", "PATCH") else None,
                         headers={"Content-Type": "application/json"})
    _check(http, reply, target, before)


def test_the_server_still_serves_after_the_fuzzing(http: httpx.Client) -> None:
    assert http.get("/readyz").text == "ok"
    assert http.get("/api/v1/namespaces/default").json()["metadata"]["name"] == "default"
