"""Start-up time and idle memory of `draemu apiserver` and `draemu up --preset seed`.

    .venv/bin/python bench/startup.py [--runs N] [--no-bytecode-cache]

Python's bytecode cache is on, as for an installed draemu: compiled modules go to a
temporary PYTHONPYCACHEPREFIX (warmed by one uncounted run), so the source tree is left
alone even where PYTHONDONTWRITEBYTECODE is set. `--no-bytecode-cache` compiles every
module from source on every start instead (what PYTHONDONTWRITEBYTECODE=1 costs).

Each run spawns a fresh process (plain HTTP, in-memory store, free port) and measures:

- `draemu apiserver`: seconds from spawn to the first 200 from /readyz;
- `draemu up --preset seed`: seconds from spawn to /readyz, and to "draemu is ready"
  (printed once every node's ResourceSlices are published and its drivers registered);
- resident memory (VmRSS of the process and its children) after the process has idled
  for a moment once ready;
- PSS (shared pages split between the processes that share them) and the process count;
- the CPU seconds the process (and its children) had used when it became ready: on a
  busy machine the wall clock measures the neighbours too, the CPU time much less so.

Prints the median of the runs (and the spread), since a single start-up is noisy.
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DRAEMU = [sys.executable, "-m", "draemu.cmd.cli"]
IDLE_SECONDS = 2.0
URL_LINE = re.compile(r"(?:API server:)\s+http://([\d.]+):(\d+)")


def rss_kib(pid: int) -> int:
    """VmRSS of `pid` plus that of its descendants (drivers may run as children)."""
    total = 0
    pending = [pid]
    while pending:
        p = pending.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
            for task in Path(f"/proc/{p}/task").iterdir():
                children = (task / "children").read_text().split()
                pending.extend(int(c) for c in children)
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def pss_kib(pid: int) -> int:
    """Pss of `pid` plus that of its descendants: pages shared between them (a child
    forked from its parent) are counted once, split between the sharers."""
    total = 0
    for p in process_tree(pid):
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return total


def process_tree(pid: int) -> list[int]:
    """`pid` and its descendants (Linux /proc); bench/realk8s.py uses it too."""
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


def processes(pid: int) -> int:
    return len(process_tree(pid))


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of `pid` and its descendants so far."""
    ticks = 0
    for p in process_tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def ready(host: str, port: int) -> bool:
    conn = http.client.HTTPConnection(host, port, timeout=1)
    try:
        conn.request("GET", "/readyz")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


ENV = dict(os.environ)
UP_ARGS: list[str] = []


class Run:
    """One spawned draemu process; its stdout lines are timestamped as they arrive."""

    def __init__(self, args: list[str]) -> None:
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen(DRAEMU + args, cwd=ROOT, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, env=ENV)
        self.lines: list[tuple[float, str]] = []
        self.changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self.changed:
                self.lines.append((time.perf_counter() - self.t0, line))
                self.changed.notify_all()

    def wait_line(self, pattern: re.Pattern[str], timeout: float = 60) -> tuple[float, str]:
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                for at, line in self.lines:
                    if pattern.search(line):
                        return at, line
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"draemu exited or timed out: {self.lines}")
                self.changed.wait(0.05)

    def wait_ready(self, host: str, port: int, timeout: float = 60) -> float:
        deadline = time.monotonic() + timeout
        while not ready(host, port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("draemu exited or timed out before /readyz")
            time.sleep(0.002)
        return time.perf_counter() - self.t0

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def port_of(run: Run) -> tuple[str, int]:
    _, line = run.wait_line(URL_LINE)
    match = URL_LINE.search(line)
    assert match is not None
    return match.group(1), int(match.group(2))


def apiserver_once() -> dict[str, float]:
    # The port is only known once printed, which is after the server listens; so a
    # fixed free port is chosen by binding and releasing it first.
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run = Run(["apiserver", "--in-memory", "--insecure-http", "--port", str(port)])
    try:
        ready_s = run.wait_ready("127.0.0.1", port)
        cpu = cpu_seconds(run.proc.pid)
        time.sleep(IDLE_SECONDS)
        return {"ready": ready_s, "cpu": cpu, "rss": rss_kib(run.proc.pid) / 1024,
                "pss": pss_kib(run.proc.pid) / 1024}
    finally:
        run.stop()


def up_once() -> dict[str, float]:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run = Run(["up", "--in-memory", "--insecure-http", "--port", str(port),
               "--preset", "seed", *UP_ARGS])
    try:
        ready_s = run.wait_ready("127.0.0.1", port)
        slices_s, _ = run.wait_line(re.compile(r"draemu is ready"))
        cpu = cpu_seconds(run.proc.pid)
        time.sleep(IDLE_SECONDS)
        return {"ready": ready_s, "slices": slices_s, "cpu": cpu,
                "rss": rss_kib(run.proc.pid) / 1024, "pss": pss_kib(run.proc.pid) / 1024,
                "processes": processes(run.proc.pid)}
    finally:
        run.stop()


def summary(label: str, values: list[float], unit: str, goal: str) -> str:
    med = statistics.median(values)
    return (f"{label:<44} {med:7.3f} {unit}  (min {min(values):.3f}, max {max(values):.3f})"
            f"  goal {goal}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each (default: 5)")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="compile every module from source on every start")
    parser.add_argument("--up-only", action="store_true",
                        help="measure only `draemu up --preset seed`")
    parser.add_argument("--up-arg", action="append", default=[], metavar="ARG",
                        help="one more argument for `draemu up` (e.g. --up-arg=--one-process)")
    args = parser.parse_args()
    UP_ARGS.extend(args.up_arg)

    with tempfile.TemporaryDirectory(prefix="draemu-bench-pycache-") as pycache:
        if args.no_bytecode_cache:
            ENV["PYTHONDONTWRITEBYTECODE"] = "1"
        else:
            ENV.pop("PYTHONDONTWRITEBYTECODE", None)
            ENV["PYTHONPYCACHEPREFIX"] = pycache
            up_once()  # writes the bytecode of everything `draemu up` imports
        measure(args.runs, args.no_bytecode_cache, args.up_only)


def measure(runs: int, no_bytecode_cache: bool, up_only: bool = False) -> None:
    api = [] if up_only else [apiserver_once() for _ in range(runs)]
    up = [up_once() for _ in range(runs)]
    cache = "off" if no_bytecode_cache else "on"
    print(f"median of {runs} runs, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
          f"bytecode cache {cache}" + (f", up {' '.join(UP_ARGS)}" if UP_ARGS else ""))
    if api:
        _print_apiserver(api)
    _print_up(up)


def _print_apiserver(api: list[dict[str, float]]) -> None:
    print(summary("draemu apiserver: spawn to /readyz", [r["ready"] for r in api], "s",
                  "<= 0.5 s"))
    print(summary("draemu apiserver: CPU time at /readyz", [r["cpu"] for r in api], "s", "-"))
    print(summary("draemu apiserver: idle RSS", [r["rss"] for r in api], "MiB", "-"))
    print(summary("draemu apiserver: idle PSS", [r["pss"] for r in api], "MiB", "-"))


def _print_up(up: list[dict[str, float]]) -> None:
    print(summary("draemu up --preset seed: spawn to /readyz", [r["ready"] for r in up], "s",
                  "<= 0.5 s"))
    print(summary("draemu up --preset seed: spawn to slices", [r["slices"] for r in up], "s",
                  "<= 1.5 s"))
    print(summary("draemu up --preset seed: CPU time at slices", [r["cpu"] for r in up], "s",
                  "-"))
    print(summary("draemu up --preset seed: idle RSS", [r["rss"] for r in up], "MiB",
                  "<= 120 MiB"))
    print(summary("draemu up --preset seed: idle PSS", [r["pss"] for r in up], "MiB", "-"))
    print(summary("draemu up --preset seed: processes", [r["processes"] for r in up], "",
                  "-"))


if __name__ == "__main__":
    main()
