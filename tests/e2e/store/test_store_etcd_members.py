"""The etcd store on a cluster of three durable members, each killed (SIGKILL) in turn
while writers write and a watcher watches: no acknowledged write is lost, and the watch
goes on through another member from the last revision it delivered, without a gap or a
repeat."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import pytest

from draemu.cmd.testing.etcd import EtcdCluster, EtcdUnavailable
from draemu.store import Event, StoreError, open_store

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

WRITERS = 8
ROUNDS = 3  # members killed one after the other, each started again before the next


@pytest.fixture
def members() -> Iterator[EtcdCluster]:
    try:
        cluster = EtcdCluster(3, fsync=True)
    except EtcdUnavailable as error:
        if os.environ.get("CI") == "true":
            pytest.fail(f"etcd is required in CI: {error}")
        pytest.skip(f"etcd not available: {error}")
    yield cluster
    cluster.stop()


async def test_members_killed_in_turn_lose_no_write_and_no_event(
        members: EtcdCluster) -> None:
    loop = asyncio.get_running_loop()
    async with await open_store(members.url("/drill"), compaction_interval=0) as store:
        start = await store.current_revision()
        watch = store.watch("/registry/", start)
        seen: list[Event] = []

        async def follow() -> None:
            async for event in watch:
                seen.append(event)

        follower = asyncio.create_task(follow())
        acknowledged: dict[str, int] = {}
        failed = 0
        stop = asyncio.Event()

        async def write(n: int) -> None:
            nonlocal failed
            i = 0
            while not stop.is_set():
                key = f"/registry/cm/drill/w{n}-{i}"
                try:
                    acknowledged[key] = (await store.create(key, b"v")).mod_revision
                except StoreError:
                    failed += 1  # not acknowledged: may or may not be written
                i += 1

        writers = [asyncio.create_task(write(n)) for n in range(WRITERS)]
        for member in members.members[:ROUNDS]:
            await asyncio.sleep(1.0)
            await loop.run_in_executor(None, members.kill, member)
            await asyncio.sleep(2.0)
            await loop.run_in_executor(None, members.restart, member)
        # Writes go on after the last member came back (after a leader's loss, those
        # sent before the election hang until etcd's request timeout, ~7 s).
        before = len(acknowledged)
        async with asyncio.timeout(30):
            while len(acknowledged) < before + 100:
                await asyncio.sleep(0.1)
        stop.set()
        await asyncio.gather(*writers)
        stored = await store.range("/registry/")
        async with asyncio.timeout(30):
            while not seen or seen[-1].revision < stored.revision:
                await asyncio.sleep(0.05)
        follower.cancel()
        await watch.aclose()
    revisions = {kv.key: kv.mod_revision for kv in stored.items}
    for key, revision in acknowledged.items():
        assert revisions[key] == revision, key
    assert [(e.kv.key, e.revision) for e in seen] == sorted(revisions.items(),
                                                           key=lambda item: item[1])
    print(f"{ROUNDS} members killed in turn: {len(acknowledged)} writes acknowledged, all "
          f"stored; {failed} failed, {len(revisions) - len(acknowledged)} of them written; "
          f"the watch saw each of the {len(seen)} revisions once, in order")
