"""The SQLite backend: the embedded default.

One process owns the database file (a lock file next to it enforces this), so the store
is its only writer: it numbers revisions itself, answers current reads from an in-memory
index, and publishes each write to its watchers right after the commit. Older revisions
and watch history are read from the table.

Statements go straight to one aiosqlite connection, without SQLAlchemy: each SQLAlchemy
layer costs a thread hop or more per statement and writes are the store's hot path (one
hop for the insert, one for the commit), and importing SQLAlchemy's asyncio extension
alone costs a fifth of a second at start-up. The SQL and the schema are the ones the
PostgreSQL backend runs through SQLAlchemy. Concurrent writes share a transaction (group
commit): one commit, and with `fsync=True` one disk flush, for every write queued while
the previous one committed.

Durability: the database runs in WAL mode. By default `synchronous=NORMAL`: a commit has
been written to the WAL file (the operating system's page cache) before a write returns,
so an acknowledged write survives the process being killed, even by SIGKILL, but not a
power loss or kernel crash. `fsync=True` selects `synchronous=FULL`, which fsyncs the WAL
on every commit and also survives power loss, at the cost of one disk flush per write.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterable, Sequence
from operator import itemgetter
from pathlib import Path
from typing import Any

import aiosqlite

from draemu.store import queries
from draemu.store.base import Precondition, Store
from draemu.store.dirlock import DirectoryLock
from draemu.store.errors import CompactedError, StoreError
from draemu.store.groupcommit import GroupCommit, QueuedWrite
from draemu.store.index import CurrentIndex
from draemu.store.model import Event, KeyValue, RangeResult
from draemu.store.schema import ensure_schema
from draemu.store.validation import prefix_end


class SQLiteStore(Store):
    def __init__(self, db: aiosqlite.Connection, lock: DirectoryLock | None,
                 index: CurrentIndex, revision: int, compacted: int, *,
                 max_value_bytes: int, compaction_interval: float,
                 watch_queue_limit: int) -> None:
        super().__init__(revision=revision, compacted_revision=compacted,
                         max_value_bytes=max_value_bytes,
                         compaction_interval=compaction_interval,
                         watch_queue_limit=watch_queue_limit)
        self._db = db
        self._lock = lock
        self._index = index
        self._revision = revision
        # One connection serves every statement; this serializes its use.
        self._busy = asyncio.Lock()
        self._writes = GroupCommit(self._commit_batch, lock=self._busy)

    async def _current_revision(self) -> int:
        return self._revision

    async def _get_current(self, key: str) -> KeyValue | None:
        return self._index.get(key)

    async def _get_at(self, key: str, revision: int) -> KeyValue | None:
        async with self._busy:
            self._recheck(revision)
            rows = await self._query(queries.GET_AT, {"name": key, "rev": revision})
        if not rows or rows[0][1]:
            return None
        rev, _, create_revision, version, value = rows[0]
        return KeyValue(key, value, create_revision, rev, version)

    async def _range(self, prefix: str, start_after: str, limit: int | None,
                     revision: int | None) -> RangeResult:
        if revision is None or revision == self._revision:
            items, more, count = self._index.range(prefix, start_after, limit)
            return RangeResult(items, self._revision, more, count)
        async with self._busy:
            self._recheck(revision)
            rows = await self._query(queries.RANGE_AT, {
                "lo": prefix, "hi": prefix_end(prefix), "after": start_after, "rev": revision,
                "limit": -1 if limit is None else limit})
        items = [queries.kv_from_row(row) for row in rows]
        count = rows[0][5] if rows else 0
        return RangeResult(items, revision, len(items) < count, count)

    async def _write(self, key: str, value: bytes | None,
                     precondition: Precondition) -> tuple[KeyValue, KeyValue | None]:
        return await self._writes.write(key, value, precondition)

    async def _commit_batch(self, batch: list[QueuedWrite]) -> None:
        # Preconditions see the writes before them in the batch, as if one at a time.
        staged: dict[str, KeyValue | None] = {}
        accepted: list[tuple[QueuedWrite, KeyValue, KeyValue | None]] = []
        rows = []
        rev = self._revision
        for write in batch:
            prev = staged[write.key] if write.key in staged else self._index.get(write.key)
            try:
                write.precondition(prev)
            except StoreError as error:
                write.done.set_exception(error)
                continue
            rev += 1
            params, new = queries.write_row(rev, write.key, write.value, prev)
            staged[write.key] = None if write.value is None else new
            accepted.append((write, new, prev))
            rows.append(params)
        if not rows:
            return
        what = f"writing {rows[0]['name']!r}" + (f" and {len(rows) - 1} more" if len(rows) > 1
                                                 else "")
        await self._transaction(what, ((queries.INSERT, rows),))
        self._revision = rev
        events = []
        for write, new, prev in accepted:
            if write.value is None:
                self._index.remove(write.key)
                events.append(Event("delete", new, prev, new.mod_revision))
            else:
                self._index.put(new)
                events.append(Event("put", new, prev, new.mod_revision))
            if not write.done.done():
                write.done.set_result((new, prev))
        self._hub.publish(events)

    async def _history(self, prefix: str, after: int, until: int, limit: int) -> list[Event]:
        async with self._busy:
            self._recheck(after)
            rows = await self._query(queries.CHANGES, {
                "after": after, "until": until, "lo": prefix, "hi": prefix_end(prefix),
                "limit": limit})
        return [queries.event_from_row(row) for row in rows]

    async def _compact(self, revision: int) -> None:
        async with self._busy:
            if revision <= self._compacted:
                return
            await self._transaction(f"compaction to {revision}", (
                (queries.COMPACT, {"rev": revision}),
                (queries.WRITE_META, {"name": "compact_revision", "value": revision}),
                # The newest row may be a compacted deletion: remember the revision.
                (queries.WRITE_META, {"name": "revision", "value": self._revision}),
            ))
            self._compacted = revision

    async def _close(self) -> None:
        await self._writes.drain()
        async with self._busy:
            try:
                await self._db.close()
            finally:
                if self._lock is not None:
                    self._lock.release()

    def _recheck(self, revision: int) -> None:
        # A compaction may have run while this read waited for the connection.
        if revision < self._compacted:
            raise CompactedError(revision, self._compacted)

    async def _query(self, sql: str, params: dict[str, Any]) -> list[Any]:
        try:
            return list(await self._db.execute_fetchall(sql, params))
        except sqlite3.Error as error:
            raise StoreError(f"reading the store failed: {error}") from None

    async def _transaction(self, what: str,
                           statements: Iterable[tuple[str, dict[str, Any] | list[Any]]]) -> None:
        """Run statements (a list of parameter sets: once per set) and commit."""
        try:
            for sql, params in statements:
                if isinstance(params, list):
                    await self._db.executemany(sql, params)
                else:
                    await self._db.execute_fetchall(sql, params)
            await self._db.commit()
        except sqlite3.Error as error:
            await self._db.rollback()
            raise StoreError(f"{what} failed: {error}") from None


async def open_sqlite(path: Path | None, *, fsync: bool, max_value_bytes: int,
                      compaction_interval: float, watch_queue_limit: int) -> SQLiteStore:
    """Open (creating if needed) the store in the SQLite file `path`; None: in memory."""
    lock = None
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StoreError(f"cannot create the data directory {path.parent}: "
                             f"{error.strerror}") from None
        lock = DirectoryLock(path.with_name(path.name + ".lock"), f"the store {path}")
    where = str(path) if path is not None else "in memory"
    db: aiosqlite.Connection | None = None
    try:
        db = await aiosqlite.connect(str(path) if path is not None else ":memory:")
        await db.execute("PRAGMA journal_mode=WAL")
        await db.execute(f"PRAGMA synchronous={'FULL' if fsync else 'NORMAL'}")
        await ensure_schema(_SchemaConnection(db), foreign_tables_allowed=False)
        await db.commit()
        rows = list(await db.execute_fetchall(queries.LIVE))
        rows.sort(key=itemgetter(0))  # by key (str order is UTF-8 byte order, SQLite's)
        last = (await db.execute_fetchall(queries.MAX_REVISION))[0][0]
        meta = dict(await db.execute_fetchall("SELECT name, value FROM draemu_meta"))
        await db.commit()
    except BaseException as error:
        if db is not None:
            await db.close()
        if lock is not None:
            lock.release()
        if isinstance(error, sqlite3.Error | StoreError):
            raise StoreError(f"cannot open the store {where}: {error}") from None
        raise
    index = CurrentIndex([queries.kv_from_row(row) for row in rows])
    revision = max(last, meta.get("revision", 0))
    return SQLiteStore(db, lock, index, revision, meta.get("compact_revision", 0),
                       max_value_bytes=max_value_bytes, compaction_interval=compaction_interval,
                       watch_queue_limit=watch_queue_limit)


class _SchemaConnection:
    """The schema module's view of the aiosqlite connection."""

    dialect = "sqlite"

    def __init__(self, db: aiosqlite.Connection) -> None:
        self._db = db

    async def table_names(self) -> set[str]:
        rows = await self._db.execute_fetchall(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        return {row[0] for row in rows}

    async def execute(self, sql: str, params: dict[str, Any] | None = None
                      ) -> Sequence[Sequence[Any]]:
        return list(await self._db.execute_fetchall(sql, params or {}))
