"""etcd semantics of the store, on every backend."""

from __future__ import annotations

import asyncio

import pytest

from draemu.store import (
    CompactedError,
    ConflictError,
    Event,
    FutureRevisionError,
    KeyExistsError,
    KeyNotFoundError,
    KeyValue,
    Store,
    StoreClosedError,
    WatchTooSlowError,
    open_store,
)
from draemu.store import watch as watch_module

pytestmark = pytest.mark.unit

TIMEOUT = 10


async def take(watch: object, count: int) -> list[Event]:
    """The next `count` events of a watch."""
    events: list[Event] = []

    async def collect() -> None:
        async for event in watch:  # type: ignore[attr-defined]
            events.append(event)
            if len(events) == count:
                return

    async with asyncio.timeout(TIMEOUT):
        await collect()
    return events


async def test_create_assigns_consecutive_revisions(store: Store) -> None:
    start = await store.current_revision()
    a = await store.create("/registry/pods/default/a", b"1")
    b = await store.create("/registry/pods/default/b", b"2")
    assert (a.mod_revision, b.mod_revision) == (start + 1, start + 2)
    assert a == KeyValue("/registry/pods/default/a", b"1", start + 1, start + 1, 1)
    assert await store.current_revision() == start + 2


async def test_create_of_existing_key_raises_key_exists(store: Store) -> None:
    await store.create("/registry/pods/default/a", b"1")
    with pytest.raises(KeyExistsError):
        await store.create("/registry/pods/default/a", b"2")
    assert (await store.get("/registry/pods/default/a")).value == b"1"


async def test_get_of_missing_key_returns_none(store: Store) -> None:
    assert await store.get("/registry/pods/default/nothing") is None


async def test_update_with_current_mod_revision_replaces_value(store: Store) -> None:
    created = await store.create("/registry/pods/default/a", b"1")
    new, prev = await store.update("/registry/pods/default/a", b"2", created.mod_revision)
    assert prev == created
    assert new == KeyValue("/registry/pods/default/a", b"2", created.create_revision,
                           created.mod_revision + 1, 2)
    assert await store.get("/registry/pods/default/a") == new


async def test_update_with_stale_mod_revision_raises_conflict(store: Store) -> None:
    created = await store.create("/registry/pods/default/a", b"1")
    await store.update("/registry/pods/default/a", b"2", created.mod_revision)
    with pytest.raises(ConflictError) as raised:
        await store.update("/registry/pods/default/a", b"3", created.mod_revision)
    assert raised.value.actual == created.mod_revision + 1
    assert (await store.get("/registry/pods/default/a")).value == b"2"


async def test_update_of_missing_key_raises_not_found(store: Store) -> None:
    with pytest.raises(KeyNotFoundError):
        await store.update("/registry/pods/default/a", b"1", 1)


async def test_failed_writes_do_not_consume_revisions(store: Store) -> None:
    created = await store.create("/registry/pods/default/a", b"1")
    for attempt in (store.create("/registry/pods/default/a", b"x"),
                    store.update("/registry/pods/default/a", b"x", created.mod_revision + 5),
                    store.delete("/registry/pods/default/missing")):
        with pytest.raises((KeyExistsError, ConflictError, KeyNotFoundError)):
            await attempt
    assert await store.current_revision() == created.mod_revision
    nxt = await store.create("/registry/pods/default/b", b"2")
    assert nxt.mod_revision == created.mod_revision + 1


async def test_delete_returns_its_revision_and_the_previous_value(store: Store) -> None:
    created = await store.create("/registry/pods/default/a", b"1")
    revision, prev = await store.delete("/registry/pods/default/a")
    assert revision == created.mod_revision + 1
    assert prev == created
    assert await store.get("/registry/pods/default/a") is None


async def test_delete_with_stale_mod_revision_keeps_the_key(store: Store) -> None:
    created = await store.create("/registry/pods/default/a", b"1")
    with pytest.raises(ConflictError):
        await store.delete("/registry/pods/default/a", created.mod_revision - 1)
    assert await store.get("/registry/pods/default/a") == created


async def test_recreated_key_starts_a_new_life(store: Store) -> None:
    await store.create("/registry/pods/default/a", b"1")
    await store.delete("/registry/pods/default/a")
    again = await store.create("/registry/pods/default/a", b"2")
    assert again.create_revision == again.mod_revision
    assert again.version == 1


async def test_get_at_an_older_revision_sees_the_value_then(store: Store) -> None:
    first = await store.create("/registry/pods/default/a", b"1")
    await store.update("/registry/pods/default/a", b"2", first.mod_revision)
    revision, _ = await store.delete("/registry/pods/default/a")
    assert await store.get("/registry/pods/default/a", revision=first.mod_revision) == first
    assert (await store.get("/registry/pods/default/a", revision=revision - 1)).value == b"2"
    assert await store.get("/registry/pods/default/a", revision=revision) is None
    assert await store.get("/registry/pods/default/a", revision=first.mod_revision - 1) is None


async def test_reading_a_future_revision_raises(store: Store) -> None:
    created = await store.create("/registry/pods/default/a", b"1")
    with pytest.raises(FutureRevisionError):
        await store.get("/registry/pods/default/a", revision=created.mod_revision + 1)
    with pytest.raises(FutureRevisionError):
        await store.range("/registry/", revision=created.mod_revision + 1)


async def test_range_returns_keys_under_the_prefix_sorted(store: Store) -> None:
    for key in ("/registry/pods/b/2", "/registry/pods/a/1", "/registry/podsx/a",
                "/registry/pod", "/registry/pods/b/1"):
        await store.create(key, key.encode())
    result = await store.range("/registry/pods/")
    assert [kv.key for kv in result.items] == [
        "/registry/pods/a/1", "/registry/pods/b/1", "/registry/pods/b/2"]
    assert result.items[0].value == b"/registry/pods/a/1"
    assert (result.revision, result.more, result.count) == (
        await store.current_revision(), False, 3)


async def test_range_pages_with_limit_and_start_after(store: Store) -> None:
    for i in range(5):
        await store.create(f"/registry/cm/ns/k{i}", b"v")
    first = await store.range("/registry/cm/", limit=2)
    assert [kv.key[-2:] for kv in first.items] == ["k0", "k1"]
    assert (first.more, first.count) == (True, 5)
    second = await store.range("/registry/cm/", start_after=first.items[-1].key, limit=2,
                               revision=first.revision)
    assert [kv.key[-2:] for kv in second.items] == ["k2", "k3"]
    assert (second.more, second.count, second.revision) == (True, 3, first.revision)
    last = await store.range("/registry/cm/", start_after="/registry/cm/ns/k3", limit=2)
    assert [kv.key[-2:] for kv in last.items] == ["k4"]
    assert (last.more, last.count) == (False, 1)


async def test_range_at_an_older_revision_sees_the_keys_then(store: Store) -> None:
    a = await store.create("/registry/cm/ns/a", b"1")
    await store.create("/registry/cm/ns/b", b"1")
    await store.update("/registry/cm/ns/a", b"2", a.mod_revision)
    await store.delete("/registry/cm/ns/b")
    old = await store.range("/registry/cm/", revision=a.mod_revision + 1)
    assert [(kv.key, kv.value) for kv in old.items] == [
        ("/registry/cm/ns/a", b"1"), ("/registry/cm/ns/b", b"1")]
    assert (old.revision, old.count) == (a.mod_revision + 1, 2)
    now = await store.range("/registry/cm/")
    assert [(kv.key, kv.value, kv.version) for kv in now.items] == [
        ("/registry/cm/ns/a", b"2", 2)]


async def test_watch_replays_history_after_the_revision_then_follows(store: Store) -> None:
    a = await store.create("/registry/pods/ns/a", b"1")
    b = await store.create("/registry/pods/ns/b", b"1")
    watch = store.watch("/registry/pods/", a.mod_revision)
    replayed = await take(watch, 1)
    assert replayed == [Event("put", b, None, b.mod_revision)]
    new, prev = await store.update("/registry/pods/ns/a", b"2", a.mod_revision)
    assert await take(watch, 1) == [Event("put", new, prev, new.mod_revision)]
    await watch.aclose()


async def test_watch_sees_only_keys_under_its_prefix(store: Store) -> None:
    start = await store.current_revision()
    watch = store.watch("/registry/pods/", start)
    await store.create("/registry/podsx/a", b"1")
    await store.create("/registry/nodes/n1", b"1")
    pod = await store.create("/registry/pods/ns/a", b"1")
    assert [e.kv.key for e in await take(watch, 1)] == [pod.key]
    await watch.aclose()


async def test_watch_delete_event_carries_the_deleted_value(store: Store) -> None:
    created = await store.create("/registry/pods/ns/a", b"1")
    watch = store.watch("/registry/pods/", created.mod_revision)
    revision, _ = await store.delete("/registry/pods/ns/a")
    [event] = await take(watch, 1)
    assert event.type == "delete"
    assert event.revision == revision
    assert event.kv == KeyValue("/registry/pods/ns/a", b"", 0, revision, 0)
    assert event.prev_kv == created
    await watch.aclose()


async def test_watch_from_a_future_revision_starts_after_it(store: Store) -> None:
    start = await store.current_revision()
    watch = store.watch("/registry/", start + 2)
    for i in range(4):
        await store.create(f"/registry/cm/ns/k{i}", b"v")
    assert [e.revision for e in await take(watch, 2)] == [start + 3, start + 4]
    await watch.aclose()


async def test_watch_history_longer_than_a_page_arrives_complete(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch_module, "HISTORY_PAGE", 4)
    start = await store.current_revision()
    for i in range(10):
        await store.create(f"/registry/cm/ns/k{i:04}", b"v")
    events = await take(store.watch("/registry/cm/", start), 10)
    assert [e.revision for e in events] == list(range(start + 1, start + 11))


async def test_closed_watch_stops_iterating(store: Store) -> None:
    watch = store.watch("/registry/", await store.current_revision())
    await store.create("/registry/cm/ns/a", b"1")
    await watch.aclose()
    assert [event async for event in watch] == []


async def test_aclose_from_another_task_ends_a_waiting_watch(store: Store) -> None:
    watch = store.watch("/registry/", await store.current_revision())
    waiting = asyncio.ensure_future(take(watch, 1))
    await asyncio.sleep(0)
    await watch.aclose()
    with pytest.raises(StopAsyncIteration):
        async with asyncio.timeout(TIMEOUT):
            await watch.__anext__()
    waiting.cancel()


async def test_compaction_drops_older_revisions(store: Store) -> None:
    a = await store.create("/registry/cm/ns/a", b"1")
    b, _ = await store.update("/registry/cm/ns/a", b"2", a.mod_revision)
    await store.create("/registry/cm/ns/c", b"1")
    await store.compact(b.mod_revision)
    assert store.compacted_revision == b.mod_revision
    with pytest.raises(CompactedError):
        await store.get("/registry/cm/ns/a", revision=a.mod_revision)
    with pytest.raises(CompactedError):
        await store.range("/registry/cm/", revision=a.mod_revision)
    with pytest.raises(CompactedError):
        store.watch("/registry/cm/", a.mod_revision)
    assert await store.get("/registry/cm/ns/a", revision=b.mod_revision) == b


async def test_compaction_keeps_current_values_and_later_history(store: Store) -> None:
    a = await store.create("/registry/cm/ns/a", b"1")
    b, _ = await store.update("/registry/cm/ns/a", b"2", a.mod_revision)
    gone = await store.create("/registry/cm/ns/gone", b"1")
    deleted, _ = await store.delete("/registry/cm/ns/gone")
    c, _ = await store.update("/registry/cm/ns/a", b"3", b.mod_revision)
    await store.compact(deleted)
    assert [kv.key for kv in (await store.range("/registry/cm/")).items] == ["/registry/cm/ns/a"]
    events = await take(store.watch("/registry/cm/", deleted), 1)
    assert events == [Event("put", c, b, c.mod_revision)]
    assert gone.mod_revision < deleted


async def test_compaction_of_everything_keeps_the_revision(store: Store) -> None:
    await store.create("/registry/cm/ns/a", b"1")
    revision, _ = await store.delete("/registry/cm/ns/a")
    await store.compact(revision)
    assert await store.current_revision() == revision
    assert (await store.create("/registry/cm/ns/b", b"1")).mod_revision == revision + 1


async def test_compaction_to_a_future_revision_raises(store: Store) -> None:
    with pytest.raises(FutureRevisionError):
        await store.compact(await store.current_revision() + 1)


async def test_slow_watcher_is_ended_without_blocking_writers(store_url: str) -> None:
    async with await open_store(store_url, compaction_interval=0,
                                watch_queue_limit=5) as store:
        start = await store.current_revision()
        slow = store.watch("/registry/", start)
        fast = store.watch("/registry/", start)
        for i in range(20):
            await store.create(f"/registry/cm/ns/k{i}", b"v")
            await take(fast, 1)
        with pytest.raises(WatchTooSlowError):
            await take(slow, 20)


async def test_closing_the_store_ends_watches(store_url: str) -> None:
    store = await open_store(store_url, compaction_interval=0)
    watch = store.watch("/registry/", await store.current_revision())
    await store.close()
    with pytest.raises(StoreClosedError):
        await take(watch, 1)
    with pytest.raises(StoreClosedError):
        await store.get("/registry/cm/ns/a")


async def test_periodic_compaction_keeps_one_interval_of_history(store_url: str) -> None:
    async with await open_store(store_url, compaction_interval=0.05) as store:
        a = await store.create("/registry/cm/ns/a", b"1")
        await store.update("/registry/cm/ns/a", b"2", a.mod_revision)
        async with asyncio.timeout(TIMEOUT):
            while store.compacted_revision < a.mod_revision + 1:
                await asyncio.sleep(0.01)
        with pytest.raises(CompactedError):
            await store.get("/registry/cm/ns/a", revision=a.mod_revision)


@pytest.mark.backends("sqlite-file", "postgresql", "etcd", "etcd-cluster")
async def test_reopened_store_keeps_keys_and_continues_revisions(store_url: str) -> None:
    async with await open_store(store_url, compaction_interval=0) as store:
        a = await store.create("/registry/cm/ns/a", b"1")
        revision, _ = await store.delete(
            (await store.create("/registry/cm/ns/b", b"1")).key)
    async with await open_store(store_url, compaction_interval=0) as store:
        assert await store.get("/registry/cm/ns/a") == a
        assert await store.current_revision() == revision
        watch = store.watch("/registry/cm/", a.mod_revision)
        assert [e.type for e in await take(watch, 2)] == ["put", "delete"]
        assert (await store.create("/registry/cm/ns/c", b"1")).mod_revision == revision + 1


@pytest.mark.backends("sqlite-file", "postgresql", "etcd", "etcd-cluster")
async def test_cancelled_writes_leave_memory_and_database_in_agreement(store_url: str) -> None:
    async with await open_store(store_url, compaction_interval=0) as store:
        for i in range(20):
            write = asyncio.ensure_future(store.create(f"/registry/cm/ns/k{i}", b"v"))
            for _ in range(i % 4):
                await asyncio.sleep(0)
            write.cancel()
            await asyncio.gather(write, return_exceptions=True)
        # A write cancelled after it began still commits; what the store answers must
        # be what the database holds.
        last = await store.create("/registry/cm/ns/last", b"v")
        seen = await store.range("/registry/", revision=last.mod_revision)
    async with await open_store(store_url, compaction_interval=0) as store:
        reopened = await store.range("/registry/", revision=last.mod_revision)
        assert reopened.items == seen.items
        assert [kv.key for kv in seen.items].count("/registry/cm/ns/last") == 1


async def test_concurrent_writers_get_distinct_consecutive_revisions(store: Store) -> None:
    start = await store.current_revision()
    watch = store.watch("/registry/", start)
    created = await asyncio.gather(*(store.create(f"/registry/cm/ns/k{i}", b"v")
                                     for i in range(50)))
    assert sorted(kv.mod_revision for kv in created) == list(range(start + 1, start + 51))
    events = await take(watch, 50)
    assert [e.revision for e in events] == list(range(start + 1, start + 51))
    await watch.aclose()


async def test_concurrent_writes_to_one_key_behave_as_one_at_a_time(store: Store) -> None:
    results = await asyncio.gather(*(store.create("/registry/cm/ns/a", str(i).encode())
                                     for i in range(5)), return_exceptions=True)
    created = [r for r in results if isinstance(r, KeyValue)]
    assert len(created) == 1
    assert all(isinstance(r, KeyExistsError) for r in results if r not in created)
    results = await asyncio.gather(*(store.update("/registry/cm/ns/a", b"x",
                                                  created[0].mod_revision)
                                     for _ in range(5)), return_exceptions=True)
    assert sum(isinstance(r, tuple) for r in results) == 1
    assert sum(isinstance(r, ConflictError) for r in results) == 4
    assert (await store.get("/registry/cm/ns/a")).version == 2


async def test_compaction_does_not_end_live_watches(store: Store) -> None:
    start = await store.current_revision()
    watch = store.watch("/registry/", start)
    for i in range(5):
        await store.create(f"/registry/cm/ns/k{i}", b"v")
    await store.compact(await store.current_revision())
    assert [e.revision for e in await take(watch, 5)] == list(range(start + 1, start + 6))
    await watch.aclose()
