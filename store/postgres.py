"""The PostgreSQL backend: several draemu processes (apiservers) on one database.

Writers are ordered by a single counter row in `draemu_meta`: a write transaction first
increments it (taking its row lock), then reads the key's latest row, checks the
precondition and inserts the new row with the counter's value as its revision. The row
lock is held until commit, so transactions commit in revision order and any snapshot
that sees revision N also sees every revision before it: a reader never observes a gap,
however many processes write. A failed precondition rolls the counter back with the
rest of the transaction, so no revision is lost either.

Each process runs one poller that reads rows after the last revision it published and
fans them out to its watchers. Commits send a NOTIFY (delivered at commit) that wakes the
pollers of every process at once; a short poll interval covers a lost LISTEN connection.

Durability is the server's: with PostgreSQL's default `synchronous_commit = on` a commit
is flushed to its WAL before a write returns.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any

import asyncpg
from sqlalchemy import inspect, make_url, text
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from draemu.log import get_logger
from draemu.store import queries
from draemu.store.base import Precondition, Store
from draemu.store.errors import CompactedError, StoreError
from draemu.store.model import Event, KeyValue, RangeResult
from draemu.store.schema import ensure_schema
from draemu.store.validation import prefix_end

CHANNEL = "draemu_store"
POLL_INTERVAL = 0.5
POLL_PAGE = 1000
CLOSE_TIMEOUT = 10
_NEWEST = 2**63 - 1

_GET_AT = text(queries.GET_AT)
_RANGE_AT = text(queries.RANGE_AT)
_CHANGES = text(queries.CHANGES)
_READ_META = text(queries.READ_META)
_WRITE_META = text(queries.WRITE_META)
_COMPACT = text(queries.COMPACT)
_NEXT_REVISION = text(
    "UPDATE draemu_meta SET value = value + 1 WHERE name = 'revision' RETURNING value")
_INSERT_AND_NOTIFY = text(
    f"WITH row AS ({queries.INSERT} RETURNING id) "
    f"SELECT pg_notify('{CHANNEL}', CAST(id AS TEXT)) FROM row")
_LOCK_COMPACTION = text(
    "SELECT value FROM draemu_meta WHERE name = 'compact_revision' FOR UPDATE")

log = get_logger("store")


class PostgresStore(Store):
    def __init__(self, engine: AsyncEngine, url: str, revision: int, compacted: int, *,
                 max_value_bytes: int, compaction_interval: float,
                 watch_queue_limit: int) -> None:
        super().__init__(revision=revision, compacted_revision=compacted,
                         max_value_bytes=max_value_bytes,
                         compaction_interval=compaction_interval,
                         watch_queue_limit=watch_queue_limit)
        self._engine = engine
        # Reads run outside transactions (each statement sees every commit before it),
        # which spares a BEGIN and a ROLLBACK round trip per read.
        self._reader = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._url = url
        self._listener: asyncpg.Connection | None = None
        self._wake = asyncio.Event()
        self._polled = asyncio.Condition()
        self._poller: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Listen for other processes' commits and start publishing to watchers."""
        await self._listen()
        self._poller = asyncio.get_running_loop().create_task(self._poll_forever())

    # -- reads -----------------------------------------------------------------------

    async def _current_revision(self) -> int:
        async with self._connect("reading the revision") as conn:
            return await self._meta(conn, "revision")

    async def _get_current(self, key: str) -> KeyValue | None:
        async with self._connect(f"reading {key!r}") as conn:
            row = (await conn.execute(_GET_AT, {"name": key, "rev": _NEWEST})).first()
        return _kv(key, row)

    async def _get_at(self, key: str, revision: int) -> KeyValue | None:
        async with self._connect(f"reading {key!r}") as conn:
            row = (await conn.execute(_GET_AT, {"name": key, "rev": revision})).first()
            await self._recheck(conn, revision)
        return _kv(key, row)

    async def _range(self, prefix: str, start_after: str, limit: int | None,
                     revision: int | None) -> RangeResult:
        async with self._connect(f"listing {prefix!r}") as conn:
            # Rows up to the counter's value are all committed (see the module's docstring).
            at = revision if revision is not None else await self._meta(conn, "revision")
            rows = (await conn.execute(_RANGE_AT, {
                "lo": prefix, "hi": prefix_end(prefix), "after": start_after, "rev": at,
                "limit": limit})).all()
            if revision is not None:
                await self._recheck(conn, revision)
        items = [queries.kv_from_row(row) for row in rows]
        count = rows[0][5] if rows else 0
        return RangeResult(items, at, len(items) < count, count)

    async def _history(self, prefix: str, after: int, until: int, limit: int) -> list[Event]:
        async with self._connect("reading the history") as conn:
            rows = (await conn.execute(_CHANGES, {
                "after": after, "until": until, "lo": prefix, "hi": prefix_end(prefix),
                "limit": limit})).all()
            await self._recheck(conn, after)
        return [queries.event_from_row(row) for row in rows]

    # -- writes ----------------------------------------------------------------------

    async def _write(self, key: str, value: bytes | None,
                     precondition: Precondition) -> tuple[KeyValue, KeyValue | None]:
        # Shielded: a cancelled caller must not leave a transaction holding the counter.
        result = await asyncio.shield(self._commit(key, value, precondition))
        self._wake.set()
        return result

    async def _commit(self, key: str, value: bytes | None,
                      precondition: Precondition) -> tuple[KeyValue, KeyValue | None]:
        try:
            async with self._engine.begin() as conn:
                rev = (await conn.execute(_NEXT_REVISION)).scalar_one()
                prev = _kv(key, (await conn.execute(_GET_AT, {"name": key, "rev": rev})).first())
                precondition(prev)
                params, new = queries.write_row(rev, key, value, prev)
                await conn.execute(_INSERT_AND_NOTIFY, params)
        except (SQLAlchemyError, OSError) as error:
            raise StoreError(f"writing {key!r} failed: {_describe(error)}") from None
        return new, prev

    async def _compact(self, revision: int) -> None:
        # Publish what is to be compacted first, so that this process's watchers do not
        # lose it (see _poll_once).
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(CLOSE_TIMEOUT), self._polled:
                while self._hub.revision < revision:
                    self._wake.set()
                    await self._polled.wait()
        try:
            async with self._engine.begin() as conn:
                # Row lock: processes compacting at the same time take turns.
                done = (await conn.execute(_LOCK_COMPACTION)).scalar_one()
                if revision > done:
                    await conn.execute(_COMPACT, {"rev": revision})
                    await conn.execute(_WRITE_META,
                                       {"name": "compact_revision", "value": revision})
        except (SQLAlchemyError, OSError) as error:
            raise StoreError(f"compaction to {revision} failed: {_describe(error)}") from None
        self._compacted = max(self._compacted, revision)

    # -- publishing to watchers --------------------------------------------------------

    async def _listen(self) -> None:
        try:
            listener = await asyncpg.connect(self._url)
            await listener.add_listener(CHANNEL, self._notified)
        except (OSError, asyncpg.PostgresError) as error:
            log.warning("cannot listen for commits; polling", error=str(error))
            return
        listener.add_termination_listener(self._listener_lost)
        self._listener = listener

    def _notified(self, *_args: Any) -> None:
        self._wake.set()

    def _listener_lost(self, *_args: Any) -> None:
        self._listener = None

    async def _poll_forever(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(POLL_INTERVAL):
                    await self._wake.wait()
            self._wake.clear()
            if self._closed:
                return
            try:
                if self._listener is None:
                    await self._listen()
                while await self._poll_once() == POLL_PAGE:
                    pass
            except Exception as error:  # noqa: BLE001 - the poller must outlive any failure
                log.warning("reading new revisions failed; retrying", error=str(error))

    async def _poll_once(self) -> int:
        after = self._hub.revision
        async with self._connect("reading new revisions") as conn:
            rows = (await conn.execute(_CHANGES, {
                "after": after, "until": _NEWEST, "lo": "/", "hi": prefix_end("/"),
                "limit": POLL_PAGE})).all()
            compacted = await self._meta(conn, "compact_revision")
        self._compacted = max(self._compacted, compacted)
        if compacted > after:
            # Compaction overtook this poller (it follows commits with a short delay):
            # the rows up to the compacted revision may be gone, and watchers that
            # needed them cannot continue without a gap.
            self._hub.skip_to(compacted, CompactedError(after, compacted))
            rows = [row for row in rows if row[0] > compacted]
        self._hub.publish([queries.event_from_row(row) for row in rows])
        async with self._polled:
            self._polled.notify_all()
        return len(rows)

    async def _close(self) -> None:
        if self._poller is not None:
            # Let a poll in flight finish: a query cancelled halfway leaves its
            # connection to be torn down by the server later.
            self._wake.set()
            try:
                async with asyncio.timeout(CLOSE_TIMEOUT):
                    await self._poller
            except TimeoutError:
                self._poller.cancel()
                await asyncio.gather(self._poller, return_exceptions=True)
        if self._listener is not None:
            await self._listener.close()
        await self._engine.dispose()

    # -- helpers ---------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _connect(self, what: str):  # noqa: ANN202 - an async context manager
        try:
            async with self._reader.connect() as conn:
                yield conn
        except (SQLAlchemyError, OSError) as error:
            raise StoreError(f"{what} failed: {_describe(error)}") from None

    @staticmethod
    async def _meta(conn: AsyncConnection, name: str) -> int:
        return (await conn.execute(_READ_META, {"name": name})).scalar_one()

    async def _recheck(self, conn: AsyncConnection, revision: int) -> None:
        # Read after the data: a compaction that removed rows the read needed shows here.
        compacted = await self._meta(conn, "compact_revision")
        self._compacted = max(self._compacted, compacted)
        if revision < compacted:
            raise CompactedError(revision, compacted)


def _kv(key: str, row: Any) -> KeyValue | None:
    """A KeyValue from a GET_AT row, None for a missing or deleted key."""
    if row is None or row[1]:
        return None
    return KeyValue(key, bytes(row[4]), row[2], row[0], row[3])


class _SchemaConnection:
    """The schema module's view of a SQLAlchemy connection."""

    dialect = "postgresql"

    def __init__(self, conn: AsyncConnection) -> None:
        self._conn = conn

    async def table_names(self) -> set[str]:
        return set(await self._conn.run_sync(lambda sync: inspect(sync).get_table_names()))

    async def execute(self, sql: str, params: dict[str, Any] | None = None
                      ) -> Sequence[Sequence[Any]]:
        result = await self._conn.execute(text(sql), params or {})
        return result.all() if result.returns_rows else []


def _describe(error: BaseException) -> str:
    if isinstance(error, DBAPIError) and error.orig is not None:
        return str(error.orig)
    return str(error)


async def open_postgres(url: str, *, max_value_bytes: int, compaction_interval: float,
                        watch_queue_limit: int) -> PostgresStore:
    """Open the store in the PostgreSQL database at `url`, creating its tables if needed."""
    parsed = make_url(url)
    shown = parsed.render_as_string(hide_password=True)
    plain = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
    engine = create_async_engine(parsed.set(drivername="postgresql+asyncpg"),
                                 pool_size=10, max_overflow=20)
    try:
        async with engine.begin() as conn:
            await ensure_schema(_SchemaConnection(conn), foreign_tables_allowed=True)
        async with engine.connect() as conn:
            revision = await PostgresStore._meta(conn, "revision")
            compacted = await PostgresStore._meta(conn, "compact_revision")
        store = PostgresStore(engine, plain, revision, compacted,
                              max_value_bytes=max_value_bytes,
                              compaction_interval=compaction_interval,
                              watch_queue_limit=watch_queue_limit)
        await store.start()
    except (SQLAlchemyError, OSError, StoreError) as error:
        await engine.dispose()
        raise StoreError(f"cannot open the store {shown}: {_describe(error)}") from None
    except BaseException:
        await engine.dispose()
        raise
    return store
