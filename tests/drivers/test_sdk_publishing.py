"""ResourceSlice publishing by the SDK against the real apiserver."""

from __future__ import annotations

import pytest

from draemu.client import Client
from draemu.cmd.testing.e2e import eventually
from draemu.drivers.gpu import build_devices
from draemu.drivers.sdk import DriverResources, Pool, ResourceSliceController

pytestmark = pytest.mark.unit

API = "resource.k8s.io/v1"


@pytest.fixture
async def client(apiserver):
    async with Client.from_kubeconfig(str(apiserver.kubeconfig_path)) as c:
        await c.create("v1", "nodes", {"apiVersion": "v1", "kind": "Node",
                                       "metadata": {"name": "node-1"}})
        yield c


@pytest.fixture
async def controller(client):
    ctrl = ResourceSliceController(client, "gpu.example.com", "node-1")
    await ctrl.start()
    yield ctrl
    await ctrl.stop()


def devices(*names):
    return [{"name": n, "attributes": {"index": {"int": i}}} for i, n in enumerate(names)]


async def slices(client):
    listed = await client.list(API, "resourceslices", field_selector="spec.driver=gpu.example.com")
    return sorted(listed["items"], key=lambda s: s["metadata"]["name"])


async def publish(ctrl, pool):
    ctrl.update(DriverResources(pools={"node-1": pool}))
    await ctrl.wait_synced()


async def test_a_change_updates_the_slice_in_place_and_bumps_the_generation(client, controller):
    await publish(controller, Pool(devices=devices("gpu-0")))
    (first,) = await slices(client)
    assert first["spec"]["pool"] == {"name": "node-1", "generation": 0, "resourceSliceCount": 1}
    assert first["metadata"]["name"].startswith("00000-gpu.example.com-node-1-")
    await publish(controller, Pool(devices=devices("gpu-0", "gpu-1")))
    (second,) = await slices(client)
    assert second["metadata"]["uid"] == first["metadata"]["uid"]
    assert second["spec"]["pool"]["generation"] == 1
    assert [d["name"] for d in second["spec"]["devices"]] == ["gpu-0", "gpu-1"]


async def test_an_unchanged_pool_is_not_written_again(client, controller):
    await publish(controller, Pool(devices=devices("gpu-0")))
    (first,) = await slices(client)
    await publish(controller, Pool(devices=devices("gpu-0")))
    (again,) = await slices(client)
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


async def test_a_deleted_slice_is_published_again(client, controller):
    await publish(controller, Pool(devices=devices("gpu-0")))
    (first,) = await slices(client)
    await client.delete(API, "resourceslices", first["metadata"]["name"])

    async def back():
        items = await slices(client)
        return items if items and items[0]["metadata"]["uid"] != first["metadata"]["uid"] \
            else None

    (again,) = await eventually(back)
    assert again["spec"]["devices"] == first["spec"]["devices"]


async def test_a_large_pool_is_split_and_shrinking_deletes_the_extra_slices(client, controller):
    await publish(controller, Pool(devices=devices(*[f"gpu-{i}" for i in range(200)])))
    items = await slices(client)
    assert [len(s["spec"]["devices"]) for s in items] == [128, 72]
    assert {s["spec"]["pool"]["resourceSliceCount"] for s in items} == {2}
    await publish(controller, Pool(devices=devices("gpu-0")))
    (only,) = await slices(client)
    assert only["spec"]["pool"]["resourceSliceCount"] == 1
    assert only["spec"]["pool"]["generation"] == 1


async def test_partitionable_and_shareable_gpus_are_accepted_by_the_apiserver(client,
                                                                           controller):
    pool = build_devices("gpu.example.com", "node-1", [
        {"count": 2, "memory": "40Gi", "partitions": 4},
        {"count": 1, "memory": "80Gi", "allowMultipleAllocations": True}])
    await publish(controller, pool)
    items = await slices(client)
    counters = [s for s in items if s["spec"].get("sharedCounters")]
    assert [c["name"] for c in counters[0]["spec"]["sharedCounters"]] == [
        "gpu-0-counter-set", "gpu-1-counter-set"]
    names = [d["name"] for s in items for d in s["spec"].get("devices") or []]
    assert "gpu-0-partition-3" in names and "gpu-1-full" in names
    shared = [d for s in items for d in s["spec"].get("devices") or [] if d["name"] == "gpu-2"]
    assert shared[0]["allowMultipleAllocations"] is True
    assert shared[0]["capacity"]["memory"]["requestPolicy"]["validRange"]["step"] == "1Gi"
    # What the apiserver stored is what was sent: publishing again writes nothing.
    versions = [s["metadata"]["resourceVersion"] for s in items]
    await publish(controller, pool)
    assert [s["metadata"]["resourceVersion"] for s in await slices(client)] == versions


async def test_seed_preset_pools_are_stored_exactly_as_published(client):
    from draemu.drivers.builtin import make_driver
    from draemu.drivers.presets import load_preset

    (node,) = [n for n in load_preset("seed").nodes if n.name == "gpu-node-01"]
    await client.create("v1", "nodes", {"apiVersion": "v1", "kind": "Node",
                                        "metadata": {"name": "gpu-node-01"}})
    for spec in node.drivers:
        driver = make_driver(spec, "gpu-node-01", "/nonexistent")
        ctrl = ResourceSliceController(client, spec.name, "gpu-node-01")
        await ctrl.start()
        try:
            ctrl.update(driver.resources())
            await ctrl.wait_synced()
            selector = f"spec.driver={spec.name}"
            before = await client.list(API, "resourceslices", field_selector=selector)
            ctrl.update(driver.resources())
            await ctrl.wait_synced()
            after = await client.list(API, "resourceslices", field_selector=selector)
            assert [s["metadata"]["resourceVersion"] for s in after["items"]] == \
                [s["metadata"]["resourceVersion"] for s in before["items"]]
        finally:
            await ctrl.stop()
