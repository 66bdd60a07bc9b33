"""A work queue for reconcile loops, after client-go's rate-limited queue.

A key is queued at most once at a time; a key being processed is never handed to a
second worker, and if it is added meanwhile it comes back once the first worker is
done. Failed keys come back after an exponential per-key delay.
"""

from __future__ import annotations

import asyncio
from collections import deque


class ShutDown(Exception):
    pass


class WorkQueue:
    def __init__(self, base_delay: float = 0.005, max_delay: float = 60.0) -> None:
        self._queue: deque[str] = deque()
        self._dirty: set[str] = set()
        self._processing: set[str] = set()
        self._failures: dict[str, int] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        # Workers waiting in get(), woken one per key at once (a task per add to notify a
        # condition cost the claim controller more than queueing the key itself).
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._shutdown = False
        self.base_delay = base_delay
        self.max_delay = max_delay

    def __len__(self) -> int:
        return len(self._queue)

    def add(self, key: str) -> None:
        if self._shutdown or key in self._dirty:
            return
        self._dirty.add(key)
        if key in self._processing:
            return
        self._queue.append(key)
        self._wake_one()

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def add_after(self, key: str, delay: float) -> None:
        if self._shutdown:
            return
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        when = loop.time() + delay
        timer = self._timers.get(key)
        if timer is not None:
            if timer.when() <= when:
                return
            timer.cancel()
        self._timers[key] = loop.call_at(when, self._fire, key)

    def _fire(self, key: str) -> None:
        self._timers.pop(key, None)
        self.add(key)

    def add_rate_limited(self, key: str) -> None:
        n = self._failures.get(key, 0)
        self._failures[key] = n + 1
        self.add_after(key, min(self.base_delay * (2**n), self.max_delay))

    def forget(self, key: str) -> None:
        self._failures.pop(key, None)

    def num_requeues(self, key: str) -> int:
        return self._failures.get(key, 0)

    async def get(self) -> str:
        while not self._queue:
            if self._shutdown:
                raise ShutDown()
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._wake_one()  # woken, but gone: the key goes to another worker
                else:
                    try:
                        self._waiters.remove(waiter)
                    except ValueError:
                        pass
                raise
        key = self._queue.popleft()
        self._processing.add(key)
        self._dirty.discard(key)
        return key

    def done(self, key: str) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._queue.append(key)
            self._wake_one()

    def shutdown(self) -> None:
        self._shutdown = True
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
