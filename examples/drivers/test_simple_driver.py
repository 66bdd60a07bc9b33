"""An integration test of simple_driver.py as a driver author would write it.

Run with:  pytest examples/drivers
"""

from __future__ import annotations

import asyncio

import pytest
from simple_driver import SimpleDriver

from draemu.client import Client
from draemu.drivers.sdk import KubeletPlugin

pytestmark = [pytest.mark.slow, pytest.mark.unit]


@pytest.fixture
def draemu_nodes():
    return ["node-1"]


async def test_pod_gets_a_simple_device(draemu_cluster):
    node = draemu_cluster.nodes["node-1"]
    async with Client.from_kubeconfig(str(node.kubeconfig)) as node_client:
        driver = SimpleDriver("simple.example.com", "node-1", str(node.cdi_dir), 2)
        plugin = KubeletPlugin(driver, driver_name="simple.example.com", node_name="node-1",
                               client=node_client, registrar_dir=node.registry_dir,
                               plugin_data_dir=node.plugins_dir / "simple.example.com")
        await plugin.start()
        await plugin.publish_resources(driver.resources())
        try:
            api = draemu_cluster.client
            await api.create("resource.k8s.io/v1", "deviceclasses", {
                "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                "metadata": {"name": "simple"},
                "spec": {"selectors": [{"cel": {
                    "expression": 'device.driver == "simple.example.com"'}}]}})
            await api.create("resource.k8s.io/v1", "resourceclaims", {
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": "c", "namespace": "default"},
                "spec": {"devices": {"requests": [
                    {"name": "dev", "exactly": {"deviceClassName": "simple"}}]}}}, "default")
            await api.create("v1", "pods", {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "namespace": "default"},
                "spec": {"resourceClaims": [{"name": "dev", "resourceClaimName": "c"}],
                         "containers": [{"name": "ctr", "image": "ubuntu:22.04",
                                         "resources": {"claims": [{"name": "dev"}]}}]}},
                "default")
            for _ in range(200):
                pod = await api.get("v1", "pods", "p", "default")
                if pod["status"].get("phase") == "Running":
                    break
                await asyncio.sleep(0.1)
            _, _, log = await api.request("GET", "/api/v1/namespaces/default/pods/p/log")
            assert b'SIMPLE_DEVICE_' in log
        finally:
            await plugin.stop()
