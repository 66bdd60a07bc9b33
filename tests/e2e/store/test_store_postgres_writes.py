"""How the PostgreSQL backend commits writes: batched in one transaction, each decided
on the key's latest row whoever wrote it, over a schema that older stores upgrade to."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import asyncpg
import pytest

from draemu.store import KeyExistsError, StoreError, open_store, postgres

pytestmark = [pytest.mark.e2e, pytest.mark.backends("postgresql")]
CHILD = Path(__file__).parents[2] / "store" / "store_child.py"
TIMEOUT = 60


async def sql(url: str, query: str) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(url)
    try:
        return await conn.fetch(query)
    finally:
        await conn.close()


async def script(url: str, statements: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(statements)
    finally:
        await conn.close()


async def test_concurrent_writes_share_one_transaction(store_url: str) -> None:
    async with await open_store(store_url, compaction_interval=0) as store:
        await asyncio.gather(*(store.create(f"/registry/cm/ns/k{i}", b"v") for i in range(50)))
    [row] = await sql(store_url, "SELECT count(*), count(DISTINCT xmin::text) FROM draemu_kv")
    assert tuple(row) == (50, 1)


async def test_create_of_a_key_another_process_created_raises_key_exists(
        store_url: str) -> None:
    async with (await open_store(store_url, compaction_interval=0) as first,
                await open_store(store_url, compaction_interval=0) as second):
        created = await first.create("/registry/cm/ns/a", b"first")
        with pytest.raises(KeyExistsError):
            await second.create("/registry/cm/ns/a", b"second")
        assert await second.get("/registry/cm/ns/a") == created
        assert await second.current_revision() == created.mod_revision


async def test_update_decides_on_the_row_another_process_wrote(store_url: str) -> None:
    async with (await open_store(store_url, compaction_interval=0) as first,
                await open_store(store_url, compaction_interval=0) as second):
        created = await first.create("/registry/cm/ns/a", b"1")
        new, prev = await second.update("/registry/cm/ns/a", b"2", created.mod_revision)
        assert prev == created
        assert (new.create_revision, new.version) == (created.mod_revision, 2)


async def test_an_update_on_a_row_this_process_saw_is_sent_without_reading_it(
        store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    async with await open_store(store_url, compaction_interval=0) as store:
        created = await store.create("/registry/cm/ns/a", b"1")
        reads: list[set[str]] = []
        latest = store._latest

        async def counted(keys: set[str]) -> dict[str, object]:
            reads.append(keys)
            return await latest(keys)

        monkeypatch.setattr(store, "_latest", counted)
        new, prev = await store.update("/registry/cm/ns/a", b"2", created.mod_revision)
        assert prev == created and (new.version, new.create_revision) == (2, created.mod_revision)
        revision, gone = await store.delete("/registry/cm/ns/a", new.mod_revision)
        assert gone == new and revision == new.mod_revision + 1
        assert reads == []


async def test_a_guess_from_rows_another_process_replaced_is_decided_again(
        store_url: str) -> None:
    async with (await open_store(store_url, compaction_interval=0) as first,
                await open_store(store_url, compaction_interval=0) as second):
        created = await first.create("/registry/cm/ns/a", b"1")
        theirs, _ = await second.update("/registry/cm/ns/a", b"2", created.mod_revision)
        # first may not have heard of second's write yet: its guess is stale.
        with pytest.raises(StoreError, match="revision"):
            await first.update("/registry/cm/ns/a", b"3", created.mod_revision)
        new, prev = await first.update("/registry/cm/ns/a", b"3", theirs.mod_revision)
        assert prev == theirs and (new.version, new.create_revision) == (3, created.mod_revision)
        await second.delete("/registry/cm/ns/a")
        again = await first.create("/registry/cm/ns/a", b"new life")
        assert (again.version, again.create_revision) == (1, again.mod_revision)


async def test_delete_and_create_of_one_key_at_once_commit_one_after_the_other(
        store_url: str) -> None:
    async with await open_store(store_url, compaction_interval=0) as store:
        old = await store.create("/registry/cm/ns/a", b"old")
        (deleted, prev), new = await asyncio.gather(
            store.delete("/registry/cm/ns/a"), store.create("/registry/cm/ns/a", b"new"))
        assert prev == old
        assert (deleted, new.mod_revision) == (old.mod_revision + 1, old.mod_revision + 2)
        assert (new.create_revision, new.version) == (new.mod_revision, 1)


async def test_writes_continue_after_the_server_dropped_the_connections(
        store_url: str) -> None:
    async with await open_store(store_url, compaction_interval=0) as store:
        first = await store.create("/registry/cm/ns/a", b"v")
        await sql(store_url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                             "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        # The write that finds its connection gone fails; the next one reconnects.
        try:
            await store.create("/registry/cm/ns/b", b"v")
        except StoreError:
            pass
        kv = await store.create("/registry/cm/ns/c", b"v")
        assert kv.mod_revision in (first.mod_revision + 1, first.mod_revision + 2)


async def test_version_1_store_is_upgraded_on_open(store_url: str) -> None:
    async with await open_store(store_url, compaction_interval=0) as store:
        created = await store.create("/registry/cm/ns/a", b"v")
    await script(store_url, "DROP FUNCTION draemu_write; "
                            "UPDATE draemu_meta SET value = 1 WHERE name = 'schema_version'")
    async with await open_store(store_url, compaction_interval=0) as store:
        new, _ = await store.update("/registry/cm/ns/a", b"w", created.mod_revision)
    assert new.mod_revision == created.mod_revision + 1
    [row] = await sql(store_url, "SELECT value FROM draemu_meta WHERE name = 'schema_version'")
    assert row[0] == 2


async def test_postgresql_store_from_a_newer_draemu_is_refused(store_url: str) -> None:
    await (await open_store(store_url, compaction_interval=0)).close()
    await sql(store_url, "UPDATE draemu_meta SET value = 3 WHERE name = 'schema_version'")
    with pytest.raises(StoreError, match="newer draemu \\(schema version 3\\); this draemu "
                                         "reads schema version 2 at most"):
        await open_store(store_url, compaction_interval=0)


async def test_other_process_commits_announced_during_own_writes_reach_watchers(
        store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Without NOTIFY the other process's last events would wait for a poll an hour away.
    monkeypatch.setattr(postgres, "POLL_INTERVAL", 3600)
    async with await open_store(store_url, compaction_interval=0) as store:
        start = await store.current_revision()
        watch = store.watch("/registry/", start)
        other_process = await asyncio.create_subprocess_exec(
            sys.executable, str(CHILD), "writer", store_url, "/registry/child/k", "50",
            stdout=asyncio.subprocess.PIPE)
        finished = asyncio.ensure_future(other_process.communicate())
        own = 0
        while not finished.done():
            await store.create(f"/registry/own/k{own}", b"v")
            own += 1
        await finished
        async with asyncio.timeout(TIMEOUT):
            revisions = [(await watch.__anext__()).revision for _ in range(own + 50)]
        assert revisions == list(range(start + 1, start + own + 51))
        await watch.aclose()
