"""`draemu apiserver` as a process: prints where it is, serves, stops on SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.e2e


def test_apiserver_command_serves_and_shuts_down_on_sigterm(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "draemu", "--log-level", "warning", "apiserver",
         "--data-dir", str(tmp_path / "data"), "--port", "0",
         "--kubeconfig", str(tmp_path / "out" / "config")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(3)]
        assert lines[0].startswith("API server:  https://127.0.0.1:")
        assert lines[1].strip() == f"export KUBECONFIG={tmp_path / 'out' / 'config'}"
        assert lines[2].startswith("ready in ")
        config = yaml.safe_load((tmp_path / "out" / "config").read_text())
        assert config["clusters"][0]["cluster"]["server"] == lines[0].split()[-1]
        assert (tmp_path / "data" / "kubeconfig").exists()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_bad_feature_gate_is_a_usage_error(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "draemu", "apiserver", "--in-memory",
         "--feature-gates", "NoSuchGate=true"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "unrecognized feature gate: NoSuchGate" in result.stderr


def test_a_users_own_kubeconfig_is_never_overwritten(tmp_path: Path) -> None:
    mine = tmp_path / "config"
    mine.write_text("apiVersion: v1\nkind: Config\nclusters:\n- name: prod\n  cluster: {}\n")
    result = subprocess.run(
        [sys.executable, "-m", "draemu", "apiserver", "--in-memory", "--port", "0",
         "--kubeconfig", str(mine)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "refusing to overwrite" in result.stderr
    assert "prod" in mine.read_text()
