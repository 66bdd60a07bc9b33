
import asyncio

import pytest

from draemu.apiserver.server.lifecycle import APIServer, APIServerOptions
from draemu.client import Client
from draemu.controllers.manager import ControllerManager
from draemu.controllers.resourcepoolstatus import (
    PREFIX_COST_MISMATCH,
    PREFIX_PARTITION_OVER_CAP,
    PREFIX_SHAREABLE_OVER_CAP,
    PREFIX_TYPE_MISSING,
    pool_statuses,
)
from draemu.features import FeatureGates

pytestmark = pytest.mark.unit

DRIVER = "gpu.example.com"
PROFILE = "gpu.example.com/profile"
SHAPE = "gpu.example.com/shape"
RPSR = ("resource.k8s.io/v1alpha3", "resourcepoolstatusrequests")


def _slice(pool, devices, generation=1, count=1, node="n1", name=None, **spec):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": name or f"{pool}-{generation}"},
            "spec": {"driver": DRIVER, "nodeName": node,
                     "pool": {"name": pool, "generation": generation,
                              "resourceSliceCount": count},
                     "devices": devices, **spec}}


def _counter_slice(pool, counter_sets, count=2, name=None):
    s = _slice(pool, None, count=count, name=name or f"{pool}-counters",
               sharedCounters=[{"name": set_name, "counters": {
                   k: {"value": v} for k, v in counters.items()}}
                   for set_name, counters in counter_sets.items()])
    del s["spec"]["devices"]
    return s


def _part(name, ptype=None, costs=None, attribute=PROFILE, **extra):
    """A device consuming counters ({set: {counter: amount}}), typed by `attribute`."""
    dev = {"name": name, **extra}
    if ptype is not None:
        dev["attributes"] = {attribute: {"string": ptype}}
    if costs:
        dev["consumesCounters"] = [{"counterSet": s, "counters": {
            k: {"value": v} for k, v in c.items()}} for s, c in costs.items()]
    return dev


def _gpu(amount, counter_set="gpu-0"):
    return {counter_set: {"memory": amount}}


def _claim(pool, device, consumed=None, admin=False):
    result = {"request": "gpu", "driver": DRIVER, "pool": pool, "device": device}
    if consumed:
        result["consumedCapacity"] = {"memory": consumed}
    if admin:
        result["adminAccess"] = True
    return {"metadata": {"name": f"c-{device}", "namespace": "default"},
            "status": {"allocation": {"devices": {"results": [result]}}}}


def _typed_pool(devices, counters=None, claims=(), default=None, **slice_spec):
    """The one pool of a counter slice and a device slice declaring PROFILE."""
    slices = [_counter_slice("p", counters or {"gpu-0": {"memory": "80Gi"}}),
              _slice("p", devices, count=2, partitionTypeAttribute=PROFILE, **slice_spec)]
    [pool] = pool_statuses(DRIVER, None, slices, list(claims), [], default)
    return pool


def _by_type(pool):
    return {s["type"]: (s["total"], s["allocatable"]) for s in pool["partitionSummary"]}


def test_counts_allocated_tainted_and_available_devices():
    devices = [{"name": "gpu-0"}, {"name": "gpu-1"},
               {"name": "gpu-2", "taints": [{"key": "broken", "effect": "NoSchedule"}]},
               {"name": "gpu-3"}]
    [pool] = pool_statuses(DRIVER, None, [_slice("n1", devices)],
                           [_claim("n1", "gpu-0")], [])
    assert (pool["totalDevices"], pool["allocatedDevices"], pool["unavailableDevices"],
            pool["availableDevices"]) == (4, 1, 1, 2)
    assert pool["nodeName"] == "n1" and pool["resourceSliceCount"] == 1
    assert "partitionSummary" not in pool and "shareableSummary" not in pool


def test_tainted_devices_count_as_unavailable_even_when_allocated_and_rules_taint_too():
    devices = [{"name": "gpu-0", "taints": [{"key": "k", "effect": "NoExecute"}]},
               {"name": "gpu-1"}, {"name": "gpu-2", "taints": [{"key": "k",
                                                                "effect": "PreferNoSchedule"}]}]
    rules = [{"spec": {"deviceSelector": {"driver": DRIVER, "device": "gpu-1"},
                       "taint": {"key": "r", "effect": "NoSchedule"}}},
             {"spec": {"taint": {"key": "no-selector", "effect": "NoExecute"}}}]
    [pool] = pool_statuses(DRIVER, None, [_slice("n1", devices)],
                           [_claim("n1", "gpu-0")], rules)
    assert (pool["allocatedDevices"], pool["unavailableDevices"],
            pool["availableDevices"]) == (1, 2, 0)


def test_admin_access_results_take_nothing():
    [pool] = pool_statuses(DRIVER, None, [_slice("n1", [{"name": "gpu-0"}])],
                           [_claim("n1", "gpu-0", admin=True)], [])
    assert (pool["allocatedDevices"], pool["availableDevices"]) == (0, 1)


def test_shareable_devices_report_consumed_and_remaining_capacity():
    devices = [{"name": "gpu-0", "allowMultipleAllocations": True,
                "capacity": {"memory": {"value": "80Gi"}}},
               {"name": "gpu-1", "allowMultipleAllocations": True,
                "capacity": {"memory": {"value": "80Gi"}}}]
    [pool] = pool_statuses(DRIVER, None, [_slice("n1", devices)],
                           [_claim("n1", "gpu-0", "10Gi")], [])
    summary = pool["shareableSummary"]
    assert (summary["fullyAvailableDevices"], summary["partiallyAvailableDevices"]) == (1, 1)
    assert summary["capacity"] == [{"name": "memory", "total": "160Gi", "consumed": "10Gi",
                                    "available": "150Gi"}]


def test_shareable_capacities_are_summed_per_name_and_sorted():
    cap = {"memory": {"value": "40Gi"}, "cores": {"value": "4"}}
    devices = [{"name": f"s-{i}", "allowMultipleAllocations": True, "capacity": cap}
               for i in range(2)] + [{"name": "plain"}]
    claim = _claim("n1", "s-0", "10Gi")
    claim["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"]["cores"] = "1"
    [pool] = pool_statuses(DRIVER, None, [_slice("n1", devices)], [claim], [])
    summary = pool["shareableSummary"]
    assert (summary["fullyAvailableDevices"], summary["partiallyAvailableDevices"]) == (1, 1)
    assert summary["capacity"] == [
        {"name": "cores", "total": "8", "consumed": "1", "available": "7"},
        {"name": "memory", "total": "80Gi", "consumed": "10Gi", "available": "70Gi"}]


def test_too_many_shareable_capacities_is_a_validation_error():
    cap = {f"c{i}": {"value": "1"} for i in range(33)}
    [pool] = pool_statuses(DRIVER, None, [_slice("n1", [
        {"name": "s", "allowMultipleAllocations": True, "capacity": cap}])], [], [])
    assert pool["validationError"] == (
        f"{PREFIX_SHAREABLE_OVER_CAP} pool {DRIVER}/n1 has 33 shareable capacity keys, "
        "exceeding the maximum of 32")
    assert "shareableSummary" not in pool and pool["totalDevices"] == 1


def test_incomplete_pool_reports_a_validation_error():
    [pool] = pool_statuses(DRIVER, None, [_slice("n1", [], count=2)], [], [])
    assert pool["validationError"] == (
        f"PoolIncomplete: pool {DRIVER}/n1 is incomplete: observed 1/2 slices at generation 1")
    assert "totalDevices" not in pool


def test_partition_types_are_each_measured_against_the_free_counters():
    pool = _typed_pool([_part("full-0", "Full", _gpu("80Gi")),
                        _part("half-0", "Half", _gpu("40Gi")),
                        _part("half-1", "Half", _gpu("40Gi"))])
    assert pool["partitionSummary"] == [
        {"attribute": PROFILE, "type": "Full", "total": 1, "allocatable": 1},
        {"attribute": PROFILE, "type": "Half", "total": 2, "allocatable": 2}]
    assert "validationError" not in pool and pool["resourceSliceCount"] == 2


def test_a_device_in_use_drains_the_counters_of_every_type():
    pool = _typed_pool([_part("full-0", "Full", _gpu("80Gi")),
                        _part("half-0", "Half", _gpu("40Gi")),
                        _part("half-1", "Half", _gpu("40Gi"))],
                       claims=[_claim("p", "full-0")])
    assert _by_type(pool) == {"Full": (1, 0), "Half": (2, 0)}


def test_a_half_in_use_leaves_room_for_the_other_half_only():
    pool = _typed_pool([_part("full-0", "Full", _gpu("80Gi")),
                        _part("half-0", "Half", _gpu("40Gi")),
                        _part("half-1", "Half", _gpu("40Gi"))],
                       claims=[_claim("p", "half-0")])
    assert _by_type(pool) == {"Full": (1, 0), "Half": (2, 1)}


def test_allocatable_is_bound_by_the_free_devices():
    pool = _typed_pool([_part(f"full-{i}", "Full", _gpu("80Gi", "gpu-1")) for i in range(3)],
                       counters={"gpu-1": {"memory": "800Gi"}})
    assert _by_type(pool) == {"Full": (3, 3)}


def test_a_device_drawing_from_two_counter_sets_is_bound_by_the_tighter():
    costs = {"mem": {"memory": "80Gi"}, "cores": {"sm": "8"}}
    pool = _typed_pool([_part("full-0", "Full", costs), _part("full-1", "Full", costs)],
                       counters={"mem": {"memory": "160Gi"}, "cores": {"sm": "8"}})
    assert _by_type(pool) == {"Full": (2, 1)}


def test_a_partition_without_its_type_attribute_is_a_validation_error():
    pool = _typed_pool([_part("full-0", "Full", _gpu("80Gi")),
                        _part("mystery", None, _gpu("40Gi"))])
    assert pool["validationError"] == (
        f'{PREFIX_TYPE_MISSING} device "mystery" in pool {DRIVER}/p does not carry '
        f'partition type attribute "{PROFILE}"')
    assert "partitionSummary" not in pool and pool["totalDevices"] == 2


def test_devices_of_one_type_with_different_costs_are_a_validation_error():
    pool = _typed_pool([_part("half-0", "Half", _gpu("40Gi")),
                        _part("half-1", "Half", _gpu("50Gi"))])
    assert pool["validationError"] == (
        f'{PREFIX_COST_MISMATCH} devices of partition type "Half" in pool {DRIVER}/p '
        "consume different counters")
    assert "partitionSummary" not in pool


def test_more_than_32_partition_types_is_a_validation_error():
    pool = _typed_pool([_part(f"d{i}", f"T{i:02}", _gpu("1Gi")) for i in range(33)])
    assert pool["validationError"] == (
        f"{PREFIX_PARTITION_OVER_CAP} pool {DRIVER}/p has 33 partition types, exceeding "
        "the maximum of 32")
    assert "partitionSummary" not in pool


def test_32_partition_types_are_listed_sorted():
    pool = _typed_pool([_part(f"d{i}", f"T{i:02}", _gpu("1Gi")) for i in reversed(range(32))])
    assert [s["type"] for s in pool["partitionSummary"]] == [f"T{i:02}" for i in range(32)]


def test_a_device_both_partitioned_and_shareable_shows_in_both_views():
    pool = _typed_pool([_part("full-0", "Full", _gpu("80Gi"), allowMultipleAllocations=True,
                              capacity={"memory": {"value": "80Gi"}})])
    assert _by_type(pool) == {"Full": (1, 1)}
    assert pool["shareableSummary"]["fullyAvailableDevices"] == 1


def test_a_partitionable_pool_without_an_attribute_has_no_partition_view():
    slices = [_counter_slice("p", {"gpu-0": {"memory": "80Gi"}}),
              _slice("p", [_part("d0", "Full", _gpu("10Gi"))], count=2)]
    [pool] = pool_statuses(DRIVER, None, slices, [], [])
    assert "partitionSummary" not in pool and "validationError" not in pool


def test_the_request_default_groups_a_pool_whose_slices_name_no_attribute():
    slices = [_counter_slice("p", {"gpu-0": {"memory": "80Gi"}}),
              _slice("p", [_part("d0", "Small", _gpu("10Gi"), attribute=SHAPE)], count=2)]
    [pool] = pool_statuses(DRIVER, None, slices, [], [], SHAPE)
    assert pool["partitionSummary"] == [
        {"attribute": SHAPE, "type": "Small", "total": 1, "allocatable": 1}]


def test_the_slice_attribute_wins_over_the_request_default():
    attrs = {PROFILE: {"string": "Full"}, SHAPE: {"string": "Small"}}
    pool = _typed_pool([_part("d0", None, _gpu("80Gi"), attributes=attrs)], default=SHAPE)
    assert pool["partitionSummary"] == [
        {"attribute": PROFILE, "type": "Full", "total": 1, "allocatable": 1}]


def test_the_request_default_is_ignored_when_any_slice_names_an_attribute():
    attrs = {PROFILE: {"string": "Full"}, SHAPE: {"string": "Small"}}
    slices = [_counter_slice("p", {"gpu-0": {"memory": "160Gi"}}, count=3),
              _slice("p", [_part("d0", None, _gpu("80Gi"), attributes=attrs)], count=3,
                     name="declares", partitionTypeAttribute=PROFILE),
              _slice("p", [_part("d1", None, _gpu("80Gi"), attributes=attrs)], count=3,
                     name="silent")]
    [pool] = pool_statuses(DRIVER, None, slices, [], [], SHAPE)
    assert pool["partitionSummary"] == [
        {"attribute": PROFILE, "type": "Full", "total": 1, "allocatable": 1}]


def test_slices_naming_different_attributes_group_their_own_devices():
    attrs = {PROFILE: {"string": "Full"}, SHAPE: {"string": "Small"}}
    slices = [_counter_slice("p", {"gpu-0": {"memory": "80Gi"}}, count=3),
              _slice("p", [_part("d0", None, _gpu("80Gi"), attributes=attrs)], count=3,
                     name="by-profile", partitionTypeAttribute=PROFILE),
              _slice("p", [_part("d1", None, _gpu("80Gi"), attributes=attrs)], count=3,
                     name="by-shape", partitionTypeAttribute=SHAPE)]
    [pool] = pool_statuses(DRIVER, None, slices, [], [])
    assert pool["partitionSummary"] == [
        {"attribute": PROFILE, "type": "Full", "total": 1, "allocatable": 1},
        {"attribute": SHAPE, "type": "Small", "total": 1, "allocatable": 1}]


def test_an_attribute_of_the_driver_domain_may_be_written_bare_and_must_be_a_string():
    bare = _typed_pool([_part("d0", None, _gpu("80Gi"), attributes={
        "profile": {"string": "Bare"}})])
    assert _by_type(bare) == {"Bare": (1, 1)}
    both = _typed_pool([_part("d0", None, _gpu("80Gi"), attributes={
        "profile": {"string": "Bare"}, PROFILE: {"string": "Explicit"}})])
    assert _by_type(both) == {"Explicit": (1, 1)}
    numeric = _typed_pool([_part("d0", None, _gpu("80Gi"), attributes={PROFILE: {"int": 3}})])
    assert numeric["validationError"].startswith(PREFIX_TYPE_MISSING)


def test_a_grouping_attribute_without_shared_counters_is_a_validation_error():
    [pool] = pool_statuses(DRIVER, None, [_slice("n1", [{"name": "gpu-0"}])], [], [], PROFILE)
    assert pool["validationError"] == (
        f"{PREFIX_TYPE_MISSING} pool {DRIVER}/n1 declares partitionTypeAttribute but "
        "publishes no sharedCounters")
    assert pool["totalDevices"] == 1


async def _wait_for_status(admin, name, tries=200):
    for _ in range(tries):
        req = await admin.get(*RPSR, name)
        if req.get("status", {}).get("conditions"):
            return req["status"]
        await asyncio.sleep(0.05)
    return None


@pytest.fixture
async def cluster(tmp_path):
    gates = FeatureGates.parse("DRAResourcePoolStatus=true,DRAPartitionableDevices=true,"
                               "DRAPartitionableDevicesType=true")
    server = APIServer(APIServerOptions(data_dir=tmp_path, store_url="sqlite://:memory:",
                                        feature_gates=gates))
    await server.start()
    admin = Client.from_kubeconfig(server.kubeconfig_path)
    manager = ControllerManager(Client.from_kubeconfig(server.kubeconfig_path), gates,
                                enabled=["resourcepoolstatus"])
    await manager.start()
    try:
        yield admin
    finally:
        await manager.stop()
        await manager.ctx.client.close()
        await admin.close()
        await server.stop()


async def test_request_is_answered_and_completed_through_the_api(cluster):
    admin = cluster
    await admin.create("resource.k8s.io/v1", "resourceslices",
                       _slice("n1", [{"name": "gpu-0"}, {"name": "gpu-1"}]))
    await admin.create(*RPSR, {"metadata": {"name": "gpus"}, "spec": {"driver": DRIVER}})
    status = await _wait_for_status(admin, "gpus")
    assert status["poolCount"] == 1
    assert status["pools"][0]["totalDevices"] == 2
    [cond] = status["conditions"]
    assert (cond["type"], cond["status"], cond["reason"], cond["message"]) == (
        "Complete", "True", "CalculationComplete", "Calculated status for 1 pools")


async def test_a_partitionable_pool_is_summarized_through_the_api(cluster):
    """The e2e spec's pool: a counter slice, and a device slice naming the type."""
    admin = cluster
    await admin.create("resource.k8s.io/v1", "resourceslices",
                       _counter_slice("partitioned", {"gpu-0": {"memory": "8"}}))
    await admin.create("resource.k8s.io/v1", "resourceslices", _slice(
        "partitioned", [_part("full", "Full", _gpu("8")), _part("half-a", "Half", _gpu("4")),
                        _part("half-b", "Half", _gpu("4"))],
        count=2, partitionTypeAttribute=PROFILE))
    await admin.create(*RPSR, {"metadata": {"name": "views"}, "spec": {"driver": DRIVER}})
    status = await _wait_for_status(admin, "views")
    [pool] = status["pools"]
    assert pool["partitionSummary"] == [
        {"attribute": PROFILE, "type": "Full", "total": 1, "allocatable": 1},
        {"attribute": PROFILE, "type": "Half", "total": 2, "allocatable": 2}]
    assert "validationError" not in pool


async def test_an_incomplete_pool_holds_the_answer_until_it_is_published(cluster):
    admin = cluster
    await admin.create("resource.k8s.io/v1", "resourceslices",
                       _counter_slice("partitioned", {"gpu-0": {"memory": "8"}}))
    await admin.create(*RPSR, {"metadata": {"name": "early"}, "spec": {"driver": DRIVER}})
    assert await _wait_for_status(admin, "early", tries=10) is None
    await admin.create("resource.k8s.io/v1", "resourceslices", _slice(
        "partitioned", [_part("full", "Full", _gpu("8"))], count=2,
        partitionTypeAttribute=PROFILE))
    # Answered on the request's next event (here a label), as the controller gave up.
    req = await admin.get(*RPSR, "early")
    req["metadata"]["labels"] = {"poke": "1"}
    await admin.update(*RPSR, req)
    status = await _wait_for_status(admin, "early")
    assert status["pools"][0]["partitionSummary"] == [
        {"attribute": PROFILE, "type": "Full", "total": 1, "allocatable": 1}]
