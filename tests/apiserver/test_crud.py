"""create / get / update through the generic handlers, with upstream's shapes."""

from __future__ import annotations

import pytest
from apiclient import CM, Client, configmap

pytestmark = pytest.mark.unit


async def test_create_sets_system_metadata_and_returns_201(client: Client) -> None:
    reply = await client.post(CM, configmap("c1", a="b"))
    assert reply.status == 201
    meta = reply.json["metadata"]
    assert meta["namespace"] == "default"
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z")
    assert int(meta["resourceVersion"]) > 0


async def test_duplicate_create_is_409_already_exists_with_exact_content_type(
        client: Client) -> None:
    await client.post(CM, configmap("dup"))
    reply = await client.post(CM, configmap("dup"))
    assert reply.status == 409
    assert reply.content_type == "application/json"
    body = reply.json
    assert body["kind"] == "Status" and body["reason"] == "AlreadyExists"
    assert body["message"] == 'configmaps "dup" already exists'
    assert body["details"] == {"name": "dup", "kind": "configmaps"}


async def test_missing_object_is_404_with_upstream_message(client: Client) -> None:
    reply = await client.get(f"{CM}/nope")
    assert reply.status == 404
    assert reply.json["message"] == 'configmaps "nope" not found'


async def test_generate_name_appends_five_characters(client: Client) -> None:
    body = configmap("")
    body["metadata"] = {"generateName": "gen-"}
    reply = await client.post(CM, body)
    assert reply.status == 201
    name = reply.json["metadata"]["name"]
    assert name.startswith("gen-") and len(name) == len("gen-") + 5


async def test_body_without_type_meta_or_content_type_is_accepted(client: Client) -> None:
    reply = await client.post(CM, {"metadata": {"name": "bare"}, "data": {"x": "y"}},
                              content_type=None)
    assert reply.status == 201
    assert reply.json["kind"] == "ConfigMap" and reply.json["apiVersion"] == "v1"


async def test_yaml_body_is_accepted(client: Client) -> None:
    reply = await client.post(CM, raw=b"metadata:\n  name: from-yaml\ndata:\n  k: v\n",
                              content_type="application/yaml")
    assert reply.status == 201
    assert reply.json["data"] == {"k": "v"}


async def test_cbor_body_is_415_naming_json_yaml_and_protobuf(client: Client) -> None:
    reply = await client.post(CM, raw=b"\xa0", content_type="application/cbor")
    assert reply.status == 415
    assert reply.json["reason"] == "UnsupportedMediaType"
    assert reply.json["message"].endswith("accepted media types include: application/json, "
                                          "application/yaml, application/vnd.kubernetes.protobuf")


async def test_protobuf_first_accept_is_answered_with_json(client: Client) -> None:
    reply = await client.get("/api/v1/namespaces/default", headers={
        "Accept": "application/vnd.kubernetes.protobuf,application/json"})
    assert reply.status == 200
    assert reply.content_type == "application/json"
    assert reply.json["kind"] == "Namespace"


async def test_body_over_3_mib_is_413(client: Client) -> None:
    big = configmap("big", x="a" * (3 * 1024 * 1024 + 10))
    reply = await client.post(CM, big)
    assert reply.status == 413
    assert reply.json["kind"] == "Status"


async def test_update_with_stale_resource_version_is_409_conflict(client: Client) -> None:
    created = (await client.post(CM, configmap("c2", a="1"))).json
    first = dict(created, data={"a": "2"})
    assert (await client.put(f"{CM}/c2", first)).status == 200
    stale = dict(created, data={"a": "3"})
    reply = await client.put(f"{CM}/c2", stale)
    assert reply.status == 409
    assert reply.json["reason"] == "Conflict"
    assert reply.json["message"] == (
        'Operation cannot be fulfilled on configmaps "c2": the object has been modified; '
        "please apply your changes to the latest version and try again")


async def test_update_without_resource_version_is_unconditional(client: Client) -> None:
    await client.post(CM, configmap("c3", a="1"))
    reply = await client.put(f"{CM}/c3", configmap("c3", a="2"))
    assert reply.status == 200
    assert reply.json["data"] == {"a": "2"}


async def test_update_keeps_uid_and_creation_timestamp(client: Client) -> None:
    created = (await client.post(CM, configmap("c4"))).json
    sent = configmap("c4", a="1")
    sent["metadata"]["uid"] = created["metadata"]["uid"]
    updated = (await client.put(f"{CM}/c4", sent)).json
    assert updated["metadata"]["creationTimestamp"] == created["metadata"]["creationTimestamp"]
    assert updated["metadata"]["uid"] == created["metadata"]["uid"]


async def test_name_mismatch_between_body_and_url_is_400(client: Client) -> None:
    await client.post(CM, configmap("c5"))
    reply = await client.put(f"{CM}/c5", configmap("other"))
    assert reply.status == 400
    assert "does not match the name on the URL" in reply.json["message"]


async def test_no_op_update_keeps_resource_version(client: Client) -> None:
    created = (await client.post(CM, configmap("same", a="1"))).json
    again = (await client.put(f"{CM}/same", configmap("same", a="1"))).json
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_dry_run_create_stores_nothing(client: Client) -> None:
    reply = await client.post(f"{CM}?dryRun=All", configmap("dry"))
    assert reply.status == 201
    assert (await client.get(f"{CM}/dry")).status == 404


async def test_invalid_name_is_422_with_field_causes(client: Client) -> None:
    reply = await client.post(CM, configmap("Bad_Name"))
    assert reply.status == 422
    body = reply.json
    assert body["reason"] == "Invalid"
    assert body["details"]["causes"][0]["field"] == "metadata.name"
    assert body["message"].startswith('ConfigMap "Bad_Name" is invalid: metadata.name: ')


async def test_create_in_missing_namespace_is_404_for_the_namespace(client: Client) -> None:
    reply = await client.post("/api/v1/namespaces/ghost/configmaps", configmap("c"))
    assert reply.status == 404
    assert reply.json["message"] == 'namespaces "ghost" not found'


async def test_namespace_in_body_must_match_url(client: Client) -> None:
    body = configmap("c6")
    body["metadata"]["namespace"] = "kube-system"
    reply = await client.post(CM, body)
    assert reply.status == 400
    assert reply.json["message"] == ("the namespace of the provided object does not match "
                                     "the namespace sent on the request")


async def test_unknown_resource_is_404(client: Client) -> None:
    reply = await client.get("/api/v1/namespaces/default/widgets")
    assert reply.status == 404
    assert reply.json["message"] == "the server could not find the requested resource"


async def test_unsupported_verb_is_405(client: Client) -> None:
    reply = await client.put("/api/v1/namespaces/default/configmaps", configmap("x"))
    assert reply.status == 405
    assert reply.json["reason"] == "MethodNotAllowed"


async def test_events_are_one_storage_in_two_groups(client: Client) -> None:
    event = {"apiVersion": "v1", "kind": "Event",
             "metadata": {"name": "e1"},
             "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
             "reason": "Tested", "message": "hello", "type": "Normal",
             "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
             "count": 1, "source": {"component": "test"}}
    assert (await client.post("/api/v1/namespaces/default/events", event)).status == 201
    new = await client.get("/apis/events.k8s.io/v1/namespaces/default/events/e1")
    assert new.status == 200
    body = new.json
    assert body["apiVersion"] == "events.k8s.io/v1" and body["kind"] == "Event"
    assert body["note"] == "hello" and body["regarding"]["name"] == "p"
    listed = (await client.get("/apis/events.k8s.io/v1/namespaces/default/events")).json
    assert [i["apiVersion"] for i in listed["items"]] == ["events.k8s.io/v1"]


async def test_timestamps_are_written_as_a_go_server_writes_them(client: Client) -> None:
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "t1"},
             "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
             "reason": "R", "message": "m", "type": "Normal",
             "firstTimestamp": "2026-11-29T07:57:10.123456+01:00",
             "lastTimestamp": "2026-11-29T07:57:10+00:00",
             "eventTime": "2026-11-29T07:57:10.5+00:00",
             "reportingComponent": "kopf", "reportingInstance": "kopf-1", "action": "Handle"}
    reply = await client.post("/api/v1/namespaces/default/events", event)
    assert reply.status == 201, reply.body
    body = reply.json
    assert body["firstTimestamp"] == "2026-11-29T06:57:10Z"
    assert body["lastTimestamp"] == "2026-11-29T07:57:10Z"
    assert body["eventTime"] == "2026-11-29T07:57:10.500000Z"


async def test_a_timestamp_that_is_no_time_is_400(client: Client) -> None:
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "t2"},
             "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
             "firstTimestamp": "yesterday"}
    reply = await client.post("/api/v1/namespaces/default/events", event)
    assert reply.status == 400
    assert 'parsing time "yesterday"' in reply.json["message"]


async def test_create_with_a_resource_version_is_400(client: Client) -> None:
    body = configmap("with-rv")
    body["metadata"]["resourceVersion"] = "7"
    reply = await client.post(CM, body)
    assert reply.status == 400
    assert reply.json["message"] == "resourceVersion should not be set on objects to be created"
