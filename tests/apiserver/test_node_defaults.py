"""Node status defaulting as kube-apiserver's (SetDefaults_NodeStatus): a Node written
with a capacity and no allocatable gets its capacity as allocatable; one that says its
allocatable keeps it."""

from __future__ import annotations

import pytest
from apiclient import Client

pytestmark = pytest.mark.unit

NODES = "/api/v1/nodes"


async def test_allocatable_defaults_to_the_capacity(client: Client) -> None:
    capacity = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    made = await client.post(NODES, {"apiVersion": "v1", "kind": "Node",
                                     "metadata": {"name": "no-allocatable"},
                                     "status": {"capacity": capacity}})
    assert made.status == 201, made.json
    assert made.json["status"]["allocatable"] == capacity
    # on a status update too, and an allocatable given is kept
    node = made.json
    node["status"] = {"capacity": {"cpu": "8"}}
    updated = await client.put(f"{NODES}/no-allocatable/status", node)
    assert updated.json["status"]["allocatable"] == {"cpu": "8"}
    node = updated.json
    node["status"] = {"capacity": {"cpu": "8"}, "allocatable": {"cpu": "7"}}
    updated = await client.put(f"{NODES}/no-allocatable/status", node)
    assert updated.json["status"]["allocatable"] == {"cpu": "7"}
    # no capacity: nothing to default
    bare = await client.post(NODES, {"apiVersion": "v1", "kind": "Node",
                                     "metadata": {"name": "bare"}})
    assert "allocatable" not in (bare.json.get("status") or {})
