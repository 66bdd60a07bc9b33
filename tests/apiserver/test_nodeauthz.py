"""Node authorization: what a `system:node:<name>` identity may do (Node authorizer and
NodeRestriction, simplified), against a real apiserver over HTTPS."""

from __future__ import annotations

from typing import Any

import pytest
from apiclient import CM, PODS, Client, configmap, pod

pytestmark = pytest.mark.unit

NODES = "/api/v1/nodes"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
MERGE = "application/merge-patch+json"


def node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


def lease(name: str) -> dict[str, Any]:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name}, "spec": {"holderIdentity": name}}


def resource_slice(name: str, node_name: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": name},
            "spec": {"driver": "gpu.example.com", "nodeName": node_name,
                     "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "gpu-0"}]}}


def claim(name: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "gpu.example.com"}}]}}}


def forbidden(reply, message: str) -> bool:
    assert reply.status == 403, reply.json
    assert reply.json["reason"] == "Forbidden"
    assert reply.json["message"] == message
    return True


async def test_a_node_registers_and_updates_its_own_node(n1: Client) -> None:
    assert (await n1.post(NODES, node("n1"))).status == 201
    assert (await n1.patch(f"{NODES}/n1/status", {"status": {"capacity": {"cpu": "4"}}},
                           MERGE)).status == 200
    assert (await n1.get(f"{NODES}/n1")).status == 200


async def test_a_node_cannot_modify_another_node(n1: Client, client: Client) -> None:
    await client.post(NODES, node("n2"))
    forbidden(await n1.patch(f"{NODES}/n2", {"metadata": {"labels": {"a": "b"}}}, MERGE),
              'nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"')
    forbidden(await n1.post(NODES, node("n3")),
              'nodes "n3" is forbidden: node "n1" is not allowed to modify node "n3"')


async def test_a_node_cannot_read_other_nodes(n1: Client, client: Client) -> None:
    await client.post(NODES, node("n2"))
    forbidden(await n1.get(f"{NODES}/n2"),
              'nodes "n2" is forbidden: User "system:node:n1" cannot get resource "nodes" in '
              "API group \"\" at the cluster scope: node 'n1' cannot read 'n2', only its own "
              "Node object")
    forbidden(await n1.get(NODES),
              'nodes is forbidden: User "system:node:n1" cannot list resource "nodes" in API '
              "group \"\" at the cluster scope: node 'n1' cannot read all nodes, only its own "
              "Node object")


async def test_a_node_renews_only_its_own_lease(n1: Client, client: Client) -> None:
    assert (await n1.post(LEASES, lease("n1"))).status == 201
    assert (await n1.put(f"{LEASES}/n1", (await n1.get(f"{LEASES}/n1")).json)).status == 200
    await client.post(LEASES, lease("n2"))
    forbidden(await n1.get(f"{LEASES}/n2"),
              'leases.coordination.k8s.io "n2" is forbidden: User "system:node:n1" cannot get '
              'resource "leases" in API group "coordination.k8s.io" in the namespace '
              '"kube-node-lease": can only access node lease with the same name as the '
              "requesting node")
    forbidden(await n1.post(LEASES, lease("n3")),
              'leases.coordination.k8s.io "n3" is forbidden: can only access node lease with '
              "the same name as the requesting node")


async def test_a_node_lists_only_the_pods_bound_to_it(n1: Client, client: Client) -> None:
    await client.post(PODS, pod("mine", node="n1"))
    await client.post(PODS, pod("theirs", node="n2"))
    listed = await n1.get(f"{PODS}?fieldSelector=spec.nodeName%3Dn1")
    assert [p["metadata"]["name"] for p in listed.json["items"]] == ["mine"]
    forbidden(await n1.get(PODS),
              'pods is forbidden: User "system:node:n1" cannot list resource "pods" in API '
              'group "" in the namespace "default": can only list/watch pods with '
              "spec.nodeName field selector")
    forbidden(await n1.get(f"{PODS}/theirs"),
              'pods "theirs" is forbidden: User "system:node:n1" cannot get resource "pods" '
              'in API group "" in the namespace "default": no relationship found between '
              "node 'n1' and this object")


async def test_a_node_writes_status_and_deletes_only_its_own_pods(
        n1: Client, client: Client) -> None:
    await client.post(PODS, pod("mine", node="n1"))
    await client.post(PODS, pod("theirs", node="n2"))
    status = {"status": {"phase": "Running"}}
    assert (await n1.patch(f"{PODS}/mine/status", status, MERGE)).status == 200
    forbidden(await n1.patch(f"{PODS}/theirs/status", status, MERGE),
              'pods "theirs" is forbidden: node "n1" can only update pod status for pods with '
              "spec.nodeName set to itself")
    forbidden(await n1.delete(f"{PODS}/theirs"),
              'pods "theirs" is forbidden: node "n1" can only delete pods with spec.nodeName '
              "set to itself")
    assert (await n1.delete(f"{PODS}/mine")).status == 200


async def test_a_node_creates_only_mirror_pods(n1: Client) -> None:
    forbidden(await n1.post(PODS, pod("p", node="n1")),
              'pods "p" is forbidden: pod does not have "kubernetes.io/config.mirror" '
              'annotation, node "n1" can only create mirror pods')


async def test_a_node_manages_the_resource_slices_of_its_node(
        n1: Client, client: Client) -> None:
    assert (await n1.post(SLICES, resource_slice("n1-gpu", "n1"))).status == 201
    listed = await n1.get(f"{SLICES}?fieldSelector=spec.nodeName%3Dn1")
    assert [s["metadata"]["name"] for s in listed.json["items"]] == ["n1-gpu"]
    assert (await n1.delete(f"{SLICES}/n1-gpu")).status == 200
    forbidden(await n1.post(SLICES, resource_slice("n2-gpu", "n2")),
              'resourceslices.resource.k8s.io "n2-gpu" is forbidden: can only create '
              "ResourceSlice with the same NodeName as the requesting node")
    await client.post(SLICES, resource_slice("n2-gpu", "n2"))
    forbidden(await n1.delete(f"{SLICES}/n2-gpu"),
              'resourceslices.resource.k8s.io "n2-gpu" is forbidden: User "system:node:n1" '
              'cannot delete resource "resourceslices" in API group "resource.k8s.io" at the '
              "cluster scope: no relationship found between node 'n1' and this object")
    forbidden(await n1.get(SLICES),
              'resourceslices.resource.k8s.io is forbidden: User "system:node:n1" cannot list '
              'resource "resourceslices" in API group "resource.k8s.io" at the cluster scope: '
              "can only list/watch/deletecollection resourceslices with nodeName field "
              "selector")


async def test_a_node_reads_the_claims_of_its_pods_and_writes_none(
        n1: Client, client: Client) -> None:
    for name, node_name in (("mine", "n1"), ("theirs", "n2")):
        await client.post(PODS, pod(f"{name}-pod", node=node_name))
        uid = (await client.get(f"{PODS}/{name}-pod")).json["metadata"]["uid"]
        await client.post(CLAIMS, claim(name))
        allocation = {"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com",
                                               "pool": node_name, "device": "gpu-0"}]}}
        reply = await client.patch(f"{CLAIMS}/{name}/status", {"status": {
            "allocation": allocation,
            "reservedFor": [{"resource": "pods", "name": f"{name}-pod", "uid": uid}]}}, MERGE)
        assert reply.status == 200, reply.json
    assert (await n1.get(f"{CLAIMS}/mine")).status == 200
    forbidden(await n1.get(f"{CLAIMS}/theirs"),
              'resourceclaims.resource.k8s.io "theirs" is forbidden: User "system:node:n1" '
              'cannot get resource "resourceclaims" in API group "resource.k8s.io" in the '
              "namespace \"default\": no relationship found between node 'n1' and this object")
    # Emptying reservedFor (to reserve the claim for a pod elsewhere) is the scheduler's.
    forbidden(await n1.patch(f"{CLAIMS}/mine/status", {"status": {"reservedFor": None}}, MERGE),
              'resourceclaims.resource.k8s.io "mine" is forbidden: User "system:node:n1" '
              'cannot patch resource "resourceclaims/status" in API group "resource.k8s.io" '
              'in the namespace "default": can only get individual resources of this type')
    forbidden(await n1.patch(f"{CLAIMS}/mine", {"metadata": {"labels": {"a": "b"}}}, MERGE),
              'resourceclaims.resource.k8s.io "mine" is forbidden: User "system:node:n1" '
              'cannot patch resource "resourceclaims" in API group "resource.k8s.io" in the '
              'namespace "default": can only get individual resources of this type')


async def test_a_node_may_not_touch_other_kinds(n1: Client) -> None:
    forbidden(await n1.post(CM, configmap("c")),
              'configmaps is forbidden: User "system:node:n1" cannot create resource '
              '"configmaps" in API group "" in the namespace "default": can only read '
              "resources of this type")
    forbidden(await n1.get("/apis/apps/v1/deployments"),
              'deployments.apps is forbidden: User "system:node:n1" cannot list resource '
              '"deployments" in API group "apps" at the cluster scope')


async def test_a_node_records_events(n1: Client) -> None:
    event = {"apiVersion": "v1", "kind": "Event",
             "metadata": {"name": "n1.1", "namespace": "default"},
             "involvedObject": {"kind": "Node", "name": "n1"}, "reason": "Starting",
             "message": "Starting kubelet.", "type": "Normal", "source": {"component": "kubelet"}}
    reply = await n1.post("/api/v1/namespaces/default/events", event)
    assert reply.status == 201, reply.json


async def test_system_masters_keep_full_access(client: Client) -> None:
    await client.post(NODES, node("n2"))
    assert (await client.patch(f"{NODES}/n2", {"metadata": {"labels": {"a": "b"}}},
                               MERGE)).status == 200
    assert (await client.post(CM, configmap("c"))).status == 201
    assert (await client.get(SLICES)).status == 200


async def test_a_node_watches_its_own_node_by_a_name_field_selector(n1: Client) -> None:
    await n1.post(NODES, node("n1"))
    listed = await n1.get(f"{NODES}?fieldSelector=metadata.name%3Dn1")
    assert [n["metadata"]["name"] for n in listed.json["items"]] == ["n1"]


async def test_a_node_reads_only_the_configmaps_its_pods_use(
        n1: Client, client: Client) -> None:
    await client.post(CM, configmap("used", a="1"))
    await client.post(CM, configmap("unused", a="1"))
    await client.post(PODS, pod("mine", node="n1", containers=[{
        "name": "c", "image": "busybox", "envFrom": [{"configMapRef": {"name": "used"}}]}]))
    assert (await n1.get(f"{CM}/used")).status == 200
    forbidden(await n1.get(f"{CM}/unused"),
              'configmaps "unused" is forbidden: User "system:node:n1" cannot get resource '
              '"configmaps" in API group "" in the namespace "default": no relationship found '
              "between node 'n1' and this object")


CSINODES = "/apis/storage.k8s.io/v1/csinodes"


def csinode(name: str) -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
            "spec": {"drivers": []}}


async def test_a_node_publishes_only_its_own_csinode(n1: Client, client: Client) -> None:
    assert (await n1.post(CSINODES, csinode("n1"))).status == 201
    mine = (await n1.get(f"{CSINODES}/n1")).json
    mine["metadata"]["annotations"] = {"storage.alpha.kubernetes.io/migrated-plugins": ""}
    assert (await n1.put(f"{CSINODES}/n1", mine)).status == 200
    forbidden(await n1.post(CSINODES, csinode("n2")),
              'csinodes.storage.k8s.io "n2" is forbidden: can only access CSINode with the '
              "same name as the requesting node")
    await client.post(CSINODES, csinode("n2"))
    forbidden(await n1.get(f"{CSINODES}/n2"),
              'csinodes.storage.k8s.io "n2" is forbidden: User "system:node:n1" cannot get '
              'resource "csinodes" in API group "storage.k8s.io" at the cluster scope: can only '
              "access CSINode with the same name as the requesting node")
    forbidden(await n1.get(CSINODES),
              'csinodes.storage.k8s.io is forbidden: User "system:node:n1" cannot list '
              'resource "csinodes" in API group "storage.k8s.io" at the cluster scope: can only '
              "get, create, update, patch, or delete a CSINode")


async def test_a_node_reads_the_claims_its_pods_name_though_reserved_for_others(
        n1: Client, client: Client) -> None:
    # A PodGroup's claim is reserved for the PodGroup, not for its pods: the kubelet
    # reads it because a pod bound to its node names it in its status, as upstream's graph
    # grants (resourceclaim.PodClaims: spec, resourceClaimStatuses, the extended claim).
    await client.post(CLAIMS, claim("group-claim"))
    await client.post(CLAIMS, claim("extended"))
    await client.post(CLAIMS, claim("other"))
    await client.post(PODS, pod("member", node="n1", resourceClaims=[
        {"name": "gpu", "resourceClaimTemplateName": "per-group"}]))
    reply = await client.patch(f"{PODS}/member/status", {"status": {
        "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "group-claim"}],
        "extendedResourceClaimStatus": {"resourceClaimName": "extended", "requestMappings": [
            {"containerName": "c", "resourceName": "example.com/gpu",
             "requestName": "container-0-request-0"}]}}}, MERGE)
    assert reply.status == 200, reply.json
    assert (await n1.get(f"{CLAIMS}/group-claim")).status == 200
    assert (await n1.get(f"{CLAIMS}/extended")).status == 200
    assert (await n1.get(f"{CLAIMS}/other")).status == 403
