"""Helpers of the kubectl matrix. Its versions: every kubectl on the machine (1.27 ...
beside /usr/bin/kubectl) plus those named by DRAEMU_KUBECTL (1.35 in `make test`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from draemu.cmd.testing.apiserver import kubectl_binaries


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


BINARIES = kubectl_binaries()
VERSIONS = sorted(BINARIES, key=_key)
T = TypeVar("T")


def write(folder: Path, name: str, text: str) -> str:
    path = folder / name
    path.write_text(text)
    return str(path)


def eventually(check: Callable[[], T], timeout: float = 30.0, interval: float = 0.2) -> T:
    """The first truthy result of `check` (its last result once `timeout` has passed)."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(interval)
