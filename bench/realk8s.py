"""draemu against the real Kubernetes control plane, side by side on the same machine.

Each workload runs on a fresh control plane of each side, the sides one after the other
(the order alternating between runs), and the table at the end gives both figures and
their ratio, with the load average when each side finished.

DRA workloads (bench/draworkloads.py: upstream's scheduler_perf DRA test cases, run from
upstream's own configurations and templates, scaled to the nodes asked for): template,
churn, claim, partitionable, backtracking, compatibility, consumable, firstavailable,
listattributes, taints, extended, podgroupclaim, podgrouptemplate. Nodes are Node objects
created directly (no kubelets; their Leases renewed every 10 s by this process, as
kubelets do), then upstream's operations in order: slices, classes, claims allocated
beforehand, pods scheduled beforehand, and the measured pods: all at once (the figure:
pods / seconds from the first create until every one is scheduled, seen by a watch of
this process), or in a steady state (`count` in flight, each deleted once scheduled and
replaced, for the duration: pods scheduled / duration). Also the CPU seconds the control
plane used in that window and its memory (sums over its processes of the resident set at
the end, of its peak, and of the proportional set size). On a busy machine the CPU
seconds compare better than the wall clock: the kernel shares the cores per runnable
thread, and the Go components run many. Every allocation is checked at the end (no
device, counter or capacity given twice, constraints held, the counts asked), and a
device held by two live claims at any time during the run; a wrong one fails the run.
The gates a test case sets are set to true with --feature-gates on every component of
both sides (and kube-apiserver gets --runtime-config for the PodGroup API).

apiserver workloads (bench/apiload.py), in this order on one control plane per side:
list (LIST of 10k pods, whole and in pages of 500), watch (a write's fan-out to 1,000
watchers), startup (restart with N objects in the store).

Sides:

- real: etcd + kube-apiserver + kube-scheduler + kube-controller-manager, the binaries
  tests/e2e/realk8s/build.sh builds into ~/.cache/draemu/realk8s/bin (DRAEMU_REALK8S_BIN;
  `build.sh etcd kube-apiserver kube-scheduler kube-controller-manager`; etcd at the
  version Kubernetes pins), on
  loopback with TLS, client QPS of the scheduler and the controller-manager raised to
  1000 (burst 1000). The controller-manager runs its default controllers and the
  resource-claim controller, without the node lifecycle controller (upstream's
  scheduler_perf runs none); the apiserver runs without the TaintNodesByCondition
  admission plugin (it taints new nodes not-ready until a kubelet reports).
- draemu: `draemu up --preset empty` on a fresh data dir (durable SQLite, default
  settings; --no-ui), also without the node lifecycle controller
  (`--controllers '*,-node-lifecycle'`).
- pg1 / pg3: one / three `draemu apiserver` on a durable PostgreSQL database (sharing one
  PKI, --pki-dir), the scheduler and the controllers in processes of their own, spread
  over the apiservers by the client (each client to one apiserver).
- pg3lb: pg3 with every client on one address, bench/tcpbalancer.py, a round-robin TCP
  balancer (each new connection to the next apiserver).

    .venv/bin/python bench/realk8s.py [--workload template|churn|...|dra|api|all]
        [--nodes 100,500] [--pods N] [--runs 2] [--sides real,draemu] [--keep]

bench/README.md lists the workloads, their options and the figures measured.
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



def _load(name: str) -> Any:
    """A sibling module of this script (bench/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}",
                                                  Path(__file__).with_name(f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


draworkloads = _load("draworkloads")
apiload = _load("apiload")
_tree = _load("startup").process_tree


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports




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


def _machine_ticks() -> tuple[int, int]:
    """The machine's CPU time so far, in clock ticks: (busy, all); idle and waiting for
    I/O are not busy."""
    ticks = [int(t) for t in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(ticks) - ticks[3] - ticks[4], sum(ticks)


def _machine_busy(before: tuple[int, int], after: tuple[int, int]) -> str:
    """How busy every core was between two `_machine_ticks`: a share near 100% means
    the side could not have gone faster on this machine without using less CPU."""
    busy, total = after[0] - before[0], after[1] - before[1]
    return f"machine busy {100 * busy / max(total, 1):.0f}% of {os.cpu_count()} cores"


def _label(pid: int) -> str:
    """A process's part: `draemu up` (its forked child: `draemu up child`), `draemu
    scheduler`, the name of a Go binary, `postgres`."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        parent_argv = Path(f"/proc/{parent}/cmdline").read_bytes().split(b"\0")
    except (OSError, IndexError, ValueError):
        return f"pid {pid}"
    words = [w.decode(errors="replace") for w in argv if w]
    if not words:
        return f"pid {pid}"
    if "draemu" in words[:3] and words.index("draemu") + 1 < len(words):
        i = words.index("draemu")
        label = " ".join(words[i:i + 2])
        if label == "draemu apiserver" and "--port" in words:
            label += " :" + words[words.index("--port") + 1]
        return label + (" child" if parent_argv == argv else "")
    name = Path(words[0]).name
    return "postgres" if name.startswith("postgres") else name


def cpu_by_process(before: dict[int, float]) -> str:
    """CPU seconds since `before` (pid: CPU seconds then), summed per part (`_label`),
    busiest first."""
    parts: dict[str, list[float]] = {}
    for pid, then in before.items():
        part = parts.setdefault(_label(pid), [0.0, 0])
        part[0] += _cpu(pid) - then
        part[1] += 1
    return ", ".join(f"{label}{f' ({n} processes)' if n > 1 else ''}: {cpu:.2f}"
                     for label, (cpu, n) in sorted(parts.items(), key=lambda kv: -kv[1][0]))


class Side:
    """A control plane: its processes, its admin kubeconfig."""

    name = ""
    kubeconfig: Path

    def __init__(self, workdir: Path, gates: tuple[str, ...] = (),
                 runtime_config: tuple[str, ...] = ()) -> None:
        self.workdir = workdir
        self.procs: list[subprocess.Popen[bytes]] = []
        self.gates = gates  # set to true on every component
        # kube-apiserver's --runtime-config (draemu serves an API group's versions when
        # its gates are on)
        self.runtime_config = runtime_config
        self.restarts = 0
        self.respawned_at = 0.0

    async def settle(self) -> None:
        """Until the side can have its apiserver restarted."""

    def gate_flags(self) -> list[str]:
        return ["--feature-gates", ",".join(f"{g}=true" for g in self.gates)] \
            if self.gates else []

    def _respawn(self, proc: subprocess.Popen[bytes], name: str) -> subprocess.Popen[bytes]:
        """Stop `proc` (SIGTERM, as an operator would) and start it again with the same
        command line, logging to `name`.log."""
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        self.procs.remove(proc)
        self.respawned_at = time.perf_counter()
        return self._spawn(name, [str(a) for a in proc.args], cwd=self._cwd, env=self._env)

    _cwd: Path | None = None
    _env: dict[str, str] | None = None

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
                                 "build.sh etcd kube-apiserver kube-scheduler "
                                 "kube-controller-manager")
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
        self.apiserver = self._spawn("kube-apiserver", [
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
            "--disable-admission-plugins", "TaintNodesByCondition"] + self.gate_flags()
            + (["--runtime-config", ",".join(self.runtime_config)]
               if self.runtime_config else []))
        self._spawn("kube-scheduler", [
            str(BIN / "kube-scheduler"), "--kubeconfig", str(d / "scheduler.kubeconfig"),
            "--bind-address", "127.0.0.1", "--secure-port", str(p_sched),
            "--leader-elect=false", "--kube-api-qps", QPS, "--kube-api-burst", QPS]
            + self.gate_flags())
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
            "--kube-api-qps", QPS, "--kube-api-burst", QPS] + self.gate_flags())
        self.health_ports = [p_sched, p_kcm]

    async def settle(self) -> None:
        """Before the apiserver restarts: the controller-manager exits if the apiserver
        goes away while it starts its controllers (they start one after another, after
        its /healthz answers), so it is given until its service-account controller made
        the accounts of the last ones."""
        from draemu.client import ApiError

        async with admin_client(self) as client:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                try:
                    await client.get("v1", "serviceaccounts", "namespace-controller",
                                     "kube-system")
                    await asyncio.sleep(2)  # the last few controllers after it
                    return
                except ApiError:
                    await asyncio.sleep(0.2)
        raise RuntimeError("the controller-manager did not start its controllers")

    def restart_apiserver(self) -> None:
        """kube-apiserver again on the same etcd (which keeps running)."""
        self.restarts += 1
        self.apiserver = self._respawn(self.apiserver, f"kube-apiserver-{self.restarts}")

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


def draemu_env(workdir: Path) -> dict[str, str]:
    """The environment of draemu's processes: this tree first on the path, and Python's
    bytecode cached (in the run's folder) even where PYTHONDONTWRITEBYTECODE is set, as
    in an installed draemu (pip compiles it): the first start compiles the modules, the
    restarts timed read them compiled (otherwise every start compiled ~400 modules
    again: 1.5-2 s of a restart at load 6-10)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get(
        "PYTHONPATH", "").split(os.pathsep) if p])
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(workdir / "pycache")
    return env


class DraemuSide(Side):
    name = "draemu"

    def start(self) -> None:
        (port,) = free_ports(1)
        data = self.workdir / "data"
        self.kubeconfig = self.workdir / "admin.kubeconfig"
        env = draemu_env(self.workdir)
        self._cwd, self._env = ROOT, env
        self.up = self._spawn("draemu", [
            sys.executable, "-m", "draemu", "up", "--preset", "empty", "--data-dir", str(data),
            "--port", str(port), "--no-ui", "--kubeconfig", str(self.kubeconfig),
            "--controllers", CONTROLLERS] + self.gate_flags(), cwd=ROOT, env=env)
        self.log = self.workdir / "draemu.log"

    def restart_apiserver(self) -> None:
        """`draemu up` again on its data dir (the whole of it: apiserver, scheduler,
        controllers are one command)."""
        self.restarts += 1
        self.up = self._respawn(self.up, f"draemu-{self.restarts}")
        self.log = self.workdir / f"draemu-{self.restarts}.log"

    async def wait_components(self) -> None:
        log = self.log
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
    controllers` as processes of their own. With several apiservers and no balancer, the
    scheduler talks to the first, the controllers to the second and this benchmark to the
    third (client-side spreading: each client to one apiserver). With BALANCER, every
    client talks to one address, bench/tcpbalancer.py, which gives each new connection to
    the next apiserver in turn."""

    apiservers = 1
    balancer = False

    def start(self) -> None:
        from draemu.cmd.testing.postgres import PostgresServer

        self.postgres = PostgresServer(durable=True)
        url = self.postgres.create_database("bench")
        env = draemu_env(self.workdir)
        d, draemu = self.workdir, [sys.executable, "-m", "draemu"]
        ports = free_ports(self.apiservers + 1)
        self.ports, lb_port = ports[:-1], ports[-1]
        for i, port in enumerate(self.ports):
            self._spawn(f"apiserver-{i}", draemu + [
                "apiserver", "--data-dir", str(d / f"data-{i}"), "--pki-dir", str(d / "pki"),
                "--store", url, "--port", str(port)] + self.gate_flags(), cwd=ROOT, env=env)
        if self.balancer:
            self._spawn("balancer", [sys.executable, str(Path(__file__).with_name(
                "tcpbalancer.py")), str(lb_port)] + [f"127.0.0.1:{p}" for p in self.ports],
                cwd=ROOT, env=env)
            configs = [d / "balanced.kubeconfig"] * 3
        else:
            configs = [d / f"data-{i % self.apiservers}" / "kubeconfig" for i in range(3)]
        self.lb_port = lb_port
        self.kubeconfig = configs[2]
        self._later = [
            ("scheduler", draemu + ["scheduler", "--kubeconfig", str(configs[0])]
             + self.gate_flags()),
            ("controllers", draemu + ["controllers", "--kubeconfig", str(configs[1]),
                                      "--controllers", CONTROLLERS,
                                      "--service-account-private-key-file",
                                      str(d / "pki" / "sa.key")] + self.gate_flags())]
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
        if self.balancer:
            # the apiservers' admin kubeconfig (one PKI), aimed at the balancer
            text = (self.workdir / "data-0" / "kubeconfig").read_text()
            balanced = text.replace(f"https://127.0.0.1:{self.ports[0]}",
                                    f"https://127.0.0.1:{self.lb_port}")
            if balanced == text:
                raise RuntimeError("the apiserver's kubeconfig does not name its address")
            (self.workdir / "balanced.kubeconfig").write_text(balanced)
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


class Postgres3BalancedSide(PostgresSide):
    name = "pg3lb"
    apiservers = 3
    balancer = True


SIDES: dict[str, type[Side]] = {s.name: s for s in (
    RealSide, DraemuSide, Postgres1Side, Postgres3Side, Postgres3BalancedSide)}


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


async def connect(side: Side) -> tuple[Any, Any]:
    """Once the side's components are up: an admin client and a second one for watches."""
    from draemu.client import Client
    from draemu.client.rest import wait_ready

    await side.wait_components()
    while not side.kubeconfig.exists():
        side.check()
        await asyncio.sleep(0.1)
    client = Client.from_kubeconfig(side.kubeconfig, user_agent="draemu-bench")
    watcher = Client.from_kubeconfig(side.kubeconfig, user_agent="draemu-bench-watch")
    await wait_ready(client, timeout=180)
    return client, watcher


async def prepare_namespace(client: Any, namespace: str) -> None:
    await _create(client, "v1", "namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                               "metadata": {"name": namespace}})
    await apiload.wait_service_account(client, namespace)


def _owner_pod(claim: dict[str, Any]) -> str | None:
    for ref in claim["metadata"].get("ownerReferences") or ():
        if ref.get("kind") == "Pod":
            return str(ref["name"])
    return None


class Ledger:
    """The devices of the live claims: which claim holds each, and every time a device
    was given to a second live claim. Results with a share ID (devices that allow
    multiple allocations) and admin access are left to check_allocations."""

    def __init__(self) -> None:
        self.holder: dict[tuple[str, str, str], str] = {}
        self.held: dict[str, list[tuple[str, str, str]]] = {}
        self.conflicts: list[str] = []

    def update(self, *objs: dict[str, Any]) -> None:
        claim = objs[-1]
        name = f"{claim['metadata'].get('namespace')}/{claim['metadata']['name']}"
        self.remove(claim)
        results = ((claim.get("status") or {}).get("allocation") or {}).get(
            "devices", {}).get("results") or []
        keys = [(r["driver"], r["pool"], r["device"]) for r in results
                if not r.get("shareID") and not r.get("adminAccess")]
        for key in keys:
            other = self.holder.get(key)
            if other is not None and other != name:
                self.conflicts.append(f"{'/'.join(key)}: {other} and {name}")
            self.holder[key] = name
        self.held[name] = keys

    def remove(self, claim: dict[str, Any]) -> None:
        name = f"{claim['metadata'].get('namespace')}/{claim['metadata']['name']}"
        for key in self.held.pop(name, []):
            if self.holder.get(key) == name:
                del self.holder[key]


LEASE_NS = "kube-node-lease"
# Both sides run without the node lifecycle controller: there are no kubelets to report
# Ready again, so a node it marked unreachable (this process's renewals late on a loaded
# machine) would stay tainted on one side only.
CONTROLLERS = "*,-node-lifecycle"
RENEW_SECONDS = 10.0  # the kubelet's default (a quarter of the 40 s lease)


async def heartbeat(client: Any, names: list[str]) -> None:
    """Renew every node's Lease every 10 s, spread over the interval, as kubelets do:
    both sides pay for the writes of a cluster of that size (neither runs the node
    lifecycle controller, which would read them)."""
    from draemu.api.meta import micro_time_now

    await draworkloads.bounded([_create(client, "coordination.k8s.io/v1", "leases", {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": n, "namespace": LEASE_NS},
        "spec": {"holderIdentity": n, "leaseDurationSeconds": 40,
                 "renewTime": micro_time_now()}}, LEASE_NS) for n in names])
    while True:
        started = time.monotonic()
        for k, n in enumerate(names):
            await asyncio.sleep(max(0.0, started + RENEW_SECONDS * k / len(names)
                                    - time.monotonic()))
            await client.patch("coordination.k8s.io/v1", "leases", n,
                               {"spec": {"renewTime": micro_time_now()}}, namespace=LEASE_NS)
        await asyncio.sleep(max(0.0, started + RENEW_SECONDS - time.monotonic()))


def plural(kind: str) -> str:
    lower = kind.lower()
    return lower + ("es" if lower.endswith("s") else "s")


class Plan:
    """One DRA workload's operations run against one side (see bench/draworkloads.py):
    the objects made, the pods watched until scheduled, the measured phase timed."""

    def __init__(self, side: Side, client: Any, watcher: Any, wl: Any, nodes: int,
                 ops: list[Any]) -> None:
        from draemu.client import Informer

        self.side, self.client, self.wl, self.nodes, self.ops = side, client, wl, nodes, ops
        self.bound: dict[str, set[str]] = {}     # namespace -> pods scheduled
        self.scheduled = asyncio.Event()
        self.ledger = Ledger()
        self.pod_inf = Informer(watcher, "v1", "pods")
        self.claim_inf = Informer(watcher, "resource.k8s.io/v1", "resourceclaims")
        self.on_bound: Any = None                # the steady state's deleter
        self.beats: asyncio.Task[None] | None = None

    def _on_pod(self, *objs: dict[str, Any]) -> None:
        obj = objs[-1]
        if (obj.get("spec") or {}).get("nodeName"):
            meta = obj["metadata"]
            seen = self.bound.setdefault(meta["namespace"], set())
            if meta["name"] not in seen:
                seen.add(meta["name"])
                self.scheduled.set()
                if self.on_bound is not None:
                    self.on_bound(obj)

    async def start(self) -> None:
        self.pod_inf.add_handler(on_add=self._on_pod, on_update=self._on_pod)
        self.claim_inf.add_handler(on_add=self.ledger.update, on_update=self.ledger.update,
                                   on_delete=self.ledger.remove)
        for inf in (self.pod_inf, self.claim_inf):
            await inf.start()
            await inf.wait_synced(120)

    async def stop(self) -> None:
        if self.beats is not None:
            self.beats.cancel()
            await asyncio.gather(self.beats, return_exceptions=True)
        for inf in (self.pod_inf, self.claim_inf):
            await inf.stop()

    async def create_objects(self, op: Any) -> list[dict[str, Any]]:
        objs = [draworkloads.objects(op, i) for i in range(op.count)]
        made = await draworkloads.bounded(
            self.client.create(o["apiVersion"], plural(o["kind"]), o, op.namespace)
            for o in objs)
        if op.opcode == "createNodes":
            names = [o["metadata"]["name"] for o in objs]
            self.beats = asyncio.create_task(heartbeat(self.client, names))
        return made

    async def allocate(self, op: Any) -> None:
        """upstream's allocResourceClaims: every claim of the namespace allocated on a
        node picked at random (seeded: both sides get the same allocations)."""
        c = self.client
        claims = (await c.list_all("resource.k8s.io/v1", "resourceclaims", op.namespace))["items"]
        if not claims:
            return
        everything = (await c.list_all("resource.k8s.io/v1", "resourceclaims"))["items"]
        allocated = [x for x in everything if (x.get("status") or {}).get("allocation")]
        nodes = (await c.list_all("v1", "nodes"))["items"]
        classes = (await c.list_all("resource.k8s.io/v1", "deviceclasses"))["items"]
        slices = (await c.list_all("resource.k8s.io/v1", "resourceslices"))["items"]
        done = await asyncio.to_thread(draworkloads.allocate_claims, claims, nodes, classes,
                                       slices, allocated, self.wl.gates)

        async def write(claim: dict[str, Any], allocation: dict[str, Any]) -> None:
            claim = {**claim, "status": {**(claim.get("status") or {}),
                                         "allocation": allocation}}
            await c.update("resource.k8s.io/v1", "resourceclaims", claim, op.namespace,
                           subresource="status")

        await draworkloads.bounded(write(cl, a) for cl, a in done)

    async def wait_scheduled(self, namespace: str, count: int, what: str) -> None:
        last, seen = time.perf_counter(), -1
        while len(self.bound.get(namespace, ())) < count:
            self.scheduled.clear()
            try:
                await asyncio.wait_for(self.scheduled.wait(), 1.0)
            except TimeoutError:
                self.side.check()
            if self.beats is not None and self.beats.done():
                self.beats.result()  # a failed renewal stops the run
            n = len(self.bound.get(namespace, ()))
            if n != seen:
                last, seen = time.perf_counter(), n
            elif time.perf_counter() - last > STALL_SECONDS:
                waiting = next((p for p in self.pod_inf.list()
                                if p["metadata"]["namespace"] == namespace
                                and not (p.get("spec") or {}).get("nodeName")), {})
                raise RuntimeError(
                    f"{self.side.name} {self.wl.name} {what}: no progress for "
                    f"{STALL_SECONDS}s: {n} of {count} pods scheduled; a pod waiting: "
                    f"{waiting.get('metadata', {}).get('name')} {waiting.get('status')}")

    async def create_pods(self, op: Any, first: int = 0, count: int | None = None) -> None:
        await draworkloads.bounded(
            self.client.create("v1", "pods", draworkloads.objects(op, i), op.namespace,
                               decode=False)
            for i in range(first, first + (op.count if count is None else count)))

    async def burst(self, op: Any) -> float:
        """All pods at once; the seconds until every one is scheduled."""
        start = time.perf_counter()
        await self.create_pods(op)
        await self.wait_scheduled(op.namespace, op.count, "measured pods")
        return time.perf_counter() - start

    async def steady(self, op: Any) -> tuple[float, int]:
        """`op.count` pods in flight for `op.duration` s, each deleted once scheduled
        and replaced (upstream's steady state): the seconds and the pods scheduled."""
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.on_bound = lambda pod: pod["metadata"]["namespace"] == op.namespace \
            and queue.put_nowait(pod)
        next_index = op.count
        counted = 0
        start = time.perf_counter()

        async def replace_pods() -> None:
            nonlocal next_index, counted
            while True:
                pod = await queue.get()
                counted += 1
                await self.client.delete("v1", "pods", pod["metadata"]["name"], op.namespace,
                                         grace_period_seconds=0)
                i, next_index = next_index, next_index + 1
                await self.client.create("v1", "pods", draworkloads.objects(op, i),
                                         op.namespace, decode=False)

        workers = [asyncio.create_task(replace_pods()) for _ in range(min(op.count, 32))]
        try:
            await self.create_pods(op)
            deadline = start + op.duration
            last = counted
            while time.perf_counter() < deadline:
                await asyncio.sleep(min(1.0, max(0.0, deadline - time.perf_counter())))
                for w in workers + ([self.beats] if self.beats else []):
                    if w.done():
                        w.result()
                self.side.check()
                if counted == last and time.perf_counter() - start > STALL_SECONDS:
                    raise RuntimeError(f"{self.side.name} {self.wl.name}: nothing scheduled")
            elapsed = time.perf_counter() - start
            return elapsed, counted
        finally:
            self.on_bound = None
            for w in workers:
                w.cancel()
            await asyncio.gather(*workers, return_exceptions=True)

    async def check(self) -> list[str]:
        claims = [c for c in (await self.client.list_all(
            "resource.k8s.io/v1", "resourceclaims"))["items"]
            if (c.get("status") or {}).get("allocation")]
        slices = (await self.client.list_all("resource.k8s.io/v1", "resourceslices"))["items"]
        return list(self.ledger.conflicts) + draworkloads.check_allocations(claims, slices)


async def measure_dra(side: Side, wl: Any, nodes: int, ops: list[Any],
                      profile: Path | None = None) -> dict[str, float]:
    """A DRA workload's operations (bench/draworkloads.py), the one with collectMetrics
    measured: pods/s, and the control plane's CPU seconds in that window and memory."""
    client, watcher = await connect(side)
    plan = Plan(side, client, watcher, wl, nodes, ops)
    try:
        await _create(client, "v1", "namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                   "metadata": {"name": LEASE_NS}})
        for ns in draworkloads.namespaces(ops):
            await prepare_namespace(client, ns)
        await plan.start()
        out: dict[str, float] = {}
        for op in ops:
            if op.opcode in ("createNodes", "createAny", "createPodGroups"):
                await plan.create_objects(op)
            elif op.opcode == "allocResourceClaims":
                await plan.allocate(op)
            elif op.opcode == "createPods" and not op.collect_metrics:
                await plan.create_pods(op)
                await plan.wait_scheduled(op.namespace, op.count, "pods before the measure")
            elif op.opcode == "createPods":
                out = await _measured(plan, op, profile)
            else:
                raise RuntimeError(f"{wl.name}: operation {op.opcode} is not supported")
        problems = await plan.check()
        if problems:
            raise RuntimeError(f"{side.name} {wl.name}: wrong allocations: {problems[:5]} "
                               f"({len(problems)} problems)")
        return out
    finally:
        await plan.stop()
        await client.close()
        await watcher.close()


async def _measured(plan: Plan, op: Any, profile: Path | None) -> dict[str, float]:
    side = plan.side
    spies = start_profile(side, profile) if profile else []
    cpu0 = side.cpu()
    cpu0_by_pid = {pid: _cpu(pid) for pid in side.pids()}
    own0, machine0 = time.process_time(), _machine_ticks()
    if op.steady_state:
        elapsed, pods = await plan.steady(op)
    else:
        elapsed, pods = await plan.burst(op), op.count
    cpu = side.cpu() - cpu0
    print("  CPU s per process: " + cpu_by_process(cpu0_by_pid)
          + f"; this benchmark: {time.process_time() - own0:.2f}; "
          + _machine_busy(machine0, _machine_ticks()), flush=True)
    if spies:
        stop_profile(spies)
    rss, peak, pss = side.rss_mib()
    return {"seconds": elapsed, "pods": pods, "pods_per_second": pods / elapsed, "cpu": cpu,
            "cpu_per_pod_ms": 1000 * cpu / max(pods, 1), "rss": rss, "peak": peak,
            "pss": pss}


async def measure_api(side: Side, steps: list[str], args: argparse.Namespace
                      ) -> dict[str, float]:
    """The apiserver figures, in this order on one control plane: list, watch, startup."""
    from draemu.client.rest import wait_ready

    client, watcher = await connect(side)
    out: dict[str, float] = {}
    made = 0
    try:
        await watcher.close()
        if "list" in steps:
            out |= await apiload.measure_list(client, args.list_pods, args.list_runs)
            made += args.list_pods
        if "watch" in steps:
            out |= await apiload.measure_watch(client, side.kubeconfig, args.watchers,
                                               args.watch_writes, cpu=side.cpu)
        out["rss"] = side.rss_mib()[0]
        if "startup" in steps:
            n, rate = await apiload.fill(client, args.objects, made)
            out["startup_objects"] = made + n
            out["startup_fill_per_s"] = rate
            await side.settle()
            await client.close()
            times = []
            for _ in range(args.restarts):
                side.restart_apiserver()  # the clock starts as the new process is started
                t = side.respawned_at
                client = admin_client(side)
                while True:
                    side.check()
                    try:
                        await wait_ready(client, timeout=0.5)
                        break
                    except TimeoutError:
                        if time.perf_counter() - t > 300:
                            raise
                times.append(time.perf_counter() - t)
                await client.close()
            out["startup_ready_s"] = min(times)
            out["startup_ready_max_s"] = max(times)
            client = admin_client(side)
            # the figure is of a store with everything made in it: all of it is still there
            listed = await client.list("v1", "configmaps", apiload.FILL_NS,
                                       label_selector=apiload.FILL_LABEL)
            there = len(listed["items"])
            if there != n:
                raise RuntimeError(f"{side.name}: {there} ConfigMaps after the restarts, "
                                   f"{n} made")
        out["load"] = float(Path("/proc/loadavg").read_text().split()[0])
        return out
    finally:
        await client.close()
        await watcher.close()


def admin_client(side: Side) -> Any:
    from draemu.client import Client

    return Client.from_kubeconfig(side.kubeconfig, user_agent="draemu-bench")


def run_side(kind: type[Side], gates: tuple[str, ...], keep: bool,
             body: Any, runtime_config: tuple[str, ...] = ()) -> dict[str, float]:
    """A fresh control plane of `kind`, `body(side)` measured on it, then stopped."""
    from draemu import aio

    workdir = Path(tempfile.mkdtemp(prefix=f"draemu-bench-{kind.name}-"))
    side = kind(workdir, gates, runtime_config)
    try:
        side.start()
        result = aio.run(body(side))
        result.setdefault("load", float(Path("/proc/loadavg").read_text().split()[0]))
        return result
    finally:
        side.stop()
        if keep:
            print(f"  ({kind.name}: logs and state kept in {workdir})", flush=True)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def dra_line(name: str, wl: str, nodes: int, r: dict[str, float]) -> str:
    return (f"{name:6s} {wl:16s} nodes={nodes:5d} pods={int(r['pods']):5d} "
            f"time={r['seconds']:7.2f}s {r['pods_per_second']:7.1f} pods/s  (control plane "
            f"CPU {r['cpu']:.1f}s, {r['cpu_per_pod_ms']:.2f} ms a pod; RSS {r['rss']:.0f} MiB, "
            f"sum of peaks {r['peak']:.0f} MiB, PSS {r['pss']:.0f} MiB; "
            f"load {r['load']:.2f})")


# (key, label, higher is better, format) of the apiserver figures
API_FIGURES = [
    ("list_full_p50", "LIST {list_pods} pods, full, p50 s", False, "{:.3f}"),
    ("list_full_p99", "LIST {list_pods} pods, full, p99 s", False, "{:.3f}"),
    ("list_paged_p50", "LIST {list_pods} pods, pages of 500, p50 s", False, "{:.3f}"),
    ("list_paged_p99", "LIST {list_pods} pods, pages of 500, p99 s", False, "{:.3f}"),
    ("list_create_per_s", "pod creates/s (32 in flight)", True, "{:.0f}"),
    ("watch_open_s", "open {watchers} watches, s", False, "{:.2f}"),
    ("watch_open_cpu_s", "open {watchers} watches, control-plane CPU s", False, "{:.2f}"),
    ("watch_write_cpu_ms", "watched write and its fan-out, control-plane CPU ms", False,
     "{:.1f}"),
    ("watch_client_cpu_ms", "the same, the bench's watchers' CPU ms", False, "{:.1f}"),
    ("watch_write_p50", "watched write acknowledged, p50 s", False, "{:.4f}"),
    ("watch_first_p50", "write to first of {watchers} watchers, p50 s", False, "{:.4f}"),
    ("watch_median_p50", "write to median watcher, p50 s", False, "{:.4f}"),
    ("watch_all_p50", "write to all {watchers} watchers, p50 s", False, "{:.4f}"),
    ("watch_all_p99", "write to all {watchers} watchers, p99 s", False, "{:.4f}"),
    ("startup_fill_per_s", "ConfigMap creates/s (32 in flight)", True, "{:.0f}"),
    ("startup_ready_s", "restart to ready, {objects} objects, best s", False, "{:.2f}"),
    ("startup_ready_max_s", "restart to ready, {objects} objects, worst s", False, "{:.2f}"),
    ("rss", "RSS before the restarts, MiB", False, "{:.0f}"),
]


def ratio(base: float, other: float, higher_better: bool) -> str:
    if not base or not other:
        return "-"
    return f"{(other / base if higher_better else base / other):.2f}x"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="template",
                        help="comma-separated workloads: " + ", ".join(
                            list(draworkloads.WORKLOADS) + API_STEPS) + ", dra (every DRA "
                        "workload), api (list, watch, startup) or all (default: template)")
    parser.add_argument("--nodes", default="100,500",
                        help="comma-separated node counts of the DRA workloads "
                        "(default: 100,500)")
    parser.add_argument("--pods", type=int, default=0,
                        help="measured pods per DRA run: of a burst, or in flight in a "
                        "steady state (default: upstream's count for the nodes, see "
                        "bench/draworkloads.py)")
    parser.add_argument("--duration", type=float, default=0.0,
                        help="seconds a steady-state workload is measured (default: "
                        "upstream's, 10)")
    parser.add_argument("--list-pods", type=int, default=10000,
                        help="list: pods in the namespace listed (default: 10000)")
    parser.add_argument("--list-runs", type=int, default=20,
                        help="list: LISTs of each kind (default: 20)")
    parser.add_argument("--watchers", type=int, default=1000,
                        help="watch: watchers (default: 1000)")
    parser.add_argument("--watch-writes", type=int, default=50,
                        help="watch: writes timed (default: 50)")
    parser.add_argument("--objects", type=int, default=20000,
                        help="startup: objects made before the restart, the list's pods "
                        "included (default: 20000; the issue's figure is 80000)")
    parser.add_argument("--restarts", type=int, default=2,
                        help="startup: restarts timed (default: 2)")
    parser.add_argument("--runs", type=int, default=1,
                        help="alternating runs of each side per workload and size "
                        "(default: 1)")
    parser.add_argument("--sides", default="real,draemu",
                        help="comma-separated sides, run in this order: real, draemu, and "
                        "pg1 / pg3 / pg3lb (one / three `draemu apiserver` on one "
                        "PostgreSQL, scheduler and controllers in processes of their own; "
                        "pg3lb: behind bench/tcpbalancer.py) (default: real,draemu)")
    parser.add_argument("--profile", type=Path, default=None, metavar="DIR",
                        help="sample draemu's processes with py-spy while pods are "
                        "scheduled; print where the time went, keep the stacks in DIR")
    parser.add_argument("--keep", action="store_true",
                        help="keep each run's logs and state (paths are printed)")
    args = parser.parse_args()
    # A SIGTERM (`timeout`, `kill`) stops the run as Ctrl-C does: the sides' processes are
    # stopped on the way out instead of left running.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    from draemu import log

    log.configure("console", "warning")
    try:
        sides: list[type[Side]] = [SIDES[name] for name in args.sides.split(",")]
    except KeyError as e:
        parser.error(f"--sides: unknown side {e}")
    try:
        dra, api = select_workloads(args.workload)
    except ValueError as e:
        parser.error(str(e))
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(f"{os.cpu_count()} CPUs, load average {' '.join(load)} at start", flush=True)
    table: list[list[str]] = []
    base = "real" if any(s.name == "real" for s in sides) else sides[0].name
    others = [s.name for s in sides if s.name != base]

    def row(what: str, size: str, run: int, results: dict[str, dict[str, float]],
            key: str, higher: bool, fmt: str) -> None:
        cells = [fmt.format(results[s.name][key]) if key in results[s.name] else "-"
                 for s in sides]
        ratios = [ratio(results[base].get(key, 0), results[o].get(key, 0), higher)
                  for o in others]
        loads = " / ".join(f"{results[s.name]['load']:.1f}" for s in sides)
        table.append([what, size, str(run + 1)] + cells + ratios + [loads])

    def alternate(run: int) -> list[type[Side]]:
        # alternate which side goes first, so that neither always meets the machine in
        # the same state
        return sides if run % 2 == 0 else sides[::-1]

    for name in dra:
        wl = draworkloads.WORKLOADS[name]
        for n in (int(x) for x in args.nodes.split(",")):
            ops = wl.plan(n, args.pods, args.duration)
            print(draworkloads.describe(name, n, args.pods), flush=True)
            for run in range(args.runs):
                results: dict[str, dict[str, float]] = {}
                for kind in alternate(run):
                    def body(side: Side, wl: Any = wl, n: int = n, ops: list[Any] = ops,
                             kind: type[Side] = kind) -> Any:
                        return measure_dra(side, wl, n, ops,
                                           args.profile if kind.name != "real" else None)

                    r = run_side(kind, wl.gates, args.keep, body, wl.runtime_config)
                    results[kind.name] = r
                    print(dra_line(kind.name, name, n, r), flush=True)
                measured = wl.measured(n, args.pods)
                size = f"{n} nodes, " + (f"{measured.count} in flight"
                                         if measured.steady_state else f"{measured.count} pods")
                row(f"{name}: pods/s", size, run, results, "pods_per_second", True, "{:.1f}")
                row(f"{name}: control-plane CPU s", size, run, results, "cpu", False,
                    "{:.1f}")
                row(f"{name}: RSS MiB", size, run, results, "rss", False, "{:.0f}")
    if api:
        for run in range(args.runs):
            results = {}
            for kind in alternate(run):
                def api_body(side: Side) -> Any:
                    return measure_api(side, api, args)

                r = run_side(kind, (), args.keep, api_body)
                results[kind.name] = r
                print(f"{kind.name:6s} " + ", ".join(
                    f"{k}={v:.4g}" for k, v in sorted(r.items())), flush=True)
            for key, label, higher, fmt in API_FIGURES:
                if any(key in r for r in results.values()):
                    row(label.format(**vars(args)), "", run, results, key, higher, fmt)
    header = (["figure", "size", "run"] + [s.name for s in sides]
              + [f"{o} vs {base}" for o in others] + ["load avg (1 min) per side"])
    print()
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for cells in table:
        print("| " + " | ".join(cells) + " |")
    print(f"\n(ratios: > 1 means {', '.join(others) or base} better: more per second, "
          "or less time, CPU or memory)")
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(f"load average {' '.join(load)} at end", flush=True)
    return 0


API_STEPS = ["list", "watch", "startup"]


def select_workloads(text: str) -> tuple[list[str], list[str]]:
    """`--workload`: (DRA workloads, apiserver steps), each in its run order."""
    dra: list[str] = []
    api: list[str] = []
    for item in (x.strip() for x in text.split(",") if x.strip()):
        if item in ("all", "dra"):
            dra += [w for w in draworkloads.WORKLOADS if w not in dra]
        if item in ("all", "api"):
            api += [s for s in API_STEPS if s not in api]
        if item in draworkloads.WORKLOADS and item not in dra:
            dra.append(item)
        elif item in API_STEPS and item not in api:
            api.append(item)
        elif item not in ("all", "dra", "api") and item not in dra + api:
            raise ValueError(f"--workload: unknown workload {item!r}")
    order = list(draworkloads.WORKLOADS)
    return sorted(dra, key=order.index), sorted(api, key=API_STEPS.index)


if __name__ == "__main__":
    sys.exit(main())
