"""The apiserver's CPU per write request, on a durable store, as its clients write.

    .venv/bin/python bench/writes.py [--nodes 500] [--pods 1000] [--renewals 5000]

`draemu apiserver` (HTTPS, a durable SQLite store in a fresh data directory, bearer
tokens from --token-auth-file) runs in its own process; this process drives it:

- pods: per pod, as the template workload's clients write it: create (admin), status
  patch (strategic merge, as the scheduler reports Unschedulable), binding, get and a
  status update (PUT, as a kubelet); 32 at a time;
- leases: every node (its own identity, `system:node:<name>`, so the request goes
  through API Priority and Fairness as a kubelet's) renews its Lease with a PUT of the
  object its last write returned, as the kubelet's lease controller; 32 at a time.

For each: requests per second and the apiserver's CPU milliseconds per pod / per
renewal (utime + stime of its process, threads included). On a busy machine compare
the CPU figures, and only of runs taken one after the other. `--profile DIR`: py-spy
(beside the Python running this) records the apiserver during each phase, raw format,
into DIR/pods.txt and DIR/leases.txt; with PERF=1 in the environment, `perf record -g`
instead (DIR/pods.perf, DIR/leases.perf: on-CPU samples only, where py-spy's wall-clock
samples of a loaded machine gather at system calls, the points where the kernel
preempts).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
CONCURRENCY = 32
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"app": "bench"}},
       "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["sleep", "1d"],
                                "resources": {"claims": [{"name": "gpu"}],
                                              "requests": {"cpu": "100m"}}}],
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]}}


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def micro_now() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1e6):06d}Z"


async def start(folder: Path, nodes: int) -> tuple[subprocess.Popen[str], str]:
    tokens = folder / "tokens.csv"
    lines = ['admin-token,bench-admin,1,"system:masters"']
    lines += [f'node-{i}-token,system:node:node-{i},n{i},"system:nodes"' for i in range(nodes)]
    tokens.write_text("\n".join(lines) + "\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "draemu", "--log-level", "warning", "apiserver",
         "--data-dir", str(folder / "data"), "--port", "0", "--token-auth-file", str(tokens)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout is not None
    url = ""
    while not url:
        line = await asyncio.to_thread(proc.stdout.readline)
        if not line:
            raise RuntimeError("draemu apiserver exited")
        if line.startswith("API server:"):
            url = line.split()[-1]
    return proc, url


def session(token: str) -> aiohttp.ClientSession:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=CONCURRENCY, ssl=ctx),
        headers={"Authorization": f"Bearer {token}"})


async def call(s: aiohttp.ClientSession, method: str, url: str, body: Any = None,
               ctype: str = "application/json", ok: tuple[int, ...] = (200, 201)) -> Any:
    data = None if body is None else json.dumps(body)
    async with s.request(method, url, data=data, headers={"Content-Type": ctype}) as r:
        text = await r.text()
        if r.status not in ok:
            raise RuntimeError(f"{method} {url}: {r.status} {text[:300]}")
        return json.loads(text)


async def workers(n: int, fn: Any) -> float:
    counter = iter(range(n))

    async def worker() -> None:
        for i in counter:
            await fn(i)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return time.perf_counter() - started


async def ready(url: str) -> None:
    async with session("admin-token") as s:
        for _ in range(600):
            try:
                async with s.get(url + "/readyz") as r:
                    if r.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.05)
    raise RuntimeError("the apiserver did not become ready")


class Profile:
    """py-spy recording the apiserver while the `with` block runs (when `folder`)."""

    def __init__(self, folder: Path | None, name: str, pid: int) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
            spy = Path(sys.executable).with_name("py-spy")
            command = [str(spy), "record", "--pid", str(pid), "--rate", "100",
                       "--nonblocking", "--format", "raw", "--output",
                       str(folder / f"{name}.txt")]
            if os.environ.get("PERF"):
                command = ["perf", "record", "-F", "499", "-g", "-p", str(pid), "-o",
                           str(folder / f"{name}.perf")]
            self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL)

    def __enter__(self) -> Profile:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGINT)
            self.proc.wait(60)


async def bench_pods(url: str, pid: int, n: int, offset: int) -> tuple[float, float]:
    pods = url + "/api/v1/namespaces/default/pods"
    smp = "application/strategic-merge-patch+json"
    unschedulable = {"status": {"conditions": [{"type": "PodScheduled", "status": "False",
                                                "reason": "Unschedulable"}]}}
    async with session("admin-token") as s:
        async def one(i: int) -> None:
            name = f"pod-{offset + i}"
            pod = {**POD, "metadata": {**POD["metadata"], "name": name}}
            await call(s, "POST", pods, pod)
            await call(s, "PATCH", f"{pods}/{name}/status", unschedulable, smp)
            await call(s, "POST", f"{pods}/{name}/binding",
                       {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                        "target": {"kind": "Node", "name": "node-1"}})
            current = await call(s, "GET", f"{pods}/{name}")
            current["status"]["phase"] = "Running"
            await call(s, "PUT", f"{pods}/{name}/status", current)

        before = cpu_seconds(pid)
        elapsed = await workers(n, one)
        return n / elapsed, (cpu_seconds(pid) - before) / n * 1000


async def bench_leases(url: str, pid: int, nodes: int, renewals: int,
                       profile: Path | None = None) -> tuple[float, float]:
    ns = "kube-node-lease"
    base = f"{url}/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
    sessions = [session(f"node-{i}-token") for i in range(nodes)]
    try:
        latest: list[Any] = [None] * nodes

        async def make(i: int) -> None:
            latest[i] = await call(sessions[i], "POST", base, {
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": f"node-{i}", "namespace": ns},
                "spec": {"holderIdentity": f"node-{i}", "leaseDurationSeconds": 40,
                         "renewTime": micro_now()}}, ok=(201, 409))
            if latest[i].get("kind") == "Status":  # made by an earlier pass
                latest[i] = await call(sessions[i], "GET", f"{base}/node-{i}")

        await workers(nodes, make)

        # A node renews one at a time (a slow renewal is not overtaken by the next).
        locks = [asyncio.Lock() for _ in range(nodes)]

        async def renew(k: int) -> None:
            i = k % nodes
            async with locks[i]:
                lease = latest[i]
                lease["spec"]["renewTime"] = micro_now()
                latest[i] = await call(sessions[i], "PUT", f"{base}/node-{i}", lease)

        with Profile(profile, "leases", pid):
            before = cpu_seconds(pid)
            elapsed = await workers(renewals, renew)
        return renewals / elapsed, (cpu_seconds(pid) - before) / renewals * 1000
    finally:
        for s in sessions:
            await s.close()


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="draemu-writes-") as tmp:
        proc, url = await start(Path(tmp), args.nodes)
        try:
            await ready(url)
            await bench_pods(url, proc.pid, args.pods // 10, 10 ** 6)  # warm-up
            with Profile(args.profile, "pods", proc.pid):
                pods_rate, pod_ms = await bench_pods(url, proc.pid, args.pods, 0)
            lease_rate, lease_ms = await bench_leases(url, proc.pid, args.nodes, args.renewals,
                                                      args.profile)
        finally:
            proc.terminate()
            proc.wait(30)
    load = os.getloadavg()
    print(f"pods: {args.pods} lifecycles (create, status patch, binding, get, status PUT): "
          f"{pods_rate:.1f} pods/s, apiserver CPU {pod_ms:.2f} ms per pod")
    print(f"leases: {args.renewals} PUTs by {args.nodes} nodes: {lease_rate:.1f} PUTs/s, "
          f"apiserver CPU {lease_ms:.3f} ms per PUT")
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at end")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--renewals", type=int, default=5000)
    parser.add_argument("--profile", type=Path, default=None, metavar="DIR")
    asyncio.run(main(parser.parse_args()))
