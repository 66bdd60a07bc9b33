"""The watch cache: every stored object and recent change, in memory, fed by one store
watch, as kube-apiserver's cacher does.

Lists and gets are served from here once the cache has caught up with the revision a
request needs; watches replay the recent history and then receive live changes.
Objects in the cache are decoded storage-version dicts with `metadata.resourceVersion`
set; they are shared, so nobody may modify them. Those loaded at start-up are kept as
the store's key-values and decoded on first read (see _Bucket): start-up reads the store
but decodes nothing.
"""

from __future__ import annotations

import asyncio
import bisect
import gc
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

from draemu.api import jsonfast
from draemu.api.types import Obj
from draemu.apiserver.wire.codec import dumps
from draemu.log import get_logger
from draemu.store.errors import CompactedError, StoreClosedError, WatchTooSlowError
from draemu.store.model import KeyValue
from draemu.store.validation import prefix_end

log = get_logger("apiserver.watchcache")

ROOT = "/registry/"
HISTORY = 20_000  # changes kept for watches that resume from a resourceVersion
WATCHER_QUEUE = 2_000  # events a watcher may lag behind before it is dropped
# The latest changes, whose objects stay decoded (see Change): as many as a watcher may
# lag behind, so that a live watch sends decoded objects.
FRESH = WATCHER_QUEUE
EVENT_LINES = 512  # serialized watch event lines kept for the watchers still to send them
# Bytes a directly written watcher's connection may hold unsent before its events go
# through its stream's queue again (which waits for the client, and drops it when full).
DIRECT_BUFFER = 64 * 1024
FIELD_SETS = 4_096  # distinct managedFields field sets shared at most
LOAD_BATCH = 50_000  # key-values read from the store at a time when loading
BULK_DECODE = 1_000  # a read that may decode this many objects pauses the cyclic GC


def decode(value: bytes, revision: int) -> Obj:
    obj = jsonfast.loads(value)
    obj.setdefault("metadata", {})["resourceVersion"] = str(revision)
    return obj


class Change:
    """One change: `obj` is the new object, for a delete the last state with the
    delete's revision; `prev` the object before (None for a creation).

    A change that has fallen out of the last FRESH ones keeps its objects as the store's
    bytes (about a seventh of their decoded size) and decodes them again when a watch
    that resumes from that far back, or lags that far behind, asks for them: the history
    otherwise kept a decoded copy of nearly every superseded version alive."""

    __slots__ = ("type", "key", "revision", "_obj", "_prev", "_value", "_prev_kv")

    def __init__(self, type_: str, key: str, obj: Obj, prev: Obj | None, revision: int,
                 value: bytes | None = None, prev_kv: KeyValue | None = None) -> None:
        self.type = type_  # "put" or "delete"
        self.key = key
        self.revision = revision
        self._obj: Obj | None = obj
        self._prev = prev
        # What obj and prev decode from, when known: obj is decode(value, revision).
        self._value = value
        self._prev_kv = prev_kv

    @property
    def obj(self) -> Obj:
        obj = self._obj
        if obj is None:
            assert self._value is not None
            return decode(self._value, self.revision)
        return obj

    @property
    def prev(self) -> Obj | None:
        prev = self._prev
        if prev is None and self._prev_kv is not None:
            return decode(self._prev_kv.value, self._prev_kv.mod_revision)
        return prev

    @property
    def has_prev(self) -> bool:
        """Whether there is a `prev` (without decoding it)."""
        return self._prev is not None or self._prev_kv is not None

    def freeze(self) -> None:
        """Drop the decoded objects that can be decoded again."""
        if self._value is not None:
            self._obj = None
        if self._prev_kv is not None:
            self._prev = None

    def __repr__(self) -> str:
        return f"Change({self.type!r}, {self.key!r}, revision={self.revision})"


def _source(obj: Obj | None, kv: KeyValue | None) -> KeyValue | None:
    """`kv` when decoding its bytes gives `obj` (the cache holds it at that revision)."""
    if obj is None or kv is None or not kv.value:
        return None
    rv = (obj.get("metadata") or {}).get("resourceVersion")
    return kv if rv == str(kv.mod_revision) else None


class TooOld(Exception):
    """A watch asked for history the cache no longer has."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


def event_type(change: Change, matches: Callable[[Obj], bool] | None) -> str | None:
    """The watch event a change is for a watcher: objects entering or leaving its
    selection arrive as ADDED or DELETED. `matches` is None when it selects everything."""
    if matches is None:
        if change.type == "delete":
            return "DELETED"
        return "MODIFIED" if change.has_prev else "ADDED"
    new_match = matches(change.obj)
    if change.type == "delete":
        return "DELETED" if new_match else None
    old_match = change.has_prev and matches(change.prev)
    if new_match:
        return "MODIFIED" if old_match else "ADDED"
    return "DELETED" if old_match else None


class Direct:
    """How the cache writes a watcher's events itself, straight to its connection as
    chunks of the HTTP/1.1 chunked body (each event's chunk framed once and the same
    bytes for every watcher), instead of waking the watcher's stream for each: set by
    the stream while it has nothing queued or unsent. The events of one turn of the
    event loop go out in one write per connection (see WatchCache._flush_direct)."""

    __slots__ = ("transport", "matches", "pending", "changes")

    def __init__(self, transport: Any, matches: Callable[[Obj], bool] | None) -> None:
        self.transport = transport
        self.matches = matches
        self.pending: list[bytes] = []  # chunks not written yet
        self.changes: list[Change] = []  # their changes, in case they go queued instead


@dataclass(eq=False)
class Watcher:
    prefix: str
    queue: asyncio.Queue[Change | None]
    dropped: bool = False
    # Called when the watcher is dropped for falling behind: its stream may be stuck
    # writing to a client that does not read, and would never see the end otherwise.
    on_too_slow: Callable[[], None] | None = None
    # Set while the cache writes this watcher's events itself (see Direct).
    direct: Direct | None = None


class _Bucket:
    """The objects under one resource prefix, with their keys kept sorted for lists.

    An object loaded from the store at start-up stays the store's key-value (its bytes)
    until something reads it: `get` and `items` decode it then, once. So the cache is
    ready without decoding tens of thousands of objects nobody may ask for (the bytes are
    the object at that revision: reading them later gives what decoding them at load
    would have)."""

    __slots__ = ("_sorted", "objects", "version", "_share", "undecoded")

    def __init__(self, share: Callable[[Obj], Obj]) -> None:
        # A decoded object, or the store's key-value of one not decoded yet.
        self.objects: dict[str, Obj | KeyValue] = {}
        self._sorted: list[str] | None = None
        # Counts changes, so that readers may keep what they derived from the objects.
        self.version = 0
        self._share = share
        self.undecoded = 0  # entries still key-values

    def load(self, keys: list[str], items: list[KeyValue]) -> None:
        """Key-values read at start-up, in key order (kept undecoded until first read)."""
        if self._sorted is None:
            self._sorted = []
        self.version += 1
        self.objects.update(zip(keys, items, strict=True))
        self._sorted.extend(keys)
        self.undecoded += len(keys)

    def put(self, key: str, obj: Obj) -> None:
        self.version += 1
        old = self.objects.get(key)
        if old is None and self._sorted is not None:
            bisect.insort(self._sorted, key)
        elif type(old) is KeyValue:
            self.undecoded -= 1
        self.objects[key] = obj

    def get(self, key: str) -> Obj | None:
        obj = self.objects.get(key)
        if type(obj) is KeyValue:
            return self._decode(key, obj)
        return obj  # type: ignore[return-value]

    def raw(self, key: str) -> Obj | KeyValue | None:
        """The entry as held: a decoded object or a key-value not decoded yet."""
        return self.objects.get(key)

    def _decode(self, key: str, kv: KeyValue) -> Obj:
        obj = self._share(decode(kv.value, kv.mod_revision))
        self.objects[key] = obj
        self.undecoded -= 1
        return obj

    def delete(self, key: str) -> None:
        self.version += 1
        old = self.objects.pop(key, None)
        if type(old) is KeyValue:
            self.undecoded -= 1
        if old is not None and self._sorted is not None:
            i = bisect.bisect_left(self._sorted, key)
            if i < len(self._sorted) and self._sorted[i] == key:
                del self._sorted[i]

    def keys(self) -> list[str]:
        if self._sorted is None:
            self._sorted = sorted(self.objects)
        return self._sorted

    def items(self, keys: list[str]) -> list[tuple[str, Obj]]:
        """(key, decoded object) of `keys`, which must be held."""
        objects = self.objects
        out = []
        for key in keys:
            obj = objects[key]
            if type(obj) is KeyValue:
                obj = self._decode(key, obj)
            out.append((key, obj))
        return out  # type: ignore[return-value]


def bucket_of(key: str) -> str:
    """`/registry/<group>/<resource>/` of a key."""
    parts = key.split("/", 4)
    return "/".join(parts[:4]) + "/"


class WatchCache:
    """`history`: changes kept for watches that resume from a resourceVersion;
    `watcher_queue`: events a watcher may lag behind before it is dropped."""

    def __init__(self, store: Any, *, history: int = HISTORY,
                 watcher_queue: int = WATCHER_QUEUE) -> None:
        self.store = store
        self.watcher_queue = watcher_queue
        self.revision = 0
        self.oldest = 0  # history is complete for changes after this revision
        self._buckets: dict[str, _Bucket] = {}
        self._history: deque[Change] = deque(maxlen=history)
        self._watchers: dict[str, set[Watcher]] = {}
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._encoded: dict[str, tuple[str, bytes]] = {}
        self._lines: OrderedDict[tuple[int, str, str], bytes] = OrderedDict()
        # Directly written watchers with chunks to write at the end of this loop turn.
        self._flushing: list[Watcher] = []
        # Objects this apiserver's writes just stored, by revision, until their event comes.
        self._adopted: dict[int, tuple[KeyValue, Obj]] = {}
        self._task: asyncio.Task[None] | None = None
        # managedFields field sets by their JSON, shared by the cached objects that have
        # them (see _share_fields).
        self._field_sets: dict[bytes, Obj] = {}
        # prefix -> callbacks run synchronously on each change under it, and with None
        # after a reload (everything may have changed): how the apiserver follows the
        # objects that change what it serves (CustomResourceDefinitions).
        self._listeners: list[tuple[str, Any]] = []
        # Called after a read decoded many loaded objects (see _decoding).
        self.decoded_in_bulk: Callable[[], None] | None = None

    # Lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        await self._load()
        self._task = asyncio.create_task(self._run(), name="watchcache")

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self.end_watches()

    def end_watches(self) -> None:
        """End every watch stream (shutdown): clients reconnect elsewhere or later."""
        for watchers in list(self._watchers.values()):
            for w in list(watchers):  # _end unregisters the watcher
                self._end(w)

    async def _load(self) -> None:
        """Every object at the store's current revision, kept as the store's key-values
        (decoded on first read, see _Bucket)."""
        revision = await self.store.current_revision()
        buckets: dict[str, _Bucket] = {}
        start_after = None
        while True:
            result = await self.store.range(ROOT, start_after=start_after, limit=LOAD_BATCH,
                                            revision=revision)
            items = result.items
            keys = [kv.key for kv in items]
            i, n = 0, len(keys)
            while i < n:  # keys come sorted: a bucket's are one run of them
                prefix = bucket_of(keys[i])
                # (max: a key shorter than its bucket's prefix is its bucket's alone)
                j = max(i + 1, bisect.bisect_left(keys, prefix_end(prefix), i))
                bucket = buckets.get(prefix)
                if bucket is None:
                    bucket = buckets[prefix] = self._new_bucket()
                bucket.load(keys[i:j], items[i:j])
                i = j
            if not result.more or not items:
                break
            start_after = items[-1].key
        self._buckets = buckets
        self._encoded.clear()
        self._adopted.clear()
        self._history.clear()
        self.revision = self.oldest = revision

    async def _run(self) -> None:
        reload = False
        while True:
            try:
                if reload:
                    await self._reload()
                    reload = False
                stream = self.store.watch(ROOT, self.revision)
                try:
                    async for event in stream:
                        self._apply(event)
                finally:
                    await stream.aclose()
            except asyncio.CancelledError:
                raise
            except StoreClosedError:
                return
            except (WatchTooSlowError, CompactedError) as e:
                # We fell behind the store: reload and make every watcher re-list,
                # since the changes in between are lost to us.
                log.warning("watch cache lost the store's watch; reloading", error=str(e))
                reload = True
            except Exception as e:  # keep serving; the store may recover
                log.error("watch cache watch failed; reloading", error=repr(e))
                await asyncio.sleep(0.5)
                reload = True

    async def _reload(self) -> None:
        await self._load()
        for watchers in list(self._watchers.values()):
            for w in list(watchers):
                self._end(w)
        for _prefix, listener in self._listeners:
            self._notify(listener, None)
        self._advance(self.revision)

    def end_watches_under(self, prefix: str) -> None:
        """End the watch streams of one resource (its kind stopped being served)."""
        for w in list(self._watchers.get(bucket_of(prefix), ())):
            if w.prefix.startswith(prefix):
                self._end(w)

    def listen(self, prefix: str, listener: Any) -> None:
        """Call `listener(change)` for every change under `prefix` once the cache holds
        it, and `listener(None)` after a reload."""
        self._listeners.append((prefix, listener))

    @staticmethod
    def _notify(listener: Any, change: Change | None) -> None:
        try:
            listener(change)
        except Exception:  # a listener must never stop the cache
            log.exception("watch cache listener failed")

    def _new_bucket(self) -> _Bucket:
        return _Bucket(self._share_fields)

    def _bucket(self, key: str) -> _Bucket:
        prefix = bucket_of(key)
        bucket = self._buckets.get(prefix)
        if bucket is None:
            bucket = self._buckets[prefix] = self._new_bucket()
        return bucket

    # Changes ------------------------------------------------------------------------------
    def _apply(self, event: Any) -> None:
        key = event.kv.key
        bucket = self._bucket(key)
        held = bucket.raw(key)
        if type(held) is KeyValue:
            # Not decoded yet: the change keeps its bytes as its previous object.
            prev, prev_kv = None, held
        else:
            prev = held  # type: ignore[assignment]
            prev_kv = _source(prev, event.prev_kv)
        if event.type == "put":
            obj = self._take_adopted(event.kv) or decode(event.kv.value, event.kv.mod_revision)
            bucket.put(key, self._share_fields(obj))
            self._encoded.pop(key, None)  # the older revision's
            change = Change("put", key, obj, prev, event.revision, event.kv.value
                            if event.kv.mod_revision == event.revision else None, prev_kv)
        else:
            last = prev
            if last is None and prev_kv is not None:
                last = decode(prev_kv.value, prev_kv.mod_revision)
            elif last is None and event.prev_kv is not None:
                last = decode(event.prev_kv.value, event.prev_kv.mod_revision)
                prev_kv = event.prev_kv
            if last is None:
                self._advance(event.revision)
                return
            gone = dict(last)
            gone["metadata"] = dict(last.get("metadata") or {})
            gone["metadata"]["resourceVersion"] = str(event.revision)
            bucket.delete(key)
            self._encoded.pop(key, None)
            change = Change("delete", key, gone, last, event.revision,
                            prev_kv.value if prev_kv is not None else None, prev_kv)
        history = self._history
        history.append(change)
        if len(history) > FRESH:
            history[-FRESH - 1].freeze()
        if len(history) == history.maxlen:
            self.oldest = history[0].revision - 1
        self._dispatch(change)
        for prefix, listener in self._listeners:
            if key.startswith(prefix):
                self._notify(listener, change)
        self._advance(event.revision)

    def _share_fields(self, obj: Obj) -> Obj:
        """Make the managedFields' field sets of `obj` the very objects of an equal set
        another cached object has: they are a third of a pod's or a claim's decoded size
        and mostly the same for every object of a kind (cached objects are never
        modified, so they may share parts)."""
        entries = (obj.get("metadata") or {}).get("managedFields")
        if type(entries) is not list:
            return obj
        known = self._field_sets
        for entry in entries:
            if type(entry) is not dict:
                continue
            fields = entry.get("fieldsV1")
            if type(fields) is not dict:
                continue
            try:
                text = jsonfast.dumps(fields)
            except (TypeError, ValueError):
                continue
            same = known.get(text)
            if same is None:
                if len(known) >= FIELD_SETS:
                    known.clear()
                known[text] = fields
            elif same is not fields:
                entry["fieldsV1"] = same
        return obj

    def _take_adopted(self, kv: KeyValue) -> Obj | None:
        if not self._adopted:
            return None
        entry = self._adopted.pop(kv.mod_revision, None)
        if entry is None:
            return None
        written, obj = entry
        # Revisions are unique in the store whoever writes (several apiservers may share
        # it); the key and the bytes are compared all the same.
        return obj if written.key == kv.key and written.value == kv.value else None

    def _advance(self, revision: int) -> None:
        self.revision = revision
        if self._waiters:
            waiting = []
            for wanted, future in self._waiters:
                if wanted <= revision:
                    if not future.done():
                        future.set_result(None)
                else:
                    waiting.append((wanted, future))
            self._waiters = waiting

    def _dispatch(self, change: Change) -> None:
        chunks: dict[str, bytes] = {}  # this change's chunk per event type
        for w in tuple(self._watchers.get(bucket_of(change.key), ())):
            if not change.key.startswith(w.prefix):
                continue
            d = w.direct
            if d is not None:
                try:
                    type_ = event_type(change, d.matches)
                except Exception:  # the stream finds out again, and ends
                    self._queue(w, [change])
                    continue
                if type_ is None:
                    continue
                chunk = chunks.get(type_)
                if chunk is None:
                    line = self.event_line(change, type_)
                    chunk = chunks[type_] = b"%x\r\n%b\r\n" % (len(line), line)
                if not d.pending:
                    if not self._flushing:
                        asyncio.get_running_loop().call_soon(self._flush_direct)
                    self._flushing.append(w)
                d.pending.append(chunk)
                d.changes.append(change)
                if len(d.pending) > self.watcher_queue:
                    self._too_slow(w)  # as a full queue: never held back the others
                continue
            try:
                w.queue.put_nowait(change)
            except asyncio.QueueFull:
                self._too_slow(w)

    def _too_slow(self, w: Watcher) -> None:
        # A watcher that cannot keep up is ended (its client re-lists); it must never
        # hold back the others.
        self._end(w)
        if w.on_too_slow is not None:
            w.on_too_slow()

    def _queue(self, w: Watcher, changes: list[Change]) -> None:
        """Stop writing `w` directly: its unwritten changes and `changes` go to its
        queue, for its stream to send."""
        d = w.direct
        w.direct = None
        if d is not None:
            changes = d.changes + changes
            d.pending, d.changes = [], []
        for change in changes:
            try:
                w.queue.put_nowait(change)
            except asyncio.QueueFull:
                self._too_slow(w)
                return

    def _flush_direct(self) -> None:
        flushing, self._flushing = self._flushing, []
        for w in flushing:
            self.flush(w)

    def flush(self, w: Watcher) -> None:
        """Write the chunks of a directly written watcher that wait for the end of this
        loop turn, now: before its stream writes anything itself. A connection that
        holds DIRECT_BUFFER bytes unsent, or is closing, gets them through its queue
        instead (its stream waits for the client there, or ends)."""
        d = w.direct
        if d is None or not d.pending:
            return
        transport = d.transport
        if transport.is_closing() or transport.get_write_buffer_size() > DIRECT_BUFFER:
            self._queue(w, [])
            return
        pending = d.pending
        d.pending, d.changes = [], []
        try:
            transport.write(pending[0] if len(pending) == 1 else b"".join(pending))
        except Exception as e:  # whatever was written of it, the stream is broken
            log.warning("watch: direct write failed", error=repr(e))
            self._too_slow(w)

    # Writes -------------------------------------------------------------------------------
    def adopt(self, kv: KeyValue, obj: Obj) -> None:
        """Take `obj`, which a write just stored as the store's key-value `kv`, for the
        cache when the store's event for it comes, instead of decoding the event's bytes
        again. From now on `obj` is shared: nobody may modify it."""
        if kv.mod_revision <= self.revision:
            return  # the event came first
        meta = obj["metadata"]
        if next(reversed(meta)) != "resourceVersion":
            # Decoding appends resourceVersion (it is not stored): the cache holds objects
            # as decoded, so that what clients read does not depend on who wrote it.
            rv = meta["resourceVersion"]
            obj = {**obj, "metadata": {**{k: v for k, v in meta.items()
                                          if k != "resourceVersion"}, "resourceVersion": rv}}
        self._adopted[kv.mod_revision] = (kv, obj)

    def stored(self, kv: KeyValue) -> Obj:
        """The object of a store key-value: the cached one when the cache holds it at
        that revision (shared: never modify it), else decoded."""
        obj = self.get(kv.key)
        if obj is not None and obj["metadata"]["resourceVersion"] == str(kv.mod_revision):
            return obj
        return decode(kv.value, kv.mod_revision)

    # Reads --------------------------------------------------------------------------------
    async def wait_for(self, revision: int, timeout: float = 3.0) -> bool:
        """Wait until the cache has seen `revision`; False on timeout."""
        if self.revision >= revision:
            return True
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((revision, future))
        try:
            await asyncio.wait_for(future, timeout)
        except TimeoutError:
            return False
        return True

    def bucket_version(self, prefix: str) -> int:
        """How many times the objects under a resource prefix changed (RBAC keeps what it
        resolved from bindings and roles until this moves)."""
        bucket = self._buckets.get(bucket_of(prefix))
        return bucket.version if bucket is not None else 0

    def get(self, key: str) -> Obj | None:
        bucket = self._buckets.get(bucket_of(key))
        return bucket.get(key) if bucket else None

    def list(self, prefix: str, start_after: str | None = None) -> list[tuple[str, Obj]]:
        """Objects under `prefix` in key order (after `start_after`)."""
        bucket = self._buckets.get(bucket_of(prefix))
        if bucket is None:
            return []
        keys = bucket.keys()
        lo = bisect.bisect_left(keys, prefix)
        if start_after is not None and start_after >= prefix:
            lo = bisect.bisect_right(keys, start_after)
        hi = len(keys) if prefix == bucket_of(prefix) else \
            bisect.bisect_left(keys, prefix_end(prefix), lo)
        with self._decoding(bucket, hi - lo):
            return bucket.items(keys[lo:hi])

    @contextmanager
    def _decoding(self, bucket: _Bucket, reading: int) -> Iterator[None]:
        """Around a read of `reading` objects of `bucket`: when that may decode many of
        them, without the cyclic collector (what is decoded stays cached: collections
        in the middle would walk the growing heap again and again, 2-3 s when the
        80,000 ConfigMaps of a restarted server are first listed), and telling
        `decoded_in_bulk` afterwards."""
        if min(bucket.undecoded, reading) < BULK_DECODE:
            yield
            return
        collecting = gc.isenabled()
        gc.disable()
        try:
            yield
        finally:
            if collecting:
                gc.enable()
            if self.decoded_in_bulk is not None:
                self.decoded_in_bulk()

    def list_at(self, prefix: str, revision: int, start_after: str | None,
                matches: Callable[[Obj], bool], limit: int
                ) -> tuple[list[tuple[str, Obj, bool]], int] | None:
        """A page of the objects under `prefix` after `start_after` as they were at
        `revision`, as upstream's watch cache answers a `continue` from its snapshot of
        that revision: the current objects, with the keys changed since `revision` taken
        from their first change after it (its previous object, or absent for a creation).
        Gives the matching (key, object, whether it is the cached current object) in key
        order, at most `limit` (0: all), and how many keys follow the last one at that
        revision (whether matching or not; -1 if `limit` did not cut the list). None when
        the history does not reach back to `revision` or the cache has not seen it."""
        if revision > self.revision or revision < self.oldest:
            return None
        bucket = self._buckets.get(bucket_of(prefix))
        keys = bucket.keys() if bucket is not None else []
        lo = bisect.bisect_left(keys, prefix)
        if start_after is not None and start_after >= prefix:
            lo = bisect.bisect_right(keys, start_after, lo)
        hi = bisect.bisect_left(keys, prefix_end(prefix), lo)
        reading = min(hi - lo, limit) if limit else hi - lo
        with self._decoding(bucket, reading) if bucket is not None else nullcontext():
            return self._page(bucket, keys, lo, hi, prefix, revision, start_after,
                              matches, limit)

    def _page(self, bucket: _Bucket | None, keys: list[str], lo: int, hi: int, prefix: str,
              revision: int, start_after: str | None, matches: Callable[[Obj], bool],
              limit: int) -> tuple[list[tuple[str, Obj, bool]], int]:
        first: dict[str, Change] = {}
        for change in reversed(self._history):  # newest first: the earliest change wins
            if change.revision <= revision:
                break
            key = change.key
            if key.startswith(prefix) and (start_after is None or key > start_after):
                first[key] = change
        changed = sorted(first)
        then = {key: first[key].prev for key in changed}
        out: list[tuple[str, Obj, bool]] = []
        i, j = lo, 0
        while i < hi or j < len(changed):
            if j < len(changed) and (i >= hi or changed[j] <= keys[i]):
                key = changed[j]
                if i < hi and keys[i] == key:
                    i += 1
                j += 1
                obj = then[key]
                current = False
                if obj is None:
                    continue
            else:
                key = keys[i]
                i += 1
                obj = bucket.get(key)  # type: ignore[union-attr]
                current = True
                assert obj is not None
            if not matches(obj):
                continue
            if limit and len(out) == limit:
                # This key and every one after it at `revision`.
                later = changed[j:]
                present = sum(1 for k in later if k in bucket.objects)  # type: ignore[union-attr]
                existed = sum(1 for k in later if then[k] is not None)
                return out, 1 + (hi - i) - present + existed
            out.append((key, obj, current))
        return out, -1

    def encoded(self, key: str, obj: Obj) -> bytes:
        """The JSON of a cached object, serialized once per revision (lists and gets
        in the storage version reuse it)."""
        rv = obj["metadata"]["resourceVersion"]
        hit = self._encoded.get(key)
        if hit is not None and hit[0] == rv:
            return hit[1]
        data = bytes(memoryview(dumps(obj)))  # kept: trimmed (see jsonfast.dumps_kept)
        self._encoded[key] = (rv, data)
        return data

    def event_line(self, change: Change, type_: str) -> bytes:
        """A watch event line in the storage version, serialized once for all the
        watchers it goes to (the last few hundred are kept)."""
        memo = (change.revision, change.key, type_)
        line = self._lines.get(memo)
        if line is None:
            line = dumps({"type": type_, "object": change.obj}) + b"\n"
            self._lines[memo] = line
            if len(self._lines) > EVENT_LINES:
                self._lines.popitem(last=False)
        return line

    # Watches ------------------------------------------------------------------------------
    def watch(self, prefix: str, after: int) -> Watcher:
        """A watcher for changes under `prefix` after revision `after` (history is
        replayed into its queue first). Raises TooOld when the history is gone."""
        if after < self.oldest:
            raise TooOld(after, self.oldest + 1)
        w = Watcher(prefix, asyncio.Queue(self.watcher_queue))
        if after < self.revision:
            for change in self._history:
                if change.revision > after and change.key.startswith(prefix):
                    try:
                        w.queue.put_nowait(change)
                    except asyncio.QueueFull:
                        raise TooOld(after, self.oldest + 1) from None
        self._watchers.setdefault(bucket_of(prefix), set()).add(w)
        return w

    def write_directly(self, w: Watcher, transport: Any,
                       matches: Callable[[Obj], bool] | None) -> bool:
        """Have the cache write `w`'s events in the storage version straight to
        `transport` (see Direct), which the caller's stream writes the chunked body of
        and has nothing queued or unsent for; `matches` as for event_type. False (and
        nothing changes) while the transport holds more than DIRECT_BUFFER bytes unsent."""
        if w.dropped or transport.is_closing() or \
                transport.get_write_buffer_size() > DIRECT_BUFFER:
            return False
        if w.direct is None:
            w.direct = Direct(transport, matches)
        return True

    def unwatch(self, w: Watcher) -> None:
        w.direct = None  # what it has not written is the end's to drop
        watchers = self._watchers.get(bucket_of(w.prefix))
        if watchers is not None:
            watchers.discard(w)

    def _end(self, w: Watcher) -> None:
        w.dropped = True
        self.unwatch(w)  # unwritten direct chunks too: the client resumes or re-lists
        while True:
            try:
                w.queue.get_nowait()
            except asyncio.QueueEmpty:
                break
        w.queue.put_nowait(None)

    @property
    def watcher_count(self) -> int:
        return sum(len(ws) for ws in self._watchers.values())

    def object_counts(self) -> dict[str, int]:
        return {prefix: len(b.objects) for prefix, b in self._buckets.items()}

