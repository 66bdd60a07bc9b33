"""The kubelet's Node and Lease heartbeats against the real apiserver."""

from __future__ import annotations

import asyncio

import pytest

from draemu.client import Client
from draemu.cmd.testing.e2e import eventually
from draemu.kubelet.node import NodeAgent, NodeConfig, node_status

pytestmark = pytest.mark.unit


@pytest.fixture
async def agent(apiserver):
    async with Client.from_kubeconfig(str(apiserver.kubeconfig_path)) as client:
        node = NodeAgent(client, NodeConfig("node-1"), lease_interval=0.05)
        await node.start()
        yield node, client
        await node.stop()


async def ready_status(client):
    node = await client.get("v1", "nodes", "node-1")
    return {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"]


async def test_lease_is_renewed(agent):
    _node, client = agent
    first = await client.get("coordination.k8s.io/v1", "leases", "node-1", "kube-node-lease")

    async def renewed():
        lease = await client.get("coordination.k8s.io/v1", "leases", "node-1",
                                 "kube-node-lease")
        return lease["spec"]["renewTime"] != first["spec"]["renewTime"]

    await eventually(renewed)
    assert first["spec"]["leaseDurationSeconds"] == 40


async def test_status_marked_unknown_by_someone_else_is_posted_again(agent):
    _node, client = agent
    node = await client.get("v1", "nodes", "node-1")
    for cond in node["status"]["conditions"]:
        cond.update(status="Unknown", reason="NodeStatusUnknown")
    await client.update("v1", "nodes", node, subresource="status")

    async def ready_again():
        return await ready_status(client) == "True"

    await eventually(ready_again)


async def test_a_deleted_node_registers_again(agent):
    _node, client = agent
    before = await client.get("v1", "nodes", "node-1")
    await client.delete("v1", "nodes", "node-1")

    async def back():
        node = await client.get("v1", "nodes", "node-1")
        return node["metadata"]["uid"] != before["metadata"]["uid"]

    await eventually(back)
    assert await ready_status(client) == "True"


def test_the_node_declares_the_features_the_scheduler_must_know() -> None:
    plain = node_status(NodeConfig("n"), "boot", None)
    assert "declaredFeatures" not in plain
    cfg = NodeConfig("n", declared_features=["DRAOptionalNodeOperations"])
    assert node_status(cfg, "boot", None)["declaredFeatures"] == ["DRAOptionalNodeOperations"]


async def test_the_node_publishes_its_csinode_owned_by_its_node(agent):
    node, client = agent
    csinode = await client.get("storage.k8s.io/v1", "csinodes", "node-1")
    assert csinode["spec"]["drivers"] == []
    assert csinode["metadata"]["ownerReferences"] == [{
        "apiVersion": "v1", "kind": "Node", "name": "node-1",
        "uid": node.node["metadata"]["uid"]}]
    assert csinode["metadata"]["annotations"]["storage.alpha.kubernetes.io/migrated-plugins"] \
        == ("kubernetes.io/aws-ebs,kubernetes.io/azure-disk,kubernetes.io/azure-file,"
            "kubernetes.io/cinder,kubernetes.io/gce-pd,kubernetes.io/portworx-volume,"
            "kubernetes.io/vsphere-volume")


@pytest.mark.slow
async def test_a_node_registers_once_the_apiserver_comes_up_and_outlives_its_restart(
        tmp_path, monkeypatch):
    import socket

    from draemu.cmd.testing.apiserver import start_apiserver
    from draemu.kubelet import node as node_module

    monkeypatch.setattr(node_module, "REGISTER_BACKOFF", (0.05, 0.2))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    store = tmp_path / "state.db"
    options = {"port": port, "insecure_http": True, "store_url": f"sqlite:///{store}"}
    async with Client(f"http://127.0.0.1:{port}") as client:
        agent = NodeAgent(client, NodeConfig("node-1"), lease_interval=0.05)
        registering = asyncio.ensure_future(agent.start())
        await asyncio.sleep(0.5)  # refused, and tried again
        assert not registering.done()
        server = await start_apiserver(tmp_path / "a", **options)
        try:
            await asyncio.wait_for(registering, 10)
            assert (await client.get("v1", "nodes", "node-1"))["metadata"]["name"] == "node-1"
        finally:
            await server.stop()
        await asyncio.sleep(0.3)  # heartbeats fail meanwhile, and go on
        server = await start_apiserver(tmp_path / "b", **options)
        try:
            first = await client.get("coordination.k8s.io/v1", "leases", "node-1",
                                     "kube-node-lease")

            async def renewed():
                lease = await client.get("coordination.k8s.io/v1", "leases", "node-1",
                                         "kube-node-lease")
                return lease["spec"]["renewTime"] != first["spec"]["renewTime"]

            await eventually(renewed)
        finally:
            await agent.stop()
            await server.stop()
