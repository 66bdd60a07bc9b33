"""SQL shared by the backends (it runs unchanged on SQLite and PostgreSQL, with named
`:parameters`), and the conversion of its rows into key-values and events.

Keys under a prefix are selected as the half-open interval [prefix, prefix_end(prefix)),
which both databases answer from the (name, id) index.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from draemu.store.model import Event, KeyValue

# The latest row of one key at or before a revision.
GET_AT = (
    "SELECT id, deleted, create_revision, version, value FROM draemu_kv "
    "WHERE name = :name AND id <= :rev ORDER BY id DESC LIMIT 1")

# Live keys in [lo, hi) after `after` as of `rev`, with the total count of such keys.
RANGE_AT = (
    "SELECT kv.name, kv.value, kv.create_revision, kv.id, kv.version, COUNT(*) OVER () "
    "FROM draemu_kv kv JOIN ("
    "  SELECT MAX(id) AS id FROM draemu_kv"
    "  WHERE name >= :lo AND name < :hi AND name > :after AND id <= :rev GROUP BY name"
    ") latest ON kv.id = latest.id "
    "WHERE kv.deleted = 0 ORDER BY kv.name LIMIT :limit")

# Rows (after, until] under a prefix in revision order, with their previous rows.
CHANGES = (
    "SELECT kv.id, kv.name, kv.deleted, kv.create_revision, kv.prev_revision, kv.version, "
    "kv.value, p.create_revision, p.version, p.value "
    "FROM draemu_kv kv LEFT JOIN draemu_kv p ON p.id = kv.prev_revision "
    "WHERE kv.id > :after AND kv.id <= :until AND kv.name >= :lo AND kv.name < :hi "
    "ORDER BY kv.id LIMIT :limit")

INSERT = (
    "INSERT INTO draemu_kv (id, name, deleted, create_revision, prev_revision, version, value) "
    "VALUES (:id, :name, :deleted, :create_revision, :prev_revision, :version, :value)")

READ_META = ("SELECT value FROM draemu_meta WHERE name = :name")
WRITE_META = ("UPDATE draemu_meta SET value = :value WHERE name = :name")

# History a compaction to :rev removes: every row superseded by a later row at or before
# :rev, and deletions at or before :rev (their keys do not exist at :rev).
COMPACT = (
    "DELETE FROM draemu_kv WHERE id <= :rev AND (deleted = 1 OR EXISTS ("
    "  SELECT 1 FROM draemu_kv later"
    "  WHERE later.name = draemu_kv.name AND later.id > draemu_kv.id AND later.id <= :rev))")

# Every live key with its latest row (to fill an in-memory index), in no particular
# order: the caller sorts them (SQLite would sort the rows, values and all, in a temporary
# b-tree: twice the time at start-up).
LIVE = (
    "SELECT kv.name, kv.value, kv.create_revision, kv.id, kv.version FROM draemu_kv kv "
    "WHERE kv.deleted = 0 AND NOT EXISTS ("
    "  SELECT 1 FROM draemu_kv later WHERE later.name = kv.name AND later.id > kv.id)")

MAX_REVISION = ("SELECT COALESCE(MAX(id), 0) FROM draemu_kv")


def kv_from_row(row: Sequence[Any]) -> KeyValue:
    """A KeyValue from (name, value, create_revision, mod_revision, version)."""
    return KeyValue(row[0], bytes(row[1]), row[2], row[3], row[4])


def event_from_row(row: Sequence[Any]) -> Event:
    """An Event from a CHANGES row."""
    rev, name, deleted, create_rev, prev_rev, version, value, p_create, p_version, p_value = row
    prev = None if not prev_rev else KeyValue(name, bytes(p_value), p_create, prev_rev, p_version)
    if deleted:
        return Event("delete", KeyValue(name, b"", 0, rev, 0), prev, rev)
    return Event("put", KeyValue(name, bytes(value), create_rev, rev, version), prev, rev)


def write_row(rev: int, key: str, value: bytes | None,
              prev: KeyValue | None) -> tuple[dict[str, Any], KeyValue]:
    """The INSERT parameters and the new key-value of a put (value) or a delete (None)
    of `key` at revision `rev`, given its previous value."""
    if value is None:
        assert prev is not None
        params = {"id": rev, "name": key, "deleted": 1, "create_revision": prev.create_revision,
                  "prev_revision": prev.mod_revision, "version": prev.version, "value": b""}
        return params, KeyValue(key, b"", 0, rev, 0)
    if prev is None:
        new = KeyValue(key, value, rev, rev, 1)
        prev_revision = 0
    else:
        new = KeyValue(key, value, prev.create_revision, rev, prev.version + 1)
        prev_revision = prev.mod_revision
    params = {"id": rev, "name": key, "deleted": 0, "create_revision": new.create_revision,
              "prev_revision": prev_revision, "version": new.version, "value": value}
    return params, new
