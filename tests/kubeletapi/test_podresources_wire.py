"""The PodResources v1 messages against upstream's api.proto: bytes on the wire, the service
and method names."""

from __future__ import annotations

import pytest

from draemu.kubeletapi import podresources as pr

pytestmark = pytest.mark.unit


def tag(number: int, wire_type: int = 2) -> bytes:
    return bytes([number << 3 | wire_type])


def test_service_is_v1_pod_resources_lister_with_three_methods():
    assert pr.SERVICE == "v1.PodResourcesLister"
    assert (pr.LIST, pr.GET_ALLOCATABLE_RESOURCES, pr.GET) == (
        "/v1.PodResourcesLister/List", "/v1.PodResourcesLister/GetAllocatableResources",
        "/v1.PodResourcesLister/Get")


def test_get_request_has_pod_name_1_and_pod_namespace_2():
    request = pr.GetPodResourcesRequest(pod_name="p", pod_namespace="n")
    assert request.SerializeToString() == tag(1) + b"\x01p" + tag(2) + b"\x01n"


def test_claim_resource_fields_1_to_4_and_share_id_5_with_presence():
    resource = pr.ClaimResource(cdi_devices=[pr.CDIDevice(name="c")], driver_name="d",
                                pool_name="p", device_name="x", share_id="")
    assert resource.SerializeToString() == (
        tag(1) + b"\x03" + tag(1) + b"\x01c" + tag(2) + b"\x01d" + tag(3) + b"\x01p"
        + tag(4) + b"\x01x" + tag(5) + b"\x00")
    assert pr.ClaimResource().HasField("share_id") is False


def test_dynamic_resource_starts_at_field_2_after_the_removed_class_name():
    dynamic = pr.DynamicResource(claim_name="c", claim_namespace="n",
                                 claim_resources=[pr.ClaimResource(device_name="x")])
    assert dynamic.SerializeToString() == (
        tag(2) + b"\x01c" + tag(3) + b"\x01n" + tag(4) + b"\x03" + tag(4) + b"\x01x")


def test_container_resources_carry_dynamic_resources_as_field_5():
    container = pr.ContainerResources(name="ctr", cpu_ids=[3],
                                      dynamic_resources=[pr.DynamicResource(claim_name="c")])
    assert container.SerializeToString() == (
        tag(1) + b"\x03ctr" + tag(3) + b"\x01\x03" + tag(5) + b"\x03" + tag(2) + b"\x01c")


def test_pod_resources_name_namespace_containers_then_pod_level_cpus_and_memory():
    pod = pr.PodResources(name="p", namespace="n", containers=[pr.ContainerResources(name="c")],
                          cpu_ids=[1], memory=[pr.ContainerMemory(memory_type="memory")])
    assert pod.SerializeToString() == (
        tag(1) + b"\x01p" + tag(2) + b"\x01n" + tag(3) + b"\x03" + tag(1) + b"\x01c"
        + tag(4) + b"\x01\x01" + tag(5) + b"\x08" + tag(1) + b"\x06memory")


def test_container_memory_size_is_an_unsigned_64_bit_varint_with_numa_topology():
    memory = pr.ContainerMemory(memory_type="m", size=2**64 - 1,
                                topology=pr.TopologyInfo(nodes=[pr.NUMANode(ID=1)]))
    assert memory.SerializeToString() == (
        tag(1) + b"\x01m" + tag(2, 0) + b"\xff" * 9 + b"\x01"
        + tag(3) + b"\x04" + tag(1) + b"\x02" + tag(1, 0) + b"\x01")


def test_container_devices_and_allocatable_response_fields():
    devices = pr.ContainerDevices(resource_name="r", device_ids=["a"])
    assert devices.SerializeToString() == tag(1) + b"\x01r" + tag(2) + b"\x01a"
    allocatable = pr.AllocatableResourcesResponse(devices=[devices], cpu_ids=[2])
    assert allocatable.SerializeToString() == (
        tag(1) + b"\x06" + devices.SerializeToString() + tag(2) + b"\x01\x02")


def test_list_and_get_responses_wrap_pod_resources_as_field_1():
    pod = pr.PodResources(name="p")
    inner = tag(1) + b"\x03" + tag(1) + b"\x01p"
    assert pr.ListPodResourcesResponse(pod_resources=[pod]).SerializeToString() == inner
    assert pr.GetPodResourcesResponse(pod_resources=pod).SerializeToString() == inner
