"""The PostgreSQL backend: several draemu processes (apiservers) on one database.

Writers are ordered by a single counter row in `draemu_meta`. Each process sends its
writes in batches to `draemu_write` (created with the schema): in one statement it locks
the counter row, checks every write's key against the latest row the write's precondition
was decided on, inserts the rows that pass with the next revisions, and advances the
counter. The row lock is held until commit, so transactions commit in revision order and
any snapshot that sees revision N also sees every revision before it: a reader never
observes a gap, however many processes write. A write whose key changed since its
precondition was decided takes no revision: its precondition is decided again on the
key's latest row, which the function returns, and the write goes into the next batch.

Preconditions are decided in this process, before the batch goes out: on the key's
latest row as read, or, for a key not read yet, on the latest row the events showed for
it, or on its absence (most writes create new keys; the function catches a wrong
guess). Concurrent writes share a batch (group commit): one round trip and one commit
for every write queued while the previous batch committed. Writes go straight to one
asyncpg connection and reads to a pool of them, without SQLAlchemy (it creates the
schema and compacts): its layers cost more than the round trip itself.

Each process runs one poller that reads rows after the last revision it published and
fans them out to its watchers. Commits send a NOTIFY (delivered at commit) that wakes the
pollers of every process at once; a short poll interval covers a lost LISTEN connection.

Durability is the server's: with PostgreSQL's default `synchronous_commit = on` a commit
is flushed to its WAL before a write returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg
from sqlalchemy import inspect, make_url, text
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from draemu.log import get_logger
from draemu.store import queries
from draemu.store.base import Precondition, Store
from draemu.store.errors import CompactedError, StoreError
from draemu.store.groupcommit import GroupCommit, QueuedWrite
from draemu.store.model import Event, KeyValue, RangeResult
from draemu.store.schema import PG_CHANNEL, ensure_schema
from draemu.store.validation import prefix_end

CHANNEL = PG_CHANNEL
POLL_INTERVAL = 0.5
POLL_PAGE = 1000
READERS = 10  # connections for reads
RECENT_KEYS = 20_000  # keys whose latest row is remembered for the writes' guesses
CLOSE_TIMEOUT = 10
_NEWEST = 2**63 - 1



def _positional(sql: str, *names: str) -> str:
    """The shared SQL with asyncpg's placeholders: `:name` becomes `$n`, in `names`'
    order."""
    for n, name in enumerate(names, 1):
        sql = re.sub(rf":{name}\b", f"${n}", sql)
    return sql


# Reads run on asyncpg connections directly.
_GET_AT = _positional(queries.GET_AT, "name", "rev")
_RANGE_AT = _positional(queries.RANGE_AT, "lo", "hi", "after", "rev", "limit")
_CHANGES = _positional(queries.CHANGES, "after", "until", "lo", "hi", "limit")
_READ_META = _positional(queries.READ_META, "name")
# Through SQLAlchemy: the schema, and compaction (rare).
_META = text(queries.READ_META)
_WRITE_META = text(queries.WRITE_META)
_COMPACT = text(queries.COMPACT)
# The poller's: every row after a revision in revision order, with its previous row, and
# the compacted revision, in one statement (one snapshot: a compaction that removed rows
# it needed shows in the revision it reads). Without new rows, one row of NULLs but the
# compacted revision. Its plan must hold as a generic plan (asyncpg prepares statements,
# and PostgreSQL plans a prepared one for any parameters after five runs): new rows by
# the primary key (with a key range, as CHANGES has, the (name, id) index was walked over
# every key), and each one's previous row by the primary key as well, in a LATERAL
# subquery that cannot become a join (a generic plan hashed the whole table for it:
# 209 ms a poll at 40,000 rows, 0.3 ms with the lookups).
_POLL = (
    "SELECT c.value, kv.id, kv.name, kv.deleted, kv.create_revision, kv.prev_revision, "
    "kv.version, kv.value, p.create_revision, p.version, p.value "
    "FROM draemu_meta c LEFT JOIN LATERAL ("
    f"  SELECT * FROM draemu_kv WHERE id > $1 ORDER BY id LIMIT {POLL_PAGE}"
    ") kv ON true LEFT JOIN LATERAL ("
    "  SELECT create_revision, version, value FROM draemu_kv WHERE id = kv.prev_revision"
    "  LIMIT 1"
    ") p ON true "
    "WHERE c.name = 'compact_revision' ORDER BY kv.id")
# asyncpg's own placeholders: these two run on the writer connection.
_WRITE = "SELECT * FROM draemu_write($1, $2, $3, $4)"
_LATEST = (
    "SELECT DISTINCT ON (name) name, id, deleted, create_revision, version, value "
    "FROM draemu_kv WHERE name = ANY($1) ORDER BY name, id DESC")
_LOCK_COMPACTION = text(
    "SELECT value FROM draemu_meta WHERE name = 'compact_revision' FOR UPDATE")

log = get_logger("store")


@dataclass(slots=True)
class _Step:
    """A write whose precondition accepted `prev`, the key's latest row as known."""

    write: QueuedWrite
    prev: KeyValue | None


class PostgresStore(Store):
    def __init__(self, engine: AsyncEngine, readers: asyncpg.Pool, url: str, revision: int,
                 compacted: int, *,
                 max_value_bytes: int, compaction_interval: float,
                 watch_queue_limit: int) -> None:
        super().__init__(revision=revision, compacted_revision=compacted,
                         max_value_bytes=max_value_bytes,
                         compaction_interval=compaction_interval,
                         watch_queue_limit=watch_queue_limit)
        self._engine = engine
        # Reads go straight to asyncpg connections kept open in a pool (SQLAlchemy's
        # layers cost more than a read's round trip, and its overflow connections were
        # opened and closed anew under load), outside transactions: each statement sees
        # every commit before it, which spares a BEGIN and a ROLLBACK round trip per read.
        self._readers = readers
        self._url = url
        self._listener: asyncpg.Connection | None = None
        self._wake = asyncio.Event()
        # The highest revision announced by NOTIFY, and whether a batch of this process
        # is in flight (its own NOTIFY may arrive before its answer).
        self._announced = revision
        self._sending = False
        self._polled = asyncio.Condition()
        self._poller: asyncio.Task[None] | None = None
        self._writer: asyncpg.Connection | None = None
        # The latest row of the keys written lately, as the events said (None: deleted),
        # oldest first: a write's precondition is decided on it before the batch goes
        # out, and draemu_write checks it (see _plan).
        self._recent: dict[str, KeyValue | None] = {}
        # A failed batch may have committed before the connection went: look.
        self._writes = GroupCommit(self._commit_batch, after_failure=self._wake.set)

    async def start(self) -> None:
        """Listen for other processes' commits and start publishing to watchers."""
        await self._listen()
        self._poller = asyncio.get_running_loop().create_task(self._poll_forever())

    # -- reads -----------------------------------------------------------------------

    async def _current_revision(self) -> int:
        async with self._connect("reading the revision") as conn:
            return await conn.fetchval(_READ_META, "revision")

    async def _get_current(self, key: str) -> KeyValue | None:
        async with self._connect(f"reading {key!r}") as conn:
            row = await conn.fetchrow(_GET_AT, key, _NEWEST)
        return _kv(key, row)

    async def _get_at(self, key: str, revision: int) -> KeyValue | None:
        async with self._connect(f"reading {key!r}") as conn:
            row = await conn.fetchrow(_GET_AT, key, revision)
            await self._recheck(conn, revision)
        return _kv(key, row)

    async def _range(self, prefix: str, start_after: str, limit: int | None,
                     revision: int | None) -> RangeResult:
        async with self._connect(f"listing {prefix!r}") as conn:
            # Rows up to the counter's value are all committed (see the module's docstring).
            at = revision if revision is not None else await conn.fetchval(
                _READ_META, "revision")
            rows = await conn.fetch(_RANGE_AT, prefix, prefix_end(prefix), start_after, at,
                                    limit)
            if revision is not None:
                await self._recheck(conn, revision)
        items = [queries.kv_from_row(row) for row in rows]
        count = rows[0][5] if rows else 0
        return RangeResult(items, at, len(items) < count, count)

    async def _history(self, prefix: str, after: int, until: int, limit: int) -> list[Event]:
        async with self._connect("reading the history") as conn:
            rows = await conn.fetch(_CHANGES, after, until, prefix, prefix_end(prefix), limit)
            await self._recheck(conn, after)
        return [queries.event_from_row(row) for row in rows]

    # -- writes ----------------------------------------------------------------------

    async def _write(self, key: str, value: bytes | None,
                     precondition: Precondition) -> tuple[KeyValue, KeyValue | None]:
        return await self._writes.write(key, value, precondition)

    async def _commit_batch(self, batch: list[QueuedWrite]) -> None:
        """Commit the batch in rounds until every write is decided: a round reads the
        keys whose guessed absence a precondition rejected, or sends one write per key."""
        known: dict[str, KeyValue | None] = {}
        pending = batch
        while pending:
            steps, unread = _plan(pending, known, self._recent)
            if unread:
                known.update(await self._latest(unread))
                continue
            if steps:
                await self._send(steps, known)
            pending = [w for w in pending if not w.done.done()]

    async def _latest(self, keys: set[str]) -> dict[str, KeyValue | None]:
        latest: dict[str, KeyValue | None] = dict.fromkeys(keys)
        async with self._writing(f"reading {min(keys)!r}") as conn:
            for row in await conn.fetch(_LATEST, list(keys)):
                latest[row[0]] = _kv(row[0], tuple(row)[1:])
        return latest

    async def _send(self, steps: list[_Step], known: dict[str, KeyValue | None]) -> None:
        """One call of draemu_write: decide the committed writes, and note the latest
        row of the keys of the skipped ones for the next round."""
        key = steps[0].write.key
        what = f"writing {key!r}" + (f" and {len(steps) - 1} more" if len(steps) > 1 else "")
        self._sending = True
        try:
            async with self._writing(what) as conn:
                rows = await conn.fetch(
                    _WRITE, [s.write.key for s in steps],
                    [s.write.value or b"" for s in steps],
                    [s.write.value is None for s in steps],
                    [s.prev.mod_revision if s.prev is not None else 0 for s in steps])
        finally:
            self._sending = False
        events = []
        for step, row in zip(steps, rows, strict=True):
            write, revision = step.write, row[0]
            if not revision:
                known[write.key] = _kv(write.key, tuple(row)[1:])
                continue
            _, new = queries.write_row(revision, write.key, write.value, step.prev)
            known[write.key] = None if write.value is None else new
            events.append(Event("put" if write.value is not None else "delete", new,
                                step.prev, revision))
            if not write.done.done():
                write.done.set_result((new, step.prev))
        self._publish_own(events)

    def _publish_own(self, events: list[Event]) -> None:
        """Publish a batch's commits (consecutive revisions) right away if they follow
        the last published revision, sparing the poller a query; otherwise another
        process committed in between and the poller publishes everything in order."""
        # The poller may have published them already (it polls every POLL_INTERVAL).
        fresh = [event for event in events if event.revision > self._hub.revision]
        if fresh and fresh[0].revision == self._hub.revision + 1:
            self._publish(fresh)
        elif fresh or self._announced > self._hub.revision:
            self._wake.set()

    def _publish(self, events: list[Event]) -> None:
        """Hand events to the watchers, and note each key's latest row for the next
        writes' guesses."""
        self._hub.publish(events)
        recent = self._recent
        for event in events:
            key = event.kv.key
            recent.pop(key, None)  # back to the end: the most recently written last
            if event.type == "put":
                recent[key] = event.kv
            else:
                recent[key] = None
        while len(recent) > RECENT_KEYS:
            del recent[next(iter(recent))]

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

    def _notified(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        # The payload is the commit's last revision. This process's own commits are
        # published without the poller: while a batch is in flight, `_send` decides.
        self._announced = max(self._announced, int(payload) if payload.isdigit() else _NEWEST)
        if not self._sending and self._announced > self._hub.revision:
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
            except Exception as error:  # the poller must outlive any failure
                log.warning("reading new revisions failed; retrying", error=str(error))

    async def _poll_once(self) -> int:
        async with self._connect("reading new revisions") as conn:
            rows = await conn.fetch(_POLL, self._hub.revision)
        compacted = rows[0][0]
        rows = [tuple(row)[1:] for row in rows if row[1] is not None]
        self._compacted = max(self._compacted, compacted)
        # This process's own commits may have been published meanwhile (_publish_own).
        published = self._hub.revision
        if compacted > published:
            # Compaction overtook this poller (it follows commits with a short delay):
            # the rows up to the compacted revision may be gone, and watchers that
            # needed them cannot continue without a gap.
            self._hub.skip_to(compacted, CompactedError(published, compacted))
            published = compacted
        self._publish([queries.event_from_row(row) for row in rows if row[0] > published])
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
        await self._writes.drain()
        if self._listener is not None:
            await self._listener.close()
        if self._writer is not None:
            await self._writer.close()
        await self._readers.close()
        await self._engine.dispose()

    # -- helpers ---------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _connect(self, what: str) -> AsyncIterator[asyncpg.Connection]:
        """A reader connection from the pool."""
        try:
            async with self._readers.acquire() as conn:
                yield conn
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as error:
            raise StoreError(f"{what} failed: {error}") from None

    @contextlib.asynccontextmanager
    async def _writing(self, what: str) -> AsyncIterator[asyncpg.Connection]:
        """The writer connection, opened anew after a failure broke it."""
        try:
            if self._writer is None or self._writer.is_closed():
                self._writer = await asyncpg.connect(self._url)
            yield self._writer
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as error:
            raise StoreError(f"{what} failed: {error}") from None

    async def _recheck(self, conn: asyncpg.Connection, revision: int) -> None:
        # Read after the data: a compaction that removed rows the read needed shows here.
        compacted = await conn.fetchval(_READ_META, "compact_revision")
        self._compacted = max(self._compacted, compacted)
        if revision < compacted:
            raise CompactedError(revision, compacted)


async def _keep_session(_conn: asyncpg.Connection) -> None:
    """What a reader connection needs before the pool lends it again: nothing. Its reads
    are single statements outside transactions that leave no session state (no settings,
    cursors, LISTENs or advisory locks), and asyncpg rolls back a transaction left open
    anyway. The default reset is a statement of its own per read (`RESET ALL`, `UNLISTEN
    *`, ...): a second round trip, and most of PostgreSQL's CPU with three apiservers."""


def _kv(key: str, row: Any) -> KeyValue | None:
    """A KeyValue from a GET_AT row (or columns in its order), None for a missing or
    deleted key."""
    if row is None or row[0] is None or row[1]:
        return None
    return KeyValue(key, bytes(row[4]), row[2], row[0], row[3])


def _plan(pending: list[QueuedWrite], known: dict[str, KeyValue | None],
          recent: dict[str, KeyValue | None]) -> tuple[list[_Step], set[str]]:
    """The next round's writes, at most one per key (a later write of a key is decided
    on what the earlier one did), and the keys to read first.

    A precondition is decided on the key's latest row as known; a key not known yet is
    guessed to be as the latest event seen for it left it (`recent`), or absent. A
    write that a known row rejects fails now; one that rejects the guess waits for its
    key to be read. A guess that passed is checked by draemu_write: a row's revision is
    unique, so when the key's latest row has the guessed revision it is the guessed row.
    """
    steps: list[_Step] = []
    taken: set[str] = set()
    unread: set[str] = set()
    for write in pending:
        key = write.key
        if write.done.done() or key in taken:
            continue
        prev = known[key] if key in known else recent.get(key)
        try:
            write.precondition(prev)
        except StoreError as error:
            if key in known:
                write.done.set_exception(error)
            else:
                unread.add(key)
                taken.add(key)
            continue
        taken.add(key)
        steps.append(_Step(write, prev))
    return steps, unread


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
                                 pool_size=1, max_overflow=2)
    readers: asyncpg.Pool | None = None
    try:
        async with engine.begin() as conn:
            await ensure_schema(_SchemaConnection(conn), foreign_tables_allowed=True)
        async with engine.connect() as conn:
            revision = (await conn.execute(_META, {"name": "revision"})).scalar_one()
            compacted = (await conn.execute(_META, {"name": "compact_revision"})).scalar_one()
        readers = await asyncpg.create_pool(plain, min_size=1, max_size=READERS,
                                            reset=_keep_session)
        store = PostgresStore(engine, readers, plain, revision, compacted,
                              max_value_bytes=max_value_bytes,
                              compaction_interval=compaction_interval,
                              watch_queue_limit=watch_queue_limit)
        await store.start()
    except (SQLAlchemyError, OSError, StoreError, asyncpg.PostgresError) as error:
        await _dispose(engine, readers)
        raise StoreError(f"cannot open the store {shown}: {_describe(error)}") from None
    except BaseException:
        await _dispose(engine, readers)
        raise
    return store


async def _dispose(engine: AsyncEngine, readers: asyncpg.Pool | None) -> None:
    if readers is not None:
        await readers.close()
    await engine.dispose()
