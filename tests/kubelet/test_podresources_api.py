"""The kubelet's PodResources API end to end: apiserver, an emulated kubelet with the
built-in GPU driver, and a gRPC client on the kubelet's pod-resources socket."""

from __future__ import annotations

import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from podresources_client import PodResourcesClient

from draemu.client import Client
from draemu.cmd.nodes import Node, node_kubeconfig, start_node
from draemu.cmd.testing.e2e import allocate, create_claim, create_pod, eventually
from draemu.drivers.presets import DriverSpec, NodeSpec
from draemu.kubeletapi import podresources as pr
from draemu.kubeletapi.rpc import unix_target

pytestmark = pytest.mark.unit

GPU = DriverSpec("gpu.example.com", "gpu", {"gpus": [{"count": 2, "memory": "80Gi"}]})
CDI_KIND = "k8s.gpu.example.com/gpu"


@pytest.fixture
async def client(apiserver) -> AsyncIterator[Client]:
    async with Client.from_kubeconfig(str(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def node(apiserver, tmp_path) -> AsyncIterator[Node]:
    path = node_kubeconfig(apiserver, tmp_path, "node-1")
    started = await start_node(NodeSpec("node-1", drivers=[GPU]), kubeconfig=path,
                               data_dir=tmp_path, server=apiserver)
    yield started
    await started.stop()


@pytest.fixture
async def podresources(node) -> AsyncIterator[PodResourcesClient]:
    sock = node.kubelet.podresources.path
    async with grpc.aio.insecure_channel(unix_target(str(sock))) as channel:
        yield PodResourcesClient(channel)


async def running(client: Client, name: str) -> dict[str, Any] | None:
    pod = await client.get("v1", "pods", name, "default")
    return pod if pod["status"].get("phase") == "Running" else None


async def running_with_gpu(client: Client, pod: str, claim: str, device: str) -> dict:
    """A running pod whose container `ctr` uses claim `claim`, allocated `device`."""
    created = await create_claim(client, claim)
    got = await create_pod(client, pod, "node-1", claim)
    await allocate(client, created, got, "gpu.example.com", "node-1", device)
    await eventually(lambda: running(client, pod))
    return created


def listed(response: Any) -> dict[str, Any]:
    return {f"{p.namespace}/{p.name}": p for p in response.pod_resources}


async def test_the_socket_is_served_under_the_kubelet_root(node):
    sock = node.root / "pod-resources" / "kubelet.sock"
    assert stat.S_ISSOCK(sock.stat().st_mode)
    assert Path(node.kubelet.podresources.path).resolve() == sock.resolve()


async def test_list_shows_the_claims_devices_with_the_drivers_cdi_ids(client, podresources):
    claim = await running_with_gpu(client, "p1", "c1", "gpu-1")
    pod = listed(await podresources.list(pr.ListPodResourcesRequest()))["default/p1"]
    (container,) = pod.containers
    assert container.name == "ctr"
    (dynamic,) = container.dynamic_resources
    assert (dynamic.claim_name, dynamic.claim_namespace) == ("c1", "default")
    (device,) = dynamic.claim_resources
    assert (device.driver_name, device.pool_name, device.device_name) == (
        "gpu.example.com", "node-1", "gpu-1")
    uid = claim["metadata"]["uid"]
    # The driver's own CDI devices, then the mount of the device metadata file (KEP-5304).
    assert [c.name for c in device.cdi_devices] == [
        f"{CDI_KIND}=common", f"{CDI_KIND}={uid}-gpu-1", f"gpu.example.com/metadata={uid}_gpu"]
    assert not device.HasField("share_id")
    assert (list(container.devices), list(container.cpu_ids), list(container.memory)) == (
        [], [], [])


async def test_get_returns_the_one_pod_asked_for(client, podresources):
    await running_with_gpu(client, "p1", "c1", "gpu-0")
    await running_with_gpu(client, "p2", "c2", "gpu-1")
    got = await podresources.get(pr.GetPodResourcesRequest(pod_name="p2",
                                                           pod_namespace="default"))
    assert (got.pod_resources.name, got.pod_resources.namespace) == ("p2", "default")
    (dynamic,) = got.pod_resources.containers[0].dynamic_resources
    assert dynamic.claim_name == "c2"
    assert dynamic.claim_resources[0].device_name == "gpu-1"


async def test_get_of_an_unknown_pod_fails_with_upstreams_message(node, podresources):
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await podresources.get(pr.GetPodResourcesRequest(pod_name="nope",
                                                         pod_namespace="default"))
    assert caught.value.code() == grpc.StatusCode.UNKNOWN
    assert caught.value.details() == "pod nope in namespace default not found"


async def test_a_container_without_claims_reports_no_dynamic_resources(client, podresources):
    claim = await create_claim(client, "c1")
    pod = await create_pod(client, "p1", "node-1", "c1", containers=[
        {"name": "gpu-user", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}},
        {"name": "plain", "image": "busybox"}])
    await allocate(client, claim, pod, "gpu.example.com", "node-1", "gpu-0")
    await eventually(lambda: running(client, "p1"))
    got = await podresources.get(pr.GetPodResourcesRequest(pod_name="p1",
                                                           pod_namespace="default"))
    by_name = {c.name: c for c in got.pod_resources.containers}
    assert list(by_name) == ["gpu-user", "plain"]
    assert len(by_name["gpu-user"].dynamic_resources) == 1
    assert list(by_name["plain"].dynamic_resources) == []


async def test_sidecars_come_first_and_plain_init_containers_are_left_out(client, node,
                                                                          podresources):
    await client.create("v1", "pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1", "namespace": "default"},
        "spec": {"nodeName": "node-1", "containers": [{"name": "main", "image": "busybox"}],
                 "initContainers": [
                     {"name": "setup", "image": "busybox"},
                     {"name": "proxy", "image": "busybox", "restartPolicy": "Always"}]}},
        "default")
    await eventually(lambda: running(client, "p1"))
    got = await podresources.get(pr.GetPodResourcesRequest(pod_name="p1",
                                                           pod_namespace="default"))
    assert [c.name for c in got.pod_resources.containers] == ["proxy", "main"]


async def test_a_deleted_pod_disappears_from_the_list(client, podresources):
    await running_with_gpu(client, "p1", "c1", "gpu-0")
    assert "default/p1" in listed(await podresources.list(pr.ListPodResourcesRequest()))
    await client.delete("v1", "pods", "p1", "default")

    async def gone() -> bool:
        return "default/p1" not in listed(await podresources.list(pr.ListPodResourcesRequest()))

    await eventually(gone)


async def test_allocatable_resources_are_empty_without_device_plugins_or_cpu_manager(
        podresources):
    got = await podresources.get_allocatable_resources(pr.AllocatableResourcesRequest())
    assert got == pr.AllocatableResourcesResponse()
