"""Acknowledged writes survive SIGKILL of the writing process."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from draemu.store import open_store

pytestmark = pytest.mark.e2e

CHILD = Path(__file__).parents[2] / "store" / "store_child.py"
TIMEOUT = 60


def run_until_killed(url: str, acks_before_kill: int, delay: float) -> list[tuple[str, int, str]]:
    """Start a writer, SIGKILL it after `acks_before_kill` acknowledgements plus `delay`
    seconds, and return every write it acknowledged."""
    child = subprocess.Popen([sys.executable, str(CHILD), "crash-writer", url],
                             stdout=subprocess.PIPE, text=True)
    acks: list[tuple[str, int, str]] = []
    deadline = time.monotonic() + TIMEOUT
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "opened"
        while len(acks) < acks_before_kill and time.monotonic() < deadline:
            _, key, revision, value = child.stdout.readline().split()
            acks.append((key, int(revision), value))
        time.sleep(delay)
        os.kill(child.pid, signal.SIGKILL)
        # Acknowledgements already written to the pipe before the kill count too.
        for line in child.stdout:
            _, key, revision, value = line.split()
            acks.append((key, int(revision), value))
    finally:
        child.kill()
        child.wait(TIMEOUT)
    assert child.returncode == -signal.SIGKILL
    return acks


async def test_acknowledged_writes_survive_sigkill(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    rng = random.Random()
    acks: list[tuple[str, int, str]] = []
    for _ in range(3):  # each round recovers from the previous kill, then is killed
        acks += run_until_killed(url, rng.randint(50, 300), rng.uniform(0, 0.02))
        async with await open_store(url, compaction_interval=0) as store:
            for key, revision, value in acks:
                kv = await store.get(key, revision=revision)
                if value == "-":
                    assert kv is None, f"deletion of {key} at {revision} lost"
                else:
                    assert kv is not None, f"{key} at {revision} lost"
                    assert (kv.mod_revision, kv.value) == (revision, value.encode())
            current = await store.current_revision()
            # The kill may land between a commit and its acknowledgement, never before.
            assert current >= acks[-1][1]
            created = await store.create(f"/registry/after/crash{current}", b"1")
            assert created.mod_revision == current + 1
