"""The official Python client (generated from the 1.37 API) against draemu's DRA API:
typed models round-trip, defaults come back, /status works, and errors are Status 422."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from draemu.cmd.testing.apiserver import ServerThread

pytestmark = pytest.mark.unit

client = pytest.importorskip("kubernetes.client")
config = pytest.importorskip("kubernetes.config")


@pytest.fixture(scope="module")
def api_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    thread = ServerThread(tmp_path_factory.mktemp("apiserver"))
    server = thread.start()
    api = config.new_client_from_config(str(Path(server.kubeconfig_path)))
    yield api
    api.close()
    thread.stop()


def gpu_claim(name: str, request_name: str = "gpu") -> Any:
    return client.ResourceV1ResourceClaim(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1ResourceClaimSpec(devices=client.V1DeviceClaim(requests=[
            client.V1DeviceRequest(name=request_name, exactly=client.V1ExactDeviceRequest(
                device_class_name="gpu.example.com"))])))


def test_created_claim_comes_back_defaulted(api_client: Any) -> None:
    made = client.ResourceV1Api(api_client).create_namespaced_resource_claim(
        "default", gpu_claim("typed"))
    exactly = made.spec.devices.requests[0].exactly
    assert (exactly.allocation_mode, exactly.count) == ("ExactCount", 1)


def test_claim_reads_back_through_v1beta1_models(api_client: Any) -> None:
    client.ResourceV1Api(api_client).create_namespaced_resource_claim("default",
                                                                      gpu_claim("beta"))
    read = client.ResourceV1beta1Api(api_client).read_namespaced_resource_claim("beta",
                                                                                "default")
    assert read.spec.devices.requests[0].device_class_name == "gpu.example.com"


def test_status_replace_sets_the_allocation(api_client: Any) -> None:
    api = client.ResourceV1Api(api_client)
    claim = api.create_namespaced_resource_claim("default", gpu_claim("alloc"))
    claim.status = client.V1ResourceClaimStatus(allocation=client.V1AllocationResult(
        devices=client.V1DeviceAllocationResult(results=[
            client.V1DeviceRequestAllocationResult(request="gpu", driver="gpu.example.com",
                                                   pool="node-1", device="gpu-0")])))
    claim.metadata.labels = {"ignored": "on-status"}
    updated = api.replace_namespaced_resource_claim_status("alloc", "default", claim)
    assert updated.status.allocation.devices.results[0].device == "gpu-0"
    assert updated.metadata.labels is None


def test_invalid_claim_is_a_422_status(api_client: Any) -> None:
    with pytest.raises(client.ApiException) as e:
        client.ResourceV1Api(api_client).create_namespaced_resource_claim(
            "default", gpu_claim("bad", request_name="GPU"))
    body = json.loads(e.value.body)
    assert (e.value.status, body["reason"], body["details"]["causes"][0]["field"]) == (
        422, "Invalid", "spec.devices.requests[0].name")


def test_slices_list_by_field_selector(api_client: Any) -> None:
    api = client.ResourceV1Api(api_client)
    for node in ("n1", "n2"):
        api.create_resource_slice(client.V1ResourceSlice(
            metadata=client.V1ObjectMeta(name=f"slice-{node}"),
            spec=client.V1ResourceSliceSpec(
                driver="gpu.example.com", node_name=node,
                pool=client.V1ResourcePool(name=node, generation=0, resource_slice_count=1),
                devices=[client.V1Device(name="gpu-0", attributes={
                    "model": client.V1DeviceAttribute(string="A100")})])))
    listed = api.list_resource_slice(field_selector="spec.nodeName=n2")
    assert [s.metadata.name for s in listed.items] == ["slice-n2"]


def test_slice_generation_starts_at_one_and_counts_spec_changes(api_client: Any) -> None:
    api = client.ResourceV1Api(api_client)
    made = api.create_resource_slice(client.V1ResourceSlice(
        metadata=client.V1ObjectMeta(name="generations"),
        spec=client.V1ResourceSliceSpec(
            driver="gpu.example.com", all_nodes=True,
            pool=client.V1ResourcePool(name="shared", generation=0, resource_slice_count=1))))
    assert made.metadata.generation == 1
    made.metadata.labels = {"only": "metadata"}
    assert api.replace_resource_slice("generations", made).metadata.generation == 1
    made = api.read_resource_slice("generations")
    made.spec.pool.generation = 1
    assert api.replace_resource_slice("generations", made).metadata.generation == 2
