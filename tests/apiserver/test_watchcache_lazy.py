"""The watch cache loads the store's objects as key-values and decodes each on first
read: what clients see right after start-up is what a fully decoded cache gave them
(LIST returns everything, watches from a resourceVersion see every change with its
previous object, writes still meet their conflict checks), on SQLite and across two
apiservers on one PostgreSQL store."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from apiclient import CM, Client, configmap, next_event, ssl_context_for

from draemu.apiserver.storage.storeadapter import encode
from draemu.apiserver.storage.watchcache import WatchCache
from draemu.cmd.testing.apiserver import start_apiserver
from draemu.store.factory import open_store
from draemu.store.model import KeyValue

pytestmark = pytest.mark.unit

PREFIX = "/registry/core/configmaps/default/"


def cm(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"}, "data": data}


@pytest_asyncio.fixture
async def filled() -> AsyncIterator[Any]:
    """A store with three ConfigMaps written before any cache existed."""
    store = await open_store("sqlite://:memory:", compaction_interval=0)
    for i in range(3):
        await store.create(PREFIX + f"cm{i}", encode(cm(f"cm{i}", v=str(i))))
    try:
        yield store
    finally:
        await store.close()


def held(cache: WatchCache, key: str) -> Any:
    return cache._buckets[PREFIX.rsplit("/", 2)[0] + "/"].raw(key)


async def test_loaded_objects_are_decoded_on_first_read(filled: Any) -> None:
    cache = WatchCache(filled)
    await cache.start()
    try:
        assert all(type(held(cache, PREFIX + f"cm{i}")) is KeyValue for i in range(3))
        one = cache.get(PREFIX + "cm1")
        assert one is not None and one["data"] == {"v": "1"}
        kv = await filled.get(PREFIX + "cm1")
        assert one["metadata"]["resourceVersion"] == str(kv.mod_revision)
        assert cache.get(PREFIX + "cm1") is one  # decoded once, then shared
        assert type(held(cache, PREFIX + "cm0")) is KeyValue
        listed = cache.list(PREFIX)
        assert [k for k, _ in listed] == [PREFIX + f"cm{i}" for i in range(3)]
        assert [o["data"]["v"] for _, o in listed] == ["0", "1", "2"]
        assert listed[1][1] is one
    finally:
        await cache.stop()


async def test_changes_of_objects_never_read_carry_their_previous_state(filled: Any) -> None:
    cache = WatchCache(filled)
    await cache.start()
    try:
        start = cache.revision
        w = cache.watch(PREFIX, start)
        kv = await filled.get(PREFIX + "cm0")
        new, _ = await filled.update(PREFIX + "cm0", encode(cm("cm0", v="new")),
                                     kv.mod_revision)
        kv2 = await filled.get(PREFIX + "cm2")
        gone, _ = await filled.delete(PREFIX + "cm2", kv2.mod_revision)
        put = await asyncio.wait_for(w.queue.get(), 5)
        assert put is not None and put.type == "put" and put.has_prev
        assert put.obj["data"] == {"v": "new"}
        assert put.prev is not None and put.prev["data"] == {"v": "0"}
        assert put.prev["metadata"]["resourceVersion"] == str(kv.mod_revision)
        delete = await asyncio.wait_for(w.queue.get(), 5)
        assert delete is not None and delete.type == "delete"
        assert delete.obj["data"] == {"v": "2"}
        assert delete.obj["metadata"]["resourceVersion"] == str(gone)
        assert cache.get(PREFIX + "cm2") is None
        assert [k for k, _ in cache.list(PREFIX)] == [PREFIX + "cm0", PREFIX + "cm1"]
        assert cache.get(PREFIX + "cm0")["data"] == {"v": "new"}  # type: ignore[index]
    finally:
        await cache.stop()


async def _fill(client: Client, n: int) -> None:
    for i in range(n):
        reply = await client.post(CM, configmap(f"cm{i:03d}", i=str(i)))
        assert reply.status == 201, reply.body


async def _check_served_right_after_start(writer: Client, reader: Client, n: int) -> None:
    """`reader`'s apiserver has just started on a store holding `n` ConfigMaps."""
    listed = await reader.get(CM)
    assert listed.status == 200
    items = listed.json["items"]
    assert [o["metadata"]["name"] for o in items] == [f"cm{i:03d}" for i in range(n)]
    assert [o["data"] for o in items] == [{"i": str(i)} for i in range(n)]
    rv = listed.json["metadata"]["resourceVersion"]
    one = await reader.get(f"{CM}/cm007")
    assert one.status == 200 and one.json == items[7]
    watch = await reader.stream(f"{CM}?watch=true&resourceVersion={rv}")
    try:
        stale = dict(items[3], data={"i": "stale"})
        stale["metadata"] = dict(items[3]["metadata"], resourceVersion="1")
        reply = await reader.put(f"{CM}/cm003", stale)
        assert reply.status == 409, reply.body
        assert reply.json["reason"] == "Conflict"
        fresh = dict(items[3], data={"i": "new"})
        reply = await reader.put(f"{CM}/cm003", fresh)
        assert reply.status == 200, reply.body
        updated_rv = reply.json["metadata"]["resourceVersion"]
        assert (await writer.delete(f"{CM}/cm005")).status == 200
        event = await next_event(watch)
        assert event["type"] == "MODIFIED"
        assert event["object"]["data"] == {"i": "new"}
        assert event["object"]["metadata"]["resourceVersion"] == updated_rv
        event = await next_event(watch)
        assert event["type"] == "DELETED"
        assert event["object"]["metadata"]["name"] == "cm005"
        assert event["object"]["data"] == {"i": "5"}
    finally:
        watch.close()
    after = await reader.get(CM)
    names = [o["metadata"]["name"] for o in after.json["items"]]
    assert "cm005" not in names and len(names) == n - 1


N = 40


async def test_restarted_apiserver_serves_a_store_it_never_decoded(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    first = await start_apiserver(tmp_path / "a", store_url=url)
    try:
        async with aiohttp.ClientSession() as session:
            await _fill(Client(first.url, session, ssl_context_for(first.kubeconfig_path)), N)
    finally:
        await first.stop()
    second = await start_apiserver(tmp_path / "b", store_url=url)
    try:
        async with aiohttp.ClientSession() as session:
            c = Client(second.url, session, ssl_context_for(second.kubeconfig_path))
            await _check_served_right_after_start(c, c, N)
    finally:
        await second.stop()


@pytest.mark.e2e
@pytest.mark.backends("postgresql", "etcd")
async def test_an_apiserver_joining_a_shared_store_serves_it_at_once(
        tmp_path: Path, store_url: str) -> None:
    first = await start_apiserver(tmp_path / "a", store_url=store_url)
    second = None
    try:
        async with aiohttp.ClientSession() as session:
            a = Client(first.url, session, ssl_context_for(first.kubeconfig_path))
            await _fill(a, N)
            second = await start_apiserver(tmp_path / "b", store_url=store_url)
            b = Client(second.url, session, ssl_context_for(second.kubeconfig_path))
            await _check_served_right_after_start(a, b, N)
    finally:
        if second is not None:
            await second.stop()
        await first.stop()


async def test_reads_that_decode_many_objects_pause_the_collector_and_say_so(
        filled: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from draemu.apiserver.storage import watchcache

    monkeypatch.setattr(watchcache, "BULK_DECODE", 2)
    collecting: list[bool] = []
    real = watchcache.decode

    def decode(value: bytes, revision: int) -> Any:
        collecting.append(gc.isenabled())
        return real(value, revision)

    monkeypatch.setattr(watchcache, "decode", decode)
    cache = WatchCache(filled)
    await cache.start()
    told: list[int] = []
    cache.decoded_in_bulk = lambda: told.append(len(collecting))
    try:
        assert cache.get(PREFIX + "cm0") is not None and told == []  # one: no bulk
        assert len(cache.list(PREFIX)) == 3  # two to decode
        assert collecting == [True, False, False] and gc.isenabled()
        assert told == [3]
        assert len(cache.list(PREFIX)) == 3  # nothing left to decode
        assert told == [3] and len(collecting) == 3
    finally:
        await cache.stop()
