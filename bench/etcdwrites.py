"""Writes per second through the apiserver on etcd: `draemu apiserver --store etcd://...`
beside the real kube-apiserver v1.37.2 on the same etcd (the version Kubernetes pins).

One durable etcd member (etcd's defaults: fsync on) serves the whole run; each side
runs on it in turn under a key prefix of its own (draemu: etcd://.../draemu-N, the real
one: --etcd-prefix /real-N), the order alternating between runs. Against each, HTTPS
clients with the admin's client certificate write ConfigMaps, `--concurrency` of them at
once: creates, then an update (PUT of the created object, a compare-and-swap in etcd) of
each. Figures per phase: writes per second, the apiserver's and etcd's CPU milliseconds
per write (utime + stime of the process), and the load average at the end.

    .venv/bin/python bench/etcdwrites.py [--writes 2000] [--concurrency 1,32]
        [--runs 2] [--sides draemu,real]

The binaries: `tests/e2e/realk8s/build.sh etcd kube-apiserver` (DRAEMU_REALK8S_BIN).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp

from draemu import kubeconfig, pki
from draemu.client import config
from draemu.cmd.testing.etcd import EtcdCluster

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(os.environ.get("DRAEMU_REALK8S_BIN", Path.home() / ".cache/draemu/realk8s/bin"))
NAMESPACE = "bench"
READY_TIMEOUT = 90


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Apiserver:
    """An apiserver process on the etcd, and the admin's kubeconfig for it."""

    name = ""
    process: subprocess.Popen[bytes]
    kubeconfig: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class Draemu(Apiserver):
    name = "draemu"

    def __init__(self, folder: Path, etcd: EtcdCluster, run: int) -> None:
        port = free_port()
        self.kubeconfig = folder / "data" / "kubeconfig"
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "draemu", "apiserver", "--data-dir", str(folder / "data"),
             "--store", etcd.url(f"/draemu-{run}"), "--port", str(port),
             "--log-level", "warning"],
            stdout=subprocess.DEVNULL, stderr=open(folder / "apiserver.log", "wb"),
            stdin=subprocess.DEVNULL, env=env, cwd=ROOT)


class Real(Apiserver):
    name = "real"

    def __init__(self, folder: Path, etcd: EtcdCluster, run: int) -> None:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        binary = BIN / "kube-apiserver"
        if not binary.exists():
            raise SystemExit(f"{binary} is missing: tests/e2e/realk8s/build.sh kube-apiserver")
        port = free_port()
        ca = pki.make_ca("bench-etcdwrites-ca")
        serving = pki.make_serving_cert(ca, "127.0.0.1")
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        files = {"ca.crt": ca.cert_pem, "apiserver.crt": serving.cert_pem,
                 "apiserver.key": serving.key_pem,
                 "sa.key": key.private_bytes(serialization.Encoding.PEM,
                                             serialization.PrivateFormat.TraditionalOpenSSL,
                                             serialization.NoEncryption()),
                 "sa.pub": key.public_key().public_bytes(
                     serialization.Encoding.PEM,
                     serialization.PublicFormat.SubjectPublicKeyInfo)}
        for name, data in files.items():
            (folder / name).write_bytes(data)
        admin = pki.make_client_cert(ca, "kubernetes-admin", ["system:masters"])
        self.kubeconfig = folder / "admin.kubeconfig"
        kubeconfig.write(self.kubeconfig, kubeconfig.build(
            f"https://127.0.0.1:{port}", ca_pem=ca.cert_pem, client_cert_pem=admin.cert_pem,
            client_key_pem=admin.key_pem))
        self.process = subprocess.Popen([
            str(binary), "--etcd-servers", f"http://{etcd.endpoints}",
            "--etcd-prefix", f"/real-{run}",
            "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
            "--secure-port", str(port), "--endpoint-reconciler-type", "none",
            "--tls-cert-file", str(folder / "apiserver.crt"),
            "--tls-private-key-file", str(folder / "apiserver.key"),
            "--client-ca-file", str(folder / "ca.crt"),
            "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
            "--service-account-key-file", str(folder / "sa.pub"),
            "--service-account-signing-key-file", str(folder / "sa.key"),
            "--service-cluster-ip-range", "10.0.0.0/24",
            "--authorization-mode", "Node,RBAC", "--cert-dir", str(folder)],
            stdout=subprocess.DEVNULL, stderr=open(folder / "apiserver.log", "wb"),
            stdin=subprocess.DEVNULL)


async def wait_ready(side: Apiserver, folder: Path) -> tuple[aiohttp.ClientSession, str]:
    deadline = time.monotonic() + READY_TIMEOUT
    while not side.kubeconfig.exists():
        if side.process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"{side.name} did not start:\n"
                             + (folder / "apiserver.log").read_text()[-3000:])
        await asyncio.sleep(0.1)
    conn = config.load(side.kubeconfig)
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(ssl=conn.ssl_context() or ssl.create_default_context(),
                                       limit=256),
        timeout=aiohttp.ClientTimeout(total=60))
    while True:
        try:
            async with session.get(conn.server + "/readyz") as r:
                if r.status == 200:
                    break
        except aiohttp.ClientError:
            pass
        if side.process.poll() is not None or time.monotonic() > deadline:
            await session.close()
            raise SystemExit(f"{side.name} not ready:\n"
                             + (folder / "apiserver.log").read_text()[-3000:])
        await asyncio.sleep(0.2)
    async with session.post(conn.server + "/api/v1/namespaces", json={
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}) as r:
        assert r.status in (201, 409), await r.text()
    # Until the namespace is in every cache a create may find it missing.
    await asyncio.sleep(1)
    return session, conn.server


async def phase(writes: list[Callable[[], Any]], concurrency: int) -> float:
    """Run the writes, `concurrency` at a time; seconds taken."""
    queue = iter(writes)

    async def worker() -> None:
        for write in queue:
            await write()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started


async def measure(side: Apiserver, folder: Path, etcd_pid: int, writes: int,
                  concurrency: int) -> dict[str, dict[str, float]]:
    session, server = await wait_ready(side, folder)
    path = f"{server}/api/v1/namespaces/{NAMESPACE}/configmaps"
    created: dict[str, dict[str, Any]] = {}
    prefix = f"c{concurrency}"

    def create(i: int) -> Callable[[], Any]:
        async def go() -> None:
            body = {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": f"{prefix}-{i}", "labels": {"bench": "etcd"}},
                    "data": {"key": "x" * 200}}
            async with session.post(path, json=body) as r:
                assert r.status == 201, await r.text()
                created[body["metadata"]["name"]] = await r.json()
        return go

    def update(name: str) -> Callable[[], Any]:
        async def go() -> None:
            body = created[name]
            body["data"] = {"key": "y" * 200}
            async with session.put(f"{path}/{name}", json=body) as r:
                assert r.status == 200, await r.text()
        return go

    results: dict[str, dict[str, float]] = {}
    try:
        for name, make in (("create", lambda: [create(i) for i in range(writes)]),
                           ("update", lambda: [update(n) for n in list(created)])):
            batch = make()
            api0, etcd0 = cpu_seconds(side.process.pid), cpu_seconds(etcd_pid)
            seconds = await phase(batch, concurrency)
            api1, etcd1 = cpu_seconds(side.process.pid), cpu_seconds(etcd_pid)
            results[name] = {"writes/s": len(batch) / seconds,
                             "apiserver ms/write": (api1 - api0) * 1000 / len(batch),
                             "etcd ms/write": (etcd1 - etcd0) * 1000 / len(batch),
                             "load": os.getloadavg()[0]}
    finally:
        await session.close()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writes", type=int, default=2000)
    parser.add_argument("--concurrency", default="1,32")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--sides", default="draemu,real")
    args = parser.parse_args()
    kinds = {"draemu": Draemu, "real": Real}
    sides = [kinds[s] for s in args.sides.split(",")]
    levels = [int(c) for c in args.concurrency.split(",")]
    rows: list[tuple[str, int, int, str, dict[str, float]]] = []
    with tempfile.TemporaryDirectory(prefix="draemu-etcdwrites-") as tmp, \
            EtcdCluster(1, fsync=True) as etcd:
        etcd_pid = etcd.members[0].process.pid  # type: ignore[union-attr]
        run = 0
        for round_ in range(args.runs):
            order = sides if round_ % 2 == 0 else sides[::-1]
            for concurrency in levels:
                for kind in order:
                    run += 1
                    folder = Path(tmp) / f"{kind.name}-{run}"
                    folder.mkdir()
                    side = kind(folder, etcd, run)
                    try:
                        got = asyncio.run(measure(side, folder, etcd_pid, args.writes,
                                                  concurrency))
                    finally:
                        side.stop()
                    for name, figures in got.items():
                        rows.append((kind.name, concurrency, round_ + 1, name, figures))
                        print(f"{kind.name:7} c={concurrency:<3} run {round_ + 1} {name:7} "
                              + "  ".join(f"{k} {v:8.2f}" for k, v in figures.items()),
                              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
