"""A pytest plugin for DRA driver authors: an in-process draemu cluster per test.

    # conftest.py
    pytest_plugins = ["draemu.cmd.testing.cluster"]

    # test_my_driver.py
    @pytest.fixture
    def draemu_nodes():
        return ["node-1", "node-2"]          # default: ["node-1"]

    async def test_my_driver(draemu_cluster):
        node = draemu_cluster.nodes["node-1"]
        # start your kubelet plugin with node.kubeconfig, node.registry_dir,
        # node.plugins_dir / "<driver>", node.cdi_dir; then create claims and pods
        # through draemu_cluster.client (or kubectl with draemu_cluster.kubeconfig).

The cluster has the apiserver, the controllers, the scheduler and one emulated kubelet
per node (no built-in drivers); it lives in a temporary directory and is stopped after
the test. Override `draemu_runtime` ("fake" or "process") and `draemu_feature_gates`
the same way as `draemu_nodes`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio

from draemu.client import Client
from draemu.cmd.cluster import Cluster, ClusterOptions
from draemu.cmd.nodes import Node
from draemu.drivers.presets import NodeSpec, Preset
from draemu.features import FeatureGates


@dataclass
class DraemuCluster:
    cluster: Cluster
    client: Client

    @property
    def kubeconfig(self) -> Path:
        """Admin credentials."""
        return self.cluster.kubeconfig_path

    @property
    def nodes(self) -> dict[str, Node]:
        """By name: `.kubeconfig` (the node's credentials), `.registry_dir`,
        `.plugins_dir`, `.cdi_dir`, `.root`."""
        return self.cluster.nodes.nodes


@pytest.fixture
def draemu_nodes() -> list[str]:
    return ["node-1"]


@pytest.fixture
def draemu_runtime() -> str:
    return "fake"


@pytest.fixture
def draemu_feature_gates() -> FeatureGates:
    return FeatureGates()


@pytest_asyncio.fixture
async def draemu_cluster(tmp_path: Path, draemu_nodes: list[str], draemu_runtime: str,
                         draemu_feature_gates: FeatureGates) -> AsyncIterator[DraemuCluster]:
    preset = Preset("test", "nodes for a driver test", [],
                    [NodeSpec(name) for name in draemu_nodes])
    cluster = Cluster(ClusterOptions(
        data_dir=tmp_path / "draemu", port=0, store_url="sqlite://:memory:",
        preset=preset, runtime=draemu_runtime,  # type: ignore[arg-type]
        feature_gates=draemu_feature_gates))
    try:
        await cluster.start()
        async with Client.from_kubeconfig(str(cluster.kubeconfig_path)) as client:
            yield DraemuCluster(cluster, client)
    finally:
        await cluster.stop()
