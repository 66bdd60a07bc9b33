"""Which kubectl binaries the machine has, and small helpers of the kubectl tests."""

from __future__ import annotations

from pathlib import Path

from draemu.cmd.testing.apiserver import kubectl_binaries

BINARIES = kubectl_binaries()
# The newest kubectl on the machine drives the full suite.
NEWEST = max(BINARIES, key=lambda v: tuple(int(p) for p in v.split(".")))


def write(tmp: Path, name: str, text: str) -> str:
    path = tmp / name
    path.write_text(text)
    return str(path)
