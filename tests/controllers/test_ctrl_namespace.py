"""The namespace controller against a real apiserver: a namespace's pods are deleted
first and the rest of its content only once no pod is left (OrderedNamespaceDeletion),
with the namespace's conditions saying what remains."""

import asyncio

import pytest

from draemu.cmd.testing.e2e import eventually, gone

pytestmark = [pytest.mark.slow, pytest.mark.unit]


def conditions(ns):
    return {c["type"]: c for c in (ns.get("status") or {}).get("conditions") or []}


async def test_pods_go_first_and_the_rest_waits_for_them(cluster):
    await cluster.create("v1", "namespaces", {"metadata": {"name": "ordered"}})
    await cluster.create("v1", "pods", {"metadata": {
        "name": "held", "namespace": "ordered", "finalizers": ["e2e.example.com/finalizer"]},
        "spec": {"containers": [{"name": "c", "image": "pause"}]}})
    await cluster.create("v1", "configmaps", {"metadata": {"name": "config",
                                                           "namespace": "ordered"}})
    await cluster.delete("v1", "namespaces", "ordered")

    async def waiting_for_the_pod():
        ns = await cluster.get("v1", "namespaces", "ordered")
        pod = await cluster.get("v1", "pods", "held", "ordered")
        return "NamespaceDeletionContentFailure" in conditions(ns) and \
            pod["metadata"].get("deletionTimestamp")
    await eventually(waiting_for_the_pod)
    await asyncio.sleep(2.0)  # two more passes of the controller
    assert not await gone(cluster, "v1", "configmaps", "config", "ordered")
    found = conditions(await cluster.get("v1", "namespaces", "ordered"))
    assert (found["NamespaceContentRemaining"]["status"],
            found["NamespaceContentRemaining"]["message"]) == (
        "True", "Some resources are remaining: pods. has 1 resource instances")
    assert found["NamespaceFinalizersRemaining"]["message"] == (
        "Some content in the namespace has finalizers remaining: e2e.example.com/finalizer "
        "in 1 resource instances")
    assert found["NamespaceDeletionContentFailure"]["status"] == "False"

    pod = await cluster.get("v1", "pods", "held", "ordered")
    pod["metadata"]["finalizers"] = []
    await cluster.update("v1", "pods", pod)
    await eventually(lambda: gone(cluster, "v1", "namespaces", "ordered"))
    assert await gone(cluster, "v1", "configmaps", "config", "ordered")
