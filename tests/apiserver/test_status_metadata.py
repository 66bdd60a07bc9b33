"""Which metadata a /status write may change differs by kind, as upstream's status
strategies decide: Nodes and Pods take labels through /status, the DRA kinds (upstream's
ResetObjectMetaForStatus) take none, a Deployment's labels stay."""

from __future__ import annotations

import pytest
from apiclient import PODS, Client, pod

pytestmark = pytest.mark.unit

MERGE = "application/merge-patch+json"
NODES = "/api/v1/nodes"
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
OWNER = {"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u-1"}


async def test_node_status_write_may_relabel_the_node(client: Client) -> None:
    await client.post(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    reply = await client.patch(f"{NODES}/n1/status",
                               {"metadata": {"labels": {"zone": "a"}}}, MERGE)
    assert reply.status == 200
    assert reply.json["metadata"]["labels"] == {"zone": "a"}


async def test_pod_status_write_may_change_labels_but_not_owners(client: Client) -> None:
    await client.post(PODS, pod("p1"))
    reply = await client.patch(f"{PODS}/p1/status", {"metadata": {
        "labels": {"phase": "late"}, "ownerReferences": [OWNER]}}, MERGE)
    assert reply.status == 200
    assert reply.json["metadata"]["labels"] == {"phase": "late"}
    assert "ownerReferences" not in reply.json["metadata"]


async def test_claim_status_write_changes_no_metadata(client: Client) -> None:
    await client.post(CLAIMS, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                               "metadata": {"name": "c1"},
                               "spec": {"devices": {"requests": []}}})
    reply = await client.patch(f"{CLAIMS}/c1/status", {"metadata": {
        "labels": {"a": "b"}, "annotations": {"c": "d"}, "finalizers": ["x/y"]}}, MERGE)
    assert reply.status == 200
    meta = reply.json["metadata"]
    assert not {"labels", "annotations", "finalizers"} & set(meta)


async def test_deployment_status_write_keeps_labels_but_takes_annotations(
        client: Client) -> None:
    labels = {"app": "d1"}
    await client.post(DEPLOYMENTS, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d1"},
        "spec": {"selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
    reply = await client.patch(f"{DEPLOYMENTS}/d1/status", {"metadata": {
        "labels": {"a": "b"}, "annotations": {"c": "d"}}}, MERGE)
    assert reply.status == 200
    assert "labels" not in reply.json["metadata"]
    assert reply.json["metadata"]["annotations"] == {"c": "d"}
