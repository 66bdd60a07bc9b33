"""What a new user meets first: a data dir keeps its preset, errors are one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from draemu.cmd import datadir
from draemu.store.dirlock import DirectoryLock
from draemu.store.errors import StoreLockedError

pytestmark = pytest.mark.unit


def test_first_start_records_the_preset(tmp_path: Path) -> None:
    datadir.check_preset(tmp_path / "d", "seed", None)
    assert json.loads((tmp_path / "d" / "preset.json").read_text()) == {
        "preset": "seed", "nodes": None}
    datadir.check_preset(tmp_path / "d", "seed", None)  # the same again is fine


def test_another_preset_on_a_kept_cluster_is_refused_with_the_choices(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MAKELEVEL", raising=False)
    datadir.check_preset(tmp_path, "seed", None)
    with pytest.raises(datadir.DataDirError) as e:
        datadir.check_preset(tmp_path, "example", 5)
    assert str(e.value) == (
        f"the data directory {tmp_path} holds a cluster started with --preset seed, not "
        "--preset example --nodes 5; pass --reset to delete that cluster and start afresh, "
        "or --data-dir DIR to keep a cluster per preset")


def test_under_make_the_hint_says_how_to_pass_reset_through_make(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAKELEVEL", "1")  # as make sets it for `make up`'s recipe
    datadir.check_preset(tmp_path, "empty", 2)
    with pytest.raises(datadir.DataDirError, match=r"pass --reset \(make up UP_ARGS=--reset\) "
                       "to delete that cluster"):
        datadir.check_preset(tmp_path, "seed", None)


def test_reset_empties_the_data_dir_and_then_any_preset_goes(tmp_path: Path) -> None:
    datadir.check_preset(tmp_path, "seed", None)
    (tmp_path / "store.db").write_text("x")
    (tmp_path / "nodes" / "n1").mkdir(parents=True)
    datadir.reset(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["draemu.lock"]
    datadir.check_preset(tmp_path, "example", 2)


def test_reset_is_refused_while_a_draemu_runs_there(tmp_path: Path) -> None:
    datadir.check_preset(tmp_path, "seed", None)
    held = DirectoryLock(tmp_path / "draemu.lock", f"the data directory {tmp_path}")
    try:
        with pytest.raises(StoreLockedError, match="is in use by another draemu"):
            datadir.reset(tmp_path)
        assert (tmp_path / "preset.json").exists()
    finally:
        held.release()


def _draemu(*args: str, **kw) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DRAEMU_EVENT_LOOP": "asyncio"}
    env.pop("MAKELEVEL", None)  # under `make test`: the hints would mention make
    return subprocess.run([sys.executable, "-m", "draemu", *args], capture_output=True,
                          text=True, timeout=60, env=env, **kw)


@pytest.mark.e2e
@pytest.mark.e2e  # a real process
def test_up_on_another_presets_data_dir_says_what_to_do(tmp_path: Path) -> None:
    datadir.check_preset(tmp_path, "seed", None)
    proc = _draemu("up", "--preset", "empty", "--data-dir", str(tmp_path), "--port", "0")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"error: the data directory {tmp_path} holds a cluster started with --preset seed, "
        "not --preset empty; pass --reset to delete that cluster and start afresh, or "
        "--data-dir DIR to keep a cluster per preset"]


@pytest.mark.e2e
@pytest.mark.e2e  # a real process
def test_a_locked_data_dir_is_one_line_without_a_traceback(tmp_path: Path) -> None:
    datadir.check_preset(tmp_path, "empty", None)
    held = DirectoryLock(tmp_path / "draemu.lock", f"the data directory {tmp_path}")
    try:
        proc = _draemu("up", "--preset", "empty", "--data-dir", str(tmp_path), "--port", "0",
                       "--reset")
    finally:
        held.release()
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(f"error: the data directory {tmp_path} is in use by another draemu")


@pytest.mark.e2e
@pytest.mark.slow
def test_up_in_the_background_returns_when_ready_and_down_stops_it(tmp_path: Path) -> None:
    """A script can start draemu and use it at once (issue 36: `draemu up ... &` then
    `helm install` found the API not listening yet)."""
    data = tmp_path / "data"
    up = _draemu("up", "--background", "--data-dir", str(data), "--port", "0",
                 "--preset", "empty", "--nodes", "2")
    assert up.returncode == 0, up.stderr
    assert up.stdout.startswith("draemu is ready in ")
    assert f"  export KUBECONFIG={data / 'kubeconfig'}" in up.stdout
    assert up.stdout.rstrip().endswith(f"Stop it with: draemu down --data-dir {data}")
    nodes = subprocess.run(["kubectl", "--kubeconfig", str(data / "kubeconfig"), "get",
                            "nodes", "-o", "name"], capture_output=True, text=True, timeout=30)
    assert nodes.stdout.split() == ["node/node-1", "node/node-2"]  # ready means Ready
    wait = _draemu("wait", "--data-dir", str(data), "--timeout", "5s")
    assert wait.returncode == 0 and wait.stdout.startswith("draemu is ready: https://")
    again = _draemu("up", "--background", "--data-dir", str(data), "--port", "0",
                    "--preset", "empty", "--nodes", "2")
    assert again.returncode == 1 and "already runs on the data directory" in again.stderr
    down = _draemu("down", "--data-dir", str(data))
    assert down.returncode == 0 and down.stdout.startswith("stopped draemu (pid ")
    assert not (data / "ready.json").exists()
    wait = _draemu("wait", "--data-dir", str(data), "--timeout", "0.5s")
    assert wait.returncode == 1 and "no draemu became ready" in wait.stderr


@pytest.mark.e2e
def test_a_background_up_that_fails_says_why(tmp_path: Path) -> None:
    datadir.check_preset(tmp_path, "seed", None)
    proc = _draemu("up", "--background", "--data-dir", str(tmp_path), "--preset", "empty",
                   "--port", "0")
    assert proc.returncode == 1
    assert "did not become ready" in proc.stderr
    assert "holds a cluster started with --preset seed" in proc.stderr


def test_wait_reads_kubectl_durations() -> None:
    from draemu.cmd.commands.wait import parse_duration

    assert [parse_duration(t) for t in ("90s", "2m", "1m30s", "500ms", "3")] == [
        90, 120, 90, 0.5, 3]
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration("soon")
