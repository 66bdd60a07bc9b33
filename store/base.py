"""The store's public interface and what both backends share: argument checks, the
compare-and-swap rules, watches and periodic compaction."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from dataclasses import dataclass

from draemu.log import get_logger
from draemu.store.dirlock import DirectoryLock
from draemu.store.errors import (
    CompactedError,
    ConflictError,
    FutureRevisionError,
    KeyExistsError,
    KeyNotFoundError,
    StoreClosedError,
    StoreError,
)
from draemu.store.model import Event, KeyValue, RangeResult
from draemu.store.validation import check_key, check_prefix, check_value
from draemu.store.watch import Watch, WatchHub

# etcd's default request limit (--max-request-bytes, 1.5 MiB), which kube-apiserver's
# objects meet on every real cluster: every backend holds objects to it.
DEFAULT_MAX_VALUE_BYTES = 1_572_864
DEFAULT_WATCH_QUEUE_LIMIT = 10_000

log = get_logger("store")


@dataclass(frozen=True, slots=True)
class Precondition:
    """What a write demands of its key's current value: that it be absent (`exists`
    False), present, or present at `mod_revision`. Called with the current value (None:
    absent), it raises the error the write fails with; a backend that compares in the
    database (etcd's transactions) reads the fields."""

    key: str
    exists: bool
    mod_revision: int | None = None

    def __call__(self, prev: KeyValue | None) -> None:
        if not self.exists:
            if prev is not None:
                raise KeyExistsError(self.key)
            return
        if prev is None:
            raise KeyNotFoundError(self.key)
        if self.mod_revision is not None and prev.mod_revision != self.mod_revision:
            raise ConflictError(self.key, self.mod_revision, prev.mod_revision)


class Store(ABC):
    """A revisioned key-value store with etcd v3 semantics.

    Every committed write increases the global revision by one. Keys carry create and
    mod revisions and a version (number of puts since creation). Reads may name an older
    revision until it is compacted; watches deliver every change after a revision in
    order, without gaps.
    """

    def __init__(self, *, revision: int, compacted_revision: int, max_value_bytes: int,
                 compaction_interval: float, watch_queue_limit: int) -> None:
        self._hub = WatchHub(revision, watch_queue_limit)
        self._compacted = compacted_revision
        self._max_value_bytes = max_value_bytes
        self._compaction_interval = compaction_interval
        self._compactor: asyncio.Task[None] | None = None
        self._held: list[DirectoryLock] = []
        self._closed = False

    # -- reads -----------------------------------------------------------------------

    async def get(self, key: str, revision: int | None = None) -> KeyValue | None:
        """The key's value now, or at `revision`; None if it does not exist then."""
        check_key(key)
        self._check_open()
        if revision is None:
            return await self._get_current(key)
        await self._check_readable(revision)
        return await self._get_at(key, revision)

    async def range(self, prefix: str, *, start_after: str | None = None,
                    limit: int | None = None, revision: int | None = None) -> RangeResult:
        """Keys under `prefix` (sorted, after `start_after`), now or at `revision`;
        at most `limit` items (None or 0: all)."""
        check_prefix(prefix)
        if start_after is not None and not isinstance(start_after, str):
            raise TypeError("start_after must be a string")
        if limit is not None and limit < 0:
            raise ValueError(f"limit must not be negative, got {limit}")
        self._check_open()
        if revision is not None:
            await self._check_readable(revision)
        return await self._range(prefix, start_after or "", limit or None, revision)

    async def current_revision(self) -> int:
        """The revision of the latest committed write (0 for an empty store)."""
        self._check_open()
        return await self._current_revision()

    @property
    def compacted_revision(self) -> int:
        """Reads and watches need revisions at or after this one."""
        return self._compacted

    # -- writes ----------------------------------------------------------------------

    async def create(self, key: str, value: bytes) -> KeyValue:
        """Store a new key; KeyExistsError if it exists."""
        check_key(key)
        data = check_value(key, value, self._max_value_bytes)
        self._check_open()
        new, _ = await self._write(key, data, Precondition(key, exists=False))
        return new

    async def update(self, key: str, value: bytes,
                     expected_mod_revision: int) -> tuple[KeyValue, KeyValue]:
        """Replace the value if the key's mod_revision is `expected_mod_revision`.
        Returns (new, previous). ConflictError if stale, KeyNotFoundError if absent."""
        check_key(key)
        data = check_value(key, value, self._max_value_bytes)
        self._check_open()
        new, prev = await self._write(key, data,
                                     Precondition(key, True, expected_mod_revision))
        assert prev is not None  # the precondition demands a previous value
        return new, prev

    async def delete(self, key: str,
                     expected_mod_revision: int | None = None) -> tuple[int, KeyValue]:
        """Delete the key (only if its mod_revision is `expected_mod_revision`, when
        given). Returns (revision of the delete, previous value)."""
        check_key(key)
        self._check_open()
        new, prev = await self._write(key, None,
                                     Precondition(key, True, expected_mod_revision))
        assert prev is not None  # the precondition demands a previous value
        return new.mod_revision, prev

    # -- watch and compaction --------------------------------------------------------

    def watch(self, prefix: str, from_revision: int) -> Watch:
        """Events under `prefix` with revision > `from_revision`, in order, without
        gaps. CompactedError (here or from the iterator) if `from_revision` is older
        than the compacted revision."""
        check_prefix(prefix)
        self._check_open()
        if from_revision < self._compacted:
            raise CompactedError(from_revision, self._compacted)
        return Watch(self._hub, prefix, from_revision, self._history)

    async def compact(self, revision: int) -> None:
        """Drop the history before `revision`: reads at older revisions and watches
        from them fail with CompactedError afterwards. A no-op if already compacted."""
        self._check_open()
        current = await self._current_revision()
        if revision > current:
            raise FutureRevisionError(revision, current)
        if revision <= self._compacted:
            return
        await self._compact(revision)

    def start_compactor(self) -> None:
        """Compact periodically, keeping `compaction_interval` seconds of history (as
        kube-apiserver does every 5 minutes by default)."""
        if self._compaction_interval > 0 and self._compactor is None:
            self._compactor = asyncio.get_running_loop().create_task(self._compact_forever())

    async def _compact_forever(self) -> None:
        previous = await self._current_revision()
        while True:
            await asyncio.sleep(self._compaction_interval)
            try:
                now = await self._current_revision()
                if previous > self._compacted:
                    await self._compact(previous)
                    log.debug("compacted", revision=previous)
                previous = now
            except StoreError as error:
                log.warning("compaction failed", error=str(error))

    async def close(self) -> None:
        """Stop compaction, end every watch and release the database and the lock."""
        if self._closed:
            return
        self._closed = True
        if self._compactor is not None:
            self._compactor.cancel()
            await asyncio.gather(self._compactor, return_exceptions=True)
        self._hub.close()
        try:
            await self._close()
        finally:
            for lock in self._held:
                lock.release()

    def hold(self, lock: DirectoryLock) -> None:
        """Release `lock` (a data directory's) when the store closes."""
        self._held.append(lock)

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- helpers ---------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError("the store is closed")

    async def _check_readable(self, revision: int) -> None:
        if revision < self._compacted:
            raise CompactedError(revision, self._compacted)
        current = await self._current_revision()
        if revision > current:
            raise FutureRevisionError(revision, current)

    # -- what a backend provides -----------------------------------------------------

    @abstractmethod
    async def _current_revision(self) -> int: ...

    @abstractmethod
    async def _get_current(self, key: str) -> KeyValue | None: ...

    @abstractmethod
    async def _get_at(self, key: str, revision: int) -> KeyValue | None: ...

    @abstractmethod
    async def _range(self, prefix: str, start_after: str, limit: int | None,
                     revision: int | None) -> RangeResult: ...

    @abstractmethod
    async def _write(self, key: str, value: bytes | None,
                     precondition: Precondition) -> tuple[KeyValue, KeyValue | None]:
        """Put (value) or delete (None) the key if `precondition` accepts its current
        value. Returns (new, previous); for a delete, `new` carries only the key and the
        delete's revision."""

    @abstractmethod
    async def _history(self, prefix: str, after: int, until: int,
                       limit: int) -> list[Event]: ...

    @abstractmethod
    async def _compact(self, revision: int) -> None: ...

    @abstractmethod
    async def _close(self) -> None: ...
