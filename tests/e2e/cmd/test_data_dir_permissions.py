"""Issue 35, defect 6: a data directory's secrets are the cluster's, not every local
user's. The data dir is 0700; the store, keys and kubeconfigs in it 0600; the admin
kubeconfig `draemu up` writes elsewhere 0600; a pod's projected ServiceAccount token is
out of other users' reach. Files of a data dir made before (readable by anyone) are
tightened when draemu starts on it again."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from draemu.cmd.testing.process import RunningDraemu, draemu_up

pytestmark = [pytest.mark.e2e, pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0, reason="reads as another user need root")]

NOBODY = 65534


@pytest.fixture
def folder() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="draemu-perms-", dir="/tmp"))
    path.chmod(0o755)  # only draemu's own permissions stand in another user's way
    yield path
    shutil.rmtree(path, ignore_errors=True)


def readable_by_nobody(path: Path) -> bool:
    result = subprocess.run(["cat" if not path.is_dir() else "ls", str(path)], user=NOBODY,
                            capture_output=True, check=False)
    return result.returncode == 0


def mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def secrets_of(folder: Path) -> list[Path]:
    data = folder / "data"
    return [data / "state.db", data / "state.db-wal", data / "pki" / "sa.key",
            data / "pki" / "ca.key", data / "kubeconfig", data / "nodes" / "node-1" / "kubeconfig",
            folder / "kubeconfig"]


def token_of(c: RunningDraemu, folder: Path) -> Path:
    c.kubectl("run", "sleeper", "--image=busybox", "--restart=Never", "--command", "--", "sleep",
              "600")
    deadline = time.monotonic() + 60
    while True:
        pod = json.loads(c.kubectl("get", "pod", "sleeper", "-o", "json").stdout)
        if pod["status"].get("phase") == "Running":
            break
        assert time.monotonic() < deadline, pod["status"]
        time.sleep(0.3)
    volumes = folder / "data" / "nodes" / "node-1" / "volumes" / pod["metadata"]["uid"]
    (token,) = volumes.glob("kube-api-access-*/token")
    return token


def test_no_other_user_reads_the_store_keys_kubeconfigs_or_pod_tokens(folder):
    with draemu_up(folder, "--preset", "empty", "--nodes", "1", "--runtime", "process") as c:
        token = token_of(c, folder)
        assert mode(folder / "data") == 0o700
        for path in secrets_of(folder):
            assert mode(path) == 0o600, path
        for path in [folder / "data", *secrets_of(folder), token]:
            assert not readable_by_nobody(path), path


def test_a_data_dir_made_readable_before_is_tightened_on_start(folder):
    with draemu_up(folder, "--preset", "empty", "--nodes", "1"):
        pass
    for path in [folder / "data", folder / "data" / "pki"]:
        path.chmod(0o755)
    for path in secrets_of(folder):
        if path.exists():
            path.chmod(0o644)
    with draemu_up(folder, "--preset", "empty", "--nodes", "1"):
        assert mode(folder / "data") == 0o700
        for path in secrets_of(folder):
            if path.exists():
                assert mode(path) == 0o600, path
