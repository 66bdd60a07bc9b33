"""`open_store`: the store for a URL."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from draemu.privatefiles import private_dir
from draemu.store.base import DEFAULT_MAX_VALUE_BYTES, DEFAULT_WATCH_QUEUE_LIMIT, Store
from draemu.store.dirlock import DirectoryLock
from draemu.store.errors import StoreError

_MEMORY = {"sqlite://", "sqlite://:memory:", "sqlite:///:memory:"}


def sqlite_path(url: str, data_dir: Path | None) -> Path | None:
    """The database file of a sqlite URL (None: in memory). Relative paths are taken
    relative to `data_dir` when given."""
    if url in _MEMORY:
        return None
    rest = url.removeprefix("sqlite:///")
    if rest == url or not rest:
        raise StoreError(f"invalid store URL {url!r}: use sqlite:///relative/path.db, "
                         "sqlite:////absolute/path.db or sqlite://:memory:")
    path = Path(rest)
    if not path.is_absolute() and data_dir is not None:
        path = data_dir / path
    return path.absolute()


async def open_store(url: str, *, data_dir: Path | None = None, fsync: bool = False,
                     compaction_interval: float = 300.0,
                     max_value_bytes: int | None = None,
                     watch_queue_limit: int = DEFAULT_WATCH_QUEUE_LIMIT) -> Store:
    """Open the store at `url` and start its periodic compaction.

    url: ``sqlite:///path/to/file.db`` (relative to `data_dir` if given),
    ``sqlite://:memory:``, ``postgresql://user@host:port/db`` or
    ``etcd://host:port[,host:port...][/prefix][?cafile=F&certfile=F&keyfile=F]``
    (store/etcdrpc.py's parse_url). `data_dir`, when given,
    is locked for the store's lifetime so that a second draemu on it fails at once.
    `fsync` (SQLite) makes every commit survive power loss, not only a process crash;
    PostgreSQL's and etcd's durability are the servers' (`synchronous_commit`, on by
    default; etcd fsyncs on a quorum of members).
    `compaction_interval` seconds of history are kept (0: never compact automatically).
    `max_value_bytes`: the largest value a write may carry; by default etcd's request
    limit (1.5 MiB), which SQLite and PostgreSQL check themselves and an etcd cluster
    checks as its `--max-request-bytes` says (draemu sends it whatever it is).
    """
    lock = None
    if data_dir is not None:
        try:
            private_dir(data_dir)
        except OSError as error:
            raise StoreError(f"cannot create the data directory {data_dir}: "
                             f"{error.strerror}") from None
        lock = DirectoryLock(data_dir / "draemu.lock", f"the data directory {data_dir}")
    try:
        store = await _open(url, data_dir, fsync=fsync, max_value_bytes=max_value_bytes,
                            compaction_interval=compaction_interval,
                            watch_queue_limit=watch_queue_limit)
    except BaseException:
        if lock is not None:
            lock.release()
        raise
    if lock is not None:
        store.hold(lock)
    store.start_compactor()
    return store


async def _open(url: str, data_dir: Path | None, *, fsync: bool, max_value_bytes: int | None,
                compaction_interval: float, watch_queue_limit: int) -> Store:
    scheme = urlsplit(url).scheme
    if scheme == "sqlite":
        from draemu.store.sqlite import open_sqlite

        return await open_sqlite(sqlite_path(url, data_dir), fsync=fsync,
                                 max_value_bytes=max_value_bytes or DEFAULT_MAX_VALUE_BYTES,
                                 compaction_interval=compaction_interval,
                                 watch_queue_limit=watch_queue_limit)
    if scheme in ("postgresql", "postgres"):
        from draemu.store.postgres import open_postgres

        return await open_postgres(url, max_value_bytes=max_value_bytes or DEFAULT_MAX_VALUE_BYTES,
                                   compaction_interval=compaction_interval,
                                   watch_queue_limit=watch_queue_limit)
    if scheme == "etcd":
        from draemu.store.etcd import open_etcd

        return await open_etcd(url, max_value_bytes=max_value_bytes,
                               compaction_interval=compaction_interval,
                               watch_queue_limit=watch_queue_limit)
    raise StoreError(f"unsupported store URL {url!r}: use sqlite:///path/to/file.db, "
                     "sqlite://:memory:, postgresql://user@host:port/database or "
                     "etcd://host:port[,host:port...]")
