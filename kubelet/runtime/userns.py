"""Each pod's range of user and group IDs on this machine, for its user namespace.

A pod's root is `base` outside its namespace, its uid N is `base + N`, for N below 65536
(what rootless container runtimes map); `base` is 100000 + k * 65536, k unique among the
running pods of every kubelet on this machine, and outside the ranges /etc/subuid and
/etc/subgid hand to users. Range k is held by an exclusive lock on byte k of
`/run/draemu-userns/ranges.lock` (an open-file-description lock: two kubelets of one
process exclude each other too) for as long as the pod runs on this kubelet; the lock
goes with the process, so a kubelet that dies frees its pods' ranges (and its
containers die with it).

Ranges need no bookkeeping across restarts: the pod's volumes are ID-mapped mounts, so
what a pod writes is stored with its own IDs (its root as 0), whatever range it ran in.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import struct
from dataclasses import dataclass
from pathlib import Path

FIRST, SIZE = 100000, 65536
SLOTS = (2**32 - 1 - FIRST) // SIZE - 1  # every range below uid 4294967295 (-1)
LOCK_DIR = Path("/run/draemu-userns")


class NoFreeRange(Exception):
    pass


@dataclass(frozen=True)
class IdRange:
    base: int
    size: int = SIZE

    def spec(self) -> dict[str, int]:
        return {"base": self.base, "size": self.size}


def _subordinate_ranges() -> list[tuple[int, int]]:
    ranges = []
    for file in ("/etc/subuid", "/etc/subgid"):
        try:
            lines = Path(file).read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            parts = line.strip().split(":")
            if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
                ranges.append((int(parts[1]), int(parts[1]) + int(parts[2])))
    return ranges


def _lock(fd: int, slot: int, kind: int) -> bool:
    """Lock (or unlock) byte `slot`; False when another holds it."""
    try:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack("hhqqi4x", kind, os.SEEK_SET, slot, 1, 0))
    except (BlockingIOError, PermissionError):
        return False
    return True


class IdRanges:
    """The ranges this kubelet's pods hold."""

    def __init__(self, lock_dir: Path = LOCK_DIR) -> None:
        self.lock_dir = lock_dir
        self._fd: int | None = None
        self._held: dict[str, tuple[IdRange, int]] = {}
        self._taken = _subordinate_ranges()

    def _file(self) -> int:
        if self._fd is None:
            self.lock_dir.mkdir(mode=0o700, exist_ok=True)
            self._fd = os.open(self.lock_dir / "ranges.lock",
                               os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        return self._fd

    def for_pod(self, pod_uid: str) -> IdRange:
        held = self._held.get(pod_uid)
        if held is not None:
            return held[0]
        fd = self._file()
        start = int(hashlib.sha256(pod_uid.encode()).hexdigest()[:8], 16) % SLOTS
        for step in range(SLOTS):
            slot = (start + step) % SLOTS
            base = FIRST + slot * SIZE
            if any(lo < base + SIZE and base < hi for lo, hi in self._taken):
                continue
            if _lock(fd, slot, fcntl.F_WRLCK):
                self._held[pod_uid] = (IdRange(base), slot)
                return IdRange(base)
        raise NoFreeRange("no free range of user IDs for the pod's user namespace")

    def release(self, pod_uid: str) -> None:
        held = self._held.pop(pod_uid, None)
        if held is not None and self._fd is not None:
            _lock(self._fd, held[1], fcntl.F_UNLCK)

    def close(self) -> None:
        self._held.clear()
        if self._fd is not None:
            os.close(self._fd)  # every lock goes with the descriptor
            self._fd = None
