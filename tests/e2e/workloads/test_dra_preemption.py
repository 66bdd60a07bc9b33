"""A high-priority pod preempts a low-priority pod that holds the node's only device: the
scheduler nominates the node and deletes the victim (DisruptionTarget condition first),
the resource claim controller deallocates the victim's claim once it is gone, and the
preemptor gets the device and runs (in-process cluster: apiserver, controllers,
scheduler, an emulated kubelet and the example GPU driver)."""

from __future__ import annotations

import pytest

from draemu.client import ApiError
from draemu.cmd.testing.e2e import eventually, gpu_class_and_template, gpu_plugin

pytestmark = pytest.mark.e2e

RESOURCE = "resource.k8s.io/v1"


def gpu_pod(name: str, priority_class: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"priorityClassName": priority_class,
                     "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}],
                     "containers": [{"name": "main", "image": "worker",
                                     "resources": {"claims": [{"name": "gpu"}]}}]}}


async def test_high_priority_pod_preempts_the_pod_holding_the_only_device(draemu_cluster):
    client = draemu_cluster.client
    async with gpu_plugin(draemu_cluster, "node-1", 1):
        for name, value in (("low", 10), ("high", 1000)):
            await client.create("scheduling.k8s.io/v1", "priorityclasses", {
                "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": name}, "value": value})
        await gpu_class_and_template(client)

        async def phase(name: str) -> str | None:
            try:
                pod = await client.get("v1", "pods", name, "default")
            except ApiError as e:
                return "gone" if e.code == 404 else None
            return (pod.get("status") or {}).get("phase")

        await client.create("v1", "pods", gpu_pod("victim", "low"), "default")
        assert await eventually(lambda: _is(phase("victim"), "Running"), timeout=30)
        victim = await client.get("v1", "pods", "victim", "default")
        victim_claim = victim["status"]["resourceClaimStatuses"][0]["resourceClaimName"]

        await client.create("v1", "pods", gpu_pod("urgent", "high"), "default")
        assert await eventually(lambda: _is(phase("urgent"), "Running"), timeout=60)
        urgent = await client.get("v1", "pods", "urgent", "default")
        assert urgent["spec"]["priority"] == 1000
        assert urgent["spec"]["nodeName"] == "node-1"
        assert await phase("victim") == "gone"
        # The victim's claim was deallocated (and, made from a template, deleted).
        claims = (await client.list(RESOURCE, "resourceclaims", namespace="default"))
        names = {c["metadata"]["name"]: c for c in claims["items"]}
        assert victim_claim not in names or not names[victim_claim]["status"].get(
            "allocation")
        events = await client.list("events.k8s.io/v1", "events", namespace="default")
        preempted = [e for e in events["items"] if e.get("reason") == "Preempted"]
        assert preempted and preempted[0]["regarding"]["name"] == "victim"
        assert preempted[0]["note"] == (
            f"Preempted by pod {urgent['metadata']['uid']} on node node-1")


async def _is(value, wanted):
    return (await value) == wanted or None
