"""The resource.k8s.io schema files: complete references, every served kind, and the
objects each version serves have no field its schema does not know."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from resource_generators import claims, slices
from resource_objects import ALPHA3_SLICE, CLAIM, CLASS, FULL_CLAIM, FULL_SLICE, SLICE, TAINT_RULE

from draemu.apiserver.registry.resource import conversion
from draemu.apiserver.registry.resource.strategies import STRATEGIES
from draemu.openapi import schemas

pytestmark = pytest.mark.unit

FILES = sorted(Path(schemas.DATA_DIR).glob("resource.k8s.io__*.json"))


def refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if "$ref" in node else []
        return found + [r for v in node.values() for r in refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in refs(v)]
    return []


def test_there_is_one_schema_file_per_version() -> None:
    assert [f.name for f in FILES] == [f"resource.k8s.io__{v}.json"
                                       for v in ("v1", "v1alpha3", "v1beta1", "v1beta2")]


@pytest.mark.parametrize("path", FILES, ids=[f.name for f in FILES])
def test_every_reference_resolves(path: Path) -> None:
    known = schemas.definitions()
    document = json.loads(path.read_text())
    missing = {r for r in refs(document) if r.removeprefix(schemas.REF_PREFIX) not in known}
    assert missing == set()


@pytest.mark.parametrize("strategy", STRATEGIES, ids=[s.kind for s in STRATEGIES])
def test_every_served_kind_and_version_has_a_schema(strategy: Any) -> None:
    for version in strategy.versions:
        assert schemas.has_kind("resource.k8s.io", version, strategy.kind), version
        assert schemas.has_kind("resource.k8s.io", version, strategy.kind + "List"), version


SERVED = [(o, v) for o in (CLAIM, FULL_CLAIM, SLICE, FULL_SLICE, CLASS, TAINT_RULE)
          for v in ("v1", "v1beta2", "v1beta1")
          if not (o["kind"] == "DeviceTaintRule" and v == "v1beta1")]


@pytest.mark.parametrize("obj,version", SERVED,
                         ids=[f"{o['kind']}-{o['metadata']['name']}-{v}" for o, v in SERVED])
def test_served_objects_have_only_known_fields(obj: dict[str, Any], version: str) -> None:
    served = conversion.from_storage(obj["kind"], obj, version)
    assert schemas.unknown_fields("resource.k8s.io", version, obj["kind"], served) == []


@pytest.mark.parametrize("obj", [SLICE, CLASS, TAINT_RULE], ids=lambda o: o["kind"])
def test_v1alpha3_objects_have_only_known_fields(obj: dict[str, Any]) -> None:
    served = conversion.from_storage(obj["kind"], obj, "v1alpha3")
    assert schemas.unknown_fields("resource.k8s.io", "v1alpha3", obj["kind"], served) == []


def test_v1alpha3_131_manifest_has_only_known_fields() -> None:
    assert schemas.unknown_fields("resource.k8s.io", "v1alpha3", "ResourceSlice",
                                  ALPHA3_SLICE) == []


UPSTREAM = [(o, v) for o in (CLAIM, FULL_CLAIM, SLICE, FULL_SLICE, CLASS, TAINT_RULE)
            for v in ("v1", "v1beta2", "v1beta1")
            if not (o["kind"] == "DeviceTaintRule" and v == "v1beta1")]


@pytest.mark.parametrize("obj,version", UPSTREAM,
                         ids=[f"{o['kind']}-{o['metadata']['name']}-{v}" for o, v in UPSTREAM])
def test_served_objects_conform_to_the_upstream_1_37_schemas(obj: dict[str, Any],
                                                             version: str) -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    served = conversion.from_storage(obj["kind"], obj, version)
    kubernetes_validate.validate(served, "1.37.0", strict=True)


@settings(max_examples=20, deadline=None, derandomize=True, database=None)
@given(st.one_of(claims, slices), st.sampled_from(["v1", "v1beta2", "v1beta1"]))
def test_generated_objects_conform_to_the_upstream_schemas(obj: dict[str, Any],
                                                           version: str) -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    served = conversion.from_storage(obj["kind"], {**obj, "metadata": {"name": "x"}}, version)
    kubernetes_validate.validate(served, "1.37.0", strict=True)
