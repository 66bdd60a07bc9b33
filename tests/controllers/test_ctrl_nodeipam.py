"""node-ipam's range allocator against a real apiserver: each Node gets a /24 of the
cluster CIDR in order, a Node's own podCIDR is kept and occupied, a deleted Node frees its
block, a full range says CIDRNotAvailable, and without a cluster CIDR nothing happens."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from draemu.client import Client
from draemu.cmd.testing.apiserver import start_apiserver
from draemu.cmd.testing.e2e import eventually
from draemu.controllers.manager import ControllerManager
from draemu.controllers.nodeipam import CIDRSet
from draemu.identity import service_account_groups, service_account_user

pytestmark = [pytest.mark.unit, pytest.mark.slow]


def test_blocks_are_handed_out_in_order_and_wrap_around() -> None:
    cidrs = CIDRSet("10.244.0.0/22", 24)
    assert [cidrs.allocate(n) for n in ("a", "b")] == ["10.244.0.0/24", "10.244.1.0/24"]
    assert cidrs.allocate("a") == "10.244.0.0/24"  # a node keeps its block
    cidrs.release("a")
    assert [cidrs.allocate(n) for n in ("c", "d", "e")] == [
        "10.244.2.0/24", "10.244.3.0/24", "10.244.0.0/24"]
    assert cidrs.allocate("f") is None


def test_only_blocks_of_the_cluster_cidr_are_occupied() -> None:
    cidrs = CIDRSet("10.244.0.0/16", 24)
    assert cidrs.occupy("10.244.7.0/24", "a")
    assert not cidrs.occupy("10.99.0.0/24", "b")
    assert not cidrs.occupy("10.244.0.0/25", "c")
    with pytest.raises(ValueError, match="does not fit"):
        CIDRSet("10.244.0.0/16", 8)


async def _manager(server, cluster_cidr: str | None) -> ControllerManager:
    def client_for(account: str) -> Client:
        return server.loopback_client(f"test/{account}",
                                      service_account_user("kube-system", account),
                                      service_account_groups("kube-system"))

    manager = ControllerManager(server.loopback_client("test-controllers"),
                                enabled=["node-ipam"], client_for=client_for,
                                cluster_cidr=cluster_cidr, node_cidr_mask_size=24)
    await manager.start()
    return manager


@pytest_asyncio.fixture
async def server(tmp_path: Path) -> AsyncIterator[object]:
    server = await start_apiserver(tmp_path / "apiserver")
    yield server
    await server.stop()


def _node(name: str, cidr: str | None = None) -> dict:
    spec = {"podCIDR": cidr, "podCIDRs": [cidr]} if cidr else {}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": spec}


async def _cidr(client: Client, name: str) -> str | None:
    node = await client.get("v1", "nodes", name)
    spec = node.get("spec") or {}
    assert spec.get("podCIDRs", [spec.get("podCIDR")]) == [spec.get("podCIDR")]
    return spec.get("podCIDR")


async def test_nodes_get_blocks_in_order_and_keep_their_own(server) -> None:
    admin = server.loopback_client("test")
    await admin.create("v1", "nodes", _node("kept", "10.244.0.0/24"))
    manager = await _manager(server, "10.244.0.0/16")
    try:
        for name in ("a", "b"):
            await admin.create("v1", "nodes", _node(name))
        assert await eventually(lambda: _cidr(admin, "a")) == "10.244.1.0/24"
        assert await eventually(lambda: _cidr(admin, "b")) == "10.244.2.0/24"
        assert await _cidr(admin, "kept") == "10.244.0.0/24"
    finally:
        await manager.stop()
        await admin.close()


async def test_a_deleted_nodes_block_is_free_again_and_a_full_range_is_an_event(server
                                                                                ) -> None:
    admin = server.loopback_client("test")
    manager = await _manager(server, "10.244.0.0/23")
    try:
        for name in ("a", "b"):
            await admin.create("v1", "nodes", _node(name))
            await eventually(lambda n=name: _cidr(admin, n))
        await admin.create("v1", "nodes", _node("c"))

        async def not_available() -> bool:
            events = await admin.list("v1", "events", namespace="default")
            return any(e["reason"] == "CIDRNotAvailable" and
                       e["involvedObject"]["name"] == "c" for e in events["items"])

        await eventually(not_available)
        freed = await _cidr(admin, "a")
        await admin.delete("v1", "nodes", "a")
        assert await eventually(lambda: _cidr(admin, "c")) == freed
    finally:
        await manager.stop()
        await admin.close()


async def test_without_a_cluster_cidr_nodes_are_left_alone(server) -> None:
    admin = server.loopback_client("test")
    manager = await _manager(server, None)
    try:
        await admin.create("v1", "nodes", _node("a"))
        nodes = manager.ctx.informers.informer("v1", "nodes")
        await eventually(lambda: _true(nodes.get("a")))
        assert await _cidr(admin, "a") is None
    finally:
        await manager.stop()
        await admin.close()


async def _true(value: object) -> bool:
    return value is not None
