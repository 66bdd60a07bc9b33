"""Which of upstream's allocator copies decides, by emulated release: up to 1.37 the stable
copy (every beta DRA gate off) ignores capacity requests and has no distinctAttribute;
1.38's stable copy covers binding conditions and consumable capacity and behaves as 1.37's
incubating one (k8s.io/dynamic-resource-allocation v0.38.0-beta.0)."""

from __future__ import annotations

from typing import Any

import pytest

from draemu.features import FeatureGates
from draemu.scheduler.dra import Allocator, Inventory
from draemu.scheduler.dra.features import EXPERIMENTAL, INCUBATING, STABLE, Features

pytestmark = pytest.mark.unit

DRIVER = "gpu.example.com"
NODE = {"metadata": {"name": "node-1"}}


def inventory(release: str, **gates: bool) -> Inventory:
    inv = Inventory(FeatureGates(gates, emulated_version=release))
    inv.set_class({"metadata": {"name": "gpu"}, "spec": {"selectors": [
        {"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    inv.set_slice({"metadata": {"name": "s1"}, "spec": {
        "driver": DRIVER, "nodeName": "node-1",
        "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "a"}}},
                    {"name": "gpu-1", "attributes": {"model": {"string": "b"}}}]}})
    return inv


def claim(**devices: Any) -> dict[str, Any]:
    return {"metadata": {"name": "c", "namespace": "ns"}, "spec": {"devices": {
        "requests": [{"name": "r", "exactly": {"deviceClassName": "gpu", "count": 2}}],
        **devices}}}


def test_the_tier_sets_move_in_1_38() -> None:
    assert Features.from_gates(FeatureGates(emulated_version="1.37")).tier == INCUBATING
    assert Features.from_gates(FeatureGates(emulated_version="1.38")).tier == STABLE
    assert Features.from_gates(FeatureGates({"DRAListTypeAttributes": True},
                                            emulated_version="1.38")).tier == INCUBATING
    # 1.37's experimental features make 1.38 pick incubating: it covers them all.
    assert Features.from_gates(FeatureGates({"DRADerivedAttributes": True},
                                            emulated_version="1.37")).tier == EXPERIMENTAL
    assert Features.from_gates(FeatureGates({"DRADerivedAttributes": True},
                                            emulated_version="1.38")).tier == INCUBATING


def test_distinct_attribute_is_known_to_1_38s_stable_allocator() -> None:
    distinct = claim(constraints=[{"distinctAttribute": f"{DRIVER}/model"}])
    old = {"DRAConsumableCapacity": False, "DRADeviceBindingConditions": False}
    outcome = Allocator(inventory("1.37", **old)).allocate(NODE, [distinct])
    assert outcome.error and "empty constraint" in outcome.error
    outcome = Allocator(inventory("1.38")).allocate(NODE, [distinct])
    assert outcome.results is not None, outcome.error


def test_capacity_requests_with_the_gate_off_fail_in_1_38s_stable_allocator() -> None:
    wanted = claim()
    wanted["spec"]["devices"]["requests"][0]["exactly"].update(
        count=1, capacity={"requests": {"memory": "1Gi"}})
    old = {"DRAConsumableCapacity": False, "DRADeviceBindingConditions": False}
    assert Allocator(inventory("1.37", **old)).allocate(NODE, [wanted]).results is not None
    outcome = Allocator(inventory("1.38", DRAConsumableCapacity=False,
                                  DRAFractionalCapacityRange=False)).allocate(NODE, [wanted])
    assert outcome.error and "has capacity requests, but the DRAConsumableCapacity feature " \
        "is disabled" in outcome.error


def test_all_devices_of_an_incomplete_pool_rule_out_only_this_node_from_1_38() -> None:
    def outcome(release: str) -> Any:
        inv = inventory(release)
        inv.set_slice({"metadata": {"name": "half"}, "spec": {
            "driver": DRIVER, "nodeName": "node-1",
            "pool": {"name": "shared", "generation": 1, "resourceSliceCount": 2},
            "devices": [{"name": "gpu-9"}]}})
        everything = claim()
        everything["spec"]["devices"]["requests"][0]["exactly"] = {
            "deviceClassName": "gpu", "allocationMode": "All"}
        return Allocator(inv).allocate(NODE, [everything])

    old, new = outcome("1.37"), outcome("1.38")
    for result in (old, new):
        assert result.error and "is currently being updated" in result.error
    assert (old.unsatisfiable, new.unsatisfiable) == (False, True)


def shared_gpu(release: str) -> Inventory:
    inv = Inventory(FeatureGates(emulated_version=release))
    inv.set_class({"metadata": {"name": "gpu"}, "spec": {}})
    inv.set_slice({"metadata": {"name": "s1"}, "spec": {
        "driver": DRIVER, "nodeName": "node-1",
        "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "gpu-0", "allowMultipleAllocations": True,
                     "capacity": {"memory": {"value": "40Gi"}}}]}})
    return inv


def wanting(requests: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": "c", "namespace": "ns"}, "spec": {"devices": {"requests": [
        {"name": "r", "exactly": {"deviceClassName": "gpu",
                                  "capacity": {"requests": requests}}}]}}}


def test_a_capacity_request_may_name_the_driver_from_1_38() -> None:
    qualified = wanting({f"{DRIVER}/memory": "1Gi"})
    assert Allocator(shared_gpu("1.37")).allocate(NODE, [qualified]).unsatisfiable
    outcome = Allocator(shared_gpu("1.38")).allocate(NODE, [qualified])
    assert outcome.results is not None, outcome.error
    [result] = outcome.results[0]["devices"]["results"]
    assert result["consumedCapacity"] == {"memory": "1Gi"}  # the slice's own spelling
    both = wanting({f"{DRIVER}/memory": "1Gi", "memory": "2Gi"})
    outcome = Allocator(shared_gpu("1.38")).allocate(NODE, [both])
    # Upstream names the spellings in map order (either way round); draemu in name order.
    assert outcome.error and f'capacity "memory" requested both as "memory" and as ' \
        f'"{DRIVER}/memory"' in outcome.error


def test_versions_match_by_precedence_from_1_38() -> None:
    def outcome(release: str) -> Any:
        inv = Inventory(FeatureGates(emulated_version=release))
        inv.set_class({"metadata": {"name": "gpu"}, "spec": {}})
        inv.set_slice({"metadata": {"name": "s1"}, "spec": {
            "driver": DRIVER, "nodeName": "node-1",
            "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}", "attributes": {"fw": {"version": f"1.2.0+b{i}"}}}
                        for i in range(2)]}})
        return Allocator(inv).allocate(NODE, [claim(constraints=[
            {"matchAttribute": f"{DRIVER}/fw"}])])

    assert outcome("1.37").unsatisfiable  # "1.2.0+b0" != "1.2.0+b1" as strings
    assert outcome("1.38").results is not None  # equal versions, builds aside


def test_a_device_with_a_share_is_not_taken_exclusively_from_1_38() -> None:
    def outcome(release: str) -> Any:
        inv = Inventory(FeatureGates(emulated_version=release))
        inv.set_class({"metadata": {"name": "gpu"}, "spec": {}})
        # Once shared; the driver has since turned allowMultipleAllocations off.
        inv.set_slice({"metadata": {"name": "s1"}, "spec": {
            "driver": DRIVER, "nodeName": "node-1",
            "pool": {"name": "node-1", "generation": 2, "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0"}]}})
        inv.set_claim({"metadata": {"name": "old", "namespace": "ns"}, "spec": {}, "status": {
            "allocation": {"devices": {"results": [{
                "request": "r", "driver": DRIVER, "pool": "node-1", "device": "gpu-0",
                "shareID": "0b8e4bd0-8fd3-4b4e-9d5a-3f0c5c4b2a11"}]}}}})
        one = claim()
        one["spec"]["devices"]["requests"][0]["exactly"]["count"] = 1
        return Allocator(inv).allocate(NODE, [one])

    assert outcome("1.37").results is not None
    assert outcome("1.38").unsatisfiable
