"""CustomResourceDefinitions over HTTP: CRD validation with upstream's messages, custom
resources served at run time (also by another apiserver of the same store), None
conversion in watches, pruning and strict field validation, server-side apply,
discovery and OpenAPI."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from apiclient import Client, next_event, ssl_context_for

from draemu.cmd.testing.apiserver import start_apiserver
from draemu.store import open_store

pytestmark = pytest.mark.unit

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "kind": "Widget", "categories": ["all"]},
             "versions": [
                 {"name": "v1", "served": True, "storage": True,
                  "subresources": {"status": {}},
                  "schema": {"openAPIV3Schema": {
                      "type": "object",
                      "properties": {"spec": {
                          "type": "object", "required": ["size"],
                          "x-kubernetes-validations": [
                              {"rule": "self.size != 'huge' || self.count <= 1",
                               # string(self.count) has no size bound: its estimated
                               # cost would make upstream refuse the CRD.
                               "messageExpression": "'huge widgets come alone, not ' + "
                                                    "['0', '1', '2', '3', '4', '5']"
                                                    "[self.count]",
                               "fieldPath": ".count"},
                              {"rule": "self.size == oldSelf.size",
                               "message": "size is immutable"}],
                          "properties": {
                              "size": {"type": "string", "enum": ["small", "huge"]},
                              "count": {"type": "integer", "maximum": 5},
                              "name": {"type": "string", "maxLength": 3},
                              "tags": {"type": "array", "maxItems": 2,
                                       "x-kubernetes-list-type": "set",
                                       "items": {"type": "string"}},
                              "ports": {"type": "array", "x-kubernetes-list-type": "map",
                                        "x-kubernetes-list-map-keys": ["name"],
                                        "items": {"type": "object", "required": ["name"],
                                                  "properties": {
                                                      "name": {"type": "string"},
                                                      "port": {"type": "integer"}}}},
                              "extra": {"type": "object",
                                        "x-kubernetes-preserve-unknown-fields": True},
                              "email": {"type": "string", "format": "email"}}},
                          "status": {"type": "object",
                                     "properties": {"phase": {"type": "string"}}}}}}},
                 {"name": "v1beta1", "served": True, "storage": False,
                  "schema": {"openAPIV3Schema": {
                      "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}


def widget(obj_name: str, version: str = "v1", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"example.com/{version}", "kind": "Widget",
            "metadata": {"name": obj_name}, "spec": {"size": "small", **spec}}


async def _with_crd(client: Client) -> None:
    reply = await client.post(CRDS, CRD)
    assert reply.status == 201, reply.body


async def test_crd_name_must_be_plural_dot_group(client: Client) -> None:
    bad = copy.deepcopy(CRD)
    bad["metadata"]["name"] = "gadgets.example.com"
    reply = await client.post(CRDS, bad)
    assert reply.status == 422
    assert reply.json["message"] == (
        'CustomResourceDefinition.apiextensions.k8s.io "gadgets.example.com" is invalid: '
        'metadata.name: Invalid value: "gadgets.example.com": must be '
        'spec.names.plural+"."+spec.group')


async def test_crd_needs_exactly_one_storage_version_and_a_scope(client: Client) -> None:
    bad = copy.deepcopy(CRD)
    bad["spec"]["versions"][1]["storage"] = True
    bad["spec"]["scope"] = "Global"
    reply = await client.post(CRDS, bad)
    causes = {(c["field"], c["message"].split(": ", 1)[0]) for c in
              reply.json["details"]["causes"]}
    assert ("spec.scope", "Unsupported value") in causes
    assert ("spec.versions", "Invalid value") in causes
    assert "must have exactly one version marked as storage version" in reply.json["message"]


async def test_crd_schema_must_be_structural(client: Client) -> None:
    bad = copy.deepcopy(CRD)
    schema = bad["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["properties"]["spec"]["properties"]["size"] = {"description": "no type"}
    schema["properties"]["spec"]["properties"]["tags"].pop("items")
    reply = await client.post(CRDS, bad)
    assert reply.status == 422
    fields = {c["field"]: c["message"] for c in reply.json["details"]["causes"]}
    prefix = "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties"
    assert fields[f"{prefix}[size].type"] == (
        "Required value: must not be empty for specified object fields")
    assert fields[f"{prefix}[tags].items"] == "Required value: must be specified"


async def test_root_schema_with_status_may_preserve_unknown_fields(client: Client) -> None:
    """Upstream's fixtures (AllowAllSchema with /status) create such CRDs; a root default
    or list type is still refused, naming the fields allowed as upstream's message does."""
    crd = copy.deepcopy(CRD)
    crd["spec"]["versions"][1]["subresources"] = {"status": {}}
    crd["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["maxLength"] = 0
    assert (await client.post(CRDS, crd)).status == 201
    bad = copy.deepcopy(CRD)
    bad["metadata"]["name"] = "gadgets.example.org"
    bad["spec"].update(group="example.org", names={"plural": "gadgets", "kind": "Gadget"})
    bad["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["maxProperties"] = 0
    reply = await client.post(CRDS, bad)
    assert reply.status == 422
    assert reply.json["details"]["causes"][0]["message"].endswith(
        "only [Description Type Format Title Maximum ExclusiveMaximum Minimum "
        "ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems "
        "MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields "
        "XValidations] fields are allowed at the root of the schema if the status "
        "subresource is enabled")


async def test_crd_cel_rule_must_compile(client: Client) -> None:
    bad = copy.deepcopy(CRD)
    spec = bad["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["x-kubernetes-validations"] = [{"rule": "self.size =="}]
    reply = await client.post(CRDS, bad)
    assert reply.status == 422
    cause = reply.json["details"]["causes"][0]
    assert cause["field"] == ("spec.versions[0].schema.openAPIV3Schema.properties[spec]."
                              "x-kubernetes-validations[0].rule")
    assert "compilation failed: ERROR: <input>:1:" in cause["message"]


async def test_custom_resource_validation_messages(client: Client) -> None:
    await _with_crd(client)
    reply = await client.post(WIDGETS, widget("w1", size="medium", count=9, name="toolong",
                                              tags=["a", "a"], email="nope"))
    assert reply.status == 422
    messages = [f'{c["field"]}: {c["message"]}' for c in reply.json["details"]["causes"]]
    assert messages[:5] == [
        'spec.size: Unsupported value: "medium": supported values: "small", "huge"',
        "spec.count: Invalid value: 9: spec.count in body should be less than or equal to 5",
        "spec.name: Too long: may not be more than 3 bytes",
        'spec.tags[1]: Duplicate value: "a"',
        'spec.email: Invalid value: "nope": spec.email in body must be of type email: '
        '"nope"']
    missing = await client.post(WIDGETS, {**widget("w2"), "spec": {}})
    assert missing.json["details"]["causes"][0] == {
        "reason": "FieldValueRequired", "message": "Required value", "field": "spec.size"}


async def test_cel_message_expression_field_path_and_transition_rule(client: Client) -> None:
    await _with_crd(client)
    reply = await client.post(WIDGETS, widget("big", size="huge", count=2))
    assert reply.status == 422
    assert reply.json["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "spec.count",
        "message": "Invalid value: huge widgets come alone, not 2"}]
    assert (await client.post(WIDGETS, widget("ok", size="huge", count=1))).status == 201
    changed = await client.patch(f"{WIDGETS}/ok", {"spec": {"size": "small"}},
                                 "application/merge-patch+json")
    assert changed.status == 422
    assert changed.json["message"].endswith("spec: Invalid value: size is immutable")


async def test_unknown_fields_are_pruned_or_refused_when_strict(client: Client) -> None:
    await _with_crd(client)
    body = widget("p", extra={"free": {"form": 1}}, color="red")
    body["metadata"]["bogus"] = True
    strict = await client.post(f"{WIDGETS}?fieldValidation=Strict", body)
    assert strict.status == 400
    assert strict.json["message"] == (
        'Widget in version "v1" cannot be handled as a Widget: strict decoding error: '
        'unknown field "metadata.bogus", unknown field "spec.color"')
    created = await client.post(WIDGETS, body)
    assert created.status == 201
    assert created.json["spec"] == {"size": "small", "extra": {"free": {"form": 1}}}
    assert "bogus" not in created.json["metadata"]


async def test_status_subresource_separates_spec_and_status(client: Client) -> None:
    await _with_crd(client)
    body = widget("s")
    body["status"] = {"phase": "Ignored"}
    created = await client.post(WIDGETS, body)
    assert "status" not in created.json
    reply = await client.patch(f"{WIDGETS}/s/status",
                               {"status": {"phase": "Ready"}, "spec": {"count": 3}},
                               "application/merge-patch+json")
    assert reply.json["status"] == {"phase": "Ready"} and "count" not in reply.json["spec"]


async def test_server_side_apply_merges_list_maps(client: Client) -> None:
    await _with_crd(client)
    path = f"{WIDGETS}/applied?fieldManager=a"
    first = widget("applied", ports=[{"name": "http", "port": 80}])
    assert (await client.patch(path, first, "application/apply-patch+yaml")).status == 201
    second = widget("applied", ports=[{"name": "grpc", "port": 90}])
    reply = await client.patch(f"{WIDGETS}/applied?fieldManager=b", second,
                               "application/apply-patch+yaml")
    assert reply.status == 200, reply.body
    assert sorted(p["name"] for p in reply.json["spec"]["ports"]) == ["grpc", "http"]


async def test_watch_in_another_version_rewrites_api_version(client: Client) -> None:
    await _with_crd(client)
    old = "/apis/example.com/v1beta1/namespaces/default/widgets"
    rv = (await client.get(old)).json["metadata"]["resourceVersion"]
    watch = await client.stream(f"{old}?watch=true&resourceVersion={rv}")
    try:
        assert (await client.post(WIDGETS, widget("v"))).status == 201
        event = await next_event(watch)
        assert event["object"]["apiVersion"] == "example.com/v1beta1"
    finally:
        watch.close()


async def test_discovery_and_openapi_describe_the_custom_resource(client: Client) -> None:
    await _with_crd(client)
    doc = (await client.get("/apis/example.com/v1")).json
    assert {r["name"] for r in doc["resources"]} == {"widgets", "widgets/status"}
    widgets = next(r for r in doc["resources"] if r["name"] == "widgets")
    assert widgets["kind"] == "Widget" and widgets["categories"] == ["all"]
    agg = (await client.get("/apis", headers={
        "Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"})).json
    group = next(g for g in agg["items"] if g["metadata"]["name"] == "example.com")
    assert [v["version"] for v in group["versions"]] == ["v1", "v1beta1"]
    v3 = (await client.get("/openapi/v3/apis/example.com/v1")).json
    schema = v3["components"]["schemas"]["com.example.v1.Widget"]
    assert schema["properties"]["spec"]["properties"]["size"]["enum"] == ["small", "huge"]
    assert "com.example.v1.WidgetList" in v3["components"]["schemas"]
    v2 = (await client.get("/openapi/v2")).json
    assert "com.example.v1.Widget" in v2["definitions"]


async def test_crd_created_through_one_apiserver_is_served_by_another(tmp_path: Path) -> None:
    store = await open_store("sqlite://:memory:")
    a = await start_apiserver(tmp_path / "a", store=store)
    b = await start_apiserver(tmp_path / "b", store=store)
    try:
        async with aiohttp.ClientSession() as session:
            ca = Client(a.url, session, ssl_context_for(a.kubeconfig_path))
            cb = Client(b.url, session, ssl_context_for(b.kubeconfig_path))
            await _with_crd(ca)
            created = await cb.post(WIDGETS, widget("shared"))
            assert created.status == 201, created.body
            assert (await ca.get(f"{WIDGETS}/shared")).status == 200
            assert (await ca.delete(f"{CRDS}/widgets.example.com")).status == 200
            for _ in range(100):
                if (await cb.get(WIDGETS)).status == 404:
                    break
                await asyncio.sleep(0.05)
            assert (await cb.get(WIDGETS)).status == 404
            assert (await ca.get(f"{CRDS}/widgets.example.com")).status == 404
    finally:
        await b.stop()
        await a.stop()
        await store.close()


async def test_selectable_fields_select_custom_resources(client: Client) -> None:
    crd = copy.deepcopy(CRD)
    crd["spec"]["versions"][0]["selectableFields"] = [{"jsonPath": ".spec.size"}]
    assert (await client.post(CRDS, crd)).status == 201
    assert (await client.post(WIDGETS, widget("s1"))).status == 201
    assert (await client.post(WIDGETS, widget("h1", size="huge", count=1))).status == 201
    reply = await client.get(f"{WIDGETS}?fieldSelector=spec.size%3Dhuge")
    assert [i["metadata"]["name"] for i in reply.json["items"]] == ["h1"]
    unknown = await client.get(f"{WIDGETS}?fieldSelector=spec.count%3D1")
    assert (unknown.status, unknown.json["message"]) == (
        400, "field label not supported: spec.count")


async def test_selectable_fields_must_be_scalar_fields_outside_metadata(
        client: Client) -> None:
    crd = copy.deepcopy(CRD)
    crd["spec"]["versions"][0]["selectableFields"] = [
        {"jsonPath": ".metadata.name"}, {"jsonPath": ".spec.tags"}, {"jsonPath": ".spec.nope"}]
    reply = await client.post(CRDS, crd)
    messages = [f'{c["field"]}: {c["message"]}' for c in reply.json["details"]["causes"]]
    prefix = "spec.versions[0].selectableFields"
    assert messages == [
        f'{prefix}[0].jsonPath: Invalid value: ".metadata.name": must not point to fields '
        "in metadata",
        f'{prefix}[1].jsonPath: Invalid value: ".spec.tags": must point to a field of type '
        "string, boolean or integer. Enum string fields and strings with formats are "
        "allowed.",
        f'{prefix}[2].jsonPath: Invalid value: ".spec.nope": is an invalid path: does not '
        "refer to a valid field"]


async def test_deleting_the_crd_ends_watches_of_its_objects(client: Client) -> None:
    await _with_crd(client)
    rv = (await client.get(WIDGETS)).json["metadata"]["resourceVersion"]
    watch = await client.stream(f"{WIDGETS}?watch=true&resourceVersion={rv}")
    try:
        assert (await client.post(WIDGETS, widget("w"))).status == 201
        assert (await next_event(watch))["type"] == "ADDED"
        assert (await client.delete(f"{CRDS}/widgets.example.com")).status == 200
        events = []
        while True:
            line = await asyncio.wait_for(watch.content.readline(), 10)
            if not line:
                break
            events.append(json.loads(line)["type"])
        assert events == ["DELETED"]
    finally:
        watch.close()


async def test_tightened_schema_ratchets_unchanged_fields(client: Client) -> None:
    await _with_crd(client)
    assert (await client.post(WIDGETS, widget("old", name="abc", count=4))).status == 201
    crd = (await client.get(f"{CRDS}/widgets.example.com")).json
    props = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "properties"]
    props["name"]["maxLength"] = 2
    props["count"]["x-kubernetes-validations"] = [{"rule": "self < 3", "message": "too many"}]
    assert (await client.put(f"{CRDS}/widgets.example.com", crd)).status == 200
    reply = await client.patch(f"{WIDGETS}/old", {"spec": {"email": "a@b.example"}},
                               "application/merge-patch+json")
    assert reply.status == 200, reply.body
    assert reply.headers.getall("Warning") == [
        '299 - "spec.count: Invalid value: 4: too many"']
    changed = await client.patch(f"{WIDGETS}/old", {"spec": {"name": "abcd"}},
                                 "application/merge-patch+json")
    assert changed.status == 422
    assert changed.json["details"]["causes"][0]["field"] == "spec.name"


async def test_malformed_objects_get_4xx_not_500(client: Client) -> None:
    await _with_crd(client)
    bad_meta = widget("m")
    bad_meta["metadata"]["name"] = True
    reply = await client.post(WIDGETS, bad_meta)
    assert reply.status == 400
    assert reply.json["message"] == (
        'Widget in version "v1" cannot be handled as a Widget: json: cannot unmarshal bool '
        "into Go struct field ObjectMeta.metadata.name of type string")
    crd = copy.deepcopy(CRD)
    crd["metadata"]["name"] = "gadgets.example.com"
    crd["spec"]["names"] = {"plural": "gadgets", "kind": "Gadget", "shortNames": [None]}
    crd["spec"]["versions"].append(None)
    reply = await client.post(CRDS, crd)
    assert reply.status == 422
    fields = {c["field"] for c in reply.json["details"]["causes"]}
    assert {"spec.versions[2]", "spec.names.shortNames[0]"} <= fields


async def test_a_second_crd_with_taken_names_is_not_accepted(client: Client) -> None:
    await _with_crd(client)
    rival = copy.deepcopy(CRD)
    rival["metadata"]["name"] = "gizmos.example.com"
    rival["spec"]["names"] = {"plural": "gizmos", "singular": "gizmo", "kind": "Widget"}
    assert (await client.post(CRDS, rival)).status == 201
    for _ in range(100):
        conditions = {c["type"]: c for c in (await client.get(f"{CRDS}/gizmos.example.com")
                                             ).json.get("status", {}).get("conditions", [])}
        if conditions:
            break
        await asyncio.sleep(0.02)
    accepted = conditions["NamesAccepted"]
    assert (accepted["status"], accepted["reason"], accepted["message"]) == (
        "False", "KindConflict", '"Widget" is already in use')
    assert conditions["Established"]["status"] == "False"
    assert (await client.get("/apis/example.com/v1/namespaces/default/gizmos")).status == 404
    assert (await client.get(WIDGETS)).status == 200


async def test_schema_patterns_are_re2(client: Client) -> None:
    crd = copy.deepcopy(CRD)
    props = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "properties"]
    props["name"] = {"type": "string", "pattern": "^(a+)+$"}
    props["bad"] = {"type": "string", "pattern": "a("}
    reply = await client.post(CRDS, crd)
    assert reply.json["details"]["causes"] == [{
        "reason": "FieldValueInvalid",
        "field": "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[bad]"
                 ".pattern",
        "message": 'Invalid value: "a(": must be a valid regular expression, but isn\'t: '
                   "error parsing regexp: missing closing ): `a(`"}]
    del props["bad"]
    assert (await client.post(CRDS, crd)).status == 201
    started = asyncio.get_running_loop().time()
    reply = await client.post(WIDGETS, widget("slow", name="a" * 40 + "!"))
    assert reply.status == 422  # no catastrophic backtracking: RE2 is linear
    assert asyncio.get_running_loop().time() - started < 2


async def test_no_new_objects_while_the_crd_is_terminating(client: Client) -> None:
    await _with_crd(client)
    held = widget("held")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    assert (await client.post(WIDGETS, held)).status == 201
    assert (await client.delete(f"{CRDS}/widgets.example.com")).status == 200
    for _ in range(100):
        reply = await client.post(WIDGETS, widget("late"))
        if reply.status == 405:
            break
        await asyncio.sleep(0.02)
    assert reply.json["message"] == ("create not allowed while custom resource definition "
                                     "is terminating")
    for _ in range(100):
        crd = (await client.get(f"{CRDS}/widgets.example.com")).json
        terminating = next(c for c in crd["status"]["conditions"]
                           if c["type"] == "Terminating")
        if terminating["reason"] == "InstanceDeletionInProgress":
            break
        await asyncio.sleep(0.02)
    assert terminating["reason"] == "InstanceDeletionInProgress"
    # The held object is marked for deletion and goes once its finalizer is removed.
    await client.patch(f"{WIDGETS}/held", {"metadata": {"finalizers": None}},
                       "application/merge-patch+json")
    for _ in range(200):
        if (await client.get(f"{CRDS}/widgets.example.com")).status == 404:
            break
        await asyncio.sleep(0.05)
    assert (await client.get(f"{CRDS}/widgets.example.com")).status == 404


async def test_a_default_added_later_is_applied_to_stored_objects_when_read(
        client: Client) -> None:
    """Upstream defaults custom resources as it decodes them from storage: an object
    written before its CRD gained a default shows it on get, list and watch."""
    await _with_crd(client)
    assert (await client.post(WIDGETS, widget("old"))).status == 201
    rv = (await client.get(WIDGETS)).json["metadata"]["resourceVersion"]
    path = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/count/default"
    reply = await client.patch(f"{CRDS}/widgets.example.com",
                               [{"op": "add", "path": path, "value": 3}],
                               "application/json-patch+json")
    assert reply.status == 200, reply.body
    for _ in range(50):
        got = (await client.get(f"{WIDGETS}/old")).json
        if "count" in got["spec"]:
            break
        await asyncio.sleep(0.1)
    assert got["spec"] == {"size": "small", "count": 3}
    assert (await client.get(WIDGETS)).json["items"][0]["spec"]["count"] == 3
    watch = await client.stream(f"{WIDGETS}?watch=true&resourceVersion={rv}")
    try:
        await client.patch(f"{WIDGETS}/old", {"metadata": {"labels": {"a": "b"}}},
                           "application/merge-patch+json")
        event = await next_event(watch)
        assert event["object"]["spec"]["count"] == 3
    finally:
        watch.close()


async def test_apply_types_the_configuration_as_sent_embedded_resources_included(
        client: Client) -> None:
    """kube-apiserver 1.37's answer to an apply naming undeclared fields, at the root, in
    metadata and in an embedded resource (whose apiVersion, kind and metadata are
    declared by the embedding)."""
    crd = copy.deepcopy(CRD)
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["template"] = {
        "type": "object", "x-kubernetes-embedded-resource": True,
        "properties": {"metadata": {"type": "object",
                                    "properties": {"name": {"type": "string"}}}}}
    assert (await client.post(CRDS, crd)).status == 201
    config = (b"apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: a\n  bogus: 1\n"
              b"color: red\nspec:\n  size: small\n  template:\n    apiversion: v1\n"
              b"    kind: Pod\n    metadata:\n      name: p\n      nope: 2\n")
    for mode in ("Ignore", "Strict"):
        reply = await client.request(
            "PATCH", f"{WIDGETS}/a?fieldManager=m&fieldValidation={mode}", raw=config,
            content_type="application/apply-patch+yaml")
        assert reply.status == 500
        assert reply.json["message"] == (
            "failed to create typed patch object (/a; example.com/v1, Kind=Widget): errors:\n"
            "  .metadata.bogus: field not declared in schema\n"
            "  .color: field not declared in schema\n"
            "  .spec.template.apiversion: field not declared in schema\n"
            "  .spec.template.metadata.nope: field not declared in schema")
