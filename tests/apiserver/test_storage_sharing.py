"""Storage and the watch cache share objects instead of decoding stored bytes again: an
update compares against the cached object, and the cache takes the object a write
stored. What anyone reads stays what decoding the store's bytes gives."""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest
import pytest_asyncio

from draemu.api.errors import StatusError
from draemu.apiserver.registry.resources import Resource
from draemu.apiserver.storage.storeadapter import Storage, Unchanged, encode
from draemu.apiserver.storage.watchcache import WatchCache, decode
from draemu.store.factory import open_store
from draemu.store.model import KeyValue

pytestmark = pytest.mark.unit

CONFIGMAPS = Resource(SimpleNamespace(  # type: ignore[arg-type]
    group="", resource="configmaps", kind="ConfigMap", namespaced=True, storage_group=None,
    storage_resource=None))
KEY = "/registry/core/configmaps/default/cm"


@pytest_asyncio.fixture
async def storage() -> AsyncIterator[Storage]:
    store = await open_store("sqlite://:memory:", compaction_interval=0)
    cache = WatchCache(store)
    await cache.start()
    try:
        yield Storage(store, cache)
    finally:
        await cache.stop()
        await store.close()


def configmap(**data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm", "namespace": "default"}, "data": data}


async def as_stored(storage: Storage) -> dict[str, Any]:
    kv = await storage.store.get(KEY)
    return decode(kv.value, kv.mod_revision)


async def test_update_compares_against_the_cached_object(storage: Storage) -> None:
    await storage.create(CONFIGMAPS, configmap(a="1"))
    await storage.caught_up()
    seen: dict[str, Any] = {}

    async def fn(private: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
        seen.update(private=private, current=current)
        private["data"]["a"] = "2"
        return private

    await storage.update(CONFIGMAPS, "default", "cm", fn)
    assert seen["current"]["data"] == {"a": "1"}
    assert seen["private"] is not seen["current"]
    assert seen["private"]["data"] is not seen["current"]["data"]


async def test_update_hands_over_the_cached_object_itself(storage: Storage) -> None:
    await storage.create(CONFIGMAPS, configmap(a="1"))
    await storage.caught_up()
    cached = storage.cache.get(KEY)
    seen: list[dict[str, Any]] = []

    async def fn(private: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
        seen.append(current)
        return private | {"data": {"a": "2"}}

    await storage.update(CONFIGMAPS, "default", "cm", fn)
    assert seen == [cached] and seen[0] is cached


async def test_the_cache_holds_the_object_a_create_returned(storage: Storage) -> None:
    created = await storage.create(CONFIGMAPS, configmap(a="1"))
    await storage.caught_up()
    assert storage.cache.get(KEY) is created
    assert storage.cache.get(KEY) == await as_stored(storage)


async def test_the_cache_holds_objects_in_the_key_order_of_decoding(storage: Storage) -> None:
    created = await storage.create(CONFIGMAPS, configmap(a="1"))
    await storage.caught_up()

    async def fn(private: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
        meta = private["metadata"]
        # A client's body puts resourceVersion anywhere; the store drops it.
        private["metadata"] = {"resourceVersion": meta.pop("resourceVersion"), **meta}
        private["data"] = {"a": "2"}
        return private

    new, _ = await storage.update(CONFIGMAPS, "default", "cm", fn)
    await storage.caught_up()
    cached = storage.cache.get(KEY)
    stored = await as_stored(storage)
    assert list(cached["metadata"]) == list(stored["metadata"])
    assert cached == stored == new
    assert int(cached["metadata"]["resourceVersion"]) > \
        int(created["metadata"]["resourceVersion"])


async def test_a_write_by_another_apiserver_at_an_adopted_revision_is_decoded(
        storage: Storage) -> None:
    cache = storage.cache
    mine = configmap(a="mine")
    mine["metadata"]["resourceVersion"] = str(cache.revision + 1)
    cache.adopt(KeyValue(KEY, b"{}", cache.revision + 1, cache.revision + 1, 1), mine)
    theirs = configmap(a="theirs")
    await storage.store.create(KEY, b'{"kind":"ConfigMap","metadata":{"name":"cm"},'
                                    b'"data":{"a":"theirs"}}')
    await storage.caught_up()
    assert cache.get(KEY) == await as_stored(storage)
    assert cache.get(KEY)["data"] == theirs["data"]


async def test_an_adoption_after_the_event_is_dropped(storage: Storage) -> None:
    created = await storage.create(CONFIGMAPS, configmap(a="1"))
    await storage.caught_up()
    kv = await storage.store.get(KEY)
    storage.cache.adopt(kv, configmap(a="late") | {"metadata": {"resourceVersion": "1"}})
    assert storage.cache.get(KEY) is created
    assert not storage.cache._adopted


async def test_stored_decodes_a_revision_the_cache_does_not_hold(storage: Storage) -> None:
    await storage.create(CONFIGMAPS, configmap(a="1"))
    await storage.caught_up()
    newer = KeyValue(KEY, b'{"metadata":{"name":"cm"},"data":{"a":"9"}}', 1,
                     storage.cache.revision + 5, 2)
    obj = storage.cache.stored(newer)
    assert obj is not storage.cache.get(KEY)
    assert obj == decode(newer.value, newer.mod_revision)


async def behind_the_cache(storage: Storage, **data: str) -> None:
    """Write the object straight to the store; the cache has not seen it yet."""
    kv = await storage.store.get(KEY)
    body = decode(kv.value, kv.mod_revision)
    body["metadata"].pop("resourceVersion")
    body["data"] = data
    await storage.store.update(KEY, encode(body), kv.mod_revision)


async def test_an_update_from_a_stale_cached_copy_is_redone_on_the_store_s_state(
        storage: Storage) -> None:
    await storage.create(CONFIGMAPS, configmap(a="1"))
    await storage.caught_up()
    await behind_the_cache(storage, a="2")
    seen: list[str] = []

    async def fn(private: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
        seen.append(private["data"]["a"])
        private["data"]["b"] = "x"
        return private

    new, old = await storage.update(CONFIGMAPS, "default", "cm", fn)
    assert seen == ["1", "2"]
    assert old["data"] == {"a": "2"} and new["data"] == {"a": "2", "b": "x"}
    assert (await as_stored(storage))["data"] == {"a": "2", "b": "x"}


async def test_a_refusal_on_a_stale_cached_copy_is_decided_again(storage: Storage) -> None:
    await storage.create(CONFIGMAPS, configmap(a="1"))
    await storage.caught_up()
    await behind_the_cache(storage, a="2")

    async def fn(private: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
        if private["data"]["a"] != "2":  # as a client's pinned resourceVersion would
            raise StatusError(409, "Conflict", "stale")
        private["data"]["a"] = "3"
        return private

    new, _ = await storage.update(CONFIGMAPS, "default", "cm", fn, retry=False)
    assert new["data"] == {"a": "3"}


async def test_nothing_to_change_on_a_stale_cached_copy_is_decided_again(
        storage: Storage) -> None:
    await storage.create(CONFIGMAPS, configmap(a="1"))
    await storage.caught_up()
    await behind_the_cache(storage, a="2")

    async def fn(private: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
        if private["data"]["a"] == "1":
            raise Unchanged()
        private["data"]["a"] = "1"
        return private

    new, old = await storage.update(CONFIGMAPS, "default", "cm", fn)
    assert old["data"] == {"a": "2"} and new["data"] == {"a": "1"}


async def test_a_refusal_on_a_current_cached_copy_costs_no_second_try(
        storage: Storage) -> None:
    await storage.create(CONFIGMAPS, configmap(a="1"))
    await storage.caught_up()
    tries: list[int] = []

    async def fn(private: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
        tries.append(1)
        raise StatusError(422, "Invalid", "no")

    with pytest.raises(StatusError):
        await storage.update(CONFIGMAPS, "default", "cm", fn)
    assert tries == [1]
