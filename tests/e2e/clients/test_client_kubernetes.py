"""The official Python client (kubernetes 37: OpenAPI Generator 7, strict pydantic models)
on ResourceClaims: typed CRUD, the status subresource, watch, every patch type, 409s,
pagination and the DynamicClient."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from client_claims import CONFLICT_MESSAGE, allocation, claim
from kubernetes import client, config, dynamic, watch
from kubernetes.client.rest import ApiException

from draemu.apiserver.server.lifecycle import APIServer

pytestmark = pytest.mark.e2e

NS = "default"


@pytest.fixture(scope="module")
def api_client(module_apiserver: APIServer) -> Iterator[client.ApiClient]:
    api = config.new_client_from_config(str(module_apiserver.kubeconfig_path))
    yield api
    api.close()


@pytest.fixture(scope="module")
def resource(api_client: client.ApiClient) -> client.ResourceV1Api:
    return client.ResourceV1Api(api_client)


def _typed_claim(name: str, labels: dict[str, str] | None = None
                 ) -> client.ResourceV1ResourceClaim:
    request = client.V1DeviceRequest(
        name="gpu", exactly=client.V1ExactDeviceRequest(device_class_name="gpu.example.com"))
    return client.ResourceV1ResourceClaim(
        metadata=client.V1ObjectMeta(name=name, labels=labels),
        spec=client.V1ResourceClaimSpec(devices=client.V1DeviceClaim(requests=[request])))


def _status(e: ApiException) -> dict:
    return json.loads(e.body)


def test_typed_claim_crud(resource: client.ResourceV1Api) -> None:
    created = resource.create_namespaced_resource_claim(NS, _typed_claim("k8s-crud"))
    assert created.metadata.uid
    # Defaulting reaches the typed model: a request without a mode is ExactCount of 1.
    exactly = created.spec.devices.requests[0].exactly
    assert (exactly.allocation_mode, exactly.count) == ("ExactCount", 1)
    read = resource.read_namespaced_resource_claim("k8s-crud", NS)
    read.metadata.labels = {"stage": "replaced"}
    replaced = resource.replace_namespaced_resource_claim("k8s-crud", NS, read)
    assert replaced.metadata.labels == {"stage": "replaced"}
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)
    # Like upstream's ReturnDeletedObject for claims: the answer is the deleted claim.
    deleted = resource.delete_namespaced_resource_claim("k8s-crud", NS)
    assert isinstance(deleted, client.ResourceV1ResourceClaim)
    assert deleted.metadata.uid == created.metadata.uid
    with pytest.raises(ApiException) as e:
        resource.read_namespaced_resource_claim("k8s-crud", NS)
    assert e.value.status == 404 and _status(e.value)["reason"] == "NotFound"


def test_status_subresource_round_trips_an_allocation(resource: client.ResourceV1Api) -> None:
    created = resource.create_namespaced_resource_claim(NS, _typed_claim("k8s-status"))
    updated = resource.patch_namespaced_resource_claim_status(
        "k8s-status", NS, {"status": {"allocation": allocation()}},
        _content_type="application/merge-patch+json")
    result = updated.status.allocation.devices.results[0]
    assert (result.driver, result.pool, result.device) == ("gpu.example.com", "node-1", "gpu-0")
    # A status write leaves the spec and its generation alone.
    assert updated.metadata.generation == created.metadata.generation


def test_typed_claim_watch_with_return_type_workaround(resource: client.ResourceV1Api) -> None:
    # Upstream bug (kubernetes 37): Watch() derives the model name from the list method's
    # return type ("V1ResourceClaimList" -> "V1ResourceClaim"), but the claim model is
    # named ResourceV1ResourceClaim, so a plain Watch() raises AttributeError before any
    # request. The documented workaround names the model explicitly.
    rv = resource.list_namespaced_resource_claim(NS).metadata.resource_version
    resource.create_namespaced_resource_claim(NS, _typed_claim("k8s-watch"))
    resource.patch_namespaced_resource_claim("k8s-watch", NS, {"metadata": {"labels": {"a": "1"}}})
    resource.delete_namespaced_resource_claim("k8s-watch", NS)
    seen: list[str] = []
    w = watch.Watch(return_type="ResourceV1ResourceClaim")
    for event in w.stream(resource.list_namespaced_resource_claim, NS, resource_version=rv,
                          allow_watch_bookmarks=True, timeout_seconds=10):
        assert isinstance(event["object"], client.ResourceV1ResourceClaim)
        if event["object"].metadata.name == "k8s-watch":
            seen.append(event["type"])
            if event["type"] == "DELETED":
                w.stop()
    assert seen == ["ADDED", "MODIFIED", "DELETED"]


def test_every_patch_type(resource: client.ResourceV1Api) -> None:
    resource.create_namespaced_resource_claim(NS, _typed_claim("k8s-patch", {"a": "1"}))
    # A dict body is sent as a strategic merge patch.
    smp = resource.patch_namespaced_resource_claim(
        "k8s-patch", NS, {"metadata": {"labels": {"b": "2"}}})
    assert smp.metadata.labels == {"a": "1", "b": "2"}
    # A list body is sent as a JSON patch.
    jp = resource.patch_namespaced_resource_claim(
        "k8s-patch", NS, [{"op": "remove", "path": "/metadata/labels/a"}])
    assert jp.metadata.labels == {"b": "2"}
    merge = resource.patch_namespaced_resource_claim(
        "k8s-patch", NS, {"metadata": {"labels": {"b": None, "c": "3"}}},
        _content_type="application/merge-patch+json")
    assert merge.metadata.labels == {"c": "3"}
    applied = resource.patch_namespaced_resource_claim(
        "k8s-patch", NS, {**claim("k8s-patch"), "metadata": {"name": "k8s-patch",
                                                            "labels": {"d": "4"}}},
        field_manager="k8s-test", force=True, _content_type="application/apply-patch+yaml")
    assert applied.metadata.labels == {"c": "3", "d": "4"}
    managers = {m.manager: m.operation for m in applied.metadata.managed_fields}
    assert managers["k8s-test"] == "Apply"


def test_replace_with_stale_resource_version_is_409_conflict(
        resource: client.ResourceV1Api) -> None:
    stale = resource.create_namespaced_resource_claim(NS, _typed_claim("k8s-stale"))
    resource.patch_namespaced_resource_claim("k8s-stale", NS, {"metadata": {"labels": {"a": "1"}}})
    stale.metadata.labels = {"a": "2"}
    with pytest.raises(ApiException) as e:
        resource.replace_namespaced_resource_claim("k8s-stale", NS, stale)
    status = _status(e.value)
    assert (e.value.status, status["reason"]) == (409, "Conflict")
    assert status["message"] == CONFLICT_MESSAGE.format(name="k8s-stale")


def test_duplicate_create_is_409_already_exists(resource: client.ResourceV1Api) -> None:
    resource.create_namespaced_resource_claim(NS, _typed_claim("k8s-dup"))
    with pytest.raises(ApiException) as e:
        resource.create_namespaced_resource_claim(NS, _typed_claim("k8s-dup"))
    status = _status(e.value)
    assert (e.value.status, status["reason"]) == (409, "AlreadyExists")
    assert status["details"] == {"name": "k8s-dup", "group": "resource.k8s.io",
                                 "kind": "resourceclaims"}


def test_server_side_apply_conflict_is_409_until_forced(resource: client.ResourceV1Api) -> None:
    def apply(manager: str, value: str, force: bool) -> client.ResourceV1ResourceClaim:
        body = claim("k8s-ssa", {"owner": value})
        return resource.patch_namespaced_resource_claim(
            "k8s-ssa", NS, body, field_manager=manager, force=force,
            _content_type="application/apply-patch+yaml")

    apply("first", "first", force=False)
    with pytest.raises(ApiException) as e:
        apply("second", "second", force=False)
    status = _status(e.value)
    assert (e.value.status, status["reason"]) == (409, "Conflict")
    assert {c["field"] for c in status["details"]["causes"]} >= {".metadata.labels.owner"}
    assert apply("second", "second", force=True).metadata.labels == {"owner": "second"}


def test_list_pages_with_limit_and_continue(resource: client.ResourceV1Api) -> None:
    # Cluster-scoped DeviceClasses, which no other test here creates: remainingItemCount is
    # only given for lists without selectors, so the list must hold just these.
    names = [f"k8s-page-{i}.example.com" for i in range(5)]
    for name in names:
        resource.create_device_class(client.V1DeviceClass(
            metadata=client.V1ObjectMeta(name=name), spec=client.V1DeviceClassSpec()))
    seen: list[str] = []
    remaining: list[int | None] = []
    token = None
    while True:
        page = resource.list_device_class(limit=2, _continue=token)
        seen += [c.metadata.name for c in page.items]
        remaining.append(page.metadata.remaining_item_count)
        token = page.metadata._continue
        if not token:
            break
    assert seen == names
    assert remaining == [3, 1, None]


def test_label_selected_pages_cover_every_match(resource: client.ResourceV1Api) -> None:
    names = [f"k8s-page-{i}" for i in range(5)]
    for name in names:
        resource.create_namespaced_resource_claim(NS, _typed_claim(name, {"set": "k8s-page"}))
    resource.create_namespaced_resource_claim(NS, _typed_claim("k8s-page-other"))
    seen: list[str] = []
    token = None
    while True:
        page = resource.list_namespaced_resource_claim(
            NS, label_selector="set=k8s-page", limit=2, _continue=token)
        seen += [c.metadata.name for c in page.items]
        token = page.metadata._continue
        if not token:
            break
    assert seen == names


def test_dynamic_client_lists_and_applies_claims(api_client: client.ApiClient) -> None:
    dyn = dynamic.DynamicClient(api_client)
    claims = dyn.resources.get(api_version="resource.k8s.io/v1", kind="ResourceClaim")
    dyn.server_side_apply(claims, body=claim("k8s-dynamic"), namespace=NS,
                          field_manager="k8s-dynamic")
    names = [item.metadata.name for item in claims.get(namespace=NS).items]
    assert "k8s-dynamic" in names
    patched = claims.patch(name="k8s-dynamic", namespace=NS,
                           body={"metadata": {"labels": {"via": "dynamic"}}},
                           content_type="application/merge-patch+json")
    assert patched.to_dict()["metadata"]["labels"] == {"via": "dynamic"}


def test_delete_collection_by_label(resource: client.ResourceV1Api) -> None:
    for i in range(3):
        resource.create_namespaced_resource_claim(NS, _typed_claim(f"k8s-bulk-{i}",
                                                                   {"set": "k8s-bulk"}))
    resource.create_namespaced_resource_claim(NS, _typed_claim("k8s-bulk-kept"))
    resource.delete_collection_namespaced_resource_claim(NS, label_selector="set=k8s-bulk")
    names = [c.metadata.name for c in resource.list_namespaced_resource_claim(NS).items]
    assert "k8s-bulk-kept" in names
    assert not [n for n in names if n.startswith("k8s-bulk-") and n != "k8s-bulk-kept"]


def test_server_dry_run_create_stores_nothing(resource: client.ResourceV1Api) -> None:
    would_be = resource.create_namespaced_resource_claim(NS, _typed_claim("k8s-dry"),
                                                         dry_run="All")
    assert would_be.spec.devices.requests[0].exactly.count == 1
    with pytest.raises(ApiException) as e:
        resource.read_namespaced_resource_claim("k8s-dry", NS)
    assert e.value.status == 404
