"""kubernetes_asyncio (36, the older generator: `watch=True` with a capital T, lenient
models) on ResourceClaims: CRUD, watch, every patch type, 409s and pagination."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from client_claims import CONFLICT_MESSAGE, claim
from kubernetes_asyncio import client, config, watch
from kubernetes_asyncio.client.rest import ApiException

from draemu.apiserver.server.lifecycle import APIServer

pytestmark = pytest.mark.e2e

NS = "default"


@pytest_asyncio.fixture
async def api_client(apiserver: APIServer) -> AsyncIterator[client.ApiClient]:
    api = await config.new_client_from_config(config_file=str(apiserver.kubeconfig_path))
    async with api:
        yield api


@pytest.fixture
def resource(api_client: client.ApiClient) -> client.ResourceV1Api:
    return client.ResourceV1Api(api_client)


def _status(e: ApiException) -> dict:
    return json.loads(e.body)


async def test_claim_crud(resource: client.ResourceV1Api) -> None:
    created = await resource.create_namespaced_resource_claim(NS, claim("aio-crud"))
    assert isinstance(created, client.ResourceV1ResourceClaim)
    read = await resource.read_namespaced_resource_claim("aio-crud", NS)
    assert read.spec.devices.requests[0].exactly.device_class_name == "gpu.example.com"
    read.metadata.labels = {"stage": "replaced"}
    replaced = await resource.replace_namespaced_resource_claim("aio-crud", NS, read)
    assert replaced.metadata.labels == {"stage": "replaced"}
    listed = await resource.list_resource_claim_for_all_namespaces()
    assert [c.metadata.name for c in listed.items] == ["aio-crud"]
    await resource.delete_namespaced_resource_claim("aio-crud", NS)
    with pytest.raises(ApiException) as e:
        await resource.read_namespaced_resource_claim("aio-crud", NS)
    assert e.value.status == 404


async def test_typed_claim_watch_with_return_type_workaround(
        resource: client.ResourceV1Api) -> None:
    # Same upstream bug as the official client: Watch() looks for a model named
    # V1ResourceClaim, which does not exist (it is ResourceV1ResourceClaim). Naming the
    # return type is the documented workaround. This client sends `watch=True`.
    rv = (await resource.list_namespaced_resource_claim(NS)).metadata.resource_version
    await resource.create_namespaced_resource_claim(NS, claim("aio-watch"))
    await resource.patch_namespaced_resource_claim(
        "aio-watch", NS, {"metadata": {"labels": {"a": "1"}}})
    await resource.delete_namespaced_resource_claim("aio-watch", NS)
    seen: list[str] = []
    w = watch.Watch(return_type="ResourceV1ResourceClaim")
    async with w.stream(resource.list_namespaced_resource_claim, NS, resource_version=rv,
                        allow_watch_bookmarks=True, timeout_seconds=10) as stream:
        async for event in stream:
            assert isinstance(event["object"], client.ResourceV1ResourceClaim)
            seen.append(event["type"])
            if event["type"] == "DELETED":
                break
    assert seen == ["ADDED", "MODIFIED", "DELETED"]


async def test_every_patch_type(resource: client.ResourceV1Api) -> None:
    await resource.create_namespaced_resource_claim(NS, claim("aio-patch", {"a": "1"}))
    smp = await resource.patch_namespaced_resource_claim(
        "aio-patch", NS, {"metadata": {"labels": {"b": "2"}}})
    assert smp.metadata.labels == {"a": "1", "b": "2"}
    jp = await resource.patch_namespaced_resource_claim(
        "aio-patch", NS, [{"op": "replace", "path": "/metadata/labels/a", "value": "x"}])
    assert jp.metadata.labels == {"a": "x", "b": "2"}
    merge = await resource.patch_namespaced_resource_claim(
        "aio-patch", NS, {"metadata": {"labels": {"a": None}}},
        _content_type="application/merge-patch+json")
    assert merge.metadata.labels == {"b": "2"}
    # This client sends `force=True` (capital T): the server parses it like Go's ParseBool.
    applied = await resource.patch_namespaced_resource_claim(
        "aio-patch", NS, claim("aio-patch", {"c": "3"}), field_manager="aio", force=True,
        _content_type="application/apply-patch+yaml")
    assert applied.metadata.labels == {"b": "2", "c": "3"}


async def test_failed_json_patch_test_op_changes_nothing(resource: client.ResourceV1Api) -> None:
    await resource.create_namespaced_resource_claim(NS, claim("aio-jp", {"a": "1"}))
    with pytest.raises(ApiException) as e:
        await resource.patch_namespaced_resource_claim("aio-jp", NS, [
            {"op": "add", "path": "/metadata/labels/b", "value": "2"},
            {"op": "test", "path": "/metadata/labels/a", "value": "other"}])
    assert e.value.status == 422
    read = await resource.read_namespaced_resource_claim("aio-jp", NS)
    assert read.metadata.labels == {"a": "1"}


async def test_patch_with_stale_resource_version_is_409_conflict(
        resource: client.ResourceV1Api) -> None:
    created = await resource.create_namespaced_resource_claim(NS, claim("aio-stale"))
    await resource.patch_namespaced_resource_claim(
        "aio-stale", NS, {"metadata": {"labels": {"a": "1"}}})
    stale = {"metadata": {"resourceVersion": created.metadata.resource_version,
                          "labels": {"a": "2"}}}
    with pytest.raises(ApiException) as e:
        await resource.patch_namespaced_resource_claim(
            "aio-stale", NS, stale, _content_type="application/merge-patch+json")
    status = _status(e.value)
    assert (e.value.status, status["reason"]) == (409, "Conflict")
    assert status["message"] == CONFLICT_MESSAGE.format(name="aio-stale")


async def test_list_pages_with_limit_and_continue(resource: client.ResourceV1Api) -> None:
    names = [f"aio-page-{i}" for i in range(5)]
    for name in names:
        await resource.create_namespaced_resource_claim(NS, claim(name))
    first = await resource.list_namespaced_resource_claim(NS, limit=3)
    rest = await resource.list_namespaced_resource_claim(NS, limit=3,
                                                         _continue=first.metadata._continue)
    assert [c.metadata.name for c in first.items + rest.items] == names
    assert first.metadata.remaining_item_count == 2
    assert not rest.metadata._continue
    # Every page is read at the first page's revision.
    assert rest.metadata.resource_version == first.metadata.resource_version
