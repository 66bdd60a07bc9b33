"""delete and deletecollection: finalizers, graceful pods, preconditions, propagation."""

from __future__ import annotations

import pytest
from apiclient import CM, PODS, Client, configmap, pod

pytestmark = pytest.mark.unit


async def test_delete_without_finalizers_removes_and_returns_success_status(
        client: Client) -> None:
    created = (await client.post(CM, configmap("d1"))).json
    reply = await client.delete(f"{CM}/d1")
    assert reply.status == 200
    body = reply.json
    assert body["kind"] == "Status" and body["status"] == "Success"
    assert body["details"] == {"name": "d1", "kind": "configmaps",
                               "uid": created["metadata"]["uid"]}
    assert (await client.get(f"{CM}/d1")).status == 404


async def test_finalizer_keeps_object_until_the_last_one_is_removed(client: Client) -> None:
    body = configmap("fin")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    await client.post(CM, body)
    marked = (await client.delete(f"{CM}/fin")).json
    assert marked["metadata"]["deletionTimestamp"]
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 0
    assert (await client.get(f"{CM}/fin")).status == 200
    reply = await client.patch(f"{CM}/fin", {"metadata": {"finalizers": None}},
                               "application/merge-patch+json")
    assert reply.status == 200
    assert (await client.get(f"{CM}/fin")).status == 404


async def test_no_new_finalizers_on_an_object_being_deleted(client: Client) -> None:
    body = configmap("fin2")
    body["metadata"]["finalizers"] = ["example.com/a"]
    await client.post(CM, body)
    await client.delete(f"{CM}/fin2")
    reply = await client.patch(f"{CM}/fin2",
                               {"metadata": {"finalizers": ["example.com/a", "example.com/b"]}},
                               "application/merge-patch+json")
    assert reply.status == 422


async def test_foreground_propagation_is_recorded_as_a_finalizer(client: Client) -> None:
    await client.post(CM, configmap("fg"))
    reply = await client.delete(f"{CM}/fg", {"propagationPolicy": "Foreground"})
    assert reply.json["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert reply.json["metadata"]["deletionTimestamp"]


async def test_orphan_propagation_from_the_query(client: Client) -> None:
    await client.post(CM, configmap("orph"))
    reply = await client.delete(f"{CM}/orph?propagationPolicy=Orphan")
    assert reply.json["metadata"]["finalizers"] == ["orphan"]


async def test_uid_precondition_mismatch_is_409(client: Client) -> None:
    await client.post(CM, configmap("pre"))
    reply = await client.delete(f"{CM}/pre", {"preconditions": {"uid": "not-it"}})
    assert reply.status == 409
    assert "Precondition failed: UID in precondition: not-it" in reply.json["message"]


async def test_resource_version_precondition_mismatch_is_409(client: Client) -> None:
    await client.post(CM, configmap("prerv"))
    reply = await client.delete(f"{CM}/prerv", {"preconditions": {"resourceVersion": "1"}})
    assert reply.status == 409


async def test_dry_run_delete_keeps_the_object(client: Client) -> None:
    await client.post(CM, configmap("drydel"))
    assert (await client.delete(f"{CM}/drydel?dryRun=All")).status == 200
    assert (await client.get(f"{CM}/drydel")).status == 200


async def test_deleting_a_missing_object_is_404(client: Client) -> None:
    reply = await client.delete(f"{CM}/ghost")
    assert reply.status == 404


async def test_unscheduled_pod_is_deleted_at_once_and_returned(client: Client) -> None:
    await client.post(PODS, pod("p0"))
    reply = await client.delete(f"{PODS}/p0")
    assert reply.json["kind"] == "Pod"
    assert (await client.get(f"{PODS}/p0")).status == 404


async def test_pod_on_a_node_gets_its_grace_period(client: Client) -> None:
    await client.post(PODS, pod("p1", node="n1", terminationGracePeriodSeconds=20))
    marked = (await client.delete(f"{PODS}/p1")).json
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 20
    assert (await client.get(f"{PODS}/p1")).status == 200
    # The kubelet finishes with grace 0.
    await client.delete(f"{PODS}/p1", {"gracePeriodSeconds": 0})
    assert (await client.get(f"{PODS}/p1")).status == 404


async def test_delete_collection_with_selector(client: Client) -> None:
    for name, app in [("x1", "x"), ("x2", "x"), ("y1", "y")]:
        await client.post(CM, configmap(name, {"app": app}))
    reply = await client.delete(f"{CM}?labelSelector=app%3Dx")
    assert reply.status == 200
    assert sorted(i["metadata"]["name"] for i in reply.json["items"]) == ["x1", "x2"]
    left = (await client.get(CM)).json["items"]
    assert [i["metadata"]["name"] for i in left] == ["y1"]


async def test_namespace_deletion_waits_for_spec_finalizers(client: Client) -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gone"}}
    assert (await client.post("/api/v1/namespaces", ns)).status == 201
    marked = (await client.delete("/api/v1/namespaces/gone")).json
    assert marked["status"]["phase"] == "Terminating"
    again = await client.delete("/api/v1/namespaces/gone")
    assert again.status == 409
    assert "ensuring all content is removed from this namespace" in again.json["message"]
    reply = await client.post("/api/v1/namespaces/gone/configmaps", configmap("late"))
    assert reply.status == 403
    assert "because it is being terminated" in reply.json["message"]
    current = (await client.get("/api/v1/namespaces/gone")).json
    current["spec"]["finalizers"] = []
    assert (await client.put("/api/v1/namespaces/gone/finalize", current)).status == 200
    assert (await client.get("/api/v1/namespaces/gone")).status == 404
