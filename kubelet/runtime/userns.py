"""Each pod's range of user and group IDs on this machine, for its user namespace.

A pod's root is `base` outside its namespace, its uid N is `base + N`, for N below 65536
(what rootless container runtimes map); `base` is 100000 + k * 65536, k unique among the
running pods of every kubelet on this machine, and outside the ranges /etc/subuid and
/etc/subgid hand to users. A range is held by an exclusive lock on
`/run/draemu-userns/<base>.lock` for as long as the pod runs on this kubelet; the lock
goes with the process, so a kubelet that dies frees its pods' ranges (and its
containers die with it).

Ranges need no bookkeeping across restarts: the pod's volumes are ID-mapped mounts, so
what a pod writes is stored with its own IDs (its root as 0), whatever range it ran in.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
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


class IdRanges:
    """The ranges this kubelet's pods hold."""

    def __init__(self, lock_dir: Path = LOCK_DIR) -> None:
        self.lock_dir = lock_dir
        self._held: dict[str, tuple[IdRange, int]] = {}
        self._taken = _subordinate_ranges()

    def for_pod(self, pod_uid: str) -> IdRange:
        held = self._held.get(pod_uid)
        if held is not None:
            return held[0]
        self.lock_dir.mkdir(mode=0o700, exist_ok=True)
        start = int(hashlib.sha256(pod_uid.encode()).hexdigest()[:8], 16) % SLOTS
        for step in range(SLOTS):
            base = FIRST + ((start + step) % SLOTS) * SIZE
            if any(lo < base + SIZE and base < hi for lo, hi in self._taken):
                continue
            fd = os.open(self.lock_dir / f"{base}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                         0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self._held[pod_uid] = (IdRange(base), fd)
            return IdRange(base)
        raise NoFreeRange("no free range of user IDs for the pod's user namespace")

    def release(self, pod_uid: str) -> None:
        held = self._held.pop(pod_uid, None)
        if held is not None:
            os.close(held[1])  # the lock goes with the descriptor

    def close(self) -> None:
        for uid in list(self._held):
            self.release(uid)
