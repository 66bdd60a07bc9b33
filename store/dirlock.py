"""An exclusive lock on a lock file, held for the store's lifetime.

flock(2) locks belong to the open file, so a second draemu (or a second store in the
same process) fails at once, and the kernel releases the lock when the holder dies,
even by SIGKILL: no stale lock files to clean up.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

from draemu.store.errors import StoreError, StoreLockedError


class DirectoryLock:
    def __init__(self, path: Path, what: str) -> None:
        """Lock `path` (created if missing); `what` names the locked thing in errors."""
        self.path = path
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as error:
            raise StoreError(f"cannot create the lock file {path} for {what}: "
                             f"{error.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            holder = _read_holder(fd)
            os.close(fd)
            if error.errno in (errno.EAGAIN, errno.EACCES):
                raise StoreLockedError(
                    f"{what} is in use by another draemu{holder} (lock file {path}); "
                    "stop it or use another data directory") from None
            raise StoreError(f"cannot lock {path}: {error.strerror}") from None
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except OSError as error:
            os.close(fd)
            raise StoreError(f"cannot write the lock file {path}: {error.strerror}") from None
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _read_holder(fd: int) -> str:
    try:
        text = os.pread(fd, 32, 0).decode().strip()
    except (OSError, UnicodeDecodeError):
        return ""
    return f" (pid {text})" if text.isdigit() else ""
