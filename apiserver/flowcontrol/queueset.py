"""One priority level's seats and queues: upstream's fair queuing for server requests
(util/flowcontrol/fairqueuing/queueset), on one event loop.

- A request asks for a number of seats (its work estimate) and holds them while its
  handler runs. While the level has free seats and nobody waits, it runs at once.
- Otherwise it joins a queue: the flow (FlowSchema name + distinguisher) is hashed and
  dealt a hand of `handSize` of the level's `queues` (shuffle sharding), and the request
  joins the hand's queue with the least waiting work. A queue already holding
  `queueLengthLimit` requests while every seat is taken rejects it (`queue-full`).
- A freed seat goes to the head of the queue whose next request would finish first in
  virtual time (R, seat-seconds per active queue): each dispatch charges its queue
  `seats × G`, corrected to the real duration when it finishes, so a flow that sends
  expensive requests waits behind flows that send cheap ones.
- A level that rejects instead of queuing (`limitResponse.type: Reject`) has no queues
  (`concurrency-limit`); a request that waits longer than its wait limit leaves its
  queue (`time-out`).

Simplified against upstream: seats are the level's nominal concurrency limit (no
borrowing or lending between levels), there is no epoch advance (R is a float), and a
changed queuing configuration replaces the level's queues instead of resizing them.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import deque
from dataclasses import dataclass

# Upstream's initial guess of a request's service time before it finishes.
ESTIMATED_SERVICE_SECONDS = 0.003


@dataclass(frozen=True)
class QueuingConfig:
    queues: int = 0  # 0: no queues (Reject)
    hand_size: int = 0
    queue_length_limit: int = 0


def deal(hash_value: int, deck: int, hand: int) -> tuple[int, ...]:
    """Upstream's shuffle-sharding Dealer: `hand` distinct cards of `deck` from the hash."""
    remainders = []
    for i in range(hand):
        hash_value, remainder = divmod(hash_value, deck - i)
        remainders.append(remainder)
    cards = []
    for i, card in enumerate(remainders):
        for j in range(i, 0, -1):
            if card >= remainders[j - 1]:
                card += 1
        cards.append(card)
    return tuple(cards)


def flow_hash(schema: str, distinguisher: str) -> int:
    digest = hashlib.sha256(schema.encode() + b"\0" + distinguisher.encode()).digest()
    return int.from_bytes(digest[:8], "little")


class Queue:
    __slots__ = ("executing", "index", "next_dispatch_r", "seats_in_use", "waiting",
                 "waiting_work")

    def __init__(self, index: int) -> None:
        self.index = index
        self.waiting: deque[Request] = deque()
        self.waiting_work = 0.0
        self.next_dispatch_r = 0.0
        self.seats_in_use = 0
        self.executing = 0


class Request:
    __slots__ = ("arrival_r", "future", "queue", "seats", "started", "timer")

    def __init__(self, seats: int, queue: Queue | None, arrival_r: float) -> None:
        self.seats = seats
        self.queue = queue
        self.arrival_r = arrival_r
        self.future: asyncio.Future[bool] | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.started = 0.0

    @property
    def work(self) -> float:
        return self.seats * ESTIMATED_SERVICE_SECONDS


class Rejected(Exception):
    """The level refused the request; `reason` is upstream's metric label."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class QueueSet:
    def __init__(self, limit: int, config: QueuingConfig) -> None:
        self.limit = limit
        self.config = config
        self.queues = [Queue(i) for i in range(config.queues)]
        self.seats_in_use = 0
        self.executing = 0
        self.waiting = 0
        self.seats_waiting = 0
        self.active_queues = 0
        self.current_r = 0.0
        self._last = time.monotonic()
        self._hands: dict[tuple[str, str], tuple[int, ...]] = {}
        self._dispatch_soon = False

    # Virtual time ----------------------------------------------------------------------
    def _sync_time(self) -> None:
        now = time.monotonic()
        if self.active_queues:
            demand = min(self.seats_in_use + self.seats_waiting, self.limit)
            self.current_r += (now - self._last) * demand / self.active_queues
        self._last = now

    def _activate(self, queue: Queue) -> None:
        if not queue.waiting and not queue.executing:
            self.active_queues += 1
            queue.next_dispatch_r = self.current_r

    def _maybe_idle(self, queue: Queue) -> None:
        if not queue.waiting and not queue.executing:
            self.active_queues -= 1

    # Requests --------------------------------------------------------------------------
    def _fits(self, seats: int) -> bool:
        if seats > self.limit:
            return self.executing == 0  # a request wider than the level runs alone
        return self.seats_in_use + seats <= self.limit

    def start(self, seats: int, schema: str, distinguisher: str) -> Request:
        """A request that holds its seats now (no queues: `future` None) or waits in a
        queue (`await wait(...)`); raises Rejected."""
        self._sync_time()
        if not self.queues:
            if not self._fits(seats):
                raise Rejected("concurrency-limit")
            req = Request(seats, None, self.current_r)
            self._execute(req)
            return req
        queue = self._shortest(schema, distinguisher)
        if self.seats_in_use >= self.limit and \
                len(queue.waiting) >= self.config.queue_length_limit:
            raise Rejected("queue-full")
        req = Request(seats, queue, self.current_r)
        self._activate(queue)
        queue.waiting.append(req)
        queue.waiting_work += req.work
        self.waiting += 1
        self.seats_waiting += seats
        loop = asyncio.get_running_loop()
        req.future = loop.create_future()
        if not self._dispatch_soon:
            # Dispatch after the requests that arrived with this one have joined their
            # queues: handlers that never suspend would otherwise run in arrival order.
            self._dispatch_soon = True
            loop.call_soon(self._dispatch)
        return req

    async def wait(self, req: Request, limit: float) -> None:
        """Until the request holds its seats; Rejected("time-out") after `limit`
        seconds in its queue. A cancelled waiter leaves its queue (or its seats)."""
        future = req.future
        assert future is not None
        req.timer = asyncio.get_running_loop().call_later(limit, self._expire, req)
        try:
            dispatched = await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled() and future.result():
                self.finish(req)
            else:
                self._leave(req)
            raise
        finally:
            req.timer.cancel()
        if not dispatched:
            raise Rejected("time-out")

    def _expire(self, req: Request) -> None:
        if req.future is not None and not req.future.done():
            self._leave(req)
            req.future.set_result(False)

    def _leave(self, req: Request) -> None:
        queue = req.queue
        if queue is None or req.started:
            return
        try:
            queue.waiting.remove(req)
        except ValueError:
            return
        self._sync_time()
        queue.waiting_work -= req.work
        self.waiting -= 1
        self.seats_waiting -= req.seats
        self._maybe_idle(queue)
        self._bound(queue)

    def finish(self, req: Request) -> None:
        """The request's handler is done: free its seats and dispatch."""
        self._sync_time()
        self.executing -= 1
        self.seats_in_use -= req.seats
        queue = req.queue
        if queue is not None:
            queue.executing -= 1
            queue.seats_in_use -= req.seats
            # Charge the real service time instead of the guess.
            queue.next_dispatch_r -= req.seats * (ESTIMATED_SERVICE_SECONDS -
                                                  (time.monotonic() - req.started))
            self._maybe_idle(queue)
            self._bound(queue)
        self._dispatch()

    def _execute(self, req: Request) -> None:
        req.started = time.monotonic()
        self.executing += 1
        self.seats_in_use += req.seats

    def _shortest(self, schema: str, distinguisher: str) -> Queue:
        key = (schema, distinguisher)
        hand = self._hands.get(key)
        if hand is None:
            if len(self._hands) > 10_000:
                self._hands.clear()
            hand = self._hands[key] = deal(flow_hash(schema, distinguisher),
                                           len(self.queues), self.config.hand_size)
        best = self.queues[hand[0]]
        for index in hand[1:]:
            queue = self.queues[index]
            if queue.waiting_work < best.waiting_work:
                best = queue
        return best

    @staticmethod
    def _bound(queue: Queue) -> None:
        # A queue does not bank virtual time from before its oldest request came.
        if queue.waiting and queue.next_dispatch_r < queue.waiting[0].arrival_r:
            queue.next_dispatch_r = queue.waiting[0].arrival_r

    def _dispatch(self) -> None:
        self._dispatch_soon = False
        while self.waiting and self.seats_in_use < self.limit:
            best: Queue | None = None
            best_finish = 0.0
            for queue in self.queues:
                if queue.waiting:
                    finish = queue.next_dispatch_r + queue.waiting[0].work
                    if best is None or finish < best_finish:
                        best, best_finish = queue, finish
            assert best is not None
            req = best.waiting[0]
            if not self._fits(req.seats):
                return
            best.waiting.popleft()
            best.waiting_work -= req.work
            self.waiting -= 1
            self.seats_waiting -= req.seats
            self._execute(req)
            best.executing += 1
            best.seats_in_use += req.seats
            best.next_dispatch_r += req.work
            self._bound(best)
            if req.future is not None and not req.future.done():
                req.future.set_result(True)
