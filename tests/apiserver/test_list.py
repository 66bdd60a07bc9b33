"""list: selectors, pagination, Table output."""

from __future__ import annotations

import pytest
from apiclient import CM, Client, configmap

pytestmark = pytest.mark.unit

TABLE = ("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;"
         "g=meta.k8s.io,application/json")


async def _names(client: Client, query: str) -> list[str]:
    reply = await client.get(f"{CM}?{query}")
    assert reply.status == 200, reply.body
    return [i["metadata"]["name"] for i in reply.json["items"]]


async def _seed(client: Client) -> None:
    for name, labels in [("a", {"app": "web", "tier": "1"}), ("b", {"app": "db"}),
                         ("c", {"tier": "2"})]:
        assert (await client.post(CM, configmap(name, labels))).status == 201


async def test_list_is_a_typed_list_with_resource_version(client: Client) -> None:
    await _seed(client)
    body = (await client.get(CM)).json
    assert body["kind"] == "ConfigMapList" and body["apiVersion"] == "v1"
    assert int(body["metadata"]["resourceVersion"]) >= 3
    assert [i["metadata"]["name"] for i in body["items"]] == ["a", "b", "c"]


async def test_label_selector_operators(client: Client) -> None:
    await _seed(client)
    assert await _names(client, "labelSelector=app%3Dweb") == ["a"]
    assert await _names(client, "labelSelector=app%3D%3Dweb") == ["a"]
    assert await _names(client, "labelSelector=app!%3Dweb") == ["b", "c"]
    assert await _names(client, "labelSelector=app+in+(web,db)") == ["a", "b"]
    assert await _names(client, "labelSelector=app+notin+(web)") == ["b", "c"]
    assert await _names(client, "labelSelector=tier") == ["a", "c"]
    assert await _names(client, "labelSelector=!tier") == ["b"]
    assert await _names(client, "labelSelector=app,tier%3D1") == ["a"]


async def test_field_selector_on_name_and_namespace(client: Client) -> None:
    await _seed(client)
    assert await _names(client, "fieldSelector=metadata.name%3Db") == ["b"]
    assert await _names(client, "fieldSelector=metadata.name!%3Db") == ["a", "c"]
    other = await client.get(
        "/api/v1/configmaps?fieldSelector=metadata.namespace%3Dkube-node-lease")
    assert other.json["items"] == []


async def test_unsupported_field_selector_is_400_with_upstream_message(client: Client) -> None:
    reply = await client.get(f"{CM}?fieldSelector=spec.foo%3D1")
    assert reply.status == 400
    assert reply.json["message"] == ('"spec.foo" is not a known field selector: only '
                                     '"metadata.name", "metadata.namespace"')


async def test_bad_label_selector_is_400(client: Client) -> None:
    reply = await client.get(f"{CM}?labelSelector=app+in+web")
    assert reply.status == 400
    assert reply.json["message"].startswith("unable to parse requirement")


async def test_pagination_follows_continue_tokens_to_the_end(client: Client) -> None:
    await _seed(client)
    seen: list[str] = []
    token = ""
    pages = 0
    while True:
        query = "limit=1" + (f"&continue={token}" if token else "")
        body = (await client.get(f"{CM}?{query}")).json
        seen += [i["metadata"]["name"] for i in body["items"]]
        pages += 1
        token = body["metadata"].get("continue", "")
        if not token:
            break
    assert seen == ["a", "b", "c"] and pages == 3


async def test_continue_pages_show_the_first_page_revision(client: Client) -> None:
    await _seed(client)
    first = (await client.get(f"{CM}?limit=2")).json
    await client.post(CM, configmap("b2"))  # sorts between b and c, after the snapshot
    rest = (await client.get(f"{CM}?limit=2&continue={first['metadata']['continue']}")).json
    assert [i["metadata"]["name"] for i in rest["items"]] == ["c"]
    assert rest["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


async def test_garbage_continue_token_is_400(client: Client) -> None:
    reply = await client.get(f"{CM}?limit=1&continue=%21%21%21")
    assert reply.status == 400


async def test_all_namespaces_list(client: Client) -> None:
    await client.post(CM, configmap("here"))
    await client.post("/api/v1/namespaces/kube-public/configmaps", configmap("there"))
    body = (await client.get("/api/v1/configmaps")).json
    # The apiserver's own extension-apiserver-authentication ConfigMap is there too.
    assert {(i["metadata"]["namespace"], i["metadata"]["name"]) for i in body["items"]} == {
        ("default", "here"), ("kube-public", "there"),
        ("kube-system", "extension-apiserver-authentication")}


async def test_table_list_has_columns_rows_and_partial_metadata(client: Client) -> None:
    await _seed(client)
    reply = await client.get(CM, headers={"Accept": TABLE})
    body = reply.json
    assert body["kind"] == "Table" and body["apiVersion"] == "meta.k8s.io/v1"
    names = [c["name"] for c in body["columnDefinitions"]]
    assert names[0] == "Name"
    row = body["rows"][0]
    assert row["cells"][0] == "a"
    assert row["object"]["kind"] == "PartialObjectMetadata"
    assert row["object"]["metadata"]["labels"] == {"app": "web", "tier": "1"}


async def test_table_include_object_none_and_object(client: Client) -> None:
    await _seed(client)
    none = (await client.get(f"{CM}?includeObject=None", headers={"Accept": TABLE})).json
    assert "object" not in none["rows"][0]
    full = (await client.get(f"{CM}?includeObject=Object", headers={"Accept": TABLE})).json
    assert full["rows"][0]["object"]["kind"] == "ConfigMap"


async def test_table_get_of_one_object(client: Client) -> None:
    reply = await client.get("/api/v1/namespaces/default", headers={"Accept": TABLE})
    body = reply.json
    assert body["kind"] == "Table" and len(body["rows"]) == 1
    assert body["rows"][0]["cells"][0] == "default"


async def test_list_with_resource_version_zero_is_served(client: Client) -> None:
    await _seed(client)
    assert await _names(client, "resourceVersion=0&limit=500") == ["a", "b", "c"]


async def test_exact_resource_version_list_reads_the_past(client: Client) -> None:
    await client.post(CM, configmap("early"))
    rv = (await client.get(CM)).json["metadata"]["resourceVersion"]
    await client.post(CM, configmap("late"))
    old = await _names(client, f"resourceVersion={rv}&resourceVersionMatch=Exact")
    assert old == ["early"]


async def test_partial_object_metadata_list_and_get(client: Client) -> None:
    await _seed(client)
    accept = {"Accept": "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
                        "application/json"}
    body = (await client.get(CM, headers=accept)).json
    assert body["kind"] == "PartialObjectMetadataList"
    assert body["items"][0] == {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                "metadata": body["items"][0]["metadata"]}
    assert "data" not in body["items"][0]
    one = (await client.get(f"{CM}/a", headers={
        "Accept": "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"})).json
    assert one["kind"] == "PartialObjectMetadata" and one["metadata"]["name"] == "a"


async def test_remaining_item_count_only_without_selectors(client: Client) -> None:
    await _seed(client)
    assert (await client.get(f"{CM}?limit=1")).json["metadata"]["remainingItemCount"] == 2
    selected = (await client.get(f"{CM}?limit=1&labelSelector=tier")).json
    assert "remainingItemCount" not in selected["metadata"]
