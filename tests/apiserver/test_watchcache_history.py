"""The watch cache's history keeps the objects of older changes as the store's bytes:
what a watch that resumes from far back receives is what it received when they were
new."""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from draemu.apiserver.storage import watchcache
from draemu.apiserver.storage.storeadapter import encode
from draemu.apiserver.storage.watchcache import WatchCache
from draemu.store.factory import open_store

pytestmark = pytest.mark.unit

PREFIX = "/registry/core/configmaps/default/"


@pytest_asyncio.fixture
async def cache(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[WatchCache]:
    monkeypatch.setattr(watchcache, "FRESH", 5)
    store = await open_store("sqlite://:memory:", compaction_interval=0)
    cache = WatchCache(store)
    await cache.start()
    try:
        yield cache
    finally:
        await cache.stop()
        await store.close()


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"}, "data": data}


async def write_history(cache: WatchCache) -> int:
    """Creates, updates and deletes; returns the revision before them."""
    store = cache.store
    start = await store.current_revision()
    for i in range(3):
        await store.create(PREFIX + f"cm{i}", encode(configmap(f"cm{i}", v="0")))
    for round_ in range(1, 4):
        for i in range(3):
            kv = await store.get(PREFIX + f"cm{i}")
            await store.update(PREFIX + f"cm{i}", encode(configmap(f"cm{i}", v=str(round_))),
                               kv.mod_revision)
    kv = await store.get(PREFIX + "cm0")
    await store.delete(PREFIX + "cm0", kv.mod_revision)
    assert await cache.wait_for(await store.current_revision())
    return start


async def test_a_watch_from_far_back_gets_the_objects_it_would_have_got_live(
        cache: WatchCache) -> None:
    live: list[tuple[Any, ...]] = []
    cache.listen(PREFIX, lambda c: live.append((c.type, c.key, c.revision,
                                                copy.deepcopy(c.obj), copy.deepcopy(c.prev))))
    start = await write_history(cache)
    replay = cache.watch(PREFIX, start)
    replayed = []
    while not replay.queue.empty():
        replayed.append(replay.queue.get_nowait())
    assert len(replayed) == len(live) == 13
    assert sum(1 for c in replayed if c._obj is None) == 13 - 5  # kept as bytes
    assert [(c.type, c.key, c.revision, c.obj, c.prev) for c in replayed] == live
    # Key order too: a client sees the same bytes.
    assert [json.dumps(c.obj) for c in replayed] == [json.dumps(e[3]) for e in live]
    assert [c.prev is None for c in replayed] == [True] * 3 + [False] * 10


async def test_the_current_objects_stay_the_cached_ones(cache: WatchCache) -> None:
    await write_history(cache)
    for key, obj in cache.list(PREFIX):
        kv = await cache.store.get(key)
        assert obj == watchcache.decode(kv.value, kv.mod_revision)


async def test_cached_objects_share_equal_managed_field_sets(cache: WatchCache) -> None:
    fields = {"f:data": {"f:v": {}}}
    for i in range(3):
        obj = configmap(f"cm{i}", v="0")
        obj["metadata"]["managedFields"] = [{"manager": "m", "operation": "Update",
                                             "fieldsType": "FieldsV1", "fieldsV1": fields}]
        await cache.store.create(PREFIX + f"cm{i}", encode(obj))
    assert await cache.wait_for(await cache.store.current_revision())
    sets = [obj["metadata"]["managedFields"][0]["fieldsV1"] for _, obj in cache.list(PREFIX)]
    assert sets[0] == fields and sets[0] is sets[1] is sets[2]
    for key, obj in cache.list(PREFIX):
        kv = await cache.store.get(key)
        assert obj == watchcache.decode(kv.value, kv.mod_revision)
