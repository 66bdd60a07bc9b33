"""Several processes on one PostgreSQL database: every watcher sees every revision, in
order, without gaps, however the writers interleave."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from draemu.store import (
    CompactedError,
    ConflictError,
    Event,
    Store,
    Watch,
    open_store,
    postgres,
)

pytestmark = pytest.mark.e2e

CHILD = Path(__file__).parents[2] / "store" / "store_child.py"
TIMEOUT = 60


async def take(watch: Watch, count: int) -> list[Event]:
    events: list[Event] = []
    async with asyncio.timeout(TIMEOUT):
        while len(events) < count:
            events.append(await watch.__anext__())
    return events


async def create_keys(store: Store, prefix: str, count: int) -> None:
    for i in range(count):
        await store.create(f"{prefix}{i}", b"x")


async def increment(store: Store, key: str, times: int) -> None:
    """Add one to a shared counter `times` times with compare-and-swap, retrying."""
    done = 0
    while done < times:
        current = await store.get(key)
        assert current is not None
        try:
            await store.update(key, str(int(current.value) + 1).encode(), current.mod_revision)
        except ConflictError:
            continue
        done += 1


@pytest.mark.backends("postgresql")
async def test_watchers_of_every_process_see_all_revisions_in_order(store_url: str) -> None:
    first = await open_store(store_url, compaction_interval=0)
    second = await open_store(store_url, compaction_interval=0)
    try:
        await first.create("/registry/shared/counter", b"0")
        start = await first.current_revision()
        watches = [first.watch("/registry/", start), second.watch("/registry/", start)]
        other_process = await asyncio.create_subprocess_exec(
            sys.executable, str(CHILD), "writer", store_url, "/registry/child/k", "100",
            stdout=asyncio.subprocess.PIPE)
        await asyncio.gather(
            *(create_keys(store, f"/registry/{name}{n}/k", 40)
              for store, name in ((first, "first"), (second, "second")) for n in range(3)),
            increment(first, "/registry/shared/counter", 30),
            increment(second, "/registry/shared/counter", 30))
        assert (await other_process.communicate())[0].decode().strip() == "done"
        end = await first.current_revision()
        assert end - start == 3 * 40 * 2 + 100 + 60
        for watch in watches:
            events = await take(watch, end - start)
            assert [e.revision for e in events] == list(range(start + 1, end + 1))
            assert len({e.kv.key for e in events if e.kv.version == 1}) == 3 * 40 * 2 + 100
            counter = [e for e in events if e.kv.key == "/registry/shared/counter"]
            assert [int(e.kv.value) for e in counter] == list(range(1, 61))
            await watch.aclose()
    finally:
        await first.close()
        await second.close()


@pytest.mark.backends("postgresql")
async def test_notify_wakes_watchers_for_another_process_writes(
        store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Without NOTIFY the event would wait for a poll an hour away.
    monkeypatch.setattr(postgres, "POLL_INTERVAL", 3600)
    store = await open_store(store_url, compaction_interval=0)
    try:
        watch = store.watch("/registry/child/", await store.current_revision())
        other_process = await asyncio.create_subprocess_exec(
            sys.executable, str(CHILD), "writer", store_url, "/registry/child/k", "1",
            stdout=asyncio.subprocess.PIPE)
        await other_process.communicate()
        [event] = await take(watch, 1)
        assert event.kv.key == "/registry/child/k0"
    finally:
        await store.close()


@pytest.mark.backends("postgresql")
async def test_watchers_of_a_process_overtaken_by_compaction_end_with_compacted(
        store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process compacts past what this one's poller published (its NOTIFYs lost):
    the rows in between may be gone, so this process's watchers end with CompactedError
    instead of skipping them; a watch from the compacted revision goes on."""
    monkeypatch.setattr(postgres, "POLL_INTERVAL", 3600)
    behind = await open_store(store_url, compaction_interval=0)
    other = await open_store(store_url, compaction_interval=0)
    try:
        start = await behind.current_revision()
        watch = behind.watch("/registry/", start)
        listener = behind._listener  # type: ignore[attr-defined]
        await listener.remove_listener(postgres.CHANNEL, behind._notified)  # type: ignore[attr-defined]
        kv = await other.create("/registry/cm/ns/a", b"1")
        for value in (b"2", b"3"):
            kv, _ = await other.update(kv.key, value, kv.mod_revision)
        await other.compact(kv.mod_revision)
        behind._wake.set()  # type: ignore[attr-defined]  # the next poll
        with pytest.raises(CompactedError):
            await take(watch, 1)
        later = behind.watch("/registry/", kv.mod_revision)
        await other.create("/registry/cm/ns/b", b"1")
        behind._wake.set()  # type: ignore[attr-defined]
        [event] = await take(later, 1)
        assert event.kv.key == "/registry/cm/ns/b"
    finally:
        await behind.close()
        await other.close()
