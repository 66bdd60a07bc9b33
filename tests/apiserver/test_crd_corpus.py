"""Upstream's own CRDs and objects as a conformance corpus, read from the Go module cache
(the e2e Go builds download k8s.io/apiextensions-apiserver and k8s.io/kubernetes):

- every apiextensions.k8s.io/v1 CRD upstream ships in those modules (Gateway API,
  volume snapshots, Calico, ...) is accepted, strictly decoded;
- the Gateway API objects of apiextensions-apiserver's ratcheting test cases: each
  `valid/` object is accepted and each `invalid/` one refused with a 422, through the
  CRDs' schemas and their 166 CEL rules."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from apiclient import Client

pytestmark = pytest.mark.e2e

MODULES = Path(os.environ.get("DRAEMU_GO_CACHE") or Path.home() / ".cache" / "draemu" / "go"
               ) / "mod" / "k8s.io"
CASES = MODULES / "apiextensions-apiserver@v0.37.2" / "test" / "integration" / \
    "ratcheting_test_cases"
CRD_SOURCES = [MODULES / "kubernetes@v1.37.2", MODULES / "apiextensions-apiserver@v0.37.2"]
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
PLURALS = {"Gateway": "gateways", "HTTPRoute": "httproutes", "GatewayClass": "gatewayclasses",
           "ReferenceGrant": "referencegrants", "Namespace": "namespaces",
           "Service": "services"}

if not CASES.is_dir():
    pytest.skip(f"the Go module cache has no {CASES}", allow_module_level=True)


def _documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]


def _upstream_crds() -> list[dict[str, Any]]:
    found = []
    for root in CRD_SOURCES:
        for path in sorted(root.rglob("*.yaml")):
            if "testdata" in path.parts and "HEAD" in path.parts:
                continue  # round-trip fixtures (random values, a resourceVersion)
            text = path.read_text(errors="replace")
            if "kind: CustomResourceDefinition" not in text:
                continue
            try:
                docs = _documents(path)
            except yaml.YAMLError:
                continue
            found += [d for d in docs if d.get("kind") == "CustomResourceDefinition"
                      and d.get("apiVersion") == "apiextensions.k8s.io/v1"]
    return found


async def _post(client: Client, obj: dict[str, Any]) -> Any:
    kind, api_version = obj["kind"], obj["apiVersion"]
    base = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
    plural = PLURALS[kind]
    if kind in ("GatewayClass", "Namespace"):
        return await client.post(f"{base}/{plural}", obj)
    namespace = (obj.get("metadata") or {}).get("namespace") or "default"
    await client.post("/api/v1/namespaces", {"metadata": {"name": namespace}})
    return await client.post(f"{base}/namespaces/{namespace}/{plural}", obj)


async def test_upstreams_crds_are_accepted(client: Client) -> None:
    crds = _upstream_crds()
    assert len(crds) >= 20
    refused = []
    for crd in crds:
        reply = await client.post(f"{CRDS}?fieldValidation=Strict", crd)
        if reply.status not in (201, 409):
            refused.append((crd["metadata"]["name"], reply.json.get("message")))
    assert refused == []


async def test_gateway_api_objects_are_judged_as_upstream_judges_them(client: Client) -> None:
    for crd in _documents(CASES / "crds" / "standard-install.yaml"):
        assert (await client.post(CRDS, crd)).status == 201
    wrong = []
    for verdict in ("valid", "invalid"):
        for path in sorted((CASES / verdict).rglob("*.yaml")):
            for obj in _documents(path):
                reply = await _post(client, obj)
                if obj["kind"] in ("Namespace", "Service"):
                    continue
                # Some valid cases reuse a name: already existing is fine.
                expected = (201, 409) if verdict == "valid" else (422,)
                if reply.status not in expected:
                    wrong.append((str(path.relative_to(CASES)), reply.status,
                                  reply.json.get("message")))
    assert wrong == []
