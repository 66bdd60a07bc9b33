"""Objects in the store: encoding, keys and the compare-and-swap loop.

Objects are stored as compact JSON in their storage version without
`metadata.resourceVersion` (the store's mod_revision is the resourceVersion, as in
etcd). Reads go through the watch cache after it has caught up with the store's
current revision (a consistent read, as upstream's consistent reads from cache), so a
client always reads its own writes and those of other apiservers on the same store.

What `create` and `update` return is also what the watch cache holds (a write's object
is not decoded again from the store's event): callers must not modify it.

An object larger than the store takes (etcd's request limit, 1.5 MiB by default, which
every backend keeps) is written again without its managedFields, which can be large, as
kube-apiserver's create and update handlers do; still too large, the write fails with a
500 whose message is etcd's ("etcdserver: request is too large"), as kube-apiserver
passes etcd's through, whatever the backend.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from draemu.api import jsonfast
from draemu.api.errors import StatusError, already_exists, conflict, not_found_error
from draemu.api.types import Obj
from draemu.apiserver.registry.resources import Resource
from draemu.apiserver.storage.watchcache import WatchCache, decode
from draemu.store.errors import (
    ConflictError,
    KeyExistsError,
    KeyNotFoundError,
    ValueTooLargeError,
)
from draemu.store.model import KeyValue

TOO_LARGE = "etcdserver: request is too large"
MODIFIED = "the object has been modified; please apply your changes to the latest version " \
           "and try again"


def encode(obj: Obj) -> bytes:
    meta = obj.get("metadata") or {}
    if "resourceVersion" in meta:
        obj = dict(obj)
        obj["metadata"] = {k: v for k, v in meta.items() if k != "resourceVersion"}
    return jsonfast.dumps_kept(obj)  # the store keeps it


async def _put(write: Callable[[bytes], Awaitable[KeyValue]], obj: Obj) -> tuple[KeyValue, Obj]:
    """Write `obj` (see the module's docstring for one too large); returns what was
    written."""
    try:
        return await write(encode(obj)), obj
    except ValueTooLargeError as error:
        meta = obj.get("metadata") or {}
        if not meta.get("managedFields"):
            raise StatusError(500, "", TOO_LARGE) from error
    slim = {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    try:
        return await write(encode(slim)), slim
    except ValueTooLargeError as error:
        raise StatusError(500, "", TOO_LARGE) from error


class Unchanged(Exception):
    """Raised by an update function that has nothing to write."""


# fn(private, current): `private` is the caller's to change and return; `current` is the
# same stored state, for comparisons, and must not be modified.
UpdateFn = Callable[[Obj, Obj], Awaitable[Obj]]


class Storage:
    def __init__(self, store: Any, cache: WatchCache) -> None:
        self.store = store
        self.cache = cache

    async def caught_up(self, revision: int | None = None) -> None:
        """Wait until the cache reflects `revision` (default: the store's current one)."""
        wanted = await self.store.current_revision() if revision is None else revision
        if not await self.cache.wait_for(wanted, timeout=5.0):
            raise StatusError(504, "Timeout",
                              f"Timeout: Too large resource version: {wanted}, current: "
                              f"{self.cache.revision}",
                              {"causes": [{"reason": "ResourceVersionTooLarge",
                                           "message": "Too large resource version"}],
                               "retryAfterSeconds": 1})

    async def get(self, resource: Resource, namespace: str, name: str) -> Obj | None:
        await self.caught_up()
        return self.cache.get(resource.key(namespace, name))

    async def get_latest(self, resource: Resource, namespace: str, name: str) -> Obj | None:
        """The object as the store has it now (for writes, which must not act on a
        stale copy)."""
        kv = await self.store.get(resource.key(namespace, name))
        return decode(kv.value, kv.mod_revision) if kv is not None else None

    async def create(self, resource: Resource, obj: Obj) -> Obj:
        meta = obj["metadata"]
        key = resource.key(meta.get("namespace", ""), meta["name"])
        try:
            kv, obj = await _put(lambda data: self.store.create(key, data), obj)
        except KeyExistsError:
            raise already_exists(resource.name, resource.group, meta["name"]) from None
        return self._stored(kv, obj)

    async def update(self, resource: Resource, namespace: str, name: str, fn: UpdateFn,
                     *, retry: bool = True, private: bool = True) -> tuple[Obj, Obj]:
        """Read, change with `fn` (see UpdateFn), compare-and-swap; retried on
        conflicts when `retry` (callers pass False when the client pinned a
        resourceVersion). Returns (new, old); new is old when `fn` raised Unchanged. Both
        are shared with the watch cache. `private=False`: `fn` makes its object
        without changing the stored one (a PUT's body), and gets the shared object
        twice instead of a copy it would not use.

        The first try starts from the watch cache's object, as upstream's GuaranteedUpdate
        starts from the cacher's: it spares a read of the store per write (a round trip
        on PostgreSQL), and the compare-and-swap catches a stale copy. What `fn` decided
        on a copy that turns out stale (an error, nothing to change, a conflict) is
        decided again on the store's latest state; `fn` may so run twice."""
        key = resource.key(namespace, name)
        guess = self.cache.get(key)
        while True:
            if guess is not None:
                old, guess, current = guess, None, False
                revision = int(old["metadata"]["resourceVersion"])
                # Encoding and decoding is the cheapest private copy (orjson is C).
                copy = jsonfast.loads(jsonfast.dumps(old)) if private else old
            else:
                kv = await self.store.get(key)
                if kv is None:
                    raise not_found_error(resource.name, resource.group, name)
                old, revision, current = self.cache.stored(kv), kv.mod_revision, True
                copy = decode(kv.value, kv.mod_revision) if private else old
            try:
                new = await fn(copy, old)
            except Exception as error:  # Unchanged and every refusal
                if not current and not await self._is_current(key, revision):
                    continue
                if isinstance(error, Unchanged):
                    return old, old
                raise
            async def write(data: bytes, at: int = revision) -> KeyValue:
                return (await self.store.update(key, data, at))[0]

            try:
                new_kv, new = await _put(write, new)
            except ConflictError:
                if retry or not current:
                    continue
                raise conflict(resource.name, resource.group, name, MODIFIED) from None
            except KeyNotFoundError:
                if not current:
                    continue
                raise not_found_error(resource.name, resource.group, name) from None
            return self._stored(new_kv, new), old

    async def _is_current(self, key: str, revision: int) -> bool:
        kv = await self.store.get(key)
        return kv is not None and kv.mod_revision == revision

    def _stored(self, kv: KeyValue, obj: Obj) -> Obj:
        """`obj`, just written as `kv`, with its resourceVersion; the watch cache takes it
        as it is."""
        self.cache.adopt(kv, with_rv(obj, kv.mod_revision))
        return obj

    async def delete(self, resource: Resource, namespace: str, name: str,
                     expected_revision: int) -> Obj:
        """Remove the object if it is still at `expected_revision`; returns the last
        state with the delete's revision."""
        key = resource.key(namespace, name)
        try:
            revision, prev = await self.store.delete(key, expected_mod_revision=expected_revision)
        except ConflictError:
            raise conflict(resource.name, resource.group, name, MODIFIED) from None
        except KeyNotFoundError:
            raise not_found_error(resource.name, resource.group, name) from None
        return decode(prev.value, revision)


def with_rv(obj: Obj, revision: int) -> Obj:
    obj["metadata"]["resourceVersion"] = str(revision)
    return obj

