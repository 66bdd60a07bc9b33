"""The store's tables, created on first open and checked on every open.

Like kine, the whole history lives in one append-only table, `draemu_kv`: one row per
write, row id = revision. A put row holds the key's new value; a delete row (`deleted`
= 1) holds the deleted key's create revision and version and an empty value. Every row
names the revision of the key's previous row (`prev_revision`, 0 for a create), which is
how watch events find their previous value. `draemu_meta` holds named integers: the
schema version, the compacted revision and, on PostgreSQL, the revision counter whose
row lock orders writers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from draemu.store.errors import StoreError

SCHEMA_VERSION = 1
TABLES = ("draemu_kv", "draemu_meta")

_KV_DDL = {
    "sqlite": """
        CREATE TABLE IF NOT EXISTS draemu_kv (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            deleted INTEGER NOT NULL,
            create_revision INTEGER NOT NULL,
            prev_revision INTEGER NOT NULL,
            version INTEGER NOT NULL,
            value BLOB NOT NULL)""",
    # COLLATE "C" makes key order byte order, as in etcd and SQLite, whatever the
    # database's locale.
    "postgresql": """
        CREATE TABLE IF NOT EXISTS draemu_kv (
            id BIGINT PRIMARY KEY,
            name TEXT COLLATE "C" NOT NULL,
            deleted SMALLINT NOT NULL,
            create_revision BIGINT NOT NULL,
            prev_revision BIGINT NOT NULL,
            version BIGINT NOT NULL,
            value BYTEA NOT NULL)""",
}
_META_DDL = {
    "sqlite": "CREATE TABLE IF NOT EXISTS draemu_meta (name TEXT PRIMARY KEY, "
              "value INTEGER NOT NULL)",
    "postgresql": "CREATE TABLE IF NOT EXISTS draemu_meta (name TEXT PRIMARY KEY, "
                  "value BIGINT NOT NULL)",
}
_INDEX_DDL = "CREATE INDEX IF NOT EXISTS draemu_kv_name_id ON draemu_kv (name, id)"
# Any constant: several processes opening one PostgreSQL database create the schema once.
_PG_SCHEMA_LOCK = 0x647261656D75


class SchemaConnection(Protocol):
    """What creating and checking the schema needs of a backend's connection (SQLite's
    goes straight to aiosqlite, so that opening it does not import SQLAlchemy)."""

    dialect: str

    async def table_names(self) -> set[str]: ...

    async def execute(self, sql: str, params: dict[str, Any] | None = None
                      ) -> Sequence[Sequence[Any]]: ...


async def ensure_schema(conn: SchemaConnection, *, foreign_tables_allowed: bool) -> None:
    """Create the tables in an empty database, or check that an existing one is ours.

    A SQLite file is the store's alone, so other tables there mean the file belongs to
    something else; a PostgreSQL database may be shared, so only our tables are checked.
    Runs inside the caller's transaction.
    """
    dialect = conn.dialect
    if dialect == "postgresql":
        await conn.execute("SELECT pg_advisory_xact_lock(:id)", {"id": _PG_SCHEMA_LOCK})
    names = await conn.table_names()
    ours = names & set(TABLES)
    if not ours:
        if names and not foreign_tables_allowed:
            raise StoreError("the database is not a draemu store: it holds other tables ("
                             + ", ".join(sorted(names)[:5]) + ")")
        await _create(conn, dialect)
        return
    if "draemu_meta" not in ours:
        raise StoreError("the database holds an incomplete draemu store (no draemu_meta "
                         "table); restore it from a backup or start with a new one")
    rows = await conn.execute("SELECT value FROM draemu_meta WHERE name = 'schema_version'")
    if not rows:
        raise StoreError("the database holds a draemu store without a schema version")
    if rows[0][0] > SCHEMA_VERSION:
        raise StoreError(f"the store was written by a newer draemu (schema version {rows[0][0]}); "
                         f"this draemu reads schema version {SCHEMA_VERSION} at most")


async def _create(conn: SchemaConnection, dialect: str) -> None:
    await conn.execute(_KV_DDL[dialect])
    await conn.execute(_META_DDL[dialect])
    await conn.execute(_INDEX_DDL)
    await conn.execute("INSERT INTO draemu_meta (name, value) VALUES "
                       "('schema_version', :v), ('compact_revision', 0), ('revision', 0)",
                       {"v": SCHEMA_VERSION})
