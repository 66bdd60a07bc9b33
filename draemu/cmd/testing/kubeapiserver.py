"""The real kube-apiserver (built by tests/e2e/realk8s/build.sh) on a real etcd, with the
certificates kubeadm would give it, for tests that run draemu's parts against it or
compare draemu with it.

Which binary serves a release: `${DRAEMU_REALK8S_BIN}` or `~/.cache/draemu/realk8s/bin`
(the default release's build), else `~/.cache/draemu/realk8s/bin-<release>` (another
release, built with `DRAEMU_REALK8S_BIN=~/.cache/draemu/realk8s/bin-1.38 build.sh
--version v1.38.0-beta.0 kube-apiserver`): the one whose `.kube-apiserver.version` stamp
is the release's tag.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from draemu import kubeconfig, pki
from draemu.client import Client

START_TIMEOUT = 90
ROOT = Path(os.environ.get("DRAEMU_REALK8S_CACHE",
                           Path.home() / ".cache" / "draemu" / "realk8s"))
DEFAULT_BIN = Path(os.environ.get("DRAEMU_REALK8S_BIN", ROOT / "bin"))


def binary_for(tag: str) -> Path | None:
    """kube-apiserver built at `tag` (v1.38.0-beta.0), where build.sh put it, or None."""
    release = ".".join(tag.removeprefix("v").split(".")[:2])
    for folder in (DEFAULT_BIN, ROOT / f"bin-{release}"):
        stamp = folder / ".kube-apiserver.version"
        if (folder / "kube-apiserver").exists() and stamp.exists() \
                and stamp.read_text().strip() == tag:
            return folder / "kube-apiserver"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class KubeApiserver:
    process: subprocess.Popen[bytes]
    admin: Path  # the admin's kubeconfig
    pki: Path  # ca.crt and ca.key, as kubeadm's /etc/kubernetes/pki has them
    log: Path

    async def ready(self, client: Client) -> None:
        """Until /readyz answers 200 (a dead process fails with its log's end)."""
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            assert self.process.poll() is None, self.log.read_text()[-3000:]
            try:
                status, _, _ = await client.request("GET", "/readyz")
                if status == 200:
                    return
            except (OSError, aiohttp.ClientError):
                pass
            assert time.monotonic() < deadline, "kube-apiserver not ready"
            await asyncio.sleep(0.2)


def _write_pki(folder: Path) -> pki.CA:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    folder.mkdir(parents=True)
    ca = pki.make_ca("kubernetes")
    serving = pki.make_serving_cert(ca, "127.0.0.1")
    # How kube-apiserver shows itself to kubelets (kubeadm's apiserver-kubelet-client,
    # in a group allowed nodes/proxy: the kubelet asks the apiserver with a
    # SubjectAccessReview).
    kubelet_client = pki.make_client_cert(ca, "kube-apiserver-kubelet-client",
                                          ["system:masters"])
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
    return ca


@contextmanager
def kube_apiserver(binary: Path, workdir: Path, etcd_endpoints: str,
                   extra: Sequence[str] = ()) -> Iterator[KubeApiserver]:
    """kube-apiserver on `etcd_endpoints` (host:port), kubeadm's authorization (Node,
    RBAC) and NodeRestriction, plus `extra` flags, until the block ends."""
    folder = workdir / "pki"
    ca = _write_pki(folder)
    admin = pki.make_client_cert(ca, "kubernetes-admin", ["system:masters"])
    port = free_port()
    admin_kubeconfig = workdir / "admin.kubeconfig"
    kubeconfig.write(admin_kubeconfig, kubeconfig.build(
        f"https://127.0.0.1:{port}", ca_pem=ca.cert_pem, client_cert_pem=admin.cert_pem,
        client_key_pem=admin.key_pem))
    log = workdir / "kube-apiserver.log"
    process = subprocess.Popen([
        str(binary), "--etcd-servers", f"http://{etcd_endpoints}",
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
        "--cert-dir", str(folder), *extra],
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
