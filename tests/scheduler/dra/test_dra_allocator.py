"""The allocator as the scheduler uses it: a long-lived inventory updated by events,
in-flight allocations, DeviceTaintRules, list-type attributes, errors and timeouts."""

from __future__ import annotations

from typing import Any

import pytest

from draemu.features import FeatureGates
from draemu.scheduler.dra import Allocator, Inventory

pytestmark = pytest.mark.unit

DRIVER = "gpu.example.com"
NODE = {"metadata": {"name": "node-1"}}


def gpu_class(inv: Inventory) -> None:
    inv.set_class({"metadata": {"name": "gpu"}, "spec": {"selectors": [
        {"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})


def gpu_slice(generation: int = 1, *devices: dict[str, Any], name: str = "s1",
              node: str = "node-1") -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {
        "driver": DRIVER, "nodeName": node,
        "pool": {"name": node, "generation": generation, "resourceSliceCount": 1},
        "devices": list(devices) or [{"name": "gpu-0"}]}}


def claim(name: str = "c", *selectors: str, count: int = 1, **extra: Any) -> dict[str, Any]:
    exact: dict[str, Any] = {"deviceClassName": "gpu", "count": count, **extra}
    if selectors:
        exact["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {"metadata": {"name": name, "namespace": "ns"},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": exact}]}}}


def allocated(name: str, *devices: str) -> dict[str, Any]:
    obj = claim(name)
    obj["status"] = {"allocation": {"devices": {"results": [
        {"request": "r", "driver": DRIVER, "pool": "node-1", "device": d} for d in devices]}}}
    return obj


def chosen(outcome: Any) -> list[str]:
    assert outcome.results is not None, outcome.summary
    return [r["device"] for r in outcome.results[0]["devices"]["results"]]


@pytest.fixture
def inv() -> Inventory:
    inventory = Inventory(FeatureGates())
    gpu_class(inventory)
    return inventory


def test_allocated_claims_make_devices_busy_until_removed(inv: Inventory) -> None:
    inv.set_slice(gpu_slice(1, {"name": "gpu-0"}, {"name": "gpu-1"}))
    inv.set_claim(allocated("old", "gpu-0"))
    assert chosen(Allocator(inv).allocate(NODE, [claim()])) == ["gpu-1"]
    inv.set_claim(allocated("old2", "gpu-1"))
    assert Allocator(inv).allocate(NODE, [claim()]).unsatisfiable
    inv.remove_claim("ns/old")
    assert chosen(Allocator(inv).allocate(NODE, [claim()])) == ["gpu-0"]


def test_holders_follow_claims_as_they_are_allocated_changed_and_removed(
        inv: Inventory) -> None:
    gpu0, gpu1 = (DRIVER, "node-1", "gpu-0"), (DRIVER, "node-1", "gpu-1")
    inv.set_claim(allocated("a", "gpu-0"))
    inv.set_claim(allocated("b", "gpu-0", "gpu-1"))
    assert (inv.holders(gpu0), inv.holders(gpu1)) == (["ns/a", "ns/b"], ["ns/b"])
    inv.set_claim(allocated("b", "gpu-1"))  # reallocated: it no longer holds gpu-0
    assert (inv.holders(gpu0), inv.holders(gpu1)) == (["ns/a"], ["ns/b"])
    inv.set_claim(claim("a"))  # deallocated
    inv.remove_claim("ns/b")
    assert (inv.holders(gpu0), inv.holders(gpu1)) == ([], [])


def test_in_flight_allocations_count_as_in_use(inv: Inventory) -> None:
    inv.set_slice(gpu_slice(1, {"name": "gpu-0"}, {"name": "gpu-1"}))
    outcome = Allocator(inv).allocate(NODE, [claim()], in_flight=[allocated("other", "gpu-0")])
    assert chosen(outcome) == ["gpu-1"]


def test_slice_update_replaces_devices_and_cached_verdicts(inv: Inventory) -> None:
    selector = f'device.attributes["{DRIVER}"].model == "A100"'
    inv.set_slice(gpu_slice(1, {"name": "gpu-0", "attributes": {"model": {"string": "T4"}}}))
    assert Allocator(inv).allocate(NODE, [claim("c", selector)]).unsatisfiable
    inv.set_slice(gpu_slice(2, {"name": "gpu-0", "attributes": {"model": {"string": "A100"}}}))
    assert chosen(Allocator(inv).allocate(NODE, [claim("c", selector)])) == ["gpu-0"]
    inv.remove_slice("s1")
    assert Allocator(inv).allocate(NODE, [claim("c", selector)]).unsatisfiable


def test_selector_verdicts_are_cached_per_device(inv: Inventory) -> None:
    selector = f'device.attributes["{DRIVER}"].model == "A100"'
    inv.set_slice(gpu_slice(1, {"name": "gpu-0", "attributes": {"model": {"string": "A100"}}}))
    Allocator(inv).allocate(NODE, [claim("c", selector)])
    [device] = inv.slices["s1"].devices
    assert device.verdicts == {f'device.driver == "{DRIVER}"': True, selector: True}


def test_devices_of_other_nodes_are_not_considered(inv: Inventory) -> None:
    inv.set_slice(gpu_slice(1, name="s2", node="node-2"))
    outcome = Allocator(inv).allocate(NODE, [claim()])
    assert outcome.unsatisfiable
    assert outcome.summary == "cannot allocate all claims: no devices on node node-1"


def test_device_taint_rule_blocks_untolerated_requests(inv: Inventory) -> None:
    inv.set_slice(gpu_slice())
    inv.set_taint_rule({"metadata": {"name": "maintenance"}, "spec": {
        "deviceSelector": {"driver": DRIVER, "device": "gpu-0"},
        "taint": {"key": "maintenance", "effect": "NoSchedule"}}})
    outcome = Allocator(inv).allocate(NODE, [claim()])
    assert outcome.unsatisfiable
    [device] = outcome.explanation.requests[0].devices
    assert device.reason == "taint maintenance:NoSchedule not tolerated"
    tolerant = claim("t", tolerations=[{"key": "maintenance", "operator": "Exists"}])
    assert chosen(Allocator(inv).allocate(NODE, [tolerant])) == ["gpu-0"]
    inv.remove_taint_rule("maintenance")
    assert chosen(Allocator(inv).allocate(NODE, [claim()])) == ["gpu-0"]


def test_taint_rule_without_selector_selects_nothing(inv: Inventory) -> None:
    inv.set_slice(gpu_slice())
    inv.set_taint_rule({"metadata": {"name": "r"}, "spec": {
        "taint": {"key": "k", "effect": "NoExecute"}}})
    assert chosen(Allocator(inv).allocate(NODE, [claim()])) == ["gpu-0"]


def list_attr(name: str, *values: str) -> dict[str, Any]:
    return {"name": name, "attributes": {"groups": {"strings": list(values)}}}


@pytest.mark.parametrize(("devices", "ok"), [
    ((("a", "b"), ("b", "c")), True),
    ((("a", "b"), ("b", "c"), ("c", "a")), False),
])
def test_match_attribute_intersects_list_attributes(devices: tuple, ok: bool) -> None:
    inv = Inventory(FeatureGates({"DRAListTypeAttributes": True}))
    gpu_class(inv)
    inv.set_slice(gpu_slice(1, *[list_attr(f"gpu-{i}", *v) for i, v in enumerate(devices)]))
    request = claim(count=len(devices))
    request["spec"]["devices"]["constraints"] = [{"matchAttribute": f"{DRIVER}/groups"}]
    outcome = Allocator(inv).allocate(NODE, [request])
    assert (outcome.results is not None) is ok


def test_list_attributes_never_match_without_the_gate(inv: Inventory) -> None:
    inv.set_slice(gpu_slice(1, list_attr("gpu-0", "a"), list_attr("gpu-1", "a")))
    request = claim(count=2)
    request["spec"]["devices"]["constraints"] = [{"matchAttribute": f"{DRIVER}/groups"}]
    outcome = Allocator(inv).allocate(NODE, [request])
    assert outcome.unsatisfiable
    assert "constraint #0" in outcome.explanation.text()


def test_constraint_rejection_names_the_other_device(inv: Inventory) -> None:
    inv.set_slice(gpu_slice(1, {"name": "gpu-0", "attributes": {"numa": {"int": 0}}},
                            {"name": "gpu-1", "attributes": {"numa": {"int": 1}}}))
    request = claim(count=2)
    request["spec"]["devices"]["constraints"] = [{"matchAttribute": f"{DRIVER}/numa"}]
    outcome = Allocator(inv).allocate(NODE, [request])
    reasons = {d.device: d.reason for d in outcome.explanation.requests[0].devices}
    assert reasons["gpu.example.com/node-1/gpu-1"] == (
        "constraint #0: gpu.example.com/numa is 1 but gpu.example.com/node-1/gpu-0 has 0 "
        "(matchAttribute)")


def test_cel_runtime_error_is_fatal_and_says_where(inv: Inventory) -> None:
    inv.set_slice(gpu_slice())
    outcome = Allocator(inv).allocate(NODE, [claim("c", f'device.attributes["{DRIVER}"].model '
                                                   '== "A100"')])
    assert outcome.results is None and not outcome.unsatisfiable
    assert outcome.error == (
        "claim ns/c: selector #0 on device gpu.example.com/node-1/gpu-0: CEL runtime error: "
        "no such key: model. consider using CEL optional "
        "chaining (.? followed by orValue()) or guarding the check with has() for optional "
        "fields")


def test_timeout_rules_out_the_node(inv: Inventory) -> None:
    inv.set_slice(gpu_slice())
    outcome = Allocator(inv).allocate(NODE, [claim()], timeout=-1)
    assert outcome.unsatisfiable
    assert outcome.error == "filter operation aborted: timed out trying to allocate devices"
    assert outcome.timed_out


def test_incomplete_pool_is_explained(inv: Inventory) -> None:
    s = gpu_slice()
    s["spec"]["pool"]["resourceSliceCount"] = 2
    inv.set_slice(s)
    outcome = Allocator(inv).allocate(NODE, [claim()])
    assert outcome.unsatisfiable
    text = outcome.explanation.text()
    assert "pool gpu.example.com/node-1 is incomplete" in text
    assert "❌ gpu.example.com/node-1/gpu-0: pool incomplete" in text


def test_summary_groups_reasons_most_common_first(inv: Inventory) -> None:
    inv.set_slice(gpu_slice(1, *[{"name": f"gpu-{i}", "attributes": {"model": {"string": m}}}
                                 for i, m in enumerate(["T4", "T4", "A100"])]))
    inv.set_claim(allocated("old", "gpu-2"))
    outcome = Allocator(inv).allocate(NODE, [claim("c", f'device.attributes["{DRIVER}"].model '
                                                   '== "A100"')])
    assert outcome.summary == ("cannot allocate all claims: claim ns/c, request r: 0 of 3 "
                               "devices fit, 1 needed; 2 request selector #0 false, 1 in use")


def test_summary_blames_a_prioritized_request_only_when_no_alternative_fits(
        inv: Inventory) -> None:
    inv.set_slice(gpu_slice(1, {"name": "gpu-0", "attributes": {"numa": {"int": 0}}},
                            {"name": "gpu-1", "attributes": {"numa": {"int": 1}}}))
    request = claim()
    request["spec"]["devices"]["requests"] = [
        {"name": "big", "firstAvailable": [{"name": "two", "deviceClassName": "gpu", "count": 3},
                                           {"name": "one", "deviceClassName": "gpu"}]},
        {"name": "other", "exactly": {"deviceClassName": "missing-driver-class"}}]
    inv.set_class({"metadata": {"name": "missing-driver-class"}, "spec": {"selectors": [
        {"cel": {"expression": 'device.driver == "nic.example.com"'}}]}})
    outcome = Allocator(inv).allocate(NODE, [request])
    assert outcome.summary.startswith(
        "cannot allocate all claims: claim ns/c, request other: 0 of 2 devices fit, 1 needed; "
        "2 class missing-driver-class selector #0 false")


@pytest.mark.parametrize("timeout", [None, -1.0])
def test_interrupt_scenario_from_upstream(inv: Inventory, timeout: float | None) -> None:
    # Upstream's "interrupt" case: six devices wanted, five exist.
    inv.set_slice(gpu_slice(1, *[{"name": f"device-{i}"} for i in range(1, 6)]))
    outcome = Allocator(inv).allocate(NODE, [claim(count=6)], timeout=timeout)
    assert outcome.unsatisfiable
    expected = None if timeout is None else \
        "filter operation aborted: timed out trying to allocate devices"
    assert outcome.error == expected


def test_hopeless_later_claim_fails_fast_instead_of_trying_every_combination(
        inv: Inventory) -> None:
    import time

    inv.set_slice(gpu_slice(1, *[{"name": f"gpu-{i}"} for i in range(64)]))
    inv.set_class({"metadata": {"name": "nic"}, "spec": {"selectors": [
        {"cel": {"expression": 'device.driver == "nic.example.com"'}}]}})
    nic = claim("nic")
    nic["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "nic"
    started = time.monotonic()
    outcome = Allocator(inv).allocate(NODE, [claim("gpus", count=4), nic])
    # Trying all 635,376 ways to pick 4 of 64 GPUs first would take many seconds.
    assert time.monotonic() - started < 5
    assert outcome.unsatisfiable and outcome.error is None
    assert "claim ns/nic, request r: 0 of 64 devices fit" in outcome.summary


# 1.37 alpha features --------------------------------------------------------------------

def partitioned_slice(*groups: tuple[str, ...]) -> dict[str, Any]:
    devices = [{"name": f"gpu-{i}", "consumesCounters": [
        {"counterSet": "gpu", "counters": {"mem": {"value": "1"}},
         **({"compatibilityGroups": list(g)} if g else {})}]} for i, g in enumerate(groups)]
    obj = gpu_slice(1, *devices)
    obj["spec"]["pool"]["resourceSliceCount"] = 2
    return obj


def counter_slice() -> dict[str, Any]:
    obj = gpu_slice(1, name="counters")
    obj["spec"]["pool"]["resourceSliceCount"] = 2
    del obj["spec"]["devices"]
    obj["spec"]["sharedCounters"] = [{"name": "gpu", "counters": {"mem": {"value": "4"}}}]
    return obj


def test_compatibility_groups_explain_the_clash() -> None:
    inv = Inventory(FeatureGates({"DRADeviceCompatibilityGroups": True}))
    gpu_class(inv)
    inv.set_slice(partitioned_slice(("mig",), ("vgpu",)))
    inv.set_slice(counter_slice())
    inv.set_claim(allocated("old", "gpu-0"))
    outcome = Allocator(inv).allocate(NODE, [claim()])
    assert outcome.unsatisfiable
    reasons = {d.device: d.reason for d in outcome.explanation.requests[0].devices}
    assert reasons["gpu.example.com/node-1/gpu-1"] == (
        "counter set gpu: compatibility groups [vgpu], incompatible with the devices there, "
        "which share [mig]")


def test_devices_without_groups_only_go_with_each_other() -> None:
    inv = Inventory(FeatureGates({"DRADeviceCompatibilityGroups": True}))
    gpu_class(inv)
    inv.set_slice(partitioned_slice((), ("mig",), ()))
    inv.set_slice(counter_slice())
    assert chosen(Allocator(inv).allocate(NODE, [claim(count=2)])) == ["gpu-0", "gpu-2"]


def test_grouped_slices_are_ignored_with_the_gate_off(inv: Inventory) -> None:
    inv.set_slice(partitioned_slice(("mig",), ()))
    inv.set_slice(counter_slice())
    assert Allocator(inv).allocate(NODE, [claim()]).unsatisfiable


def test_derived_attribute_error_names_request_attribute_and_device() -> None:
    inv = Inventory(FeatureGates({"DRADerivedAttributes": True}))
    gpu_class(inv)
    inv.set_slice(gpu_slice())
    request = claim(derivedAttributes=[{"name": "derived/numa", "expression":
                                        f'device.attributes["{DRIVER}"].numa'}])
    request["spec"]["devices"]["constraints"] = [{"matchAttribute": "derived/numa"}]
    outcome = Allocator(inv).allocate(NODE, [request])
    assert outcome.error == (
        "claim ns/c, request r: evaluate derived attribute derived/numa on device "
        "gpu.example.com/node-1/gpu-0 failed: no such key: numa. consider using CEL optional "
        "chaining (.? followed by orValue()) or guarding the check with has() for optional "
        "fields")


def test_derived_attributes_need_their_gate(inv: Inventory) -> None:
    inv.set_slice(gpu_slice())
    request = claim(derivedAttributes=[{"name": "derived/x", "expression": '"x"'}])
    outcome = Allocator(inv).allocate(NODE, [request])
    assert outcome.error == ("claim ns/c, request r: cannot handle request with derived "
                             "attributes, the feature is disabled")


def test_exhausted_capacity_says_how_much_was_needed_and_what_is_left(inv: Inventory) -> None:
    inv.set_slice(gpu_slice(1, {"name": "gpu-0", "allowMultipleAllocations": True,
                                "capacity": {"memory": {"value": "80Gi"}}}))
    holder = claim("holder", capacity={"requests": {"memory": "75Gi"}})
    holder["status"] = {"allocation": {"devices": {"results": [
        {"request": "r", "driver": DRIVER, "pool": "node-1", "device": "gpu-0",
         "shareID": "0e8d99e4-53da-4ce2-a51d-69db0b2c31f7",
         "consumedCapacity": {"memory": "75Gi"}}]}}}
    inv.set_claim(holder)
    outcome = Allocator(inv).allocate(NODE, [claim("c", capacity={"requests": {"memory": "10Gi"}})])
    [device] = outcome.explanation.requests[0].devices
    assert device.reason == "capacity memory exhausted (needs 10Gi, 5Gi left of 80Gi)"
