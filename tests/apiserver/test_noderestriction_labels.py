"""NodeRestriction on a node's own Node and on the pods it creates and reports on: which
labels a kubelet may change, that it may not touch its taints, owner references or config
source after registering, and what a mirror pod may be. Real apiserver, node credentials
over HTTPS."""

from __future__ import annotations

from typing import Any

import pytest
from apiclient import PODS, Client, pod

pytestmark = pytest.mark.unit

NODES = "/api/v1/nodes"
SECRETS = "/api/v1/namespaces/default/secrets"
KUBELET_LABELS = {
    "kubernetes.io/hostname": "n1", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
    "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
    "topology.kubernetes.io/zone": "z1", "topology.kubernetes.io/region": "r1",
    "failure-domain.beta.kubernetes.io/zone": "z1",
    "failure-domain.beta.kubernetes.io/region": "r1",
    "node.kubernetes.io/instance-type": "big", "beta.kubernetes.io/instance-type": "big",
    "kubelet.kubernetes.io/custom": "x", "node.kubernetes.io/custom": "x",
    "team.node.kubernetes.io/custom": "x", "nvidia.com/gpu.present": "true", "plain": "x",
}
TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def node(labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n1", "labels": labels or {}}, "spec": spec}


def refused(reply, message: str) -> None:
    assert reply.status == 403, reply.json
    assert reply.json["reason"] == "Forbidden"
    assert reply.json["message"] == message


async def admin_made_node(client: Client, labels: dict[str, str] | None = None,
                          **spec: Any) -> dict[str, Any]:
    reply = await client.post(NODES, node(labels, **spec))
    assert reply.status == 201, reply.json
    return reply.json


def mirror_pod(uid: str, **spec: Any) -> dict[str, Any]:
    body = pod("static-web", node="n1", **spec)
    body["metadata"].update(
        annotations={"kubernetes.io/config.mirror": "hash"},
        ownerReferences=[{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": uid,
                          "controller": True}])
    return body


# Registration -------------------------------------------------------------------------------
async def test_a_node_registers_with_the_labels_kubelets_set(n1: Client) -> None:
    reply = await n1.post(NODES, node(KUBELET_LABELS))
    assert reply.status == 201, reply.json
    assert reply.json["metadata"]["labels"] == KUBELET_LABELS


async def test_a_node_registers_with_taints(n1: Client) -> None:
    reply = await n1.post(NODES, node(taints=[TAINT]))
    assert reply.status == 201, reply.json


async def test_a_node_may_not_register_with_a_config_source(n1: Client) -> None:
    source = {"configMap": {"name": "kubelet", "namespace": "kube-system",
                            "kubeletConfigKey": "kubelet"}}
    refused(await n1.post(NODES, node(configSource=source)),
            'nodes "n1" is forbidden: node "n1" is not allowed to create pods with a non-nil '
            "configSource")


async def test_a_node_may_not_register_with_labels_kubelets_may_not_set(n1: Client) -> None:
    labels = {"node-role.kubernetes.io/worker": "", "plain": "x",
              "node-restriction.kubernetes.io/dedicated": "gpu"}
    refused(await n1.post(NODES, node(labels)),
            'nodes "n1" is forbidden: node "n1" is not allowed to set the following labels: '
            "node-restriction.kubernetes.io/dedicated, node-role.kubernetes.io/worker")


async def test_an_administrator_sets_any_label(client: Client) -> None:
    labels = {"node-restriction.kubernetes.io/dedicated": "gpu",
              "node-role.kubernetes.io/worker": ""}
    node_object = await admin_made_node(client, labels)
    assert node_object["metadata"]["labels"] == labels


# Updates of the Node ------------------------------------------------------------------------
async def test_a_node_changes_the_labels_kubelets_set(n1: Client, client: Client) -> None:
    current = await admin_made_node(client, {"node-restriction.kubernetes.io/dedicated": "gpu",
                                             "kubernetes.io/os": "linux"})
    current["metadata"]["labels"].update({"kubernetes.io/os": "windows", "plain": "x"})
    reply = await n1.put(f"{NODES}/n1", current)
    assert reply.status == 200, reply.json
    assert reply.json["metadata"]["labels"]["kubernetes.io/os"] == "windows"


@pytest.mark.parametrize("change", [
    {"node-restriction.kubernetes.io/dedicated": "cpu"},
    {"node-restriction.kubernetes.io/other": "x"},
])
async def test_a_node_may_not_add_or_change_restricted_labels(
        n1: Client, client: Client, change: dict[str, str]) -> None:
    current = await admin_made_node(client, {"node-restriction.kubernetes.io/dedicated": "gpu"})
    current["metadata"]["labels"].update(change)
    refused(await n1.put(f"{NODES}/n1", current),
            f'nodes "n1" is forbidden: is not allowed to modify labels: {next(iter(change))}')


async def test_a_node_may_not_remove_labels_it_could_not_set(
        n1: Client, client: Client) -> None:
    current = await admin_made_node(client, {"node-role.kubernetes.io/worker": "",
                                             "node-restriction.kubernetes.io/dedicated": "gpu"})
    current["metadata"]["labels"] = {}
    refused(await n1.put(f"{NODES}/n1", current),
            'nodes "n1" is forbidden: is not allowed to modify labels: '
            "node-restriction.kubernetes.io/dedicated, node-role.kubernetes.io/worker")


async def test_a_node_may_not_modify_its_taints(n1: Client, client: Client) -> None:
    current = await admin_made_node(client, taints=[TAINT])
    current["spec"]["taints"] = []
    refused(await n1.put(f"{NODES}/n1", current),
            'nodes "n1" is forbidden: node "n1" is not allowed to modify taints')


async def test_a_node_may_not_modify_its_taints_through_status(
        n1: Client, client: Client) -> None:
    current = await admin_made_node(client)
    current["spec"]["taints"] = [TAINT]
    refused(await n1.put(f"{NODES}/n1/status", current),
            'nodes "n1" is forbidden: node "n1" is not allowed to modify taints')


async def test_taints_written_with_empty_fields_are_no_change(
        n1: Client, client: Client) -> None:
    current = await admin_made_node(client, taints=[{"key": "k", "effect": "NoSchedule"}])
    current["spec"]["taints"] = [{"key": "k", "value": "", "effect": "NoSchedule",
                                  "timeAdded": None}]
    current["metadata"]["labels"] = {"plain": "x"}
    assert (await n1.put(f"{NODES}/n1", current)).status == 200


async def test_a_node_may_not_modify_its_owner_references(n1: Client, client: Client) -> None:
    current = await admin_made_node(client)
    current["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Namespace", "name": "gone", "uid": "u-1"}]
    refused(await n1.put(f"{NODES}/n1", current),
            'nodes "n1" is forbidden: node "n1" is not allowed to modify ownerReferences')


async def test_a_node_may_not_set_a_config_source(n1: Client, client: Client) -> None:
    current = await admin_made_node(client)
    current["spec"]["configSource"] = {"configMap": {
        "name": "kubelet", "namespace": "kube-system", "kubeletConfigKey": "kubelet"}}
    refused(await n1.put(f"{NODES}/n1", current),
            'nodes "n1" is forbidden: node "n1" is not allowed to update configSource to a new '
            "non-nil configSource")


# Mirror pods --------------------------------------------------------------------------------
async def test_a_node_creates_a_mirror_pod_its_node_controls(n1: Client) -> None:
    registered = await n1.post(NODES, node())
    reply = await n1.post(PODS, mirror_pod(registered.json["metadata"]["uid"]))
    assert reply.status == 201, reply.json
    # The ServiceAccount admission leaves mirror pods alone.
    assert "serviceAccountName" not in reply.json["spec"]


@pytest.mark.parametrize(("owners", "message"), [
    ([], 'node "n1" can only create pods with an owner reference set to itself'),
    ([{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "a", "controller": True}] * 2,
     'node "n1" can only create pods with a single owner reference set to itself'),
    ([{"apiVersion": "v1", "kind": "Node", "name": "n2", "uid": "a", "controller": True}],
     'node "n1" can only create pods with an owner reference set to itself'),
    ([{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "a"}],
     'node "n1" can only create pods with a controller owner reference set to itself'),
    ([{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "a", "controller": True,
       "blockOwnerDeletion": True}],
     'node "n1" must not set blockOwnerDeletion on an owner reference'),
    ([{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "a", "controller": True}],
     "node n1 UID mismatch: expected a got {uid}"),
])
async def test_a_mirror_pod_is_controlled_by_its_own_node(
        n1: Client, owners: list[dict[str, Any]], message: str) -> None:
    uid = (await n1.post(NODES, node())).json["metadata"]["uid"]
    body = mirror_pod(uid)
    body["metadata"]["ownerReferences"] = owners
    refused(await n1.post(PODS, body),
            f'pods "static-web" is forbidden: {message.format(uid=uid)}')


async def test_a_mirror_pod_of_an_unregistered_node_is_not_found(n1: Client) -> None:
    reply = await n1.post(PODS, mirror_pod("u-1"))
    assert reply.status == 404, reply.json
    assert reply.json["message"] == 'nodes "n1" not found'


@pytest.mark.parametrize(("spec", "what"), [
    ({"serviceAccountName": "builder"}, "a service account"),
    ({"containers": [{"name": "c", "image": "busybox", "env": [{"name": "K", "valueFrom": {
        "secretKeyRef": {"name": "token", "key": "k"}}}]}]}, "secrets"),
    ({"volumes": [{"name": "v", "csi": {"driver": "d", "nodePublishSecretRef": {
        "name": "token"}}}]}, "secrets"),
    ({"volumes": [{"name": "v", "configMap": {"name": "settings"}}]}, "configmaps"),
    ({"volumes": [{"name": "v", "projected": {"sources": [{"clusterTrustBundle": {
        "name": "roots", "path": "ca.pem"}}]}}]}, "clustertrustbundles"),
    ({"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}]},
     "persistentvolumeclaims"),
])
async def test_a_mirror_pod_references_no_other_objects(
        n1: Client, spec: dict[str, Any], what: str) -> None:
    uid = (await n1.post(NODES, node())).json["metadata"]["uid"]
    refused(await n1.post(PODS, mirror_pod(uid, **spec)),
            f'pods "static-web" is forbidden: node "n1" can not create pods that reference '
            f"{what}")


# Patches: the same rules on the patched object ------------------------------------------------
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"


async def test_a_node_may_not_patch_its_taints(n1: Client, client: Client) -> None:
    await admin_made_node(client)
    refused(await n1.patch(f"{NODES}/n1", {"spec": {"taints": [TAINT]}}, STRATEGIC),
            'nodes "n1" is forbidden: node "n1" is not allowed to modify taints')


async def test_a_node_may_not_patch_restricted_labels_through_status(
        n1: Client, client: Client) -> None:
    await admin_made_node(client)
    refused(await n1.patch(f"{NODES}/n1/status", {"metadata": {"labels": {
        "node-restriction.kubernetes.io/dedicated": "gpu"}}}, MERGE),
        'nodes "n1" is forbidden: is not allowed to modify labels: '
        "node-restriction.kubernetes.io/dedicated")


async def test_a_node_patches_the_labels_kubelets_set_through_status(
        n1: Client, client: Client) -> None:
    await admin_made_node(client)
    reply = await n1.patch(f"{NODES}/n1/status",
                           {"metadata": {"labels": {"kubernetes.io/os": "linux"}}}, MERGE)
    assert reply.status == 200, reply.json
    assert reply.json["metadata"]["labels"] == {"kubernetes.io/os": "linux"}


async def test_a_node_may_not_patch_labels_through_pod_status(
        n1: Client, client: Client) -> None:
    await client.post(PODS, pod("web", node="n1"))
    refused(await n1.patch(f"{PODS}/web/status", {"metadata": {"labels": {"app": "web"}}},
                           MERGE),
            'pods "web" is forbidden: node "n1" cannot update labels through pod status')


# Pod status ---------------------------------------------------------------------------------
async def test_a_node_may_not_change_labels_through_pod_status(
        n1: Client, client: Client) -> None:
    await client.post(PODS, pod("web", node="n1"))
    current = (await n1.get(f"{PODS}/web")).json
    current["metadata"]["labels"] = {"app": "web"}
    refused(await n1.put(f"{PODS}/web/status", current),
            'pods "web" is forbidden: node "n1" cannot update labels through pod status')


async def test_a_node_may_not_change_resource_claim_statuses(
        n1: Client, client: Client) -> None:
    await client.post(PODS, pod("web", node="n1"))
    current = (await n1.get(f"{PODS}/web")).json
    current.setdefault("status", {})["resourceClaimStatuses"] = [
        {"name": "gpu", "resourceClaimName": "web-gpu-x7k2p"}]
    refused(await n1.put(f"{PODS}/web/status", current),
            'pods "web" is forbidden: node "n1" cannot update resource claim statues')


async def test_a_node_puts_the_status_of_its_pods(n1: Client, client: Client) -> None:
    await client.post(PODS, pod("web", node="n1"))
    current = (await n1.get(f"{PODS}/web")).json
    current.setdefault("status", {})["phase"] = "Running"
    reply = await n1.put(f"{PODS}/web/status", current)
    assert reply.status == 200, reply.json
    assert reply.json["status"]["phase"] == "Running"


# The Node authorizer's view of pods ---------------------------------------------------------
async def test_a_node_reads_a_secret_its_pods_name_in_a_csi_volume(
        n1: Client, client: Client) -> None:
    await client.post(SECRETS, {"apiVersion": "v1", "kind": "Secret",
                                "metadata": {"name": "token"}, "data": {}})
    await client.post(PODS, pod("web", node="n1", volumes=[{"name": "v", "csi": {
        "driver": "d", "nodePublishSecretRef": {"name": "token"}}}]))
    assert (await n1.get(f"{SECRETS}/token")).status == 200
