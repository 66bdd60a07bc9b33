"""Watch fan-out: one source of events per store, one bounded queue per watcher.

The store publishes each committed event once to the hub; the hub appends it to the
queue of every watcher whose prefix matches and wakes it. Publishing never waits: a
watcher whose queue would exceed its bound is ended with `WatchTooSlowError` (its client
re-lists, as with etcd's and kine's slow-watcher handling) and the others carry on.

A watch from an older revision first reads the history (from_revision, R] from the
database, R being the last revision published when it subscribed, then continues with
its queue, which holds exactly the events after R: no gap and no duplicate.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Sequence

from draemu.store.errors import StoreClosedError, StoreError, WatchTooSlowError
from draemu.store.model import Event

# (prefix, after, until, limit) -> up to `limit` events in (after, until] under prefix.
FetchHistory = Callable[[str, int, int, int], Awaitable[list[Event]]]

HISTORY_PAGE = 500


class _Subscriber:
    __slots__ = ("prefix", "start", "queue", "wakeup", "error")

    def __init__(self, prefix: str, start: int) -> None:
        self.prefix = prefix
        self.start = start
        self.queue: deque[Event] = deque()
        self.wakeup = asyncio.Event()
        self.error: StoreError | None = None

    def fail(self, error: StoreError) -> None:
        self.queue.clear()
        self.error = error
        self.wakeup.set()


class WatchHub:
    """Fans events out to watchers. `revision` is the last revision published."""

    def __init__(self, revision: int, queue_limit: int) -> None:
        self.revision = revision
        self.queue_limit = queue_limit
        self._subscribers: set[_Subscriber] = set()

    def __len__(self) -> int:
        return len(self._subscribers)

    def subscribe(self, prefix: str, start: int) -> _Subscriber:
        """A queue for the events under `prefix` after `start`."""
        subscriber = _Subscriber(prefix, start)
        self._subscribers.add(subscriber)
        return subscriber

    def unsubscribe(self, subscriber: _Subscriber) -> None:
        self._subscribers.discard(subscriber)

    def publish(self, events: Sequence[Event]) -> None:
        """Hand committed events (in revision order, following `revision`) to watchers."""
        if not events:
            return
        limit = self.queue_limit
        for subscriber in tuple(self._subscribers):
            prefix = subscriber.prefix
            queue = subscriber.queue
            matched = False
            for event in events:
                if event.kv.key.startswith(prefix):
                    queue.append(event)
                    matched = True
            if not matched:
                continue
            if len(queue) > limit:
                self._subscribers.discard(subscriber)
                subscriber.fail(WatchTooSlowError(
                    f"watch on {prefix!r} fell more than {limit} events behind; "
                    "list again and watch from the list's revision"))
            else:
                subscriber.wakeup.set()
        self.revision = events[-1].revision

    def skip_to(self, revision: int, error: StoreError) -> None:
        """Continue after `revision`, the events up to it being lost: end with `error`
        every watcher that needed one of them."""
        for subscriber in tuple(self._subscribers):
            if subscriber.start < revision:
                self._subscribers.discard(subscriber)
                subscriber.fail(error)
        self.revision = revision

    def close(self) -> None:
        for subscriber in self._subscribers:
            subscriber.fail(StoreClosedError("the store was closed"))
        self._subscribers.clear()


class Watch:
    """The events under a prefix after a revision, as an async iterator.

    Ends with `WatchTooSlowError` when it falls behind, `CompactedError` when the history
    it still has to read was compacted, `StoreClosedError` when the store closes; stops
    quietly after `aclose()`.
    """

    def __init__(self, hub: WatchHub, prefix: str, from_revision: int,
                 fetch: FetchHistory) -> None:
        self._hub = hub
        self._subscriber = hub.subscribe(prefix, from_revision)
        self._prefix = prefix
        self._from = from_revision
        # History (from_revision, until] comes from the database, the rest from the queue.
        self._until = hub.revision
        self._fetched = from_revision
        self._fetch = fetch
        self._pending: deque[Event] = deque()
        self._closed = False

    def __aiter__(self) -> Watch:
        return self

    async def __anext__(self) -> Event:
        while True:
            if self._pending:
                return self._pending.popleft()
            if self._closed:
                raise StopAsyncIteration
            subscriber = self._subscriber
            if subscriber.error is not None:
                self._closed = True
                raise subscriber.error
            if self._fetched < self._until:
                await self._read_history()
                continue
            if subscriber.queue:
                start = self._from
                self._pending.extend(e for e in subscriber.queue if e.revision > start)
                subscriber.queue.clear()
                continue
            subscriber.wakeup.clear()
            await subscriber.wakeup.wait()

    async def _read_history(self) -> None:
        try:
            events = await self._fetch(self._prefix, self._fetched, self._until, HISTORY_PAGE)
        except BaseException:
            await self.aclose()
            raise
        self._pending.extend(events)
        # A full page (or more: a backend may end a page at a revision's last event) may
        # have left history behind.
        self._fetched = events[-1].revision if len(events) >= HISTORY_PAGE else self._until

    async def aclose(self) -> None:
        """Stop watching; the iterator ends."""
        self._closed = True
        self._pending.clear()
        self._hub.unsubscribe(self._subscriber)
        self._subscriber.wakeup.set()
