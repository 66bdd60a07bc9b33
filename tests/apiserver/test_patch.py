"""PATCH through the HTTP layer: every patch type, preconditions, fieldValidation, SSA."""

from __future__ import annotations

import pytest
from apiclient import CM, PODS, Client, configmap, pod

pytestmark = pytest.mark.unit


async def test_merge_patch_deletes_with_null(client: Client) -> None:
    await client.post(CM, configmap("m", a="1", b="2"))
    reply = await client.patch(f"{CM}/m", {"data": {"a": None, "c": "3"}},
                               "application/merge-patch+json")
    assert reply.status == 200
    assert reply.json["data"] == {"b": "2", "c": "3"}


async def test_json_patch_failed_test_changes_nothing(client: Client) -> None:
    created = (await client.post(CM, configmap("j", a="1"))).json
    ops = [{"op": "replace", "path": "/data/a", "value": "2"},
           {"op": "test", "path": "/data/a", "value": "nope"}]
    reply = await client.patch(f"{CM}/j", ops, "application/json-patch+json")
    assert reply.status == 422
    after = (await client.get(f"{CM}/j")).json
    assert after["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_strategic_merge_patch_merges_containers_by_name(client: Client) -> None:
    body = pod("smp")
    body["spec"]["containers"].append({"name": "side", "image": "x"})
    await client.post(PODS, body)
    patch = {"spec": {"containers": [{"name": "side", "image": "y"}]}}
    reply = await client.patch(f"{PODS}/smp", patch, "application/strategic-merge-patch+json")
    assert reply.status == 200, reply.body
    images = {c["name"]: c["image"] for c in reply.json["spec"]["containers"]}
    assert images == {"c": "busybox", "side": "y"}


async def test_patch_with_stale_resource_version_is_409(client: Client) -> None:
    await client.post(CM, configmap("rvp"))
    reply = await client.patch(f"{CM}/rvp", {"metadata": {"resourceVersion": "1"},
                                             "data": {"a": "b"}}, "application/merge-patch+json")
    assert reply.status == 409


async def test_unknown_patch_content_type_is_415(client: Client) -> None:
    await client.post(CM, configmap("ct"))
    reply = await client.patch(f"{CM}/ct", {"data": {}}, "text/plain")
    assert reply.status == 415


async def test_field_validation_strict_names_every_unknown_field(client: Client) -> None:
    body = configmap("strict")
    body["bogus"] = 1
    body["metadata"]["nope"] = 2
    reply = await client.post(f"{CM}?fieldValidation=Strict", body)
    assert reply.status == 400
    message = reply.json["message"]
    assert message.startswith('ConfigMap in version "v1" cannot be handled as a ConfigMap: '
                              "strict decoding error: ")
    assert 'unknown field "bogus"' in message and 'unknown field "metadata.nope"' in message


async def test_field_validation_warn_drops_field_with_warning_header(client: Client) -> None:
    body = configmap("warn")
    body["bogus"] = 1
    reply = await client.post(f"{CM}?fieldValidation=Warn", body)
    assert reply.status == 201
    assert "bogus" not in reply.json
    assert reply.headers.getall("Warning") == ['299 - "unknown field \\"bogus\\""']


async def test_field_validation_ignore_drops_silently(client: Client) -> None:
    body = configmap("ignore")
    body["bogus"] = 1
    reply = await client.post(f"{CM}?fieldValidation=Ignore", body)
    assert reply.status == 201 and "Warning" not in reply.headers
    assert "bogus" not in reply.json


async def test_server_side_apply_creates_then_conflicts_then_forces(client: Client) -> None:
    applied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"},
               "data": {"k": "a"}}
    first = await client.patch(f"{CM}/ssa?fieldManager=one", applied,
                               "application/apply-patch+yaml")
    assert first.status == 201
    managers = [m["manager"] for m in first.json["metadata"]["managedFields"]]
    assert managers == ["one"]
    other = dict(applied, data={"k": "b"})
    clash = await client.patch(f"{CM}/ssa?fieldManager=two", other,
                               "application/apply-patch+yaml")
    assert clash.status == 409
    body = clash.json
    assert body["reason"] == "Conflict"
    assert body["message"] == 'Apply failed with 1 conflict: conflict with "one": .data.k'
    assert body["details"]["causes"][0]["reason"] == "FieldManagerConflict"
    forced = await client.patch(f"{CM}/ssa?fieldManager=two&force=true", other,
                                "application/apply-patch+yaml")
    assert forced.status == 200 and forced.json["data"] == {"k": "b"}


async def test_apply_without_field_manager_is_422(client: Client) -> None:
    reply = await client.patch(f"{CM}/nofm", {"metadata": {"name": "nofm"}},
                               "application/apply-patch+yaml")
    assert reply.status == 422


async def test_updates_record_managed_fields_for_their_manager(client: Client) -> None:
    created = (await client.post(f"{CM}?fieldManager=creator", configmap("mf", a="1"))).json
    assert [m["manager"] for m in created["metadata"]["managedFields"]] == ["creator"]
    patched = (await client.patch(f"{CM}/mf?fieldManager=patcher", {"data": {"b": "2"}},
                                  "application/merge-patch+json")).json
    entries = {m["manager"]: m for m in patched["metadata"]["managedFields"]}
    assert set(entries) == {"creator", "patcher"}
    assert entries["patcher"]["operation"] == "Update"


async def test_wrong_json_type_is_400_like_typed_decoding(client: Client) -> None:
    body = configmap("typed")
    body["data"] = {"key": 1}
    reply = await client.post(CM, body)
    assert reply.status == 400
    assert reply.json["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal '
        "number into Go struct field ConfigMap.data of type string")


async def test_wrong_type_deep_in_a_pod_spec_is_400(client: Client) -> None:
    body = pod("typed-pod")
    body["spec"]["containers"][0]["image"] = ["not", "a", "string"]
    reply = await client.post(PODS, body)
    assert reply.status == 400
    assert "cannot unmarshal array into Go struct field Container.spec.containers.image of " \
        "type string" in reply.json["message"]


async def test_obsolete_pod_claim_source_names_the_replacement(client: Client) -> None:
    body = pod("old-shape")
    body["spec"]["resourceClaims"] = [{"name": "gpu", "source": {"resourceClaimName": "c"}}]
    reply = await client.post(f"{PODS}?fieldValidation=Strict", body)
    assert reply.status == 422
    assert reply.json["details"]["causes"][0]["field"].startswith("spec.resourceClaims[0].source")
    assert "resourceClaimName" in reply.json["message"]
