"""The store's tables, created on first open and checked on every open.

Like kine, the whole history lives in one append-only table, `draemu_kv`: one row per
write, row id = revision. A put row holds the key's new value; a delete row (`deleted`
= 1) holds the deleted key's create revision and version and an empty value. Every row
names the revision of the key's previous row (`prev_revision`, 0 for a create), which is
how watch events find their previous value. `draemu_meta` holds named integers: the
schema version, the compacted revision and, on PostgreSQL, the revision counter whose
row lock orders writers.

On PostgreSQL, schema version 2 adds `draemu_write`, a function that commits a batch of
writes in one statement (see `_PG_WRITE_FUNCTION`); opening a version 1 database adds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from draemu.store.errors import StoreError

# The newest schema version of each database; a database at an older one is upgraded.
SCHEMA_VERSIONS = {"sqlite": 1, "postgresql": 2}
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
# The channel of the NOTIFY that each PostgreSQL commit sends (with its revision).
PG_CHANNEL = "draemu_store"
# A batch of writes in one statement, so that the counter's row lock, which orders every
# writer of every process, is held for one round trip and the commit. Write i puts
# vals[i] (or deletes, if deletes[i]) at names[i] if the key's latest live row is
# expected[i] (0: the key does not exist); otherwise it is skipped and takes no revision.
# Returns one row per write, in order: its revision, or 0 and the key's latest row for a
# skipped write, for the caller to decide again.
_PG_WRITE_FUNCTION = f"""
    CREATE OR REPLACE FUNCTION draemu_write(
        names TEXT[], vals BYTEA[], deletes BOOLEAN[], expected BIGINT[])
    RETURNS TABLE (w_revision BIGINT, w_id BIGINT, w_deleted SMALLINT,
                   w_create_revision BIGINT, w_version BIGINT, w_value BYTEA)
    LANGUAGE plpgsql AS $$
    DECLARE
        start BIGINT;
        rev BIGINT;
        latest draemu_kv%ROWTYPE;
        live BOOLEAN;
    BEGIN
        -- The lock orders writers; statements after it see every earlier commit.
        SELECT m.value INTO start FROM draemu_meta m WHERE m.name = 'revision' FOR UPDATE;
        rev := start;
        FOR i IN 1 .. COALESCE(cardinality(names), 0) LOOP
            SELECT * INTO latest FROM draemu_kv kv
                WHERE kv.name = names[i] ORDER BY kv.id DESC LIMIT 1;
            live := latest.id IS NOT NULL AND latest.deleted = 0;
            IF expected[i] = (CASE WHEN live THEN latest.id ELSE 0 END) THEN
                rev := rev + 1;
                IF deletes[i] THEN
                    INSERT INTO draemu_kv VALUES (rev, names[i], 1, latest.create_revision,
                                                  latest.id, latest.version, ''::BYTEA);
                ELSIF live THEN
                    INSERT INTO draemu_kv VALUES (rev, names[i], 0, latest.create_revision,
                                                  latest.id, latest.version + 1, vals[i]);
                ELSE
                    INSERT INTO draemu_kv VALUES (rev, names[i], 0, rev, 0, 1, vals[i]);
                END IF;
                w_revision := rev;
                w_id := NULL;
                w_deleted := NULL;
                w_create_revision := NULL;
                w_version := NULL;
                w_value := NULL;
            ELSE
                w_revision := 0;
                w_id := latest.id;
                w_deleted := latest.deleted;
                w_create_revision := latest.create_revision;
                w_version := latest.version;
                w_value := latest.value;
            END IF;
            RETURN NEXT;
        END LOOP;
        IF rev > start THEN
            UPDATE draemu_meta SET value = rev WHERE name = 'revision';
            PERFORM pg_notify('{PG_CHANNEL}', rev::TEXT);
        END IF;
    END $$"""
# Statements that bring a database from the version before each one to it.
_UPGRADES: dict[str, dict[int, tuple[str, ...]]] = {
    "sqlite": {},
    "postgresql": {2: (_PG_WRITE_FUNCTION,)},
}
# Any constant: several processes opening one PostgreSQL database create the schema once.
_PG_SCHEMA_LOCK = 0x647261656D75


class SchemaConnection(Protocol):
    """What creating and checking the schema needs of a backend's connection (SQLite's
    goes straight to sqlite3 in a thread of its own, so that opening it does not import
    SQLAlchemy)."""

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
    version, newest = rows[0][0], SCHEMA_VERSIONS[dialect]
    if version > newest:
        raise StoreError(f"the store was written by a newer draemu (schema version {version}); "
                         f"this draemu reads schema version {newest} at most")
    if version < newest:
        await _upgrade(conn, dialect, version)


async def _create(conn: SchemaConnection, dialect: str) -> None:
    await conn.execute(_KV_DDL[dialect])
    await conn.execute(_META_DDL[dialect])
    await conn.execute(_INDEX_DDL)
    await conn.execute("INSERT INTO draemu_meta (name, value) VALUES "
                       "('schema_version', 1), ('compact_revision', 0), ('revision', 0)")
    await _upgrade(conn, dialect, 1)


async def _upgrade(conn: SchemaConnection, dialect: str, version: int) -> None:
    """Bring the schema from `version` to the newest one."""
    for step in range(version + 1, SCHEMA_VERSIONS[dialect] + 1):
        for sql in _UPGRADES[dialect][step]:
            await conn.execute(sql)
    await conn.execute("UPDATE draemu_meta SET value = :v WHERE name = 'schema_version'",
                       {"v": SCHEMA_VERSIONS[dialect]})
