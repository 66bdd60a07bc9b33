"""Directory change notification through Linux inotify (ctypes), for the plugin watcher.

Only "something changed in one of these directories" is reported; the watcher rescans.
Where inotify is unavailable, `DirectoryNotifier.create` returns None and the caller
falls back to polling.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
from pathlib import Path

IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC
# Sockets appear by create/move-in and vanish by delete/move-out; attribute changes
# are irrelevant.
_MASK = 0x100 | 0x200 | 0x40 | 0x80 | 0x400  # CREATE | DELETE | MOVED_FROM | MOVED_TO | DELETE_SELF


class DirectoryNotifier:
    def __init__(self, libc: ctypes.CDLL, fd: int) -> None:
        self._libc = libc
        self._fd = fd
        self._watched: set[str] = set()
        self.changed = asyncio.Event()
        asyncio.get_running_loop().add_reader(fd, self._drain)

    @classmethod
    def create(cls) -> DirectoryNotifier | None:
        try:
            # The running interpreter's own libc (find_library would fork ldconfig).
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        except (OSError, AttributeError):
            return None
        return cls(libc, fd) if fd >= 0 else None

    def watch(self, directory: Path) -> bool:
        """Watch `directory`; True when the watch is new."""
        path = str(directory)
        if path in self._watched:
            return False
        if self._libc.inotify_add_watch(self._fd, os.fsencode(path), _MASK) < 0:
            return False
        self._watched.add(path)
        return True

    def retain(self, directories: set[str]) -> None:
        """Forget directories that are gone (the kernel dropped their watches), so one
        re-created under the same path is watched again."""
        self._watched &= directories

    def _drain(self) -> None:
        try:
            while os.read(self._fd, 65536):
                pass
        except BlockingIOError:
            pass
        self.changed.set()

    def close(self) -> None:
        asyncio.get_running_loop().remove_reader(self._fd)
        os.close(self._fd)
