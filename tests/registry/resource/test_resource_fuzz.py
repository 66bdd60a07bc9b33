"""Conversion, defaulting, validation and printing never fail on any well-typed object: random
objects are generated from the served schemas themselves, so every field is reached."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draemu.api.errors import StatusError
from draemu.apiserver.registry.resource.strategies import STRATEGIES
from draemu.apiserver.registry.strategy import Context
from draemu.features import FeatureGates
from draemu.openapi import schemas

pytestmark = pytest.mark.unit

MAX_DEPTH = 7
words = st.sampled_from(["", "a", "gpu", "GPU", "node-1", "x/y", "a/b/c", "example.com/numa",
                         "1Gi", "-1", "ExactCount", "All", "true", "1.2.3", "NoSchedule"])
quantities = st.sampled_from(["1", "0", "-1", "1Gi", "500m", "1.5", 3])
_cache: dict[tuple[str, int], Any] = {}


def from_schema(schema: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    if "allOf" in schema:
        return from_schema(schema["allOf"][0], depth)
    if "$ref" in schema:
        name = schema["$ref"].removeprefix(schemas.REF_PREFIX)
        if name.endswith("ObjectMeta"):
            return st.just({"name": "x", "namespace": "default"})
        key = (name, depth)
        if key not in _cache:
            _cache[key] = st.deferred(lambda: from_schema(schemas.definition(name), depth))
        return _cache[key]
    if "oneOf" in schema:  # Quantity
        return quantities
    kind = schema.get("type")
    if depth <= 0 and kind in ("object", "array"):
        return st.none()
    if kind == "object" and "properties" in schema:
        props = {k: from_schema(v, depth - 1) for k, v in schema["properties"].items()
                 if k not in ("apiVersion", "kind")}
        return st.fixed_dictionaries({}, optional=props)
    if kind == "object" and "additionalProperties" in schema:
        return st.dictionaries(words, from_schema(schema["additionalProperties"], depth - 1),
                               max_size=2)
    if kind == "object":
        return st.one_of(st.none(), st.just({}), st.just({"a": 1}), st.just([1]))
    if kind == "array":
        return st.lists(from_schema(schema["items"], depth - 1), max_size=2)
    if kind == "integer":
        return st.integers(-2, 3)
    if kind == "boolean":
        return st.booleans()
    if kind == "number":
        return st.floats(-1, 1)
    return words


def objects(strategy: Any, version: str) -> st.SearchStrategy[dict[str, Any]]:
    _, schema = schemas.for_kind("resource.k8s.io", version, strategy.kind)
    return from_schema(schema, MAX_DEPTH)


CASES = [(s, v) for s in STRATEGIES for v in s.versions]


@pytest.mark.parametrize("strategy,version", CASES,
                         ids=[f"{s.kind}-{v}" for s, v in CASES])
def test_any_well_typed_object_is_handled(strategy: Any, version: str) -> None:
    gates = FeatureGates({"DRAPartitionableDevicesType": True, "DRAResourcePoolStatus": True,
                          "DRAListTypeAttributes": True})
    ctx = Context(gates=gates, lookup=lambda *_: None)

    @settings(max_examples=20, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(objects(strategy, version), objects(strategy, version))
    def check(new: dict[str, Any], old: dict[str, Any]) -> None:
        try:
            stored = [strategy.to_storage(o, version) for o in (new, old)]
        except Exception as e:  # only an API error is acceptable
            assert getattr(e, "code", None) == 422, e
            return
        for o in stored:
            strategy.default(copy.deepcopy(o), "v1")
        strategy.prepare_for_create(stored[0], ctx)
        strategy.validate(stored[0], ctx)
        strategy.prepare_for_update(stored[0], stored[1], ctx)
        strategy.validate_update(stored[0], stored[1], ctx)
        if "status" in strategy.subresources:
            strategy.prepare_for_status_update(stored[0], stored[1], ctx)
            strategy.validate_status_update(stored[0], stored[1], ctx)
        strategy.table_row(stored[0])
        for served in strategy.versions:
            try:
                strategy.from_storage(stored[0], served)
            except StatusError as e:  # 1.31 v1alpha3 cannot show every claim
                assert (e.code, served) == (500, "v1alpha3"), e

    check()
