"""Recovering from allocations that keep a pod from fitting, through the real API: PostFilter
deallocates or deletes claims, Unreserve takes a pod whose binding failed out of
`reservedFor`, and the DRA filter timeout rules out nodes whose allocation takes too long."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from sched_helpers import node
from test_sched_e2e import (
    DRIVER,
    R,
    claim,
    claim_pod,
    device_class,
    events_for,
    eventually,
    node_of,
    plain_pod,
    resource_slice,
    setup_gpus,
    unschedulable_message,
)

from draemu.client import Client
from draemu.cmd.testing.apiserver import apiserver  # noqa: F401  (fixture)
from draemu.features import FeatureGates
from draemu.scheduler import Scheduler

pytestmark = [pytest.mark.slow, pytest.mark.unit]


@pytest.fixture
async def client(apiserver) -> AsyncIterator[Client]:  # noqa: F811
    c = Client.from_kubeconfig(str(apiserver.kubeconfig_path))
    yield c
    await c.close()


@pytest.fixture
async def start_scheduler(apiserver) -> AsyncIterator[Any]:  # noqa: F811
    """Starts a scheduler with the given options; stops it at the end of the test."""
    started: list[tuple[Scheduler, Client]] = []

    async def start(**options: Any) -> Scheduler:
        c = Client.from_kubeconfig(str(apiserver.kubeconfig_path))
        s = Scheduler(c, initial_backoff=0.05, max_backoff=0.2, gated_report_delay=0.2,
                      **options)
        await s.start()
        started.append((s, c))
        return s

    yield start
    for s, c in started:
        await s.stop()
        await c.close()


def allocation_on(node_name: str, device: str = "gpu-0") -> dict:
    return {"devices": {"results": [
        {"request": "gpu", "driver": DRIVER, "pool": node_name, "device": device}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}}


async def allocate(client: Client, name: str, node_name: str,
                   reserved_for: list[dict] | None = None) -> dict:
    """What an earlier scheduling of the claim left behind."""
    c = await client.get(R, "resourceclaims", name, "default")
    c["status"] = {"allocation": allocation_on(node_name), "reservedFor": reserved_for or []}
    return await client.update(R, "resourceclaims", c, subresource="status")


async def claim_status(client: Client, name: str) -> dict:
    return (await client.get(R, "resourceclaims", name, "default")).get("status") or {}


async def failed_scheduling_messages(client: Client, pod_name: str) -> list[str]:
    return [e.get("note") or e.get("message") or "" for e in await events_for(client, pod_name)
            if e["reason"] == "FailedScheduling"]


async def test_claim_allocated_for_another_node_is_deallocated_and_allocated_again(
        client, start_scheduler):
    await setup_gpus(client, {"n1": 1, "gone": 1})
    await client.delete("v1", "nodes", "gone")
    await client.create(R, "resourceclaims", claim("c1"))
    await allocate(client, "c1", "gone")
    await start_scheduler()
    await client.create("v1", "pods", claim_pod("p1", "c1"))
    assert await eventually(lambda: node_of(client, "p1")) == "n1"
    assert (await claim_status(client, "c1"))["allocation"]["devices"]["results"][0][
        "pool"] == "n1"
    messages = await eventually(lambda: failed_scheduling_messages(client, "p1"))
    assert messages[0] == ("0/1 nodes are available: 1 resourceclaim not available on the "
                           "node. deallocation of ResourceClaim completed, preemption: 0/1 "
                           "nodes are available: 1 Preemption is not helpful for scheduling.")


async def test_claim_reserved_for_another_pod_is_left_alone(client, start_scheduler):
    await setup_gpus(client, {"n1": 1, "gone": 1})
    await client.delete("v1", "nodes", "gone")
    await client.create(R, "resourceclaims", claim("c1"))
    other = {"resource": "pods", "name": "other", "uid": "5f0c7a43-0000-4000-8000-000000000001"}
    await allocate(client, "c1", "gone", reserved_for=[other])
    await start_scheduler()
    await client.create("v1", "pods", claim_pod("p1", "c1"))
    assert await eventually(lambda: unschedulable_message(client, "p1")) == (
        "0/1 nodes are available: 1 resourceclaim not available on the node. "
        "still not schedulable, preemption: 0/1 nodes are available: "
        "1 Preemption is not helpful for scheduling.")
    status = await claim_status(client, "c1")
    assert status["allocation"]["devices"]["results"][0]["pool"] == "gone"
    assert status["reservedFor"] == [other]


async def test_pod_without_claims_gets_no_postfilter_verdict(client, start_scheduler):
    await client.create("v1", "nodes", node("small", cpu="1"))
    await start_scheduler()
    await client.create("v1", "pods", plain_pod("p1", cpu="2"))
    # (DefaultPreemption still speaks: only the DRA plugin is silent.)
    assert await eventually(lambda: unschedulable_message(client, "p1")) == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod.")


async def test_leftover_extended_resource_claim_is_deleted_and_made_again(
        client, start_scheduler):
    cls = device_class()
    cls["spec"]["extendedResourceName"] = "example.com/gpu"
    await client.create(R, "deviceclasses", cls)
    await start_scheduler()
    p = plain_pod("p1", extra={"example.com/gpu": "1"})
    p["spec"]["containers"][0]["resources"]["limits"] = {"example.com/gpu": "1"}
    created = await client.create("v1", "pods", p)
    # No node yet: the pod waits, and we play an earlier attempt that made its claim for a
    # node that is gone since.
    await eventually(lambda: unschedulable_message(client, "p1"))
    leftover = {"apiVersion": R, "kind": "ResourceClaim", "metadata": {
        "name": "p1-extended-resources-old", "namespace": "default",
        "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p1",
                             "uid": created["metadata"]["uid"], "controller": True,
                             "blockOwnerDeletion": True}]},
        "spec": {"devices": {"requests": [{"name": "container-0-request-0", "exactly": {
            "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}}]}}}
    await client.create(R, "resourceclaims", leftover)
    old = await client.get(R, "resourceclaims", "p1-extended-resources-old", "default")
    allocation = allocation_on("gone")
    allocation["devices"]["results"][0]["request"] = "container-0-request-0"
    old["status"] = {"allocation": allocation}
    await client.update(R, "resourceclaims", old, subresource="status")
    await client.patch("v1", "pods", "p1", {"status": {"extendedResourceClaimStatus": {
        "requestMappings": [{"containerName": "c", "resourceName": "example.com/gpu",
                             "requestName": "container-0-request-0"}],
        "resourceClaimName": "p1-extended-resources-old"}}},
        namespace="default", subresource="status")
    await client.create("v1", "nodes", node("n1"))
    await client.create(R, "resourceslices", resource_slice("n1", 1))
    assert await eventually(lambda: node_of(client, "p1")) == "n1"
    names = [c["metadata"]["name"] for c in
             (await client.list(R, "resourceclaims", "default"))["items"]]
    assert "p1-extended-resources-old" not in names and len(names) == 1
    messages = await failed_scheduling_messages(client, "p1")
    assert any("deletion of ResourceClaim completed" in m for m in messages)


def gated_slice() -> dict:
    s = resource_slice("n1", 1)
    s["spec"]["devices"][0].update(bindingConditions=["attached"],
                                   bindingFailureConditions=["failed"])
    return s


async def set_device_condition(client: Client, name: str, type_: str) -> None:
    c = await client.get(R, "resourceclaims", name, "default")
    c["status"]["devices"] = [{"driver": DRIVER, "pool": "n1", "device": "gpu-0", "conditions": [
        {"type": type_, "status": "True", "reason": "Test", "message": "set by the test",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}]
    await client.update(R, "resourceclaims", c, subresource="status")


async def allocated(client: Client, name: str) -> dict | None:
    status = await claim_status(client, name)
    return status if status.get("allocation") and not status.get("devices") else None


async def test_failed_binding_releases_the_claim_and_the_device_is_allocated_again(
        client, start_scheduler):
    await client.create(R, "deviceclasses", device_class())
    await client.create("v1", "nodes", node("n1"))
    await client.create(R, "resourceslices", gated_slice())
    await client.create(R, "resourceclaims", claim("c1"))
    await start_scheduler()
    await client.create("v1", "pods", claim_pod("p1", "c1"))
    first = await eventually(lambda: allocated(client, "c1"))
    assert [r["name"] for r in first["reservedFor"]] == ["p1"]
    await set_device_condition(client, "c1", "failed")

    async def deallocation_reported() -> bool:
        messages = await failed_scheduling_messages(client, "p1")
        return any("binding failed" in m for m in messages) and \
            any("deallocation of ResourceClaim completed" in m for m in messages)

    assert await eventually(deallocation_reported)
    # Allocated afresh (without the failed device status) and waiting for binding again.
    again = await eventually(lambda: allocated(client, "c1"))
    assert [r["name"] for r in again["reservedFor"]] == ["p1"]
    await set_device_condition(client, "c1", "attached")
    assert await eventually(lambda: node_of(client, "p1")) == "n1"


async def test_pod_deleted_during_binding_is_taken_out_of_reserved_for(
        client, start_scheduler):
    await client.create(R, "deviceclasses", device_class())
    await client.create("v1", "nodes", node("n1"))
    await client.create(R, "resourceslices", gated_slice())
    await client.create(R, "resourceclaims", claim("c1"))
    await start_scheduler()
    await client.create("v1", "pods", claim_pod("p1", "c1"))
    await eventually(lambda: allocated(client, "c1"))
    await client.delete("v1", "pods", "p1", "default", grace_period_seconds=0)
    await set_device_condition(client, "c1", "attached")  # PreBind is done; Bind fails

    async def unreserved() -> dict | None:
        status = await claim_status(client, "c1")
        return status if not status.get("reservedFor") else None

    status = await eventually(unreserved)
    assert status["allocation"]["devices"]["results"][0]["device"] == "gpu-0"


async def test_allocation_past_the_filter_timeout_rules_out_the_node(client, start_scheduler):
    await setup_gpus(client, {"n1": 1})
    await client.create(R, "resourceclaims", claim("c1"))
    await start_scheduler(dra_filter_timeout=1e-9)
    await client.create("v1", "pods", claim_pod("p1", "c1"))
    assert await eventually(lambda: unschedulable_message(client, "p1")) == (
        "0/1 nodes are available: 1 timed out trying to allocate devices. "
        "still not schedulable, preemption: 0/1 nodes are available: "
        "1 Preemption is not helpful for scheduling.")


async def test_filter_timeout_is_ignored_with_its_gate_off(client, start_scheduler):
    await setup_gpus(client, {"n1": 1})
    await client.create(R, "resourceclaims", claim("c1"))
    await start_scheduler(gates=FeatureGates.parse("DRASchedulerFilterTimeout=false"),
                          dra_filter_timeout=1e-9)
    await client.create("v1", "pods", claim_pod("p1", "c1"))
    assert await eventually(lambda: node_of(client, "p1")) == "n1"
