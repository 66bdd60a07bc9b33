"""Derived attribute expressions (`derivedAttributes[].expression`, DRADerivedAttributes):
what they may return and the attribute they yield (upstream's EvaluateDerivedAttribute)."""

from __future__ import annotations

import pytest

from draemu.cel import CELCompileError, CELRuntimeError, check_derived, compile_derived
from draemu.features import FeatureGates

pytestmark = pytest.mark.unit

DEVICE = {"name": "dev-0", "driver": "dra.example.com", "pool": "pool-0",
          "attributes": {"numa": {"string": "numa-1"}, "index": {"int": 3},
                         "driverVersion": {"version": "1.2.3"}}}


@pytest.mark.parametrize(("expression", "attribute"), [
    ('device.attributes["dra.example.com"].numa', {"string": "numa-1"}),
    ('device.attributes["dra.example.com"].index + 1', {"int": 4}),
    ('device.attributes["dra.example.com"].driverVersion', {"version": "1.2.3"}),
    ("true", {"bool": True}),
    ('["a", "b"]', {"strings": ["a", "b"]}),
    ("[]", {"strings": []}),
])
def test_a_derived_attribute_yields_a_device_attribute(expression: str, attribute: dict) -> None:
    assert compile_derived(expression).evaluate(DEVICE) == attribute


def test_a_derived_attribute_must_be_a_scalar_or_list() -> None:
    [issue] = check_derived("1.5")
    assert issue.detail == ("must evaluate to a primitive scalar (string, integer, boolean, "
                            "semver), not double")
    with pytest.raises(CELCompileError, match="or a list of these scalars, not double"):
        compile_derived("1.5")


def test_lists_need_list_type_attributes_in_new_objects() -> None:
    [issue] = check_derived("[1, 2]")
    assert issue.detail.endswith("not list(int)")
    assert check_derived("[1, 2]", gates=FeatureGates({"DRAListTypeAttributes": True})) == []


def test_a_missing_attribute_is_a_runtime_error() -> None:
    program = compile_derived('device.attributes["dra.example.com"].missingAttr')
    with pytest.raises(CELRuntimeError, match="^no such key: missingAttr"):
        program.evaluate(DEVICE)
