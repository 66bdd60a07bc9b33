"""draemu against the real Kubernetes control plane, side by side on the same machine.

Workload SchedulingWithResourceClaimTemplate, after upstream's scheduler_perf DRA set:
N nodes (Node objects created directly, no kubelets), each publishing one ResourceSlice
with 8 devices; one DeviceClass; P pods, each with a claim from one ResourceClaimTemplate
whose request selects a device by CEL. The figure is the time from the first pod create
until every pod is bound and every claim allocated (seen by watches from this process),
as pods per second; also the CPU seconds the control plane used in that window and its
memory (sums over its processes of the resident set at the end, of its peak, and of the
proportional set size). On a busy machine the CPU seconds compare better than the wall
clock: the kernel shares the cores per runnable thread, and the Go components run many.

The two sides run in alternating runs, each on a fresh control plane:

- real: etcd + kube-apiserver + kube-scheduler + kube-controller-manager, the binaries
  tests/e2e/realk8s/build.sh builds into ~/.cache/draemu/realk8s/bin (DRAEMU_REALK8S_BIN;
  with DRAEMU_REALK8S_COMPONENTS="kube-apiserver kube-scheduler kube-controller-manager"),
  and etcd at the version Kubernetes pins (bench/build-etcd.sh), on
  loopback with TLS, default feature gates, client QPS of the scheduler and the
  controller-manager raised to 1000 (burst 1000). The controller-manager runs its default
  controllers and the resource-claim controller, without the node lifecycle controller:
  with no kubelets it would taint the nodes unreachable after its grace period; for the
  same reason the apiserver runs without the TaintNodesByCondition admission plugin
  (upstream's scheduler_perf runs neither).
- draemu: `draemu up --preset empty` on a fresh data dir (durable SQLite, default
  settings; --no-ui).

    .venv/bin/python bench/realk8s.py --nodes 100,500 [--pods 1000] [--runs 2]
        [--sides real,draemu] [--keep]

Scale-out on PostgreSQL: `--sides pg1,pg3` compares one `draemu apiserver` on a durable
PostgreSQL database with three sharing it (and one PKI, --pki-dir), the scheduler and
the controllers in processes of their own, against the first and second apiserver.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(os.environ.get("DRAEMU_REALK8S_BIN",
                          Path.home() / ".cache/draemu/realk8s/bin"))
STALL_SECONDS = float(os.environ.get("DRAEMU_BENCH_STALL_SECONDS", "120"))
QPS = "1000"

_spec = importlib.util.spec_from_file_location("bench_scheduler_workload",
                                               Path(__file__).with_name("scheduler.py"))
assert _spec is not None and _spec.loader is not None
workload = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(workload)
NS = workload.NS


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _tree(pid: int) -> list[int]:
    """`pid` and its descendants (Linux /proc)."""
    out, pending = [], [pid]
    while pending:
        p = pending.pop()
        out.append(p)
        try:
            for task in Path(f"/proc/{p}/task").iterdir():
                pending.extend(int(c) for c in (task / "children").read_text().split())
        except (FileNotFoundError, ProcessLookupError):
            continue
    return out


def _status_kib(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def _pss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return 0


def _cpu(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Side:
    """A control plane: its processes, its admin kubeconfig."""

    name = ""
    kubeconfig: Path

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.procs: list[subprocess.Popen[bytes]] = []

    def _spawn(self, name: str, argv: list[str], **kw: Any) -> subprocess.Popen[bytes]:
        log = open(self.workdir / f"{name}.log", "wb")  # the child keeps its copy
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, **kw)
        log.close()
        self.procs.append(proc)
        return proc

    def pids(self) -> list[int]:
        return [p for proc in self.procs if proc.poll() is None for p in _tree(proc.pid)]

    def cpu(self) -> float:
        return sum(_cpu(p) for p in self.pids())

    def rss_mib(self) -> tuple[float, float, float]:
        """Sums over the processes: resident now, their peaks, and proportional (shared
        pages divided among their sharers: PostgreSQL's backends share its buffers)."""
        pids = self.pids()
        return (sum(_status_kib(p, "VmRSS") for p in pids) / 1024,
                sum(_status_kib(p, "VmHWM") for p in pids) / 1024,
                sum(_pss_kib(p) for p in pids) / 1024)

    def check(self) -> None:
        for proc in self.procs:
            if proc.poll() is not None:
                name = Path(str(proc.args[0])).name
                logs = sorted(self.workdir.glob("*.log"))
                tail = "".join(f"--- {f.name}\n" + "\n".join(
                    f.read_text(errors="replace").splitlines()[-15:]) + "\n" for f in logs)
                raise RuntimeError(f"{name} exited with {proc.returncode}\n{tail}")

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(self.procs):
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


class RealSide(Side):
    name = "real"

    def start(self) -> None:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        from draemu import kubeconfig, pki

        for b in ("etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager"):
            if not (BIN / b).exists():
                raise SystemExit(f"{BIN / b} is missing: build it with tests/e2e/realk8s/"
                                 "build.sh (DRAEMU_REALK8S_COMPONENTS=...) or "
                                 "bench/build-etcd.sh")
        d = self.workdir
        p_etcd, p_peer, p_api, p_sched, p_kcm = free_ports(5)
        ca = pki.make_ca("bench-realk8s-ca")
        files: dict[str, bytes] = {"ca.crt": ca.cert_pem, "ca.key": ca.key_pem}
        serving = pki.make_serving_cert(ca, "127.0.0.1")
        files |= {"apiserver.crt": serving.cert_pem, "apiserver.key": serving.key_pem}
        sa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        files["sa.key"] = sa.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.TraditionalOpenSSL,
                                           serialization.NoEncryption())
        files["sa.pub"] = sa.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        for name, data in files.items():
            (d / name).write_bytes(data)
            (d / name).chmod(0o600)
        url = f"https://127.0.0.1:{p_api}"
        for who, user, groups in (("admin", "kubernetes-admin", ["system:masters"]),
                                  ("scheduler", "system:kube-scheduler", []),
                                  ("controller-manager", "system:kube-controller-manager",
                                   [])):
            pair = pki.make_client_cert(ca, user, groups)
            kubeconfig.write(d / f"{who}.kubeconfig", kubeconfig.build(
                url, user=user, ca_pem=ca.cert_pem, client_cert_pem=pair.cert_pem,
                client_key_pem=pair.key_pem))
        self.kubeconfig = d / "admin.kubeconfig"
        (d / "etcd").mkdir(mode=0o700)
        self._spawn("etcd", [
            str(BIN / "etcd"), "--name", "bench", "--data-dir", str(d / "etcd"),
            "--listen-client-urls", f"http://127.0.0.1:{p_etcd}",
            "--advertise-client-urls", f"http://127.0.0.1:{p_etcd}",
            "--listen-peer-urls", f"http://127.0.0.1:{p_peer}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{p_peer}",
            "--initial-cluster", f"bench=http://127.0.0.1:{p_peer}",
            "--logger", "zap", "--log-level", "warn"])
        self._spawn("kube-apiserver", [
            str(BIN / "kube-apiserver"), "--etcd-servers", f"http://127.0.0.1:{p_etcd}",
            "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
            "--secure-port", str(p_api), "--endpoint-reconciler-type", "none",
            "--tls-cert-file", str(d / "apiserver.crt"),
            "--tls-private-key-file", str(d / "apiserver.key"),
            "--client-ca-file", str(d / "ca.crt"),
            "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
            "--service-account-key-file", str(d / "sa.pub"),
            "--service-account-signing-key-file", str(d / "sa.key"),
            "--service-cluster-ip-range", "10.0.0.0/24",
            "--authorization-mode", "Node,RBAC", "--cert-dir", str(d),
            # it taints every new Node not-ready until the node lifecycle controller sees
            # its kubelet report Ready; there are no kubelets here
            "--disable-admission-plugins", "TaintNodesByCondition"])
        self._spawn("kube-scheduler", [
            str(BIN / "kube-scheduler"), "--kubeconfig", str(d / "scheduler.kubeconfig"),
            "--bind-address", "127.0.0.1", "--secure-port", str(p_sched),
            "--leader-elect=false", "--kube-api-qps", QPS, "--kube-api-burst", QPS])
        self._spawn("kube-controller-manager", [
            str(BIN / "kube-controller-manager"),
            "--kubeconfig", str(d / "controller-manager.kubeconfig"),
            "--bind-address", "127.0.0.1", "--secure-port", str(p_kcm),
            "--leader-elect=false",
            "--controllers", "*,resourceclaim-controller,-node-lifecycle-controller",
            "--service-account-private-key-file", str(d / "sa.key"),
            "--root-ca-file", str(d / "ca.crt"), "--use-service-account-credentials=true",
            "--cluster-signing-cert-file", str(d / "ca.crt"),
            "--cluster-signing-key-file", str(d / "ca.key"),
            "--service-cluster-ip-range", "10.0.0.0/24",
            "--kube-api-qps", QPS, "--kube-api-burst", QPS])
        self.health_ports = [p_sched, p_kcm]

    async def wait_components(self) -> None:
        """Until the scheduler and the controller-manager answer /healthz."""
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        import aiohttp

        deadline = time.monotonic() + 180
        async with aiohttp.ClientSession() as session:
            for port in self.health_ports:
                while True:
                    self.check()
                    try:
                        async with session.get(f"https://127.0.0.1:{port}/healthz",
                                               ssl=ctx, timeout=aiohttp.ClientTimeout(2)) as r:
                            if r.status == 200:
                                break
                    except (aiohttp.ClientError, OSError, TimeoutError):
                        pass
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"component on port {port} not healthy")
                    await asyncio.sleep(0.2)


class DraemuSide(Side):
    name = "draemu"

    def start(self) -> None:
        (port,) = free_ports(1)
        data = self.workdir / "data"
        self.kubeconfig = self.workdir / "admin.kubeconfig"
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get(
            "PYTHONPATH", "").split(os.pathsep) if p])
        self._spawn("draemu", [sys.executable, "-m", "draemu", "up", "--preset", "empty",
                               "--data-dir", str(data), "--port", str(port), "--no-ui",
                               "--kubeconfig", str(self.kubeconfig)], cwd=ROOT, env=env)

    async def wait_components(self) -> None:
        log = self.workdir / "draemu.log"
        deadline = time.monotonic() + 180
        while "draemu is ready" not in (log.read_text(errors="replace")
                                        if log.exists() else ""):
            self.check()
            if time.monotonic() > deadline:
                raise RuntimeError("draemu up did not become ready")
            await asyncio.sleep(0.1)


class PostgresSide(Side):
    """`draemu apiserver` processes (APISERVERS of them) on one durable PostgreSQL
    database, sharing one PKI (--pki-dir), with `draemu scheduler` and `draemu
    controllers` as processes of their own. With several apiservers, the scheduler talks
    to the first, the controllers to the second and this benchmark to the third (each
    client to one apiserver, as a balancer would spread them)."""

    apiservers = 1

    def start(self) -> None:
        from draemu.cmd.testing.postgres import PostgresServer

        self.postgres = PostgresServer(durable=True)
        url = self.postgres.create_database("bench")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get(
            "PYTHONPATH", "").split(os.pathsep) if p])
        d, draemu = self.workdir, [sys.executable, "-m", "draemu"]
        ports = free_ports(self.apiservers)
        for i, port in enumerate(ports):
            self._spawn(f"apiserver-{i}", draemu + [
                "apiserver", "--data-dir", str(d / f"data-{i}"), "--pki-dir", str(d / "pki"),
                "--store", url, "--port", str(port)], cwd=ROOT, env=env)
        configs = [d / f"data-{i % self.apiservers}" / "kubeconfig" for i in range(3)]
        self.kubeconfig = configs[2]
        self._later = [
            ("scheduler", draemu + ["scheduler", "--kubeconfig", str(configs[0])]),
            ("controllers", draemu + ["controllers", "--kubeconfig", str(configs[1]),
                                      "--service-account-private-key-file",
                                      str(d / "pki" / "sa.key")])]
        self._env = env

    def pids(self) -> list[int]:
        pids = super().pids()
        pid_file = self.postgres.data / "postmaster.pid"
        if pid_file.exists():
            pids += _tree(int(pid_file.read_text().split()[0]))
        return pids

    async def wait_components(self) -> None:
        from draemu.client import Client
        from draemu.client.rest import wait_ready

        for i in range(self.apiservers):
            config = self.workdir / f"data-{i}" / "kubeconfig"
            deadline = time.monotonic() + 180
            while not config.exists():
                self.check()
                if time.monotonic() > deadline:
                    raise RuntimeError(f"apiserver {i} did not start")
                await asyncio.sleep(0.1)
            async with Client.from_kubeconfig(config) as client:
                await wait_ready(client, timeout=180)
        for name, argv in self._later:
            self._spawn(name, argv, cwd=ROOT, env=self._env)
        # both keep running (check() says if one exits) and are given a moment to sync
        await asyncio.sleep(3)
        self.check()

    def stop(self) -> None:
        super().stop()
        self.postgres.stop()


class Postgres1Side(PostgresSide):
    name = "pg1"
    apiservers = 1


class Postgres3Side(PostgresSide):
    name = "pg3"
    apiservers = 3


async def _create(client: Any, api_version: str, resource: str, obj: dict[str, Any],
                  namespace: str | None = None) -> None:
    from draemu.client import ApiError

    try:
        await client.create(api_version, resource, obj, namespace)
    except ApiError as e:
        if e.code != 409:
            raise


def start_profile(side: Side, folder: Path) -> list[tuple[subprocess.Popen[bytes], Path]]:
    """py-spy on every Python process of the side (the Go ones are left alone)."""
    spy = Path(sys.executable).with_name("py-spy")
    if not spy.exists():
        raise SystemExit(f"--profile needs py-spy beside {sys.executable}")
    folder.mkdir(parents=True, exist_ok=True)
    spies = []
    for pid in side.pids():
        try:
            if "python" not in Path(f"/proc/{pid}/exe").resolve().name:
                continue
        except OSError:
            continue
        out = folder / f"{side.name}-{pid}.txt"
        spies.append((subprocess.Popen(
            [str(spy), "record", "--pid", str(pid), "--rate", "50", "--nonblocking",
             "--format", "raw", "--output", str(out)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), out))
    return spies


# The frames every sample of a command passes through, left out of the totals.
_ENTRY_FILES = {"<frozen runpy>", "runners.py", "__main__.py", "aio.py", "cli.py", "up.py",
                "controlplane.py", "__init__.py", "base_events.py"}


def stop_profile(spies: list[tuple[subprocess.Popen[bytes], Path]]) -> None:
    """Stop the samplers and print, per process, where its samples were: the functions
    most often on top of the stack (self) and most often anywhere in it (total)."""
    for proc, _ in spies:
        proc.send_signal(signal.SIGINT)
    for proc, out in spies:
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
        if not out.exists():
            continue
        own: dict[str, int] = {}
        total: dict[str, int] = {}
        samples = 0
        for row in out.read_text().splitlines():
            stack, _, count = row.rpartition(" ")
            if not stack or not count.isdigit():
                continue
            n = int(count)
            samples += n
            frames = [f.split(" (")[0] + " " + f.split(" (")[-1].split(":")[0].rsplit("/", 1)[-1]
                      for f in stack.split(";")]
            own[frames[-1]] = own.get(frames[-1], 0) + n
            for f in set(frames):
                if f.rsplit(" ", 1)[-1] not in _ENTRY_FILES:
                    total[f] = total.get(f, 0) + n
        print(f"  profile {out.name}: {samples} samples (50/s of the time not idle)")
        for title, table in (("self", own), ("total", total)):
            for name, n in sorted(table.items(), key=lambda kv: -kv[1])[:15]:
                print(f"    {title:5s} {100 * n / max(samples, 1):5.1f}%  {name}")


async def measure(side: Side, nodes: int, pods: int,
                  profile: Path | None = None) -> dict[str, float]:
    from draemu.client import Client, Informer
    from draemu.client.rest import wait_ready

    while not side.kubeconfig.exists():
        side.check()
        await asyncio.sleep(0.1)
    client = Client.from_kubeconfig(side.kubeconfig, user_agent="draemu-bench")
    watcher = Client.from_kubeconfig(side.kubeconfig, user_agent="draemu-bench-watch")
    try:
        await wait_ready(client, timeout=180)
        await side.wait_components()
        await _create(client, "v1", "namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                   "metadata": {"name": NS}})
        # The ServiceAccount admission of a real apiserver refuses pods until the
        # controller-manager made the namespace's default ServiceAccount.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if (await client.list("v1", "serviceaccounts", NS))["items"]:
                break
            await asyncio.sleep(0.2)
        await _create(client, "resource.k8s.io/v1", "deviceclasses", workload.DEVICE_CLASS)
        await _create(client, "resource.k8s.io/v1", "resourceclaimtemplates",
                      workload.TEMPLATE, NS)
        await workload._bounded([client.create("v1", "nodes", workload.node(i))
                                 for i in range(nodes)])
        await workload._bounded([client.create("resource.k8s.io/v1", "resourceslices",
                                               workload.resource_slice(i))
                                 for i in range(nodes)])

        bound: set[str] = set()
        allocated: dict[str, tuple[str, str]] = {}
        changed = asyncio.Event()

        def on_pod(*objs: dict[str, Any]) -> None:
            obj = objs[-1]
            if (obj.get("spec") or {}).get("nodeName"):
                bound.add(obj["metadata"]["name"])
                changed.set()

        def on_claim(*objs: dict[str, Any]) -> None:
            obj = objs[-1]
            alloc = (obj.get("status") or {}).get("allocation")
            if alloc:
                r = alloc["devices"]["results"][0]
                allocated[obj["metadata"]["name"]] = (r["pool"], r["device"])
                changed.set()

        pod_inf = Informer(watcher, "v1", "pods", NS)
        claim_inf = Informer(watcher, "resource.k8s.io/v1", "resourceclaims", NS)
        pod_inf.add_handler(on_add=on_pod, on_update=on_pod)
        claim_inf.add_handler(on_add=on_claim, on_update=on_claim)
        for inf in (pod_inf, claim_inf):
            await inf.start()
            await inf.wait_synced(60)

        spies = start_profile(side, profile) if profile else []
        cpu0 = side.cpu()
        start = time.perf_counter()
        await workload._bounded([client.create("v1", "pods", workload.pod(i), NS)
                                 for i in range(pods)])
        created = time.perf_counter() - start
        last_progress, last_count = time.perf_counter(), 0
        while len(bound) < pods or len(allocated) < pods:
            changed.clear()
            try:
                await asyncio.wait_for(changed.wait(), 1.0)
            except TimeoutError:
                side.check()
            count = len(bound) + len(allocated)
            if count != last_count:
                last_progress, last_count = time.perf_counter(), count
            elif time.perf_counter() - last_progress > STALL_SECONDS:
                waiting = next((p for p in pod_inf.list()
                                if not (p.get("spec") or {}).get("nodeName")), {})
                raise RuntimeError(
                    f"{side.name}: no progress for {STALL_SECONDS}s: {len(bound)} bound, "
                    f"{len(allocated)} allocated, {len(claim_inf.list())} claims; a pod "
                    f"waiting: {waiting.get('metadata', {}).get('name')} "
                    f"{waiting.get('status')}")
        elapsed = time.perf_counter() - start
        cpu = side.cpu() - cpu0
        if spies:
            stop_profile(spies)
        rss, peak, pss = side.rss_mib()
        for inf in (pod_inf, claim_inf):
            await inf.stop()
        if len(set(allocated.values())) != pods:
            raise RuntimeError(f"{side.name}: {pods} claims share "
                               f"{len(set(allocated.values()))} devices")
        return {"seconds": elapsed, "pods_per_second": pods / elapsed,
                "create_seconds": created, "cpu": cpu, "rss": rss, "peak": peak, "pss": pss}
    finally:
        await client.close()
        await watcher.close()


def run_side(kind: type[Side], nodes: int, pods: int, keep: bool,
             profile: Path | None = None) -> dict[str, float]:
    from draemu import aio

    workdir = Path(tempfile.mkdtemp(prefix=f"draemu-bench-{kind.name}-"))
    side = kind(workdir)
    try:
        side.start()
        return aio.run(measure(side, nodes, pods, profile))
    finally:
        side.stop()
        if keep:
            print(f"  ({kind.name}: logs and state kept in {workdir})", flush=True)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def line(name: str, nodes: int, pods: int, r: dict[str, float]) -> str:
    return (f"{name:6s} nodes={nodes:5d} pods={pods:5d} time={r['seconds']:7.2f}s "
            f"{r['pods_per_second']:7.1f} pods/s  (pods created in {r['create_seconds']:.2f}s; "
            f"control plane CPU {r['cpu']:.1f}s; RSS {r['rss']:.0f} MiB, "
            f"sum of peaks {r['peak']:.0f} MiB, PSS {r['pss']:.0f} MiB)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="100,500",
                        help="comma-separated node counts (default: 100,500)")
    parser.add_argument("--pods", type=int, default=0,
                        help="pods per run (default: min(1000, 4 per node))")
    parser.add_argument("--runs", type=int, default=1,
                        help="alternating runs of each side per node count (default: 1)")
    parser.add_argument("--sides", default="real,draemu",
                        help="comma-separated sides, run in this order: real, draemu, and "
                        "pg1 / pg3 (one / three `draemu apiserver` on one PostgreSQL, "
                        "scheduler and controllers in processes of their own) "
                        "(default: real,draemu)")
    parser.add_argument("--profile", type=Path, default=None, metavar="DIR",
                        help="sample draemu's processes with py-spy while pods are "
                        "scheduled; print where the time went, keep the stacks in DIR")
    parser.add_argument("--keep", action="store_true",
                        help="keep each run's logs and state (paths are printed)")
    args = parser.parse_args()
    from draemu import log

    log.configure("console", "warning")
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(f"{os.cpu_count()} CPUs, load average {' '.join(load)} at start", flush=True)
    known = {s.name: s for s in (RealSide, DraemuSide, Postgres1Side, Postgres3Side)}
    try:
        sides: list[type[Side]] = [known[name] for name in args.sides.split(",")]
    except KeyError as e:
        parser.error(f"--sides: unknown side {e}")
    for n in (int(x) for x in args.nodes.split(",")):
        pods = args.pods or min(1000, 4 * n)
        results: dict[str, list[dict[str, float]]] = {s.name: [] for s in sides}
        for run in range(args.runs):
            # alternate which side goes first, so that neither always meets the
            # machine in the same state
            for kind in (sides if run % 2 == 0 else sides[::-1]):
                r = run_side(kind, n, pods, args.keep,
                             args.profile if kind.name != "real" else None)
                results[kind.name].append(r)
                print(line(kind.name, n, pods, r), flush=True)
        # draemu's sides against the real one when it ran, else against the first
        base = "real" if "real" in results else sides[0].name
        for other in [s for s in sides if s.name != base]:
            for run in range(args.runs):
                a, b = results[base][run], results[other.name][run]
                print(f"ratio  nodes={n:5d} pods={pods:5d} run {run + 1}: {other.name}/{base} "
                      f"= {b['pods_per_second'] / a['pods_per_second']:.2f}x pods/s, "
                      f"{a['cpu'] / b['cpu']:.2f}x less CPU, RSS {b['rss']:.0f} vs "
                      f"{a['rss']:.0f} MiB", flush=True)
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(f"load average {' '.join(load)} at end", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
