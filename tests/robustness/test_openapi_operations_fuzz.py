"""Every operation the apiserver serves in /openapi/v2, fuzzed (issue 15): each gets
requests with generated query parameters and bodies (random JSON, objects of its kind with
random field values, hostile numbers and nesting, every patch type), and no answer may be
a server error. Derandomized and bounded in time, so a run is repeatable and short."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from robustkit import assert_status_answer

pytestmark = [pytest.mark.unit, pytest.mark.slow]

BUDGET_SECONDS = 60.0
PER_OPERATION = settings(derandomize=True, deadline=None, database=None, max_examples=4,
                         suppress_health_check=list(HealthCheck))
PATCH_TYPES = ["application/json-patch+json", "application/merge-patch+json",
               "application/strategic-merge-patch+json", "application/apply-patch+yaml"]
# Streams and upgrades: a fuzzer would hang on them, not find errors.
STREAMING = ("/exec", "/attach", "/portforward", "/proxy")
UNSENT_QUERY = {"watch", "follow", "timeoutSeconds"}

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                    st.floats(allow_nan=False), st.text(max_size=20),
                    st.sampled_from(["", "-1", "0", "true", "Strict", "All", "a=b", "\x00",
                                     "9" * 30, "1Gi", "2024-01-01T00:00:00Z"]))
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12)
hostile = st.sampled_from([
    b"[" * 5000 + b"]" * 5000,
    b'{"metadata":{"name":' + b"7" * 5000 + b"}}",
    b"a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
    b"c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
    b"e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n",
    b'{"a":1,"a":2}', b"\xff\xfe", b"", b"null", b"{}", b"[]"])


def _operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    ops = []
    for path, item in doc["paths"].items():
        if path.endswith(STREAMING) or "/watch/" in path:
            continue
        shared = item.get("parameters") or []
        for method in ("get", "post", "put", "patch", "delete"):
            if method in item:
                op = dict(item[method])
                op["parameters"] = shared + (op.get("parameters") or [])
                if method == "delete" and path == "/api/v1/namespaces":
                    continue  # would take the namespace every other request uses
                ops.append((path, method, op))
    return ops


def _kind_of(doc: dict[str, Any], op: dict[str, Any]) -> tuple[str, str, list[str]] | None:
    """(apiVersion, kind, top-level properties) of the operation's body schema."""
    for p in op["parameters"]:
        ref = (p.get("schema") or {}).get("$ref", "") if p.get("in") == "body" else ""
        definition = doc.get("definitions", {}).get(ref.rsplit("/", 1)[-1])
        if definition:
            gvk = (definition.get("x-kubernetes-group-version-kind") or [{}])[0]
            group, version = gvk.get("group", ""), gvk.get("version", "v1")
            return (f"{group}/{version}" if group else version, gvk.get("kind", ""),
                    sorted(definition.get("properties") or {}))
    return None


def _url(path: str) -> str:
    return (path.replace("{namespace}", "default").replace("{name}", "fz")
            .replace("{path}", "x"))


@st.composite
def _request(draw: st.DrawFn, doc: dict[str, Any], method: str, op: dict[str, Any]
             ) -> tuple[dict[str, str], bytes | None, str]:
    query = {}
    for p in op["parameters"]:
        if p.get("in") == "query" and p["name"] not in UNSENT_QUERY and draw(st.booleans()):
            query[p["name"]] = str(draw(scalars))
    if method in ("get", "delete") and not draw(st.booleans()):
        return query, None, "application/json"
    shape = _kind_of(doc, op)
    choice = draw(st.integers(0, 2))
    if choice == 0:
        body = draw(hostile)
    elif choice == 1 or shape is None:
        body = json.dumps(draw(json_values)).encode()
    else:
        api_version, kind, properties = shape
        obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind,
                               "metadata": {"name": "fz", "namespace": "default"}}
        for prop in draw(st.lists(st.sampled_from(properties or ["spec"]), max_size=3)):
            if prop not in ("apiVersion", "kind"):
                obj[prop] = draw(json_values)
        body = json.dumps(obj).encode()
    content_type = draw(st.sampled_from(PATCH_TYPES)) if method == "patch" else \
        draw(st.sampled_from(["application/json", "application/yaml"]))
    return query, body, content_type


def _fuzz(http: httpx.Client, doc: dict[str, Any], path: str, method: str,
          op: dict[str, Any]) -> None:
    @PER_OPERATION
    @given(_request(doc, method, op))
    def check(request: tuple[dict[str, str], bytes | None, str]) -> None:
        query, body, content_type = request
        reply = http.request(method.upper(), _url(path), params=query, content=body,
                             headers={"Content-Type": content_type}, timeout=30)
        if reply.status_code >= 400:
            assert_status_answer(reply)
        assert reply.status_code < 500, (method, path, query, body, reply.text)

    check()


def test_no_served_operation_answers_a_server_error(http: httpx.Client) -> None:
    doc = http.get("/openapi/v2").json()
    operations = _operations(doc)
    assert len(operations) > 100
    started = time.monotonic()
    sent = 0
    for path, method, op in operations:
        if time.monotonic() - started > BUDGET_SECONDS:
            break

        _fuzz(http, doc, path, method, op)
        sent += 1
    assert sent > len(operations) // 2, f"only {sent} of {len(operations)} operations in time"
    assert http.get("/readyz").status_code == 200
