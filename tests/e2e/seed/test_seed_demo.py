"""`draemu demo seed` from start to end: its own temporary cluster, real kubectl."""

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.e2e


def test_demo_walks_through_every_scenario_and_cleans_up(tmp_path):
    env = {**os.environ, "HOME": str(tmp_path)}
    env.pop("KUBECONFIG", None)
    result = subprocess.run([sys.executable, "-m", "draemu", "demo", "seed"], env=env,
                            capture_output=True, text=True, timeout=300, cwd=tmp_path)
    out = result.stdout
    assert result.returncode == 0, out[-3000:] + result.stderr[-3000:]
    assert result.stderr == ""  # no stray log lines in the middle of the teaching output
    for title in ("Scenario 1:", "Scenario 2a:", "Scenario 2b:", "Scenario 3:",
                  "Scenario 3, without the constraint"):
        assert title in out
    # `draemu why` as the command prints it, decision table included: scenario 1's T4s and
    # 40GB A100s are rejected.
    assert "\n$ draemu why pod/" in out and "The decision, replayed device by device" in out
    assert "(Tesla-T4) — selector false" in out
    assert "(A100-PCIE-40GB) — selector false" in out
    assert "(A100-SXM4-80GB) — matches" in out
    assert "memory=60Gi" in out  # 2b: what is left of the shared GPU
    assert "declare -x GPU_DEVICE_" in out  # logs show the injected devices
    assert out.rstrip().splitlines()[-2].startswith("Done: every object the demo created")
