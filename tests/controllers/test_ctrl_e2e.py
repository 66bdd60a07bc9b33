"""Controllers end to end: a real apiserver, the real controller manager, an admin
client acting as the user (and, where needed, as a kubelet)."""


import pytest

from draemu.api.meta import format_time, now
from draemu.cmd.testing.e2e import eventually, gone

pytestmark = [pytest.mark.slow, pytest.mark.unit]

RESOURCE = "resource.k8s.io/v1"


def configmap(name, owner=None, **meta):
    obj = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "default", **meta}, "data": {"k": "v"}}
    if owner is not None:
        obj["metadata"]["ownerReferences"] = [{
            "apiVersion": "v1", "kind": "ConfigMap", "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "blockOwnerDeletion": True}]
    return obj


async def test_deleting_a_namespace_deletes_its_content_then_the_namespace(cluster):
    await cluster.create("v1", "namespaces", {"metadata": {"name": "doomed"}})
    await cluster.create("v1", "configmaps", {"metadata": {"name": "a", "namespace": "doomed"}})
    await cluster.create("v1", "secrets", {"metadata": {"name": "s", "namespace": "doomed"}})
    await cluster.delete("v1", "namespaces", "doomed")
    await eventually(lambda: gone(cluster, "v1", "namespaces", "doomed"))
    assert await gone(cluster, "v1", "configmaps", "a", "doomed")


async def test_background_deletion_removes_dependents(cluster):
    owner = await cluster.create("v1", "configmaps", configmap("owner"))
    await cluster.create("v1", "configmaps", configmap("child", owner))
    await cluster.delete("v1", "configmaps", "owner", "default")
    await eventually(lambda: gone(cluster, "v1", "configmaps", "child", "default"))


async def test_orphan_deletion_keeps_dependents_without_the_owner_reference(cluster):
    owner = await cluster.create("v1", "configmaps", configmap("owner"))
    await cluster.create("v1", "configmaps", configmap("child", owner))
    await cluster.delete("v1", "configmaps", "owner", "default", propagation_policy="Orphan")
    await eventually(lambda: gone(cluster, "v1", "configmaps", "owner", "default"))

    async def orphaned():
        child = await cluster.get("v1", "configmaps", "child", "default")
        return not child["metadata"].get("ownerReferences")
    await eventually(orphaned)


async def test_foreground_deletion_removes_dependents_before_the_owner(cluster):
    owner = await cluster.create("v1", "configmaps", configmap("owner"))
    await cluster.create("v1", "configmaps", configmap("child", owner))
    await cluster.delete("v1", "configmaps", "owner", "default",
                         propagation_policy="Foreground")
    await eventually(lambda: gone(cluster, "v1", "configmaps", "owner", "default"))
    assert await gone(cluster, "v1", "configmaps", "child", "default")


async def test_pod_with_a_claim_template_gets_its_claim(cluster):
    await cluster.create(RESOURCE, "resourceclaimtemplates", {
        "metadata": {"name": "gpu", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu.example.com"}}]}}}})
    pod = await cluster.create("v1", "pods", {
        "metadata": {"name": "trainer", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox",
                                 "resources": {"claims": [{"name": "gpu"}]}}],
                 "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]}})

    async def recorded():
        p = await cluster.get("v1", "pods", "trainer", "default")
        return (p.get("status") or {}).get("resourceClaimStatuses")
    [entry] = await eventually(recorded)
    claim = await cluster.get(RESOURCE, "resourceclaims", entry["resourceClaimName"],
                              "default")
    assert claim["metadata"]["ownerReferences"][0]["uid"] == pod["metadata"]["uid"]
    assert claim["metadata"]["annotations"]["resource.kubernetes.io/pod-claim-name"] == "gpu"
    # The pod ends: its generated claim goes.
    pod = await cluster.get("v1", "pods", "trainer", "default")
    pod["status"]["phase"] = "Failed"
    await cluster.update("v1", "pods", pod, subresource="status")
    await eventually(lambda: gone(cluster, RESOURCE, "resourceclaims",
                                  entry["resourceClaimName"], "default"))


async def test_node_that_stops_renewing_becomes_unknown_and_its_pods_are_evicted(cluster):
    stamp = format_time(now())
    await cluster.create("v1", "nodes", {
        "metadata": {"name": "n1"},
        "status": {"conditions": [{"type": "Ready", "status": "True",
                                   "lastHeartbeatTime": stamp,
                                   "lastTransitionTime": stamp}]}})
    node = await cluster.get("v1", "nodes", "n1")
    node["status"] = {"conditions": [{"type": "Ready", "status": "True",
                                      "lastHeartbeatTime": stamp, "lastTransitionTime": stamp,
                                      "reason": "KubeletReady", "message": "ok"}]}
    await cluster.update("v1", "nodes", node, subresource="status")
    await cluster.create("v1", "pods", {
        "metadata": {"name": "victim", "namespace": "default"},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}],
                 "tolerations": [{"key": "node.kubernetes.io/unreachable",
                                  "operator": "Exists", "effect": "NoExecute",
                                  "tolerationSeconds": 1}]}})

    async def unknown():
        n = await cluster.get("v1", "nodes", "n1")
        ready = next(c for c in n["status"]["conditions"] if c["type"] == "Ready")
        taints = {t["key"] for t in ((n.get("spec") or {}).get("taints") or [])}
        return ready["status"] == "Unknown" and "node.kubernetes.io/unreachable" in taints
    await eventually(unknown)

    async def evicted():
        p = await cluster.get("v1", "pods", "victim", "default")
        return bool(p["metadata"].get("deletionTimestamp"))
    try:
        await eventually(evicted)
    except AssertionError:
        pytest.fail("pod with a 1 s toleration was not evicted from the unreachable node")


async def test_every_namespace_gets_a_default_service_account_and_the_root_ca(cluster):
    await cluster.create("v1", "namespaces", {"metadata": {"name": "fresh"}})

    async def defaults():
        sa = await cluster.get("v1", "serviceaccounts", "default", "fresh")
        cm = await cluster.get("v1", "configmaps", "kube-root-ca.crt", "fresh")
        return sa and cm["data"]["ca.crt"].startswith("-----BEGIN CERTIFICATE-----")
    await eventually(defaults)
    assert await cluster.get("v1", "serviceaccounts", "default", "default")
