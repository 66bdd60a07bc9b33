"""`draemu demo seed` from start to end: its own temporary cluster, real kubectl."""

import os
import re
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
    scenarios = dict(zip(TITLES, _sections(out), strict=True))
    # Every scenario shows its decision: each node's verdict, each device's mark and
    # reason in words, and what decided between the nodes that fit.
    for title in TITLES[:-1]:
        assert "\n$ draemu why pod/" in scenarios[title], title
        assert DECIDED.search(scenarios[title]), title
    one = scenarios["Scenario 1:"]
    assert "(Tesla-T4) — memory 16Gi, too small (needs >= 80Gi)" in one
    assert "(A100-PCIE-40GB) — memory 40Gi, too small (needs >= 80Gi)" in one
    assert "(A100-SXM4-80GB) — matches" in one or "(A100-SXM4-80GB) — chosen" in one
    assert re.search(r"^\$ kubectl get pod -l job-name=llm-training-80gb .*\n"
                     r"llm-training-80gb-\w+\n", one, re.M)  # the pod's name, not a blank
    assert "(shared with default/inference-pod-b)" in scenarios["Scenario 2a:"]
    two_b = scenarios["Scenario 2b:"]
    assert "(H100-SXM5-80GB) — allowMultipleAllocations=false (needs true)" in two_b
    assert "❌ gpu-node-02: NodeAffinity: node(s) didn't match Pod's node affinity/selector" \
        in two_b
    assert "memory=60Gi" in two_b  # what is left of the shared GPU
    assert "(ConnectX-5) — speed 100, too small (needs >= 400)" in scenarios["Scenario 3:"]
    assert "declare -x GPU_DEVICE_" in out  # logs show the injected devices
    assert out.rstrip().splitlines()[-2].startswith("Done: every object the demo created")


TITLES = ("Scenario 1:", "Scenario 2a:", "Scenario 2b:", "Scenario 3:",
          "Scenario 3, without the constraint")
DECIDED = re.compile(r"^(\S+ is the only node that fits|.* tie at the highest score, \d+: "
                     r"kube-scheduler picks at random among the best, and picked \S+\.|"
                     r"\S+ has the highest score, \d+.*)", re.M)


def _sections(out: str) -> list[str]:
    """The text under each scenario's title, in order."""
    parts = re.split(r"^━+\n(Scenario [^\n]*)\n━+$", out, flags=re.M)
    return [parts[i + 1] for i in range(1, len(parts) - 1, 2)]
