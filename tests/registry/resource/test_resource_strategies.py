"""What the resource.k8s.io strategies do besides validation (dra-api.md §6): status
rules, gate dropping, generation, admin access, printing and field selectors."""

from __future__ import annotations

from typing import Any

import pytest
from resource_objects import CLAIM, SLICE, TAINT_RULE, fresh, messages

from draemu.api.types import Obj
from draemu.apiserver.registry import discover
from draemu.apiserver.registry.resource.strategies import (
    DeviceClassStrategy,
    DeviceTaintRuleStrategy,
    ResourceClaimStrategy,
    ResourceClaimTemplateStrategy,
    ResourceSliceStrategy,
    claim_state,
)
from draemu.apiserver.registry.strategy import AGE, Context
from draemu.features import FeatureGates

pytestmark = pytest.mark.unit

RESULT = {"request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}
ALLOCATION = {"devices": {"results": [RESULT]}}
POD = {"resource": "pods", "name": "p", "uid": "3f1f0e8c-0000-4000-8000-000000000001"}


def allocated(**status: Any) -> Obj:
    o = fresh(CLAIM)
    o["status"] = {"allocation": fresh(ALLOCATION), **status}
    return o


def status_errors(new: Obj, old: Obj, ctx: Context) -> list[str]:
    return messages(ResourceClaimStrategy().validate_status_update(new, old, ctx))


def test_all_resource_kinds_are_discovered() -> None:
    kinds = {s.kind for s in discover() if s.group == "resource.k8s.io"}
    assert kinds == {"DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice",
                     "DeviceTaintRule", "ResourcePoolStatusRequest"}


def test_status_is_cleared_on_create(ctx: Context) -> None:
    o = allocated()
    ResourceClaimStrategy().prepare_for_create(o, ctx)
    assert o["status"] == {}


def test_main_update_keeps_the_old_status(ctx: Context) -> None:
    old, new = allocated(), fresh(CLAIM)
    new["status"] = {}
    ResourceClaimStrategy().prepare_for_update(new, old, ctx)
    assert new["status"] == old["status"]


def test_status_update_keeps_the_old_spec(ctx: Context) -> None:
    new = allocated()
    new["spec"] = {}
    ResourceClaimStrategy().prepare_for_status_update(new, fresh(CLAIM), ctx)
    assert new["spec"] == CLAIM["spec"]


def test_allocation_can_be_set_once(ctx: Context) -> None:
    assert status_errors(allocated(), fresh(CLAIM), ctx) == []


def test_allocation_cannot_be_changed(ctx: Context) -> None:
    new = allocated()
    new["status"]["allocation"]["devices"]["results"][0]["device"] = "gpu-1"
    errors = ResourceClaimStrategy().validate_status_update(new, allocated(), ctx)
    assert [(e.field, e.detail) for e in errors] == [("status.allocation", "field is immutable")]


def test_allocation_can_be_removed(ctx: Context) -> None:
    assert status_errors(fresh(CLAIM), allocated(), ctx) == []


def test_new_allocation_is_validated(ctx: Context) -> None:
    new = allocated()
    new["status"]["allocation"]["devices"]["results"][0]["request"] = "tpu"
    assert status_errors(new, fresh(CLAIM), ctx) == [
        'status.allocation.devices.results[0].request: Invalid value: "tpu": must be the name '
        "of a request in the claim or the name of a request and a subrequest separated by '/'"]


def test_reserved_for_needs_an_allocation(ctx: Context) -> None:
    new = fresh(CLAIM)
    new["status"] = {"reservedFor": [POD]}
    assert status_errors(new, fresh(CLAIM), ctx) == [
        "status.reservedFor: Forbidden: may not be specified when `allocated` is not set"]


def test_reserved_for_is_keyed_by_uid(ctx: Context) -> None:
    new = allocated(reservedFor=[POD, {**POD, "name": "q"}])
    assert status_errors(new, allocated(), ctx) == [
        'status.reservedFor[1]: Duplicate value: "3f1f0e8c-0000-4000-8000-000000000001"']


def test_reserved_for_holds_at_most_256(ctx: Context) -> None:
    new = allocated(reservedFor=[{**POD, "uid": f"u{i}"} for i in range(257)])
    assert status_errors(new, allocated(), ctx) == [
        "status.reservedFor: Too many: 257: must have at most 256 items"]


def test_reserved_for_cannot_grow_while_deleting(ctx: Context) -> None:
    old = allocated()
    new = allocated(reservedFor=[POD])
    new["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert status_errors(new, old, ctx) == [
        "status.reservedFor: Forbidden: new entries may not be added while "
        "`deallocationRequested` or `deletionTimestamp` are set"]


def test_device_status_must_name_an_allocated_device(ctx: Context) -> None:
    new = allocated(devices=[{"driver": "gpu.example.com", "pool": "node-1", "device": "gpu-9"}])
    assert status_errors(new, allocated(), ctx) == [
        'status.devices[0]: Invalid value: "gpu.example.com/node-1/gpu-9": must be an '
        "allocated device in the claim"]


def test_deallocation_drops_device_statuses(ctx: Context) -> None:
    old = allocated(devices=[{"driver": "gpu.example.com", "pool": "node-1",
                              "device": "gpu-0"}])
    new = fresh(old)
    del new["status"]["allocation"]
    ResourceClaimStrategy().prepare_for_status_update(new, old, ctx)
    assert new["status"] == {}


def test_bad_share_id_is_rejected(ctx: Context) -> None:
    new = allocated()
    new["status"]["allocation"]["devices"]["results"][0]["shareID"] = (
        "3F1F0E8C-0000-4000-8000-000000000001")
    assert status_errors(new, fresh(CLAIM), ctx) == [
        'status.allocation.devices.results[0].shareID: Invalid value: '
        '"3F1F0E8C-0000-4000-8000-000000000001": uid must be in RFC 4122 normalized form, '
        "`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal characters"]


# Feature gates -------------------------------------------------------------------------

def test_disabled_gate_drops_the_field_on_create() -> None:
    ctx = Context(gates=FeatureGates({"DRAConsumableCapacity": False}))
    o = fresh(CLAIM)
    o["spec"]["devices"]["requests"][0]["exactly"]["capacity"] = {"requests": {"m": "1"}}
    ResourceClaimStrategy().prepare_for_create(o, ctx)
    assert "capacity" not in o["spec"]["devices"]["requests"][0]["exactly"]


def test_disabled_gate_keeps_a_field_already_in_use() -> None:
    ctx = Context(gates=FeatureGates({"DRADeviceTaints": False, "DRADeviceTaintRules": False}))
    old = fresh(SLICE)
    old["spec"]["devices"][0]["taints"] = [{"key": "k", "effect": "NoSchedule"}]
    new = fresh(old)
    ResourceSliceStrategy().prepare_for_update(new, old, ctx)
    assert new["spec"]["devices"][0]["taints"] == old["spec"]["devices"][0]["taints"]


def test_disabled_list_attributes_are_dropped_from_slices(ctx: Context) -> None:
    o = fresh(SLICE)
    o["spec"]["devices"][0]["attributes"]["ids"] = {"ints": [1, 2]}
    ResourceSliceStrategy().prepare_for_create(o, ctx)
    assert o["spec"]["devices"][0]["attributes"]["ids"] == {}
    assert messages(ResourceSliceStrategy().validate(o, ctx)) == [
        'spec.devices[0].attributes[ids]: Invalid value: "": exactly one value must be '
        "specified"]


def test_disabled_partitionable_devices_drops_counters_and_per_device_nodes() -> None:
    ctx = Context(gates=FeatureGates({"DRAPartitionableDevices": False}))
    o = fresh(SLICE)
    o["spec"]["devices"][0].update(nodeName="node-1", consumesCounters=[
        {"counterSet": "s", "counters": {"mem": {"value": "1"}}}])
    ResourceSliceStrategy().prepare_for_create(o, ctx)
    assert "nodeName" not in o["spec"]["devices"][0]
    assert "consumesCounters" not in o["spec"]["devices"][0]


def test_disabled_binding_conditions_are_dropped_from_new_results() -> None:
    ctx = Context(gates=FeatureGates({"DRADeviceBindingConditions": False}),
                  subresource="status")
    new = allocated()
    new["status"]["allocation"]["devices"]["results"][0].update(
        bindingConditions=["Ready"], bindingFailureConditions=["Failed"])
    ResourceClaimStrategy().prepare_for_status_update(new, fresh(CLAIM), ctx)
    assert new["status"]["allocation"]["devices"]["results"] == [RESULT]


# Generation ------------------------------------------------------------------------------

@pytest.mark.parametrize("strategy,has_generation", [
    (DeviceClassStrategy(), True), (ResourceSliceStrategy(), True),
    (DeviceTaintRuleStrategy(), True), (ResourceClaimStrategy(), False),
    (ResourceClaimTemplateStrategy(), False)], ids=lambda v: getattr(v, "kind", str(v)))
def test_kinds_with_a_generation_upstream_have_one(strategy: Any, has_generation: bool) -> None:
    assert strategy.has_generation is has_generation


def test_taint_rule_effect_change_bumps_time_added(ctx: Context) -> None:
    old = fresh(TAINT_RULE)
    old["spec"]["taint"]["timeAdded"] = "2020-01-01T00:00:00Z"
    new = fresh(old)
    new["spec"]["taint"]["effect"] = "NoExecute"
    DeviceTaintRuleStrategy().prepare_for_update(new, old, ctx)
    assert new["spec"]["taint"]["timeAdded"] > "2020-01-01T00:00:00Z"


# Admin access ----------------------------------------------------------------------------

def admin_claim() -> Obj:
    o = fresh(CLAIM)
    o["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] = True
    return o


def namespace_lookup(labels: dict[str, str]) -> Any:
    def lookup(resource: str, group: str, namespace: str, name: str) -> Obj | None:
        assert (resource, group, name) == ("namespaces", "", "default")
        return {"metadata": {"name": name, "labels": labels}}
    return lookup


def test_admin_access_needs_the_namespace_label() -> None:
    ctx = Context(gates=FeatureGates(), lookup=namespace_lookup({}))
    errors = ResourceClaimStrategy().validate(admin_claim(), ctx)
    assert messages(errors) == [
        "spec.devices.requests[0].exactly.adminAccess: Forbidden: admin access to devices "
        "requires the `resource.kubernetes.io/admin-access: true` label on the containing "
        "namespace"]


def test_admin_access_is_allowed_in_a_labelled_namespace() -> None:
    ctx = Context(gates=FeatureGates(),
                  lookup=namespace_lookup({"resource.kubernetes.io/admin-access": "true"}))
    assert ResourceClaimStrategy().validate(admin_claim(), ctx) == []


def test_template_admin_access_is_checked_under_spec_spec() -> None:
    ctx = Context(gates=FeatureGates(), lookup=namespace_lookup({}))
    template = {"metadata": {"name": "t", "namespace": "default"},
                "spec": {"spec": admin_claim()["spec"]}}
    errors = ResourceClaimTemplateStrategy().validate(template, ctx)
    assert [e.field for e in errors] == ["spec.spec.devices.requests[0].exactly.adminAccess"]


def test_new_allocation_with_admin_access_needs_the_namespace_label() -> None:
    ctx = Context(gates=FeatureGates(), lookup=namespace_lookup({}))
    new = allocated()
    new["status"]["allocation"]["devices"]["results"][0]["adminAccess"] = True
    errors = ResourceClaimStrategy().validate_status_update(new, fresh(CLAIM), ctx)
    assert [(e.field, e.type) for e in errors] == [
        ("status.allocation.devices.results[0].adminAccess", "Forbidden")]


# Reads -----------------------------------------------------------------------------------

@pytest.mark.parametrize("status,deleted,state", [
    ({}, False, "pending"),
    ({"allocation": ALLOCATION}, False, "allocated"),
    ({"allocation": ALLOCATION, "reservedFor": [POD]}, False, "allocated,reserved"),
    ({}, True, "deleted"),
    ({"allocation": ALLOCATION}, True, "deleted,allocated"),
])
def test_claim_state_column(status: Obj, deleted: bool, state: str) -> None:
    o = fresh(CLAIM)
    o["status"] = status
    if deleted:
        o["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert claim_state(o) == state


def test_slice_table_row_and_columns() -> None:
    strategy = ResourceSliceStrategy()
    assert [c.name for c in strategy.table_columns()] == ["Name", "Node", "Driver", "Pool", "Age"]
    assert strategy.table_row(SLICE) == ["node-1-gpu", "node-1", "gpu.example.com", "node-1",
                                         AGE]


def test_slice_selectable_fields() -> None:
    o = fresh(SLICE)
    del o["spec"]["nodeName"]
    assert ResourceSliceStrategy().selectable_fields(o) == {
        "spec.nodeName": "", "spec.driver": "gpu.example.com", "spec.pool.name": "node-1"}


def test_deprecated_versions_warn_like_upstream() -> None:
    assert ResourceClaimStrategy().deprecated_versions["v1beta1"] == (
        "resource.k8s.io/v1beta1 ResourceClaim is deprecated in v1.35+, unavailable in v1.38+; "
        "use resource.k8s.io/v1 ResourceClaim")
    assert "v1" not in DeviceTaintRuleStrategy().deprecated_versions
