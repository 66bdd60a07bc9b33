"""Group commit, shared by the backends: writes wait in a queue, and one task commits
them in batches, so that everything queued while a batch commits shares the next
transaction (and its fsync, or its round trips to PostgreSQL).

A writer cancelled while its write waits in the queue drops the write; once the write
is in a batch it commits anyway (the backend's index and watchers follow it).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from draemu.store.base import Precondition
from draemu.store.errors import StoreError
from draemu.store.model import KeyValue

# Writes committed in one transaction at most; bounds the time the connection is held.
MAX_BATCH = 256

WriteResult = tuple[KeyValue, KeyValue | None]


@dataclass(slots=True)
class QueuedWrite:
    key: str
    value: bytes | None  # None deletes
    precondition: Precondition
    done: asyncio.Future[WriteResult]


class GroupCommit:
    """`commit(batch)` settles each write's `done` (result or exception); a batch that
    raises fails those it left unsettled, and `after_failure` runs (the backend may
    have committed before losing its connection). `lock`, when given, is held while
    batches are committed."""

    def __init__(self, commit: Callable[[list[QueuedWrite]], Awaitable[None]], *,
                 lock: asyncio.Lock | None = None,
                 after_failure: Callable[[], None] | None = None) -> None:
        self._commit = commit
        self._lock = lock
        self._after_failure = after_failure
        self._queue: list[QueuedWrite] = []
        self._committer: asyncio.Task[None] | None = None

    async def write(self, key: str, value: bytes | None,
                    precondition: Precondition) -> WriteResult:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[WriteResult] = loop.create_future()
        self._queue.append(QueuedWrite(key, value, precondition, done))
        if self._committer is None or self._committer.done():
            self._committer = loop.create_task(self._commit_queued())
        return await done

    async def drain(self) -> None:
        """Wait for the batches under way (on close)."""
        if self._committer is not None:
            await self._committer

    async def _commit_queued(self) -> None:
        async with self._lock or contextlib.nullcontext():
            while self._queue:
                # A write whose future is done was cancelled by its writer: dropped.
                batch = [w for w in self._queue[:MAX_BATCH] if not w.done.done()]
                del self._queue[:MAX_BATCH]
                try:
                    await self._commit(batch)
                except Exception as error:  # a failed batch fails its writers
                    self._fail(batch, error)

    def _fail(self, batch: list[QueuedWrite], error: Exception) -> None:
        failure = error if isinstance(error, StoreError) else StoreError(
            f"write failed: {error!r}")
        for write in batch:
            if not write.done.done():
                write.done.set_exception(failure)
        if self._after_failure is not None:
            self._after_failure()
