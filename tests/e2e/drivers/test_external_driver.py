"""A driver in its own process, sharing only the node's sockets and a kubeconfig, serves a
pod's claim end to end (scheduler, controllers, kubelet in draemu)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from draemu.cmd.testing.e2e import eventually, gone

pytestmark = pytest.mark.e2e

DRIVER = Path(__file__).parents[3] / "examples" / "drivers" / "simple_driver.py"


@pytest.fixture
async def external_driver(draemu_cluster):
    node = draemu_cluster.nodes["node-1"]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(DRIVER), "--node-name", "node-1",
        "--kubeconfig", str(node.kubeconfig), "--num-devices", "3",
        "--kubelet-registrar-directory-path", str(node.registry_dir),
        "--kubelet-plugins-directory-path", str(node.plugins_dir),
        "--cdi-root", str(node.cdi_dir),
        env={**os.environ, "PYTHONUNBUFFERED": "1"}, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT)
    yield proc
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.wait(), 20)


async def test_external_driver_registers_publishes_and_serves_a_pod(draemu_cluster,
                                                                    external_driver):
    client = draemu_cluster.client
    kubelet = draemu_cluster.nodes["node-1"].kubelet

    async def registered():
        return kubelet.plugins.registered("simple.example.com")

    await eventually(registered, timeout=30)

    async def published():
        slices = await client.list("resource.k8s.io/v1", "resourceslices",
                                   field_selector="spec.driver=simple.example.com")
        return slices["items"]

    (only,) = await eventually(published)
    assert [d["name"] for d in only["spec"]["devices"]] == ["dev-0", "dev-1", "dev-2"]

    await client.create("resource.k8s.io/v1", "deviceclasses", {
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": "simple.example.com"},
        "spec": {"selectors": [{"cel": {"expression":
                                        'device.driver == "simple.example.com"'}}]}})
    await client.create("resource.k8s.io/v1", "resourceclaimtemplates", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one-device", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "dev", "exactly": {
            "deviceClassName": "simple.example.com"}}]}}}}, "default")
    await client.create("v1", "pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1", "namespace": "default"},
        "spec": {"resourceClaims": [{"name": "dev", "resourceClaimTemplateName": "one-device"}],
                 "containers": [{"name": "ctr", "image": "ubuntu:22.04",
                                 "resources": {"claims": [{"name": "dev"}]}}]}}, "default")

    async def running():
        pod = await client.get("v1", "pods", "p1", "default")
        return pod if pod["status"].get("phase") == "Running" else None

    pod = await eventually(running, timeout=30)
    assert pod["spec"]["nodeName"] == "node-1"
    status, _h, body = await client.request("GET", "/api/v1/namespaces/default/pods/p1/log")
    assert status == 200
    assert 'declare -x SIMPLE_DEVICE_0="dev-0"' in body.decode()

    await client.delete("v1", "pods", "p1", "default")

    await eventually(lambda: gone(client, "v1", "pods", "p1", "default"), timeout=30)
    assert kubelet.cache.claims == {}

    external_driver.send_signal(signal.SIGTERM)
    await asyncio.wait_for(external_driver.wait(), 20)

    async def deregistered():
        return not kubelet.plugins.registered("simple.example.com")

    await eventually(deregistered)
