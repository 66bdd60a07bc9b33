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
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest

from draemu import kubeconfig, pki
from draemu.client import Client
from draemu.cmd.testing.e2e import allocate, create_claim, create_pod, eventually
from draemu.cmd.testing.etcd import EtcdCluster, EtcdUnavailable

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

BIN = Path(os.environ.get("DRAEMU_REALK8S_BIN",
                          Path.home() / ".cache" / "draemu" / "realk8s" / "bin"))
START_TIMEOUT = 90


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class KubeApiserver:
    process: subprocess.Popen[bytes]
    admin: Path  # the admin's kubeconfig
    pki: Path  # ca.crt and ca.key, as kubeadm's /etc/kubernetes/pki has them
    log: Path


@pytest.fixture
def kube_apiserver(tmp_path: Path) -> Iterator[KubeApiserver]:
    if not (BIN / "kube-apiserver").exists():
        pytest.skip(f"kube-apiserver not built in {BIN} (tests/e2e/realk8s/build.sh "
                    "kube-apiserver)")
    try:
        etcd = EtcdCluster(1)
    except EtcdUnavailable as error:
        pytest.skip(str(error))
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    folder = tmp_path / "pki"
    folder.mkdir()
    ca = pki.make_ca("kubernetes")
    serving = pki.make_serving_cert(ca, "127.0.0.1")
    # How kube-apiserver shows itself to kubelets (kubeadm's apiserver-kubelet-client,
    # in a group allowed nodes/proxy: the kubelet asks the apiserver with a
    # SubjectAccessReview).
    kubelet_client = pki.make_client_cert(ca, "kube-apiserver-kubelet-client",
                                          ["system:masters"])
    admin = pki.make_client_cert(ca, "kubernetes-admin", ["system:masters"])
    sa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    for name, data in {
            "ca.crt": ca.cert_pem, "ca.key": ca.key_pem,
            "apiserver.crt": serving.cert_pem, "apiserver.key": serving.key_pem,
            "kubelet-client.crt": kubelet_client.cert_pem,
            "kubelet-client.key": kubelet_client.key_pem,
            "sa.key": sa.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.TraditionalOpenSSL,
                                       serialization.NoEncryption()),
            "sa.pub": sa.public_key().public_bytes(
                serialization.Encoding.PEM,
                serialization.PublicFormat.SubjectPublicKeyInfo)}.items():
        (folder / name).write_bytes(data)
    port = _free_port()
    admin_kubeconfig = tmp_path / "admin.kubeconfig"
    kubeconfig.write(admin_kubeconfig, kubeconfig.build(
        f"https://127.0.0.1:{port}", ca_pem=ca.cert_pem, client_cert_pem=admin.cert_pem,
        client_key_pem=admin.key_pem))
    log = tmp_path / "kube-apiserver.log"
    process = subprocess.Popen([
        str(BIN / "kube-apiserver"), "--etcd-servers", f"http://{etcd.endpoints}",
        "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
        "--secure-port", str(port), "--endpoint-reconciler-type", "none",
        "--tls-cert-file", str(folder / "apiserver.crt"),
        "--tls-private-key-file", str(folder / "apiserver.key"),
        "--client-ca-file", str(folder / "ca.crt"),
        "--kubelet-client-certificate", str(folder / "kubelet-client.crt"),
        "--kubelet-client-key", str(folder / "kubelet-client.key"),
        "--kubelet-preferred-address-types", "InternalIP,ExternalIP,Hostname",
        "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
        "--service-account-key-file", str(folder / "sa.pub"),
        "--service-account-signing-key-file", str(folder / "sa.key"),
        "--service-cluster-ip-range", "10.96.0.0/16",
        "--authorization-mode", "Node,RBAC", "--enable-admission-plugins", "NodeRestriction",
        "--cert-dir", str(folder)],
        stdout=subprocess.DEVNULL, stderr=log.open("wb"), stdin=subprocess.DEVNULL)
    try:
        yield KubeApiserver(process, admin_kubeconfig, folder, log)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        etcd.stop()


async def _ready(client: Client, server: KubeApiserver) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        assert server.process.poll() is None, server.log.read_text()[-3000:]
        try:
            status, _, _ = await client.request("GET", "/readyz")
            if status == 200:
                return
        except (OSError, aiohttp.ClientError):
            pass
        assert time.monotonic() < deadline, "kube-apiserver not ready"
        await asyncio.sleep(0.2)


async def test_nodes_as_themselves_run_a_pod_behind_the_real_apiserver(
        kube_apiserver: KubeApiserver, tmp_path: Path) -> None:
    async with Client.from_kubeconfig(str(kube_apiserver.admin)) as client:
        await _ready(client, kube_apiserver)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "draemu", "nodes", "--kubeconfig", str(kube_apiserver.admin),
            "--count", "3", "--ca-dir", str(kube_apiserver.pki),
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
