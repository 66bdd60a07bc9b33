"""The fields 1.37 added as alpha: `derivedAttributes` on requests and subrequests
(DRADerivedAttributes) and `consumesCounters[].compatibilityGroups`
(DRADeviceCompatibilityGroups) — validation with upstream's messages, gate dropping and
conversion between the served versions."""

from __future__ import annotations

from typing import Any

import pytest
from resource_objects import CLAIM, SLICE, fresh, messages

from draemu.api.types import Obj
from draemu.apiserver.registry.resource.conversion import from_storage, to_storage
from draemu.apiserver.registry.resource.strategies import (
    ResourceClaimStrategy,
    ResourceSliceStrategy,
)
from draemu.apiserver.registry.strategy import Context
from draemu.features import FeatureGates

pytestmark = pytest.mark.unit

ON = Context(gates=FeatureGates({"DRADerivedAttributes": True,
                                 "DRADeviceCompatibilityGroups": True}))
OFF = Context(gates=FeatureGates())
NUMA = 'device.attributes["gpu.example.com"].numa'


def claim(*derived: Obj, constrained: str = "derived/numa", sub: bool = False) -> Obj:
    o = fresh(CLAIM)
    requests = o["spec"]["devices"]["requests"]
    target = requests[1]["firstAvailable"][0] if sub else requests[0]["exactly"]
    target["derivedAttributes"] = list(derived)
    o["spec"]["devices"]["constraints"] = [{"requests": ["gpu", "nic"],
                                            "matchAttribute": constrained}]
    return o


def derived(name: str = "derived/numa", expression: str = NUMA) -> Obj:
    return {"name": name, "expression": expression}


def claim_errors(o: Obj, ctx: Context = ON) -> list[str]:
    return messages(ResourceClaimStrategy().validate(o, ctx))


def test_a_derived_attribute_named_by_a_constraint_is_valid() -> None:
    assert claim_errors(claim(derived())) == []
    assert claim_errors(claim(derived(), sub=True)) == []


def test_a_derived_attribute_no_constraint_names_is_invalid() -> None:
    assert claim_errors(claim(derived("derived/other"))) == [
        'spec.devices.requests[0].exactly.derivedAttributes[0].name: Invalid value: '
        '"derived/other": must be referenced by at least one matchAttribute or '
        "distinctAttribute constraint targeting this request"]


def test_a_constraint_on_the_parent_request_covers_its_subrequests() -> None:
    o = claim(derived(), sub=True)
    o["spec"]["devices"]["constraints"][0]["requests"] = ["gpu", "nic"]
    assert claim_errors(o) == []
    o["spec"]["devices"]["constraints"][0]["requests"] = ["gpu"]
    assert claim_errors(o) == [
        'spec.devices.requests[1].firstAvailable[0].derivedAttributes[0].name: Invalid value: '
        '"derived/numa": must be referenced by at least one matchAttribute or '
        "distinctAttribute constraint targeting this request"]


def test_derived_attribute_names_must_be_fully_qualified_and_unique() -> None:
    errors = claim_errors(claim(derived(), derived()))
    assert errors == ['spec.devices.requests[0].exactly.derivedAttributes[1]: Duplicate '
                      'value: "derived/numa"']
    errors = claim_errors(claim(derived("numa"), constrained="numa"))
    assert any(e.startswith('spec.devices.requests[0].exactly.derivedAttributes[0].name: '
                            'Invalid value: "numa": a fully qualified name must be a domain '
                            "and a name separated by a slash") for e in errors)


def test_a_derived_attribute_needs_name_and_expression() -> None:
    assert claim_errors(claim({"name": "derived/numa"})) == [
        "spec.devices.requests[0].exactly.derivedAttributes[0].expression: Required value"]


def test_a_derived_expression_must_yield_an_attribute_value() -> None:
    assert claim_errors(claim(derived(expression="1.5"))) == [
        'spec.devices.requests[0].exactly.derivedAttributes[0].expression: Invalid value: '
        '"1.5": must evaluate to a primitive scalar (string, integer, boolean, semver), not '
        "double"]


def test_at_most_32_derived_attributes() -> None:
    o = claim(*[derived(f"derived/a{i}") for i in range(33)])
    assert claim_errors(o) == ["spec.devices.requests[0].exactly.derivedAttributes: Too many: "
                               "33: must have at most 32 items"]


def test_derived_attributes_are_dropped_while_their_gate_is_off() -> None:
    o = claim(derived(), sub=True)
    o["spec"]["devices"]["requests"][0]["exactly"]["derivedAttributes"] = [derived()]
    ResourceClaimStrategy().prepare_for_create(o, OFF)
    requests = o["spec"]["devices"]["requests"]
    assert "derivedAttributes" not in requests[0]["exactly"]
    assert "derivedAttributes" not in requests[1]["firstAvailable"][0]


def test_derived_attributes_survive_v1beta1_and_v1beta2() -> None:
    o = claim(derived())
    flat = from_storage("ResourceClaim", o, "v1beta1")
    assert flat["spec"]["devices"]["requests"][0]["derivedAttributes"] == [derived()]
    assert to_storage("ResourceClaim", flat, "v1beta1")["spec"] == o["spec"]
    assert to_storage("ResourceClaim", from_storage("ResourceClaim", o, "v1beta2"),
                      "v1beta2")["spec"] == o["spec"]


# compatibilityGroups -------------------------------------------------------------------

def partitioned(*groups: Any) -> Obj:
    o = fresh(SLICE)  # counter sets sit in another slice of the pool
    o["spec"]["devices"][0]["consumesCounters"] = [{
        "counterSet": "gpu-0-counters", "counters": {"memory": {"value": "10Gi"}},
        "compatibilityGroups": list(groups)}]
    return o


def slice_errors(o: Obj, ctx: Context = ON) -> list[str]:
    return messages(ResourceSliceStrategy().validate(o, ctx))


PATH = "spec.devices[0].consumesCounters[0].compatibilityGroups"


def test_compatibility_groups_are_short_names() -> None:
    assert slice_errors(partitioned("mig", "vgpu")) == []
    [error] = slice_errors(partitioned("MIG"))
    assert error.startswith(f'{PATH}[0]: Invalid value: "MIG": a lowercase RFC 1123 label')


def test_at_most_two_distinct_compatibility_groups() -> None:
    assert slice_errors(partitioned("a", "b", "c")) == [
        f"{PATH}: Too many: 3: must have at most 2 items"]
    assert slice_errors(partitioned("mig", "mig")) == [f'{PATH}[1]: Duplicate value: "mig"']


def test_compatibility_groups_are_dropped_while_their_gate_is_off() -> None:
    o = partitioned("mig")
    ResourceSliceStrategy().prepare_for_create(o, OFF)
    assert "compatibilityGroups" not in o["spec"]["devices"][0]["consumesCounters"][0]


def test_compatibility_groups_in_use_are_kept_with_the_gate_off() -> None:
    old = partitioned("mig")
    new = fresh(old)
    ResourceSliceStrategy().prepare_for_update(new, old, OFF)
    assert new["spec"]["devices"][0]["consumesCounters"][0]["compatibilityGroups"] == ["mig"]


def test_compatibility_groups_survive_v1beta1() -> None:
    o = partitioned("mig")
    beta = from_storage("ResourceSlice", o, "v1beta1")
    assert beta["spec"]["devices"][0]["basic"]["consumesCounters"][0][
        "compatibilityGroups"] == ["mig"]
    assert to_storage("ResourceSlice", beta, "v1beta1")["spec"] == o["spec"]
