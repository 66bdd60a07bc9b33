"""What a data directory holds: which preset its cluster was started with, and `--reset`.

A data directory keeps a cluster between runs. Starting it again with another preset
would mix two clusters (the old nodes stay registered, stop renewing their leases and
go NotReady later), so the first start records its preset in `preset.json` and a later
start with a different one is refused with the choices spelled out.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from draemu.privatefiles import private_dir
from draemu.store.dirlock import DirectoryLock

RECORD = "preset.json"
LOCK = "draemu.lock"  # the store's lock on the data directory (store/factory.py)


class DataDirError(Exception):
    """A data directory that cannot be used as asked; the message says what to do."""


def _choice(preset: str, nodes: int | None) -> dict[str, Any]:
    as_path = Path(preset)
    name = str(as_path.resolve()) if as_path.suffix in (".yaml", ".yml") else preset
    return {"preset": name, "nodes": nodes}


def _describe(record: dict[str, Any]) -> str:
    text = f"--preset {record.get('preset')}"
    return text + (f" --nodes {record['nodes']}" if record.get("nodes") else "")


def check_preset(data_dir: Path, preset: str, nodes: int | None) -> None:
    """Record the preset of a new cluster; refuse another preset on an existing one."""
    wanted = _choice(preset, nodes)
    path = data_dir / RECORD
    try:
        recorded = json.loads(path.read_text())
    except FileNotFoundError:
        recorded = None
    except (OSError, ValueError) as e:
        raise DataDirError(f"cannot read {path}: {e}") from None
    if recorded is not None and recorded != wanted:
        # Under make (`make up`), the flags go through UP_ARGS: say so.
        reset = "--reset (make up UP_ARGS=--reset)" if os.environ.get("MAKELEVEL") else \
            "--reset"
        raise DataDirError(
            f"the data directory {data_dir} holds a cluster started with "
            f"{_describe(recorded)}, not {_describe(wanted)}; pass {reset} to delete that "
            f"cluster and start afresh, or --data-dir DIR to keep a cluster per preset")
    if recorded is None:
        private_dir(data_dir)
        path.write_text(json.dumps(wanted) + "\n")


def reset(data_dir: Path) -> None:
    """Delete the cluster kept in `data_dir` (refused while a draemu runs on it)."""
    if not data_dir.exists():
        return
    lock = DirectoryLock(data_dir / LOCK, f"the data directory {data_dir}")
    try:
        for entry in data_dir.iterdir():
            if entry.name == LOCK:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
    finally:
        lock.release()
