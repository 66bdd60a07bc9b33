"""The SQLite backend: the embedded default.

One process owns the database file (a lock file next to it enforces this), so the store
is its only writer: it numbers revisions itself, answers current reads from an in-memory
index, and publishes each write to its watchers right after the commit. Older revisions
and watch history are read from the table.

Statements go straight to one sqlite3 connection in a thread of its own (`_Connection`),
without SQLAlchemy (each of its layers costs a thread hop or more per statement, and
importing its asyncio extension alone costs a fifth of a second at start-up) nor
aiosqlite (a hop per statement): a read is one hop to that thread and back, a whole
transaction (the batch's insert and the commit) too. The SQL and the schema are the ones
the PostgreSQL backend runs through SQLAlchemy. Concurrent writes share a transaction
(group commit): one commit, and with `fsync=True` one disk flush, for every write queued
while the previous one committed. sqlite3 lets go of the GIL while SQLite works, so the
event loop goes on meanwhile.

Durability: the database runs in WAL mode. By default `synchronous=NORMAL`: a commit has
been written to the WAL file (the operating system's page cache) before a write returns,
so an acknowledged write survives the process being killed, even by SIGKILL, but not a
power loss or kernel crash. `fsync=True` selects `synchronous=FULL`, which fsyncs the WAL
on every commit and also survives power loss, at the cost of one disk flush per write.
"""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from operator import itemgetter
from pathlib import Path
from typing import Any, TypeVar

from draemu.privatefiles import private_file
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
    def __init__(self, db: _Connection, lock: DirectoryLock | None,
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
            return await self._db.fetchall(sql, params)
        except sqlite3.Error as error:
            raise StoreError(f"reading the store failed: {error}") from None

    async def _transaction(self, what: str,
                           statements: Iterable[tuple[str, dict[str, Any] | list[Any]]]) -> None:
        """Run statements (a list of parameter sets: once per set) and commit, in one
        trip to the connection's thread."""
        try:
            await self._db.run(lambda conn: _commit(conn, statements))
        except sqlite3.Error as error:
            raise StoreError(f"{what} failed: {error}") from None


def _commit(conn: sqlite3.Connection,
            statements: Iterable[tuple[str, dict[str, Any] | list[Any]]]) -> None:
    try:
        for sql, params in statements:
            if isinstance(params, list):
                conn.executemany(sql, params)
            else:
                conn.execute(sql, params)
        conn.commit()
    except sqlite3.Error:
        try:
            conn.rollback()
        except sqlite3.Error:
            pass  # the first error is the one to report
        raise


T = TypeVar("T")
_STOP = None


class _Connection:
    """A sqlite3 connection used by one thread of its own: `run(fn)` calls `fn(conn)`
    there and returns (or raises) what it did. Calls run one at a time, in order."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._calls: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name="draemu-sqlite",
                                        daemon=True)
        self._thread.start()

    @classmethod
    async def open(cls, where: str) -> _Connection:
        # Opened in a worker thread (it reads the file); used only by its own thread
        # after that, one call at a time.
        conn = await asyncio.to_thread(sqlite3.connect, where, check_same_thread=False)
        return cls(conn)

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[T] = loop.create_future()
        self._calls.put((loop, done, fn))
        return await done

    async def fetchall(self, sql: str, params: dict[str, Any] | None = None) -> list[Any]:
        return await self.run(lambda conn: conn.execute(sql, params or {}).fetchall())

    async def execute(self, sql: str) -> None:
        await self.run(lambda conn: conn.execute(sql))

    async def commit(self) -> None:
        await self.run(lambda conn: conn.commit())

    async def close(self) -> None:
        try:
            await self.run(lambda conn: conn.close())
        finally:
            self._calls.put(_STOP)
            await asyncio.to_thread(self._thread.join)

    def _serve(self) -> None:
        while True:
            call = self._calls.get()
            if call is _STOP:
                return
            loop, done, fn = call
            try:
                result = fn(self._conn)
            except BaseException as error:  # handed to the caller
                _call_back(loop, _fail, done, error)
            else:
                _call_back(loop, _succeed, done, result)


def _call_back(loop: asyncio.AbstractEventLoop, fn: Callable[..., None], *args: Any) -> None:
    try:
        loop.call_soon_threadsafe(fn, *args)
    except RuntimeError:
        pass  # the loop is closed: nobody waits any more


def _succeed(done: asyncio.Future[Any], result: Any) -> None:
    if not done.done():
        done.set_result(result)


def _fail(done: asyncio.Future[Any], error: BaseException) -> None:
    if not done.done():
        done.set_exception(error)


async def open_sqlite(path: Path | None, *, fsync: bool, max_value_bytes: int,
                      compaction_interval: float, watch_queue_limit: int) -> SQLiteStore:
    """Open (creating if needed) the store in the SQLite file `path`; None: in memory."""
    lock = None
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # SQLite gives its WAL and shared-memory files the database file's mode.
            private_file(path)
        except OSError as error:
            raise StoreError(f"cannot create the data directory {path.parent}: "
                             f"{error.strerror}") from None
        lock = DirectoryLock(path.with_name(path.name + ".lock"), f"the store {path}")
    where = str(path) if path is not None else "in memory"
    db: _Connection | None = None
    try:
        db = await _Connection.open(str(path) if path is not None else ":memory:")
        await db.execute("PRAGMA journal_mode=WAL")
        await db.execute(f"PRAGMA synchronous={'FULL' if fsync else 'NORMAL'}")
        await ensure_schema(_SchemaConnection(db), foreign_tables_allowed=False)
        await db.commit()
        rows = await db.fetchall(queries.LIVE)
        rows.sort(key=itemgetter(0))  # by key (str order is UTF-8 byte order, SQLite's)
        last = (await db.fetchall(queries.MAX_REVISION))[0][0]
        meta = dict(await db.fetchall("SELECT name, value FROM draemu_meta"))
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
    """The schema module's view of the connection."""

    dialect = "sqlite"

    def __init__(self, db: _Connection) -> None:
        self._db = db

    async def table_names(self) -> set[str]:
        rows = await self._db.fetchall(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        return {row[0] for row in rows}

    async def execute(self, sql: str, params: dict[str, Any] | None = None
                      ) -> Sequence[Sequence[Any]]:
        return await self._db.fetchall(sql, params)
