"""bench/realk8s.py end to end on its draemu side alone (the real binaries are not
needed): gated DRA workloads of upstream's scheduler_perf at two nodes, each allocation
checked by the bench."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def test_gated_dra_workloads_run_on_draemu():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]),
        DRAEMU_BENCH_STALL_SECONDS="30")
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "realk8s.py"), "--sides", "draemu",
         "--workload", "partitionable,consumable,firstavailable", "--nodes", "2",
         "--duration", "3"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=110)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ")]
    for name, size in (("partitionable", "10 in flight"), ("consumable", "10 in flight"),
                       ("firstavailable", "10 pods")):
        assert any(row.startswith(f"| {name}: pods/s | 2 nodes, {size} |")
                   for row in rows), rows
