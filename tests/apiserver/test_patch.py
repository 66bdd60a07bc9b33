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


APPLY = "application/apply-patch+yaml"


@pytest.mark.parametrize("mode", ["Ignore", "Warn", "Strict"])
async def test_apply_of_an_undeclared_field_fails_the_typed_apply_in_every_mode(
        client: Client, mode: str) -> None:
    """As kube-apiserver 1.37: the apply configuration is typed as sent, whatever
    fieldValidation says (a 500 without reason, as upstream's)."""
    yaml_body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c4\nbogus: 1\n"
    reply = await client.request("PATCH", f"{CM}/c4?fieldManager=m&fieldValidation={mode}",
                                 raw=yaml_body, content_type=APPLY)
    assert reply.status == 500
    assert reply.json["message"] == ("failed to create typed patch object (/c4; /v1, "
                                     "Kind=ConfigMap): .bogus: field not declared in schema")


async def test_apply_duplicate_keys_are_named_by_line(client: Client) -> None:
    """After the apply, the patch is decoded strictly as YAML: Strict refuses keys given
    twice, Warn sends one warning each (upstream's words)."""
    yaml_body = (b'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c2\n  name: c2\n'
                 b'data:\n  a: "1"\n  a: "2"\n')
    strict = await client.request("PATCH", f"{CM}/c2?fieldManager=m&fieldValidation=Strict",
                                  raw=yaml_body, content_type=APPLY)
    assert strict.status == 400
    assert strict.json["message"] == (
        "error strict decoding patch: error converting YAML to JSON: yaml: unmarshal "
        'errors:\n  line 5: key "name" already set in map\n  line 8: key "a" already set '
        "in map")
    warned = await client.request("PATCH", f"{CM}/c2?fieldManager=m&fieldValidation=Warn",
                                  raw=yaml_body, content_type=APPLY)
    assert warned.status == 201 and warned.json["data"] == {"a": "2"}
    assert warned.headers.getall("Warning") == [
        '299 - "line 5: key \\"name\\" already set in map"',
        '299 - "line 8: key \\"a\\" already set in map"']
    json_body = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c3"},' \
        b'"data":{"a":"1","a":"2"}}'
    reply = await client.request("PATCH", f"{CM}/c3?fieldManager=m&fieldValidation=Strict",
                                 raw=json_body, content_type=APPLY)
    assert reply.json["message"].endswith('line 1: key "a" already set in map')


@pytest.mark.parametrize(("url_name", "config", "patch", "message"), [
    ("n1", {"metadata": {"name": "other"}}, None,
     "the name of the object (other) does not match the name on the URL (n1)"),
    ("n2", {"metadata": {"name": "n2", "namespace": "kube-system"}}, None,
     "the namespace of the provided object does not match the namespace sent on the request"),
    ("n3", {}, None,
     "the name of the object (n3 based on URL) was undeterminable: name must be provided"),
    ("e1", None, {"metadata": {"name": "zz"}},
     "the name of the object (zz) does not match the name on the URL (e1)"),
    ("e1", None, {"metadata": {"namespace": "kube-system"}},
     "the namespace of the provided object does not match the namespace sent on the request"),
    ("e1", None, {"metadata": {"name": None}},
     "the name of the object (e1 based on URL) was undeterminable: name must be provided"),
])
async def test_a_patch_may_not_rename_or_move_the_object(
        client: Client, url_name: str, config: dict | None, patch: dict | None,
        message: str) -> None:
    """kube-apiserver's answers (a 400 each), for apply on create and for patches."""
    if config is not None:
        body = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"}, **config}
        reply = await client.patch(f"{CM}/{url_name}?fieldManager=m", body, APPLY)
    else:
        await client.post(CM, configmap(url_name))
        reply = await client.patch(f"{CM}/{url_name}", patch, "application/merge-patch+json")
    assert (reply.status, reply.json["message"]) == (400, message)
    assert (await client.get(f"{CM}/{url_name}")).status == (200 if patch else 404)


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
