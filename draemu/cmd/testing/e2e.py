"""Helpers for tests against a running apiserver: waiting on a condition, objects,
allocating a claim by hand as the scheduler would."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from draemu.client import ApiError, Client

RESOURCE = "resource.k8s.io/v1"


async def eventually(check: Callable[[], Awaitable[Any]], timeout: float = 30.0,
                     interval: float = 0.05) -> Any:
    """Poll until `check` returns something truthy; its last error explains a timeout."""
    deadline = asyncio.get_running_loop().time() + timeout
    last: BaseException | None = None
    while True:
        try:
            value = await check()
            if value:
                return value
        except (ApiError, AssertionError, KeyError) as err:
            last = err
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not met within {timeout}s (last: {last!r})")
        await asyncio.sleep(interval)


async def gone(client: Client, api_version: str, resource: str, name: str,
               namespace: str | None = None) -> bool:
    """Whether the object is gone from the API (a 404), for `eventually`."""
    try:
        await client.get(api_version, resource, name, namespace)
    except ApiError as err:
        if err.code == 404:
            return True
        raise
    return False


async def create_claim(client: Client, name: str, namespace: str = "default",
                       device_class: str = "gpu.example.com") -> dict:
    return await client.create(RESOURCE, "resourceclaims", {
        "apiVersion": RESOURCE, "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": device_class}}]}}}, namespace)


async def create_pod(client: Client, name: str, node: str, claim: str,
                     namespace: str = "default", **spec: Any) -> dict:
    return await client.create("v1", "pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
        "spec": {"nodeName": node, "resourceClaims": [{"name": "gpu",
                                                        "resourceClaimName": claim}],
                 "containers": [{"name": "ctr", "image": "ubuntu:22.04",
                                 "command": ["bash", "-c", "export"],
                                 "resources": {"claims": [{"name": "gpu"}]}}], **spec}},
        namespace)


async def allocate(client: Client, claim: dict, pod: dict, driver: str, node: str,
                   device: str) -> dict:
    """What the scheduler would write: the allocation and the pod's reservation."""
    claim = await client.get(RESOURCE, "resourceclaims", claim["metadata"]["name"],
                             claim["metadata"]["namespace"])
    claim["status"] = {
        "allocation": {"devices": {"results": [
            {"request": "gpu", "driver": driver, "pool": node, "device": device}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]}},
        "reservedFor": [{"resource": "pods", "name": pod["metadata"]["name"],
                         "uid": pod["metadata"]["uid"]}]}
    return await client.update(RESOURCE, "resourceclaims", claim, subresource="status")


async def gpu_class_and_template(client: Client) -> None:
    """The DeviceClass gpu.example.com (every device of that driver) and the
    ResourceClaimTemplate default/gpu asking for one of its devices, for pods on
    `gpu_plugin` nodes."""
    resource = "resource.k8s.io/v1"
    await client.create(resource, "deviceclasses", {
        "apiVersion": resource, "kind": "DeviceClass",
        "metadata": {"name": "gpu.example.com"},
        "spec": {"selectors": [{"cel": {
            "expression": 'device.driver == "gpu.example.com"'}}]}})
    await client.create(resource, "resourceclaimtemplates", {
        "apiVersion": resource, "kind": "ResourceClaimTemplate",
        "metadata": {"name": "gpu", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu.example.com"}}]}}}}, "default")


@asynccontextmanager
async def gpu_plugin(cluster: Any, node_name: str, count: int) -> AsyncIterator[Any]:
    """The built-in GPU driver (`count` GPUs of gpu.example.com) as a kubelet plugin of one
    of a `draemu_cluster`'s nodes, with the node's credentials, its slices published."""
    from draemu.drivers.gpu import GPUDriver
    from draemu.drivers.sdk import KubeletPlugin

    node = cluster.nodes[node_name]
    driver = GPUDriver("gpu.example.com", node_name, node.cdi_dir, [{"count": count}])
    driver.write_common_spec()
    async with Client.from_kubeconfig(str(node.kubeconfig)) as node_client:
        plugin = KubeletPlugin(driver, driver_name="gpu.example.com", node_name=node_name,
                               client=node_client, registrar_dir=node.registry_dir,
                               plugin_data_dir=node.plugins_dir / "gpu.example.com")
        await plugin.start()
        await plugin.publish_resources(driver.resources())
        try:
            yield plugin
        finally:
            await plugin.stop()

