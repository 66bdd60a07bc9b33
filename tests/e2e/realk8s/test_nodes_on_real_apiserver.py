"""`draemu nodes` against the real kube-apiserver v1.37.2 (on the etcd Kubernetes pins),
with kubeadm's authorization (Node, RBAC) and admission (NodeRestriction) and the nodes'
own identities: they register, publish their ResourceSlices, run a pod with a claim, and
kube-apiserver reads its log from the node's kubelet API.

kube-apiserver is built on request only (`tests/e2e/realk8s/build.sh kube-apiserver`,
as for bench/realk8s.py): without it the test skips, in CI too.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from draemu.client import Client
from draemu.cmd.testing.e2e import allocate, create_claim, create_pod, eventually
from draemu.cmd.testing.etcd import EtcdCluster, EtcdUnavailable
from draemu.cmd.testing.kubeapiserver import DEFAULT_BIN, KubeApiserver, kube_apiserver

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

BIN = DEFAULT_BIN


@pytest.fixture
def real_apiserver(tmp_path: Path) -> Iterator[KubeApiserver]:
    if not (BIN / "kube-apiserver").exists():
        pytest.skip(f"kube-apiserver not built in {BIN} (tests/e2e/realk8s/build.sh "
                    "kube-apiserver)")
    try:
        etcd = EtcdCluster(1)
    except EtcdUnavailable as error:
        pytest.skip(str(error))
    try:
        with kube_apiserver(BIN / "kube-apiserver", tmp_path, etcd.endpoints) as server:
            yield server
    finally:
        etcd.stop()


async def test_nodes_as_themselves_run_a_pod_behind_the_real_apiserver(
        real_apiserver: KubeApiserver, tmp_path: Path) -> None:
    server = real_apiserver
    async with Client.from_kubeconfig(str(server.admin)) as client:
        await server.ready(client)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "draemu", "nodes", "--kubeconfig", str(server.admin),
            "--count", "3", "--ca-dir", str(server.pki),
            "--root-dir", str(tmp_path / "nodes"), "--log-format", "json",
            env={**os.environ, "PYTHONUNBUFFERED": "1"}, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        try:
            async def ready() -> bool:
                nodes = (await client.list("v1", "nodes"))["items"]
                slices = (await client.list("resource.k8s.io/v1", "resourceslices"))["items"]
                return len(nodes) == 3 and len(slices) == 3 and all(
                    c["status"] == "True" for n in nodes for c in n["status"]["conditions"]
                    if c["type"] == "Ready")

            await eventually(ready, timeout=60)
            # What kube-controller-manager's serviceaccount controller would make.
            await client.create("v1", "serviceaccounts", {
                "apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": "default"}}, "default")
            claim = await create_claim(client, "gpu")
            pod = await create_pod(client, "p1", "node-2", "gpu")
            await allocate(client, claim, pod, "gpu.example.com", "node-2", "gpu-3")

            async def running() -> bool:
                got = await client.get("v1", "pods", "p1", "default")
                return got["status"].get("phase") == "Running"

            await eventually(running, timeout=30)
            status, _, body = await client.request(
                "GET", "/api/v1/namespaces/default/pods/p1/log")
            assert status == 200, body
            assert b'GPU_DEVICE_3="gpu-3"' in body
        finally:
            proc.send_signal(signal.SIGINT)
            _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()[-3000:]
    # NodeRestriction and the Node authorizer refused nothing the nodes did.
    assert b"forbidden" not in err.lower(), err.decode()[-3000:]
