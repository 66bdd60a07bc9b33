"""End to end through the real API: apiserver on a free port, the scheduler as a client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sched_helpers import node, pod

from draemu.client import Client
from draemu.cmd.testing.apiserver import apiserver  # noqa: F401  (fixture)
from draemu.cmd.testing.e2e import eventually
from draemu.scheduler import Scheduler

pytestmark = [pytest.mark.slow, pytest.mark.unit]

R = "resource.k8s.io/v1"
DRIVER = "gpu.example.com"


@pytest.fixture
async def client(apiserver) -> AsyncIterator[Client]:  # noqa: F811
    c = Client.from_kubeconfig(str(apiserver.kubeconfig_path))
    yield c
    await c.close()


@pytest.fixture
async def scheduler(apiserver) -> AsyncIterator[Scheduler]:  # noqa: F811
    c = Client.from_kubeconfig(str(apiserver.kubeconfig_path), user_agent="draemu-scheduler")
    s = Scheduler(c, initial_backoff=0.05, max_backoff=0.2, gated_report_delay=0.2)
    await s.start()
    yield s
    await s.stop()
    await c.close()


def device_class(name: str = "gpu") -> dict:
    return {"apiVersion": R, "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}


def resource_slice(node_name: str, devices: int, *, model: str = "A100") -> dict:
    return {"apiVersion": R, "kind": "ResourceSlice",
            "metadata": {"name": f"{node_name}-gpus"},
            "spec": {"driver": DRIVER, "nodeName": node_name,
                     "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}",
                                  "attributes": {"model": {"string": model}}}
                                 for i in range(devices)]}}


def claim(name: str, *, model: str | None = None) -> dict:
    exactly: dict[str, Any] = {"deviceClassName": "gpu"}
    if model:
        exactly["selectors"] = [{"cel": {
            "expression": f'device.attributes["{DRIVER}"].model == "{model}"'}}]
    return {"apiVersion": R, "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}


def claim_pod(name: str, claim_name: str) -> dict:
    p = pod(name, claims=[{"name": "gpu", "resourceClaimName": claim_name}])
    del p["metadata"]["uid"]
    p["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    return p


def plain_pod(name: str, **kwargs: Any) -> dict:
    p = pod(name, **kwargs)
    del p["metadata"]["uid"]
    return p


async def get_pod(client: Client, name: str) -> dict:
    return await client.get("v1", "pods", name, "default")


async def node_of(client: Client, name: str) -> str | None:
    return (await get_pod(client, name))["spec"].get("nodeName")


async def pod_scheduled_condition(client: Client, name: str) -> dict | None:
    conditions = (await get_pod(client, name)).get("status", {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "PodScheduled"), None)


async def unschedulable_message(client: Client, name: str) -> str | None:
    cond = await pod_scheduled_condition(client, name)
    return cond["message"] if cond and cond["status"] == "False" else None


async def events_for(client: Client, name: str) -> list[dict]:
    items = (await client.list("v1", "events", "default"))["items"]
    return [e for e in items if e.get("involvedObject", {}).get("name") == name]


async def setup_gpus(client: Client, nodes: dict[str, int]) -> None:
    await client.create(R, "deviceclasses", device_class())
    for name, devices in nodes.items():
        await client.create("v1", "nodes", node(name))
        if devices:
            await client.create(R, "resourceslices", resource_slice(name, devices))


async def test_pod_with_claim_is_allocated_reserved_and_bound(client, scheduler):
    await setup_gpus(client, {"n1": 2})
    await client.create(R, "resourceclaims", claim("c1"))
    created = await client.create("v1", "pods", claim_pod("p1", "c1"))
    assert await eventually(lambda: node_of(client, "p1")) == "n1"
    assert (await pod_scheduled_condition(client, "p1"))["status"] == "True"
    c = await client.get(R, "resourceclaims", "c1", "default")
    assert c["metadata"]["finalizers"] == ["resource.kubernetes.io/delete-protection"]
    result = c["status"]["allocation"]["devices"]["results"][0]
    assert (result["request"], result["driver"], result["pool"]) == ("gpu", DRIVER, "n1")
    assert c["status"]["reservedFor"] == [
        {"resource": "pods", "name": "p1", "uid": created["metadata"]["uid"]}]
    events = await eventually(lambda: events_for(client, "p1"))
    assert any(e["reason"] == "Scheduled" and e["message"] ==
               "Successfully assigned default/p1 to n1" for e in events)


async def test_claim_writes_send_no_managed_fields_and_keep_every_managers_entry(
        client, scheduler):
    await setup_gpus(client, {"n1": 1})
    await client.create(R, "resourceclaims", claim("c1"))
    bodies: list[dict] = []
    update = scheduler.client.update

    async def recording_update(api_version: str, resource: str, obj: dict,
                               *args: Any, **kwargs: Any) -> dict:
        bodies.append(obj)
        return await update(api_version, resource, obj, *args, **kwargs)

    scheduler.client.update = recording_update  # type: ignore[method-assign]
    await client.create("v1", "pods", claim_pod("p1", "c1"))
    assert await eventually(lambda: node_of(client, "p1")) == "n1"
    assert len(bodies) == 2  # the finalizer, then the status
    assert all("managedFields" not in b["metadata"] for b in bodies)
    managers = [(m["manager"], m.get("subresource", "")) for m in (await client.get(
        R, "resourceclaims", "c1", "default"))["metadata"]["managedFields"]]
    assert managers == [("draemu", ""), ("draemu-scheduler", ""),
                        ("draemu-scheduler", "status")]


async def test_pods_competing_for_the_last_device_never_share_it(client, scheduler):
    await setup_gpus(client, {"n1": 1})
    for i in range(4):
        await client.create(R, "resourceclaims", claim(f"c{i}"))
    await asyncio.gather(*(client.create("v1", "pods", claim_pod(f"p{i}", f"c{i}"))
                           for i in range(4)))

    async def settled() -> list[str | None]:
        nodes = [await node_of(client, f"p{i}") for i in range(4)]
        messages = [await unschedulable_message(client, f"p{i}") for i in range(4)]
        done = sum(n is not None for n in nodes) + sum(m is not None for m in messages)
        return nodes if done == 4 else []

    nodes = await eventually(settled)
    assert sum(n is not None for n in nodes) == 1
    claims = (await client.list(R, "resourceclaims", "default"))["items"]
    assert sum(1 for c in claims if c.get("status", {}).get("allocation")) == 1
    loser = next(f"p{i}" for i in range(4) if nodes[i] is None)
    message = await unschedulable_message(client, loser)
    assert message.startswith("0/1 nodes are available: 1 cannot allocate all claims")


async def test_unschedulable_pod_is_scheduled_once_a_slice_appears(client, scheduler):
    await setup_gpus(client, {"n1": 0})
    await client.create(R, "resourceclaims", claim("c1"))
    await client.create("v1", "pods", claim_pod("p1", "c1"))
    message = await eventually(lambda: unschedulable_message(client, "p1"))
    assert "cannot allocate all claims" in message
    await client.create(R, "resourceslices", resource_slice("n1", 1))
    assert await eventually(lambda: node_of(client, "p1")) == "n1"


async def test_selector_picks_the_node_with_matching_devices(client, scheduler):
    await client.create(R, "deviceclasses", device_class())
    for name, model in (("t4-node", "T4"), ("a100-node", "A100")):
        await client.create("v1", "nodes", node(name))
        await client.create(R, "resourceslices", resource_slice(name, 2, model=model))
    await client.create(R, "resourceclaims", claim("c1", model="A100"))
    await client.create("v1", "pods", claim_pod("p1", "c1"))
    assert await eventually(lambda: node_of(client, "p1")) == "a100-node"


async def test_shared_claim_is_reserved_for_every_pod(client, scheduler):
    await setup_gpus(client, {"n1": 1})
    await client.create(R, "resourceclaims", claim("shared"))
    for name in ("a", "b"):
        await client.create("v1", "pods", claim_pod(name, "shared"))
    assert await eventually(lambda: node_of(client, "a")) == "n1"
    assert await eventually(lambda: node_of(client, "b")) == "n1"
    c = await client.get(R, "resourceclaims", "shared", "default")
    assert sorted(r["name"] for r in c["status"]["reservedFor"]) == ["a", "b"]


async def test_missing_claim_keeps_the_pod_pending_with_a_clear_reason(client, scheduler):
    await setup_gpus(client, {"n1": 1})
    await client.create("v1", "pods", claim_pod("p1", "later"))
    message = await eventually(lambda: unschedulable_message(client, "p1"))
    assert message == 'resourceclaim "later" not found'
    await client.create(R, "resourceclaims", claim("later"))
    assert await eventually(lambda: node_of(client, "p1")) == "n1"


async def test_template_claim_waits_for_the_claim_controller(client, scheduler):
    await setup_gpus(client, {"n1": 1})
    p = plain_pod("p1", claims=[{"name": "gpu", "resourceClaimTemplateName": "tmpl"}])
    created = await client.create("v1", "pods", p)
    message = await eventually(lambda: unschedulable_message(client, "p1"))
    assert message == 'pod "default/p1": ResourceClaim not created yet'
    # Do what the resource-claim controller does: create the claim, note it in the pod.
    generated = claim("p1-gpu-x1y2z")
    generated["metadata"]["ownerReferences"] = [{
        "apiVersion": "v1", "kind": "Pod", "name": "p1", "uid": created["metadata"]["uid"],
        "controller": True, "blockOwnerDeletion": True}]
    await client.create(R, "resourceclaims", generated)
    await client.patch("v1", "pods", "p1", {"status": {"resourceClaimStatuses": [
        {"name": "gpu", "resourceClaimName": "p1-gpu-x1y2z"}]}},
        namespace="default", subresource="status")
    assert await eventually(lambda: node_of(client, "p1")) == "n1"


async def test_failed_scheduling_summarises_every_node(client, scheduler):
    await client.create("v1", "nodes", node("small", cpu="1"))
    await client.create("v1", "nodes", node("labelled", cpu="1", labels={"zone": "b"}))
    await client.create("v1", "nodes", node("tainted", taints=[
        {"key": "dedicated", "value": "x", "effect": "NoSchedule"}]))
    await client.create("v1", "pods", plain_pod("p1", cpu="2",
                                                spec={"nodeSelector": {"zone": "b"}}))

    async def message() -> str | None:
        m = await unschedulable_message(client, "p1")
        return m if m and m.startswith("0/3") else None

    assert await eventually(message) == (
        "0/3 nodes are available: 1 Insufficient cpu, "
        "1 node(s) didn't match Pod's node affinity/selector, "
        "1 node(s) had untolerated taint(s). preemption: 0/3 nodes are available: "
        "1 No preemption victims found for incoming pod, "
        "2 Preemption is not helpful for scheduling.")
    events = await eventually(lambda: events_for(client, "p1"))
    assert any(e["reason"] == "FailedScheduling" and e["type"] == "Warning" for e in events)


async def test_new_node_makes_a_pending_pod_schedulable(client, scheduler):
    await client.create("v1", "pods", plain_pod("p1", cpu="1"))
    assert await eventually(lambda: unschedulable_message(client, "p1")) == \
        "no nodes available to schedule pods"
    await client.create("v1", "nodes", node("n1"))
    assert await eventually(lambda: node_of(client, "p1")) == "n1"


async def test_extended_resource_backed_by_a_device_class_gets_a_claim(client, scheduler):
    cls = device_class()
    cls["spec"]["extendedResourceName"] = "example.com/gpu"
    await client.create(R, "deviceclasses", cls)
    await client.create("v1", "nodes", node("n1"))
    await client.create(R, "resourceslices", resource_slice("n1", 2))
    p = plain_pod("p1", extra={"example.com/gpu": "2"})
    p["spec"]["containers"][0]["resources"]["limits"] = {"example.com/gpu": "2"}
    await client.create("v1", "pods", p)
    assert await eventually(lambda: node_of(client, "p1")) == "n1"
    status = (await get_pod(client, "p1"))["status"]["extendedResourceClaimStatus"]
    assert status["requestMappings"] == [{"containerName": "c", "resourceName":
                                          "example.com/gpu",
                                          "requestName": "container-0-request-0"}]
    c = await client.get(R, "resourceclaims", status["resourceClaimName"], "default")
    assert c["metadata"]["annotations"] == {
        "resource.kubernetes.io/extended-resource-claim": "true"}
    assert len(c["status"]["allocation"]["devices"]["results"]) == 2
    assert [r["name"] for r in c["status"]["reservedFor"]] == ["p1"]


async def test_binding_waits_for_the_device_binding_conditions(client, scheduler):
    await client.create(R, "deviceclasses", device_class())
    await client.create("v1", "nodes", node("n1"))
    s = resource_slice("n1", 1)
    s["spec"]["devices"][0].update(bindingConditions=["attached"],
                                   bindingFailureConditions=["failed"])
    await client.create(R, "resourceslices", s)
    await client.create(R, "resourceclaims", claim("c1"))
    await client.create("v1", "pods", claim_pod("p1", "c1"))

    async def allocated() -> dict | None:
        c = await client.get(R, "resourceclaims", "c1", "default")
        return c if c.get("status", {}).get("allocation") else None

    c = await eventually(allocated)
    assert c["status"]["allocation"].get("allocationTimestamp")
    assert await node_of(client, "p1") is None  # PreBind still waits
    # What the driver does once the device is attached:
    c["status"]["devices"] = [{"driver": DRIVER, "pool": "n1", "device": "gpu-0", "conditions": [
        {"type": "attached", "status": "True", "reason": "Attached", "message": "",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}]
    await client.update(R, "resourceclaims", c, subresource="status")
    assert await eventually(lambda: node_of(client, "p1")) == "n1"


async def test_dra_failure_message_carries_the_allocator_explanation(client, scheduler):
    await setup_gpus(client, {"n1": 2})
    await client.create(R, "resourceclaims", claim("c1", model="H100"))
    await client.create("v1", "pods", claim_pod("p1", "c1"))
    message = await eventually(lambda: unschedulable_message(client, "p1"))
    assert message.startswith("0/1 nodes are available: 1 cannot allocate all claims")
    assert "claim default/c1, request gpu" in message


async def test_pods_from_a_template_are_scheduled_with_the_claim_controller(
        apiserver, client, scheduler):  # noqa: F811
    from draemu.controllers.manager import ControllerManager

    controller_client = Client.from_kubeconfig(str(apiserver.kubeconfig_path))
    controllers = ControllerManager(controller_client, enabled=["resourceclaim"])
    await controllers.start()
    try:
        await setup_gpus(client, {"n1": 2, "n2": 2})
        await client.create(R, "resourceclaimtemplates", {
            "apiVersion": R, "kind": "ResourceClaimTemplate",
            "metadata": {"name": "one-gpu", "namespace": "default"},
            "spec": {"spec": claim("unused")["spec"]}})
        for i in range(4):
            await client.create("v1", "pods", plain_pod(f"p{i}", claims=[
                {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]))

        async def all_bound() -> list[str | None] | None:
            nodes = [await node_of(client, f"p{i}") for i in range(4)]
            return nodes if all(nodes) else None

        assert sorted(await eventually(all_bound)) == ["n1", "n1", "n2", "n2"]
        claims = (await client.list(R, "resourceclaims", "default"))["items"]
        devices = {(r["pool"], r["device"]) for c in claims
                   for r in c["status"]["allocation"]["devices"]["results"]}
        assert len(devices) == 4
    finally:
        await controllers.stop()
        await controller_client.close()


async def test_freed_claim_makes_a_waiting_pod_schedulable(client, scheduler):
    await setup_gpus(client, {"n1": 1})
    for name in ("c1", "c2"):
        await client.create(R, "resourceclaims", claim(name))
    await client.create("v1", "pods", claim_pod("first", "c1"))
    assert await eventually(lambda: node_of(client, "first")) == "n1"
    await client.create("v1", "pods", claim_pod("second", "c2"))
    assert "cannot allocate all claims" in await eventually(
        lambda: unschedulable_message(client, "second"))
    # What the resource-claim controller does once "first" is gone: deallocate c1.
    await client.delete("v1", "pods", "first", "default", grace_period_seconds=0)
    c1 = await client.get(R, "resourceclaims", "c1", "default")
    c1["status"] = {}
    await client.update(R, "resourceclaims", c1, subresource="status")
    assert await eventually(lambda: node_of(client, "second")) == "n1"


async def test_pod_with_scheduling_gates_waits_until_they_are_removed(client, scheduler):
    await client.create("v1", "nodes", node("n1"))
    await client.create("v1", "pods", plain_pod("gated", spec={
        "schedulingGates": [{"name": "example.com/a"}, {"name": "example.com/b"}]}))
    await client.create("v1", "pods", plain_pod("free"))
    assert await eventually(lambda: node_of(client, "free")) == "n1"
    # Tried after the gated pod, bound, and the gated one left alone, with the condition
    # the apiserver gave it.
    assert await node_of(client, "gated") is None
    condition = await pod_scheduled_condition(client, "gated")
    assert (condition["status"], condition["reason"]) == ("False", "SchedulingGated")
    gated = await get_pod(client, "gated")
    gated["spec"]["schedulingGates"] = []
    await client.update("v1", "pods", gated)
    assert await eventually(lambda: node_of(client, "gated")) == "n1"
