"""lightkube (+ lightkube-models 1.37) on ResourceClaims and DeviceClasses: typed CRUD,
the status subresource, watch, every patch type, 409s, chunked lists, and the async
client. lightkube only raises ApiError when an error's Content-Type is exactly
`application/json`, so every `pytest.raises(ApiError)` here also checks that."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("lightkube", reason="lightkube is not installed (test extra)")

from client_claims import CONFLICT_MESSAGE, allocation, claim
from lightkube import ApiError, AsyncClient, Client
from lightkube.config.kubeconfig import KubeConfig
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.models.resource_v1 import DeviceClassSpec
from lightkube.resources.resource_v1 import (
    DeviceClass,
    ResourceClaim,
    ResourceClaimStatus,
)
from lightkube.types import PatchType

from draemu.apiserver.server.lifecycle import APIServer

pytestmark = pytest.mark.e2e

NS = "default"


@pytest.fixture(scope="module")
def kube(module_apiserver: APIServer) -> Iterator[Client]:
    config = KubeConfig.from_file(module_apiserver.kubeconfig_path)
    kube = Client(config=config, field_manager="lightkube-test")
    yield kube
    kube.close()


def _claim(name: str, labels: dict[str, str] | None = None) -> ResourceClaim:
    return ResourceClaim.from_dict(claim(name, labels))


def test_claim_crud(kube: Client) -> None:
    created = kube.create(_claim("lk-crud"), namespace=NS)
    assert created.metadata.uid and created.spec.devices.requests[0].exactly.count == 1
    got = kube.get(ResourceClaim, "lk-crud", namespace=NS)
    got.metadata.labels = {"stage": "replaced"}
    replaced = kube.replace(got)
    assert replaced.metadata.labels == {"stage": "replaced"}
    assert "lk-crud" in [c.metadata.name for c in kube.list(ResourceClaim, namespace="*")]
    kube.delete(ResourceClaim, "lk-crud", namespace=NS)
    with pytest.raises(ApiError) as e:
        kube.get(ResourceClaim, "lk-crud", namespace=NS)
    assert (e.value.status.code, e.value.status.reason) == (404, "NotFound")


def test_cluster_scoped_device_class_crud(kube: Client) -> None:
    cls = DeviceClass(metadata=ObjectMeta(name="lk.example.com"),
                      spec=DeviceClassSpec(selectors=[
                          {"cel": {"expression": 'device.driver == "lk.example.com"'}}]))
    created = kube.create(cls)
    assert created.spec.selectors[0].cel.expression == 'device.driver == "lk.example.com"'
    assert kube.get(DeviceClass, "lk.example.com").metadata.uid == created.metadata.uid
    kube.delete(DeviceClass, "lk.example.com")
    assert "lk.example.com" not in [c.metadata.name for c in kube.list(DeviceClass)]


def test_status_subresource_replace(kube: Client) -> None:
    created = kube.create(_claim("lk-status"), namespace=NS)
    with_status = ResourceClaimStatus.from_dict(
        {**created.to_dict(), "status": {"allocation": allocation("node-2")}})
    updated = kube.replace(with_status, "lk-status", namespace=NS)
    assert updated.status.allocation.devices.results[0].pool == "node-2"
    # The main resource ignores status: a plain replace cannot drop the allocation.
    main = ResourceClaim.from_dict({**updated.to_dict(), "status": None})
    assert kube.replace(main).status.allocation is not None


def test_watch_from_a_resource_version(kube: Client) -> None:
    listed = kube.list(ResourceClaim, namespace=NS)
    list(listed)  # lightkube knows the list's resourceVersion once it was read
    rv = listed.resourceVersion
    kube.create(_claim("lk-watch"), namespace=NS)
    kube.patch(ResourceClaim, "lk-watch", {"metadata": {"labels": {"a": "1"}}}, namespace=NS)
    kube.delete(ResourceClaim, "lk-watch", namespace=NS)
    seen: list[str] = []
    for event, obj in kube.watch(ResourceClaim, namespace=NS, resource_version=rv,
                                 server_timeout=10):
        if obj.metadata.name == "lk-watch":
            seen.append(event)
            if event == "DELETED":
                break
    assert seen == ["ADDED", "MODIFIED", "DELETED"]


def test_every_patch_type(kube: Client) -> None:
    kube.create(_claim("lk-patch", {"a": "1"}), namespace=NS)

    def patch(body: object, kind: PatchType, **kw: object) -> dict[str, str]:
        obj = kube.patch(ResourceClaim, "lk-patch", body, namespace=NS, patch_type=kind, **kw)
        return obj.metadata.labels

    assert patch({"metadata": {"labels": {"b": "2"}}}, PatchType.STRATEGIC) == {"a": "1", "b": "2"}
    assert patch({"metadata": {"labels": {"a": None}}}, PatchType.MERGE) == {"b": "2"}
    assert patch([{"op": "add", "path": "/metadata/labels/c", "value": "3"}],
                 PatchType.JSON) == {"b": "2", "c": "3"}
    # An apply configuration with only what this manager cares about: the labels.
    applied = kube.patch(ResourceClaim, "lk-patch",
                         {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                          "metadata": {"name": "lk-patch", "labels": {"d": "4"}}},
                         namespace=NS, patch_type=PatchType.APPLY, field_manager="lk-apply")
    assert applied.metadata.labels == {"b": "2", "c": "3", "d": "4"}
    managers = {m.manager: m.operation for m in applied.metadata.managedFields}
    assert managers == {"lightkube-test": "Update", "lk-apply": "Apply"}


def test_replace_with_stale_resource_version_is_409_conflict(kube: Client) -> None:
    stale = kube.create(_claim("lk-stale"), namespace=NS)
    kube.patch(ResourceClaim, "lk-stale", {"metadata": {"labels": {"a": "1"}}}, namespace=NS)
    with pytest.raises(ApiError) as e:
        kube.replace(stale)
    assert (e.value.status.code, e.value.status.reason) == (409, "Conflict")
    assert e.value.status.message == CONFLICT_MESSAGE.format(name="lk-stale")


def test_apply_conflict_is_409_until_forced(kube: Client) -> None:
    kube.apply(_claim("lk-ssa", {"owner": "one"}), namespace=NS, field_manager="one")
    with pytest.raises(ApiError) as e:
        kube.apply(_claim("lk-ssa", {"owner": "two"}), namespace=NS, field_manager="two")
    assert (e.value.status.code, e.value.status.reason) == (409, "Conflict")
    assert e.value.status.details.causes[0].field == ".metadata.labels.owner"
    forced = kube.apply(_claim("lk-ssa", {"owner": "two"}), namespace=NS, field_manager="two",
                        force=True)
    assert forced.metadata.labels == {"owner": "two"}


def test_chunked_list_follows_continue(kube: Client) -> None:
    names = [f"lk-chunk-{i}" for i in range(5)]
    for name in names:
        kube.create(_claim(name, {"set": "lk-chunk"}), namespace=NS)
    listed = kube.list(ResourceClaim, namespace=NS, chunk_size=2, labels={"set": "lk-chunk"})
    assert [c.metadata.name for c in listed] == names


async def test_async_client_create_list_delete(apiserver: APIServer) -> None:
    kube = AsyncClient(config=KubeConfig.from_file(apiserver.kubeconfig_path))
    try:
        await kube.create(_claim("lk-async"), namespace=NS)
        names = [c.metadata.name async for c in kube.list(ResourceClaim, namespace=NS)]
        assert names == ["lk-async"]
        await kube.delete(ResourceClaim, "lk-async", namespace=NS)
        with pytest.raises(ApiError) as e:
            await kube.get(ResourceClaim, "lk-async", namespace=NS)
        assert e.value.status.code == 404
    finally:
        await kube.close()
