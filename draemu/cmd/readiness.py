"""Whether a `draemu up` on a data directory is ready, for scripts: `draemu up
--background` returns once it is, `draemu wait` waits for it, `draemu down` stops it.

`draemu up` writes `ready.json` in its data directory once the banner is printed (the
API serves, the nodes are Ready, the web view listens) and removes it when it stops. A
record left by a draemu that was killed names a process that no longer runs (or runs
something else): it is not taken for a ready cluster.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

RECORD = "ready.json"
LOG = "draemu.log"  # what a background draemu writes


def write(data_dir: Path, info: dict[str, Any]) -> None:
    tmp = data_dir / (RECORD + ".tmp")
    tmp.write_text(json.dumps({"pid": os.getpid(), **info}, indent=2) + "\n")
    tmp.replace(data_dir / RECORD)


def remove(data_dir: Path) -> None:
    """Forget readiness (at start, and at stop), unless another process's record."""
    record = _read(data_dir)
    if record is None or record.get("pid") == os.getpid() or not _draemu_runs(record):
        (data_dir / RECORD).unlink(missing_ok=True)


def _read(data_dir: Path) -> dict[str, Any] | None:
    try:
        record = json.loads((data_dir / RECORD).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("pid"), int) else None


def _draemu_runs(record: dict[str, Any]) -> bool:
    """Whether the record's process still runs, and is a draemu (pids are reused)."""
    try:
        with open(f"/proc/{record['pid']}/cmdline", "rb") as f:
            return b"draemu" in f.read()
    except OSError:
        return False


def ready(data_dir: Path) -> dict[str, Any] | None:
    """The record of the draemu ready on `data_dir`, or None."""
    record = _read(data_dir)
    return record if record is not None and _draemu_runs(record) else None


def wait(data_dir: Path, timeout: float, *, pid: int | None = None,
         gone: Callable[[], bool] = lambda: False) -> dict[str, Any] | None:
    """Until a draemu (that one, with `pid`) is ready on `data_dir`: its record, or None
    after `timeout` seconds or as soon as `gone()` says it will never be."""
    deadline = time.monotonic() + timeout
    while True:
        record = ready(data_dir)
        if record is not None and (pid is None or record["pid"] == pid):
            return record
        if gone() or time.monotonic() > deadline:
            return None
        time.sleep(0.1)


def running_pid(data_dir: Path) -> int | None:
    """The draemu that runs on `data_dir`, ready or not: its record's, else the one the
    store's lock file names."""
    record = ready(data_dir)
    if record is not None:
        return int(record["pid"])
    try:
        text = (data_dir / "draemu.lock").read_text().strip()
    except OSError:
        return None
    if text.isdigit() and _draemu_runs({"pid": int(text)}):
        return int(text)
    return None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a child of ours that exited is a zombie until reaped
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        return True
