"""kr8s (async API) on ResourceClaims: discovery by resource name, CRUD, the status
subresource, watch, the patch types kr8s offers (merge and JSON patch; it has no
strategic merge or server-side apply), a 409, and its fixed `limit=100` paging."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

pytest.importorskip("kr8s", reason="kr8s is not installed (test extra)")

import kr8s.asyncio
import pytest_asyncio
from client_claims import allocation, claim
from kr8s.asyncio.objects import new_class

from draemu.apiserver.server.lifecycle import APIServer

NS = "default"
# kr8s 0.20 warns that it was only tested up to Kubernetes 1.35; draemu reports 1.37.
pytestmark = [pytest.mark.e2e, pytest.mark.filterwarnings("ignore:Kubernetes version v1.37")]
ResourceClaim = new_class(kind="ResourceClaim", version="resource.k8s.io/v1", namespaced=True)


@pytest_asyncio.fixture
async def api(apiserver: APIServer) -> AsyncIterator[kr8s.asyncio.Api]:
    yield await kr8s.asyncio.api(kubeconfig=str(apiserver.kubeconfig_path))


async def _create(api: kr8s.asyncio.Api, name: str, labels: dict[str, str] | None = None
                  ) -> object:
    obj = await ResourceClaim(claim(name, labels), api=api)
    await obj.create()
    return obj


async def test_claim_crud_through_discovery(api: kr8s.asyncio.Api) -> None:
    created = await _create(api, "kr8s-crud")
    assert created.metadata.uid
    # kr8s finds the kind through legacy discovery of every advertised group-version.
    found = [c async for c in api.async_get("resourceclaims.resource.k8s.io", namespace=NS)]
    assert [c.name for c in found] == ["kr8s-crud"]
    assert found[0].spec.devices.requests[0].exactly.allocationMode == "ExactCount"
    await created.label({"stage": "labelled"})
    await created.refresh()
    assert created.labels == {"stage": "labelled"}
    await created.delete()
    assert not await created.exists()


async def test_status_subresource_patch(api: kr8s.asyncio.Api) -> None:
    created = await _create(api, "kr8s-status")
    await created.patch({"status": {"allocation": allocation()}}, subresource="status")
    assert created.status.allocation.devices.results[0].device == "gpu-0"
    # The main resource ignores status changes.
    await created.patch({"status": None})
    await created.refresh()
    assert created.status.allocation.devices.results[0].device == "gpu-0"


async def test_watch_since_a_resource_version(api: kr8s.asyncio.Api) -> None:
    created = await _create(api, "kr8s-watch")
    since = created.metadata.resourceVersion
    await created.patch({"metadata": {"labels": {"a": "1"}}})
    await created.delete()
    seen: list[str] = []

    async def consume() -> None:
        async for event, obj in api.async_watch("resourceclaims", namespace=NS,
                                                since=since):
            seen.append(f"{event} {obj.name}")
            if event == "DELETED":
                return

    await asyncio.wait_for(consume(), 15)
    assert seen == ["MODIFIED kr8s-watch", "DELETED kr8s-watch"]


async def test_merge_and_json_patches(api: kr8s.asyncio.Api) -> None:
    created = await _create(api, "kr8s-patch", {"a": "1"})
    await created.patch({"metadata": {"labels": {"a": None, "b": "2"}}})
    assert created.labels == {"b": "2"}
    await created.patch([{"op": "add", "path": "/metadata/labels/c", "value": "3"}],
                        type="json")
    assert created.labels == {"b": "2", "c": "3"}


async def test_duplicate_create_is_409_already_exists(api: kr8s.asyncio.Api) -> None:
    await _create(api, "kr8s-dup")
    with pytest.raises(kr8s.ServerError) as e:
        await _create(api, "kr8s-dup")
    assert e.value.response.status_code == 409
    assert e.value.status["reason"] == "AlreadyExists"


async def test_get_follows_continue_past_its_page_of_100(api: kr8s.asyncio.Api) -> None:
    names = {f"kr8s-page-{i:03}" for i in range(105)}
    await asyncio.gather(*(_create(api, name) for name in names))
    listed = [c.name async for c in api.async_get("resourceclaims", namespace=NS)]
    assert len(listed) == 105 and set(listed) == names
