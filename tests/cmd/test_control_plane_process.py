"""`draemu up`'s scheduler and controllers run in a child process (issue 15), as API
clients over the apiserver's loopback socket: they schedule and reconcile from there,
and stop with the cluster."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from draemu.client import Client
from draemu.cmd.cluster import Cluster, ClusterOptions
from draemu.cmd.testing.e2e import eventually
from draemu.drivers.presets import NodeSpec, Preset

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


async def test_the_scheduler_and_controllers_run_in_a_child_process(tmp_path: Path) -> None:
    preset = Preset("test", "one node", [], [NodeSpec("node-1")])
    cluster = Cluster(ClusterOptions(data_dir=tmp_path / "d", port=0,
                                     store_url="sqlite://:memory:", preset=preset,
                                     control_plane_process=True))
    await cluster.start()
    try:
        child = cluster.control_plane.process
        assert child.pid != os.getpid() and child.returncode is None
        assert cluster.scheduler is None and cluster.controllers is None
        async with Client.from_kubeconfig(str(cluster.kubeconfig_path)) as client:
            # A Deployment: the controllers make its ReplicaSet and pod, the scheduler
            # binds the pod.
            await client.create("apps/v1", "deployments", {
                "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                         "template": {"metadata": {"labels": {"app": "web"}},
                                      "spec": {"containers": [{"name": "c",
                                                               "image": "busybox"}]}}}},
                "default")

            async def bound() -> bool:
                pods = (await client.list("v1", "pods", "default"))["items"]
                return bool(pods) and pods[0]["spec"].get("nodeName") == "node-1"

            await eventually(bound)

            async def root_ca_published() -> bool:
                # The root CA publisher needs the cluster CA, handed to the child too.
                cm = await client.get("v1", "configmaps", "kube-root-ca.crt", "default")
                return "BEGIN CERTIFICATE" in cm["data"]["ca.crt"]

            await eventually(root_ca_published)
    finally:
        await cluster.stop()
    assert child.returncode is not None
