"""The kubelet's own HTTP API (for kubelets in their own process): container logs."""

from __future__ import annotations

import aiohttp
import pytest

from draemu.client import Client
from draemu.cmd.testing.e2e import eventually
from draemu.kubelet.kubelet import Kubelet, KubeletOptions

pytestmark = pytest.mark.unit


@pytest.fixture
async def kubelet(apiserver, tmp_path):
    async with Client.from_kubeconfig(str(apiserver.kubeconfig_path)) as client:
        k = Kubelet(client, KubeletOptions(node_name="node-1", root_dir=tmp_path / "n1", port=0))
        await k.start()
        yield k, client
        await k.stop()


async def test_container_logs_are_served_on_the_advertised_port(kubelet):
    k, client = kubelet
    node = await client.get("v1", "nodes", "node-1")
    port = node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]
    address = [a for a in node["status"]["addresses"] if a["type"] == "InternalIP"][0]
    await client.create("v1", "pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1", "namespace": "default"},
        "spec": {"nodeName": "node-1", "containers": [{
            "name": "main", "image": "busybox", "env": [{"name": "A", "value": "1"}]}]}},
        "default")

    async def running():
        pod = await client.get("v1", "pods", "p1", "default")
        return pod["status"].get("phase") == "Running"

    await eventually(running)
    base = f"http://{address['address']}:{port}"
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{base}/containerLogs/default/p1/main",
                            params={"tailLines": "1"}) as resp:
            assert resp.status == 200
            assert await resp.text() == 'declare -x HOSTNAME="p1"\n'
        async with http.get(f"{base}/containerLogs/default/p1/main",
                            params={"previous": "true"}) as resp:
            assert resp.status == 400
            assert "previous terminated container" in await resp.text()
        async with http.get(f"{base}/healthz") as resp:
            assert await resp.text() == "ok"
