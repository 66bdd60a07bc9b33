"""Claims on workloads end to end (DRAWorkloadResourceClaims with GenericWorkload): the
resource claim controller makes one claim for a PodGroup from its template, the pods of
the group use it, the scheduler reserves it for the PodGroup, the kubelets prepare it."""

from __future__ import annotations

import pytest

from draemu.cmd.testing.e2e import eventually, gpu_class_and_template, gpu_plugin
from draemu.features import FeatureGates

pytestmark = pytest.mark.e2e

RESOURCE = "resource.k8s.io/v1"
SCHEDULING = "scheduling.k8s.io/v1beta1"


@pytest.fixture
def draemu_feature_gates() -> FeatureGates:
    return FeatureGates({"GenericWorkload": True, "DRAWorkloadResourceClaims": True})


async def _running(client, name: str) -> dict | None:
    pod = await client.get("v1", "pods", name, "default")
    return pod if (pod.get("status") or {}).get("phase") == "Running" else None


async def test_pods_of_a_pod_group_share_the_groups_claim(draemu_cluster) -> None:
    client = draemu_cluster.client
    async with gpu_plugin(draemu_cluster, "node-1", 2):
        await gpu_class_and_template(client)
        await client.create(SCHEDULING, "podgroups", {
            "apiVersion": SCHEDULING, "kind": "PodGroup",
            "metadata": {"name": "trainers", "namespace": "default"},
            "spec": {"schedulingPolicy": {"basic": {}}, "resourceClaims": [
                {"name": "gpu", "resourceClaimTemplateName": "gpu"}]}}, "default")
        for name in ("trainer-0", "trainer-1"):
            await client.create("v1", "pods", {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"schedulingGroup": {"podGroupName": "trainers"},
                         "resourceClaims": [{"name": "gpu",
                                             "resourceClaimTemplateName": "gpu"}],
                         "containers": [{"name": "main", "image": "trainer",
                                         "resources": {"claims": [{"name": "gpu"}]}}]}},
                "default")
        pods = [await eventually(lambda n=n: _running(client, n), timeout=30)
                for n in ("trainer-0", "trainer-1")]
        names = {p["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
                 for p in pods}
        assert len(names) == 1  # one claim for the group
        group = await client.get(SCHEDULING, "podgroups", "trainers", "default")
        assert group["status"]["resourceClaimStatuses"] == [
            {"name": "gpu", "resourceClaimName": next(iter(names))}]
        claim = await client.get(RESOURCE, "resourceclaims", next(iter(names)), "default")
        assert [o["kind"] for o in claim["metadata"]["ownerReferences"]] == ["PodGroup"]
        assert claim["status"]["reservedFor"] == [
            {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "trainers",
             "uid": group["metadata"]["uid"]}]
        assert len(claim["status"]["allocation"]["devices"]["results"]) == 1
