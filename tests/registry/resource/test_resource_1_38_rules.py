"""The resource.k8s.io rules 1.38 added without a gate (kubernetes v1.38.0-beta.0): each
applies at `--emulated-version 1.38` and not at 1.37, with upstream's messages."""

from __future__ import annotations

import pytest
from resource_objects import CLAIM, SLICE, fresh, messages

from draemu.api.types import Obj
from draemu.apiserver.registry.resource.strategies import (
    ResourceClaimStrategy,
    ResourceClaimTemplateStrategy,
    ResourceSliceStrategy,
)
from draemu.apiserver.registry.strategy import Context
from draemu.features import FeatureGates

pytestmark = pytest.mark.unit

AT_1_38 = Context(gates=FeatureGates(emulated_version="1.38"))
AT_1_37 = Context(gates=FeatureGates(emulated_version="1.37"))
DEVICE = "spec.devices[0]"


def claim_errors(o: Obj, ctx: Context) -> list[str]:
    return messages(ResourceClaimStrategy().validate(o, ctx))


def slice_errors(o: Obj, ctx: Context) -> list[str]:
    return messages(ResourceSliceStrategy().validate(o, ctx))


def slice_with(**device: object) -> Obj:
    o = fresh(SLICE)
    o["spec"]["devices"][0].update(device)
    return o


def test_names_with_two_slashes_are_refused() -> None:
    o = slice_with(attributes={"gpu.example.com/model/x": {"string": "A100"}})
    assert slice_errors(o, AT_1_38) == [
        f'{DEVICE}.attributes[gpu.example.com/model/x]: Invalid value: '
        '"gpu.example.com/model/x": must not contain more than one slash']
    assert slice_errors(o, AT_1_37) == []
    c = fresh(CLAIM)
    c["spec"]["devices"]["constraints"][0]["matchAttribute"] = "example.com/a/b"
    assert claim_errors(c, AT_1_38) == [
        'spec.devices.constraints[0].matchAttribute: Invalid value: "example.com/a/b": '
        "must not contain more than one slash"]
    assert claim_errors(c, AT_1_37) == []


def claim_with_capacity(requests: dict[str, str]) -> Obj:
    o = fresh(CLAIM)
    o["spec"]["devices"]["requests"][0]["exactly"]["capacity"] = {"requests": requests}
    o["spec"]["devices"]["requests"][1]["firstAvailable"][1]["capacity"] = {
        "requests": requests}
    return o


def test_capacity_requests_are_names_at_most_32_and_not_negative() -> None:
    o = claim_with_capacity({"memory": "-1Gi", "bad name": "1"})
    exact = "spec.devices.requests[0].exactly.capacity.requests"
    sub = "spec.devices.requests[1].firstAvailable[1].capacity.requests"
    errors = claim_errors(o, AT_1_38)
    for base in (exact, sub):
        assert f'{base}[memory]: Invalid value: "-1Gi": must be greater than or equal to 0' \
            in errors
        assert any(e.startswith(f'{base}[bad name]: Invalid value: "bad name": ')
                   for e in errors)
    assert claim_errors(o, AT_1_37) == []
    many = claim_with_capacity({f"c{i}": "1" for i in range(33)})
    assert claim_errors(many, AT_1_38) == [
        f"{exact}: Too many: 33: must have at most 32 items",
        f"{sub}: Too many: 33: must have at most 32 items"]
    assert claim_errors(claim_with_capacity({f"c{i}": "0" for i in range(32)}), AT_1_38) == []


def allocated(consumed: dict[str, str]) -> Obj:
    o = fresh(CLAIM)
    o["status"] = {"allocation": {"devices": {"results": [{
        "request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0",
        "shareID": "0b8e4bd0-8fd3-4b4e-9d5a-3f0c5c4b2a11", "consumedCapacity": consumed}]}}}
    return o


def test_consumed_capacity_follows_the_same_rules() -> None:
    old = fresh(CLAIM)
    new = allocated({"memory": "-1", "a/b/c": "1"})
    path = "status.allocation.devices.results[0].consumedCapacity"
    errors = messages(ResourceClaimStrategy().validate_status_update(new, old, AT_1_38))
    assert f'{path}[memory]: Invalid value: "-1": must be greater than or equal to 0' in errors
    assert f'{path}[a/b/c]: Invalid value: "a/b/c": must not contain more than one slash' \
        in errors
    assert messages(ResourceClaimStrategy().validate_status_update(new, old, AT_1_37)) == []


def test_version_numbers_fit_an_int64() -> None:
    big = "1.0.1234567890123456789"
    o = slice_with(attributes={"driverVersion": {"version": big}})
    assert slice_errors(o, AT_1_38) == [
        f'{DEVICE}.attributes[driverVersion].version: Invalid value: "{big}": must be a '
        "string compatible with semver.org spec 2.0.0, with at most 18 digits in numbers"]
    assert slice_errors(o, AT_1_37) == []
    fits = slice_with(attributes={"driverVersion": {"version": "1.0.123456789012345678-rc.1"}})
    assert slice_errors(fits, AT_1_38) == []


def per_device_slice(terms: int) -> Obj:
    o = slice_with(nodeSelector={"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": [f"z{i}"]}]}
        for i in range(terms)]})
    del o["spec"]["nodeName"]
    o["spec"]["perDeviceNodeSelection"] = True
    return o


def test_a_devices_node_selector_has_one_term() -> None:
    assert slice_errors(per_device_slice(2), AT_1_38) == [
        f"{DEVICE}.nodeSelector.nodeSelectorTerms: Invalid value: "
        '[{"matchExpressions":[{"key":"zone","operator":"In","values":["z0"]}]},'
        '{"matchExpressions":[{"key":"zone","operator":"In","values":["z1"]}]}]: '
        "must have exactly one node selector term"]
    assert slice_errors(per_device_slice(2), AT_1_37) == []
    assert slice_errors(per_device_slice(1), AT_1_38) == []


def test_an_unchanged_device_list_is_not_validated_again() -> None:
    stored = slice_with(attributes={"a/b/c": {"string": "x"}})
    bumped = fresh(stored)
    bumped["spec"]["pool"]["generation"] = 1
    strategy = ResourceSliceStrategy()
    assert messages(strategy.validate_update(bumped, stored, AT_1_38)) == []
    changed = fresh(bumped)
    changed["spec"]["devices"][0]["capacity"]["memory"]["value"] = "80Gi"
    assert messages(strategy.validate_update(changed, stored, AT_1_38)) == [
        f'{DEVICE}.attributes[a/b/c]: Invalid value: "a/b/c": must not contain more than '
        "one slash"]


def test_a_capacity_key_must_be_a_name() -> None:
    o = slice_with(nodeAllocatableResources={"memory": {"mapping": {
        "capacityKey": "a/b/c", "capacityMultiplier": "1"}}})
    key = f"{DEVICE}.nodeAllocatableResources[memory].mapping.capacityKey"
    gates = {"DRANodeAllocatableResources": True}
    assert slice_errors(o, Context(gates=FeatureGates(gates, emulated_version="1.38"))) == [
        f'{key}: Invalid value: "a/b/c": must not contain more than one slash']
    assert slice_errors(o, Context(gates=FeatureGates(gates, emulated_version="1.37"))) == [
        f'{key}: Invalid value: "a/b/c": must be the name of a capacity of this device']


def test_a_mapping_member_missing_is_reported_by_the_declarative_rule() -> None:
    o = slice_with(nodeAllocatableResources={"memory": {"mapping": {"capacityKey": "memory"}}})
    path = f"{DEVICE}.nodeAllocatableResources[memory].mapping.capacityMultiplier"
    gates = {"DRANodeAllocatableResources": True}
    assert slice_errors(o, Context(gates=FeatureGates(gates, emulated_version="1.38"))) == [
        f"{path}: Required value: must be set when capacityKey is set"]
    assert slice_errors(o, Context(gates=FeatureGates(gates, emulated_version="1.37"))) == [
        f"{path}: Required value: capacityMultiplier is required when capacityKey is set"]


def template_with(matches: str, requests: dict[str, str]) -> Obj:
    claim = claim_with_capacity(requests)
    claim["spec"]["devices"]["constraints"][0]["matchAttribute"] = matches
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "t", "namespace": "default"},
            "spec": {"spec": claim["spec"]}}


def test_a_template_update_validates_the_spec_again() -> None:
    strategy = ResourceClaimTemplateStrategy()
    # Stored before 1.38: capacity request names were not checked.
    stored = template_with("example.com/numa", {"bad name": "1"})
    labelled = fresh(stored)
    labelled["metadata"]["labels"] = {"team": "a"}
    assert messages(strategy.validate_update(labelled, stored, AT_1_38)) == []
    # A rule older than the spec is not waived: that spec cannot be updated at 1.38.
    old_rule = template_with("numa", {})
    relabelled = fresh(old_rule)
    relabelled["metadata"]["labels"] = {"team": "a"}
    assert any("a fully qualified name must be a domain and a name separated by a slash" in m
               for m in messages(strategy.validate_update(relabelled, old_rule, AT_1_38)))
    assert messages(strategy.validate_update(relabelled, old_rule, AT_1_37)) == []
