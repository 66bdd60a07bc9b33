"""The revisioned key-value store (etcd semantics) behind the apiserver.

    store = await open_store("sqlite:///state.db", data_dir=Path("/var/lib/draemu"))
    kv = await store.create("/registry/pods/default/p1", b"{...}")
    async for event in store.watch("/registry/pods/", kv.mod_revision - 1): ...

Backends: SQLite (`draemu.store.sqlite`, the default, one process), PostgreSQL
(`draemu.store.postgres`, several processes on one database) and etcd
(`draemu.store.etcd`, several processes on one etcd cluster, keys and revisions as
kube-apiserver's). See their module docstrings for durability.
"""

from draemu import check_import_name
from draemu.store.base import Store
from draemu.store.errors import (
    CompactedError,
    ConflictError,
    FutureRevisionError,
    InvalidKeyError,
    KeyExistsError,
    KeyNotFoundError,
    StoreClosedError,
    StoreError,
    StoreLockedError,
    ValueTooLargeError,
    WatchTooSlowError,
)
from draemu.store.factory import open_store
from draemu.store.model import Event, KeyValue, RangeResult
from draemu.store.watch import Watch

__all__ = [
    "CompactedError", "ConflictError", "Event", "FutureRevisionError", "InvalidKeyError",
    "KeyExistsError", "KeyNotFoundError", "KeyValue", "RangeResult", "Store",
    "StoreClosedError", "StoreError", "StoreLockedError", "ValueTooLargeError", "Watch",
    "WatchTooSlowError", "open_store",
]

check_import_name(__name__)
