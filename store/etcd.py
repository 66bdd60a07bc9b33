"""The etcd backend: the store in an etcd cluster, as kube-apiserver keeps its objects.

Keys are the store's keys (/registry/pods/NAMESPACE/NAME) after the URL's path, which
is empty by default: then they are kube-apiserver's own keys (its --etcd-prefix is
/registry). Revisions are etcd's: a key's mod_revision is its object's resourceVersion,
and several draemu apiservers on one cluster share them.

Every write is one etcd transaction, compare-and-swap in etcd itself: a create compares
the key's create_revision with 0 (absent), an update or a delete its version with 0
(present) and its mod_revision with the expected one; the failure branch reads the key,
so a refused write learns why in the same round trip. etcd answers once a quorum of
members has the write in its log, fsynced: an acknowledged write survives the loss of any
minority of members and of this process.

Each process watches the whole prefix once, from the revision it opened at, with prev_kv,
and fans the events out to its watchers (store/watch.py). A broken watch stream (a member
gone, or left without a leader) is opened again through the next endpoint from the last
revision published, so watchers see every revision once, in order. A watch from an older
revision reads that history through an etcd watch of its own, to the revision the
process had published when it began, which a progress notification confirms complete.

Revisions are the cluster's, so keys other than the store's (another prefix's) take
some: the store's current revision is then its own newest, once its watch has confirmed
(a progress notification) that no event of its keys up to etcd's revision is missing, so
that a read waiting for its watch cache to reach the current revision does not wait for
revisions that never come to it (kube-apiserver's cacher asks etcd for progress too).

Compaction is etcd's Compact, to the revision seen one interval earlier (as
kube-apiserver's compactor does); the watch waits until it has published that revision,
so that this process's watchers lose nothing. Reads and watches below the compacted
revision fail with CompactedError, whichever process compacted.

Values larger than etcd accepts (1.5 MiB by default, --max-request-bytes) are refused
with etcd's message, "etcdserver: request is too large", as kube-apiserver reports it.
The etcd server decides (its --max-request-bytes may differ from the default): unless
told a `max_value_bytes` of its own, this backend sends a value of any size and etcd
refuses what it will not take.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from draemu.log import get_logger
from draemu.store.base import Precondition, Store
from draemu.store.errors import CompactedError, FutureRevisionError, StoreError
from draemu.store.etcdrpc import (
    CREATE,
    DELETE,
    EQUAL,
    GREATER,
    MOD,
    VERSION,
    EtcdCallError,
    EtcdClient,
    EtcdConfig,
    WatchStream,
    parse_url,
    pb,
)
from draemu.store.model import Event, KeyValue, RangeResult

log = get_logger("store")

OPEN_TIMEOUT = 10.0  # seconds to reach the cluster when opening
CLOSE_TIMEOUT = 10.0
OBSERVE_TIMEOUT = 3.0  # seconds to wait for the watch to confirm a revision (see above)
PROGRESS_INTERVAL = 0.05  # seconds between progress requests while waiting for one
HISTORY_TIMEOUT = 60.0  # seconds a history read may take
RESUME_PAUSE = (0.05, 2.0)  # first and longest pause before watching again after a failure

_COMPACTED = "etcdserver: mvcc: required revision has been compacted"
_FUTURE = "etcdserver: mvcc: required revision is a future revision"


def _end_of(key: bytes) -> bytes:
    """The range end of every key starting with `key` (etcd's prefix rule)."""
    stripped = key.rstrip(b"\xff")
    if not stripped:
        return b"\x00"  # every key
    return stripped[:-1] + bytes([stripped[-1] + 1])


# Without a limit of the caller's, values up to this size go to etcd, which answers for
# them (see the module's docstring).
UNCHECKED_VALUE_BYTES = 64 * 1024 * 1024


class EtcdStore(Store):
    def __init__(self, client: EtcdClient, config: EtcdConfig, revision: int,
                 compacted: int, *, max_value_bytes: int | None, compaction_interval: float,
                 watch_queue_limit: int) -> None:
        super().__init__(revision=revision, compacted_revision=compacted,
                         max_value_bytes=max_value_bytes or UNCHECKED_VALUE_BYTES,
                         compaction_interval=compaction_interval,
                         watch_queue_limit=watch_queue_limit)
        self._client = client
        self._prefix = config.prefix.encode()
        # Every key of the store: the prefix's keys, all of which start with "/".
        self._all = self._prefix + b"/"
        self._feeder: asyncio.Task[None] | None = None
        self._feed: WatchStream | None = None
        # Set whenever the feeder publishes (events or progress).
        self._published = asyncio.Event()
        # The revision of the last event published, or the opening revision: the newest
        # this process's watchers can be sure to reach (see _current_revision).
        self._observed = revision

    async def start(self) -> None:
        """Learn the compacted revision and start watching the store's keys for this
        process's watchers."""
        await self._learn_compacted()
        self._feeder = asyncio.get_running_loop().create_task(self._feed_forever())

    # -- keys --------------------------------------------------------------------------

    def _key(self, key: str) -> bytes:
        return self._prefix + key.encode()

    def _kv(self, kv: Any) -> KeyValue:
        key = kv.key[len(self._prefix):].decode("utf-8", "surrogateescape")
        return KeyValue(key, kv.value, kv.create_revision, kv.mod_revision, kv.version)

    def _event(self, event: Any) -> Event:
        kv = event.kv
        prev = self._kv(event.prev_kv) if event.HasField("prev_kv") else None
        if event.type == DELETE:
            key = kv.key[len(self._prefix):].decode("utf-8", "surrogateescape")
            return Event("delete", KeyValue(key, b"", 0, kv.mod_revision, 0), prev,
                         kv.mod_revision)
        return Event("put", self._kv(kv), prev, kv.mod_revision)

    # -- reads -------------------------------------------------------------------------

    async def _check_readable(self, revision: int) -> None:
        # etcd checks the revision itself (see _read); only what this process knows here.
        if revision < self._compacted:
            raise CompactedError(revision, self._compacted)

    async def _read(self, request: Any, what: str) -> Any:
        try:
            return await self._client.range(request, what)
        except EtcdCallError as error:
            raise await self._revision_error(error, request.revision) from None

    async def _revision_error(self, error: EtcdCallError, revision: int) -> StoreError:
        if error.details == _COMPACTED:
            await self._learn_compacted()
            return CompactedError(revision, max(self._compacted, revision + 1))
        if error.details == _FUTURE:
            return FutureRevisionError(revision, await self._current_revision())
        return error

    async def _current_revision(self) -> int:
        """The newest revision of the store's keys: etcd's, unless other keys (another
        prefix's, another program's) were written last; then the newest of the store's
        own that the feeding watch confirms it has published up to etcd's (a reader
        waiting for the revision this returns must see it come through the watch)."""
        latest = await self._etcd_revision()
        if latest <= self._observed:
            return latest
        await self._wait_published(latest, OBSERVE_TIMEOUT)
        return self._observed if self._hub.revision >= latest else latest

    async def _etcd_revision(self) -> int:
        response = await self._client.range(pb.RangeRequest(key=self._all, keys_only=True),
                                            "reading the revision")
        return response.header.revision

    async def _get_current(self, key: str) -> KeyValue | None:
        return await self._get_at(key, 0)

    async def _get_at(self, key: str, revision: int) -> KeyValue | None:
        response = await self._read(pb.RangeRequest(key=self._key(key), revision=revision),
                                    f"reading {key!r}")
        return self._kv(response.kvs[0]) if response.kvs else None

    async def _range(self, prefix: str, start_after: str, limit: int | None,
                     revision: int | None) -> RangeResult:
        low = self._key(prefix)
        end = _end_of(low)
        if start_after >= prefix:
            low = max(low, self._key(start_after) + b"\x00")
        if low >= end:
            at = revision or await self._current_revision()
            return RangeResult([], at, False, 0)
        response = await self._read(pb.RangeRequest(key=low, range_end=end, limit=limit or 0,
                                                    revision=revision or 0),
                                    f"listing {prefix!r}")
        items = [self._kv(kv) for kv in response.kvs]
        at = revision or response.header.revision
        return RangeResult(items, at, bool(response.more), response.count)

    # -- writes ------------------------------------------------------------------------

    async def _write(self, key: str, value: bytes | None,
                     precondition: Precondition) -> tuple[KeyValue, KeyValue | None]:
        etcd_key = self._key(key)
        if precondition.exists:
            compare = [pb.Compare(result=GREATER, target=VERSION, key=etcd_key, version=0)]
            if precondition.mod_revision is not None:
                compare.append(pb.Compare(result=EQUAL, target=MOD, key=etcd_key,
                                          mod_revision=precondition.mod_revision))
        else:
            compare = [pb.Compare(result=EQUAL, target=CREATE, key=etcd_key,
                                  create_revision=0)]
        if value is None:
            op = pb.RequestOp(request_delete_range=pb.DeleteRangeRequest(key=etcd_key,
                                                                         prev_kv=True))
        else:
            op = pb.RequestOp(request_put=pb.PutRequest(key=etcd_key, value=value,
                                                        prev_kv=True))
        request = pb.TxnRequest(compare=compare, success=[op], failure=[
            pb.RequestOp(request_range=pb.RangeRequest(key=etcd_key))])
        response = await self._client.txn(request, f"writing {key!r}")
        revision = response.header.revision
        answer = response.responses[0]
        if not response.succeeded:
            kvs = answer.response_range.kvs
            precondition(self._kv(kvs[0]) if kvs else None)  # raises: the compare failed
            raise StoreError(f"etcd refused the write of {key!r} without a reason")
        if value is None:
            prev = self._kv(answer.response_delete_range.prev_kvs[0])
            return KeyValue(key, b"", 0, revision, 0), prev
        put = answer.response_put
        if not put.HasField("prev_kv"):
            return KeyValue(key, value, revision, revision, 1), None
        prev = self._kv(put.prev_kv)
        return KeyValue(key, value, prev.create_revision, revision, prev.version + 1), prev

    # -- watching ----------------------------------------------------------------------

    async def _feed_forever(self) -> None:
        """Publish every event of the store's keys, in order, to this process's
        watchers; watch again from the last revision published when a stream fails."""
        pause = RESUME_PAUSE[0]
        while not self._closed:
            stream = self._client.watch()
            try:
                await stream.create(self._all, _end_of(self._all), self._hub.revision + 1)
                self._feed = stream
                while True:
                    self._take(await stream.read())
                    pause = RESUME_PAUSE[0]
            except Exception as error:  # the feeder must outlive any failure
                if self._closed:
                    return
                log.warning("etcd watch failed; watching again", error=str(error),
                            revision=self._hub.revision, endpoint=self._client.endpoint)
            finally:
                self._feed = None
                stream.cancel()
            await asyncio.sleep(pause)
            pause = min(pause * 2, RESUME_PAUSE[1])

    def _take(self, response: Any) -> None:
        """One response of the feeding watch: events, progress, or its end."""
        hub = self._hub
        if response.canceled:
            compacted = response.compact_revision
            if compacted:
                # Compacted past what this process had published (it fell behind): the
                # revisions up to the compacted one are lost to the watchers that need them.
                self._compacted = max(self._compacted, compacted)
                hub.skip_to(compacted - 1, CompactedError(hub.revision, compacted))
            raise StoreError(f"etcd ended the watch: {response.cancel_reason or 'canceled'}")
        if response.events:
            events = [self._event(e) for e in response.events if e.kv.mod_revision > hub.revision]
            if events:
                hub.publish(events)
                self._observed = events[-1].revision
        elif not response.created and response.header.revision > hub.revision:
            # A progress notification: no event of the store's keys up to its revision.
            hub.revision = response.header.revision
        self._published.set()

    async def _history(self, prefix: str, after: int, until: int, limit: int) -> list[Event]:
        """Events under `prefix` in (after, until]: at least `limit` (whole revisions),
        or all of them."""
        low = self._key(prefix)
        stream = self._client.watch()
        pinger = None
        events: list[Event] = []
        try:
            async with asyncio.timeout(HISTORY_TIMEOUT):
                await stream.create(low, _end_of(low), after + 1)
                pinger = asyncio.get_running_loop().create_task(self._ping(stream))
                while True:
                    response = await stream.read()
                    if response.canceled:
                        raise await self._history_ended(response, after)
                    for event in response.events:
                        revision = event.kv.mod_revision
                        if revision > until or (len(events) >= limit
                                                and revision > events[-1].revision):
                            return events
                        events.append(self._event(event))
                    if (not response.events and not response.created
                            and response.header.revision >= until):
                        return events
        except TimeoutError:
            raise StoreError(f"reading the history of {prefix!r} after revision {after} "
                             f"took over {HISTORY_TIMEOUT:.0f} s") from None
        finally:
            if pinger is not None:
                pinger.cancel()
            stream.cancel()

    async def _history_ended(self, response: Any, after: int) -> StoreError:
        if response.compact_revision:
            self._compacted = max(self._compacted, response.compact_revision)
            return CompactedError(after, response.compact_revision)
        return StoreError(f"etcd ended a watch: {response.cancel_reason or 'canceled'}")

    @staticmethod
    async def _ping(stream: WatchStream) -> None:
        """Ask for progress until it comes (etcd answers a request only once the watch
        has caught up, and drops it before)."""
        with contextlib.suppress(StoreError):
            while True:
                await stream.request_progress()
                await asyncio.sleep(PROGRESS_INTERVAL)

    async def _learn_compacted(self) -> None:
        """Ask etcd for its compacted revision: a watch from revision 1 is cancelled with
        it, or catches up (nothing compacted) and answers a progress request."""
        stream = self._client.watch()
        pinger = None
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT):
                await stream.create(self._prefix + b"\x00", b"", 1)
                pinger = asyncio.get_running_loop().create_task(self._ping(stream))
                while True:
                    response = await stream.read()
                    if response.canceled:
                        self._compacted = max(self._compacted, response.compact_revision)
                        return
                    if not response.created and not response.events:
                        return
        except (TimeoutError, StoreError) as error:
            log.warning("cannot read etcd's compacted revision", error=str(error))
        finally:
            if pinger is not None:
                pinger.cancel()
            stream.cancel()

    # -- compaction --------------------------------------------------------------------

    async def _compact(self, revision: int) -> None:
        await self._wait_published(revision, CLOSE_TIMEOUT)
        try:
            await self._client.compact(revision)
        except EtcdCallError as error:
            if error.details != _COMPACTED:  # another process compacted further: fine
                raise StoreError(f"compaction to {revision} failed: {error.details}") from None
        self._compacted = max(self._compacted, revision)

    async def _wait_published(self, revision: int, timeout: float) -> None:
        """Wait (at most `timeout` seconds) until the feeding watch has published
        `revision`."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while self._hub.revision < revision:
                    self._published.clear()
                    if self._feed is not None:
                        with contextlib.suppress(StoreError):
                            await self._feed.request_progress()
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(PROGRESS_INTERVAL):
                            await self._published.wait()

    async def _close(self) -> None:
        if self._feeder is not None:
            self._feeder.cancel()
            await asyncio.gather(self._feeder, return_exceptions=True)
        await self._client.close()


async def open_etcd(url: str, *, max_value_bytes: int | None, compaction_interval: float,
                    watch_queue_limit: int) -> EtcdStore:
    """Open the store in the etcd cluster of `url` (see etcdrpc.parse_url)."""
    config = parse_url(url)
    client = EtcdClient(config)
    try:
        response = await client.range(pb.RangeRequest(key=config.prefix.encode() + b"/",
                                                      keys_only=True),
                                      "reading the revision", timeout=OPEN_TIMEOUT)
        store = EtcdStore(client, config, response.header.revision, 0,
                          max_value_bytes=max_value_bytes,
                          compaction_interval=compaction_interval,
                          watch_queue_limit=watch_queue_limit)
        await store.start()
    except StoreError as error:
        await client.close()
        raise StoreError(f"cannot open the store {config.shown()}: {error}") from None
    except BaseException:
        await client.close()
        raise
    return store

