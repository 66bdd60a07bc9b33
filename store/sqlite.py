"""The SQLite backend: the embedded default.

One process owns the database file (a lock file next to it enforces this), so the store
is its only writer: it numbers revisions itself, answers current reads from an in-memory
index, and publishes each write to its watchers right after the commit. Older revisions
and watch history are read from the table.

SQLAlchemy opens the database and creates the schema; statements then go straight to
the aiosqlite connection beneath it, since each SQLAlchemy layer costs a thread hop or
more per statement and writes are the store's hot path (one hop for the insert, one for
the commit).

Durability: the database runs in WAL mode. By default `synchronous=NORMAL`: a commit has
been written to the WAL file (the operating system's page cache) before a write returns,
so an acknowledged write survives the process being killed, even by SIGKILL, but not a
power loss or kernel crash. `fsync=True` selects `synchronous=FULL`, which fsyncs the WAL
on every commit and also survives power loss, at the cost of one disk flush per write.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import aiosqlite
from sqlalchemy import event, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import StaticPool

from draemu.store import queries
from draemu.store.base import Precondition, Store
from draemu.store.dirlock import DirectoryLock
from draemu.store.errors import CompactedError, StoreError
from draemu.store.index import CurrentIndex
from draemu.store.model import Event, KeyValue, RangeResult
from draemu.store.schema import ensure_schema
from draemu.store.validation import prefix_end


class SQLiteStore(Store):
    def __init__(self, engine: AsyncEngine, conn: AsyncConnection, db: aiosqlite.Connection,
                 lock: DirectoryLock | None, index: CurrentIndex, revision: int,
                 compacted: int, *, max_value_bytes: int, compaction_interval: float,
                 watch_queue_limit: int) -> None:
        super().__init__(revision=revision, compacted_revision=compacted,
                         max_value_bytes=max_value_bytes,
                         compaction_interval=compaction_interval,
                         watch_queue_limit=watch_queue_limit)
        self._engine = engine
        self._conn = conn
        self._db = db
        self._lock = lock
        self._index = index
        self._revision = revision
        # One connection serves every statement; this serializes its use.
        self._busy = asyncio.Lock()

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
        # Shielded: once the commit is under way, the index and the watchers must learn
        # of it even if the caller is cancelled.
        return await asyncio.shield(self._commit(key, value, precondition))

    async def _commit(self, key: str, value: bytes | None,
                      precondition: Precondition) -> tuple[KeyValue, KeyValue | None]:
        async with self._busy:
            prev = self._index.get(key)
            precondition(prev)
            rev = self._revision + 1
            if value is None:
                assert prev is not None
                params = queries.row_params(rev, key, True, prev.create_revision,
                                            prev.mod_revision, prev.version, b"")
                new = KeyValue(key, b"", 0, rev, 0)
            elif prev is None:
                params = queries.row_params(rev, key, False, rev, 0, 1, value)
                new = KeyValue(key, value, rev, rev, 1)
            else:
                params = queries.row_params(rev, key, False, prev.create_revision,
                                            prev.mod_revision, prev.version + 1, value)
                new = KeyValue(key, value, prev.create_revision, rev, prev.version + 1)
            await self._transaction(f"writing {key!r}", ((queries.INSERT, params),))
            self._revision = rev
            if value is None:
                self._index.remove(key)
                self._hub.publish((Event("delete", new, prev, rev),))
            else:
                self._index.put(new)
                self._hub.publish((Event("put", new, prev, rev),))
            return new, prev

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
        async with self._busy:
            try:
                await self._conn.close()
                await self._engine.dispose()
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
                           statements: Iterable[tuple[str, dict[str, Any]]]) -> None:
        try:
            for sql, params in statements:
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
    url = f"sqlite+aiosqlite:///{path}" if path is not None else "sqlite+aiosqlite://"
    engine = create_async_engine(url, poolclass=StaticPool)
    synchronous = "FULL" if fsync else "NORMAL"

    @event.listens_for(engine.sync_engine, "connect")
    def _pragmas(dbapi_conn: Any, _record: Any) -> None:
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA synchronous={synchronous}")
        cursor.close()

    where = str(path) if path is not None else "in memory"
    conn: AsyncConnection | None = None
    try:
        conn = await engine.connect()
        await ensure_schema(conn, foreign_tables_allowed=False)
        await conn.commit()
        rows = (await conn.execute(text(queries.CURRENT))).all()
        last = (await conn.execute(text(queries.MAX_REVISION))).scalar_one()
        meta = dict((await conn.execute(text("SELECT name, value FROM draemu_meta"))).all())
        await conn.commit()
        db = (await conn.get_raw_connection()).driver_connection
    except BaseException as error:
        if conn is not None:
            await conn.close()
        await engine.dispose()
        if lock is not None:
            lock.release()
        if isinstance(error, DBAPIError):
            raise StoreError(f"cannot open the store {where}: {error.orig}") from None
        if isinstance(error, StoreError):
            raise StoreError(f"cannot open the store {where}: {error}") from None
        raise
    index = CurrentIndex([queries.kv_from_row(row) for row in rows])
    revision = max(last, meta.get("revision", 0))
    return SQLiteStore(engine, conn, db, lock, index, revision, meta.get("compact_revision", 0),
                       max_value_bytes=max_value_bytes, compaction_interval=compaction_interval,
                       watch_queue_limit=watch_queue_limit)
