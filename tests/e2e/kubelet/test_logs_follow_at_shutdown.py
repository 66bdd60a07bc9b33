"""`kubectl logs -f` while draemu stops: the follow ends as when its container stops,
kubectl exits 0, and draemu's log holds no traceback (issue 36, point 8: 'request
failed' with a ClientPayloadError, and 'Cannot write to closing transport' under the
process runtime)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from draemu.cmd.testing.process import draemu_up

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

LOOP = "while true; do echo tick; sleep 0.2; done"


@pytest.mark.parametrize("runtime", ["fake", "process"])
def test_a_follow_ends_cleanly_when_draemu_stops(tmp_path: Path, runtime: str) -> None:
    if runtime == "process" and os.geteuid() != 0:
        pytest.skip("the process runtime needs root")
    with draemu_up(tmp_path, "--preset", "empty", "--nodes", "1", "--runtime", runtime) as up:
        up.kubectl("run", "ticker", "--image=busybox", "--restart=Never", "--command", "--",
                   "sh", "-c", LOOP)
        up.kubectl("wait", "--for=condition=Ready", "pod/ticker", "--timeout=60s")
        env = {**os.environ, "KUBECONFIG": str(up.kubeconfig), "HOME": str(tmp_path)}
        follow = subprocess.Popen(["kubectl", "logs", "-f", "ticker"], env=env, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(1.5)  # streaming
    out, err = follow.communicate(timeout=30)
    assert follow.returncode == 0, err
    assert err == ""
    if runtime == "process":
        assert "tick" in out
    log = (tmp_path / "draemu.log").read_text()
    assert "Traceback" not in log and "request failed" not in log, log[-3000:]
