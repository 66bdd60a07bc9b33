"""One priority level's seats and queues: upstream's fair queuing for server requests
(util/flowcontrol/fairqueuing/queueset), adapted to one event loop.

- A request asks for a number of seats (its work estimate) and holds them while its
  handler runs (and writes its body).
- It joins a queue: the flow (FlowSchema name + distinguisher) is hashed and dealt a
  hand of `handSize` of the level's `queues` (shuffle sharding), and the request joins
  the hand's queue with the least waiting work. A queue already holding
  `queueLengthLimit` requests while every seat is taken rejects it (`queue-full`).
- Seats go to the head of the queue whose next request would finish first in virtual
  time (fair queuing: a queue is charged the work of what it dispatched), so a flow that
  sends expensive requests waits behind flows that send cheap ones.
- A level that rejects instead of queuing (`limitResponse.type: Reject`) has no queues
  (`concurrency-limit`); a request that waits longer than its wait limit leaves its
  queue (`time-out`).

What differs from upstream, because every handler shares one thread:

- Work is CPU time, not seat-seconds: a request's handler steps are timed
  (`cpu.Timed`); its queue is charged its expected CPU (the queue's recent mean) when
  it is dispatched, corrected to what it used when it finishes. Virtual time is
  self-clocked (the finish tag of the last dispatch) instead of advancing with the clock.
- Dispatch is paced per turn of the event loop: once the requests dispatched in one
  turn are expected to take `TURN_CPU` seconds, the next long one (expected to take
  `LIGHT_CPU` or more) waits for the next turn while light ones go on in fair order, so
  a turn holds at most one long handler step of a level and the light requests behind
  it wait for that one, not for a dozen. A request that wins the fair order when it
  arrives runs at once (no turn of the loop in a queue).
- Seats are the level's nominal concurrency limit (no borrowing or lending between
  levels); a changed queuing configuration replaces the level's queues.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import deque
from dataclasses import dataclass

# What a request of a queue that never finished one is expected to take (CPU seconds).
INITIAL_CPU = 0.001
# The CPU expected of the requests dispatched in one turn of the loop, beyond the first;
# requests expected to take less than LIGHT_CPU are not paced.
TURN_CPU = 0.005
LIGHT_CPU = 0.002


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
    __slots__ = ("cpu", "executing", "index", "next_dispatch_r", "seats_in_use", "waiting")

    def __init__(self, index: int) -> None:
        self.index = index
        self.waiting: deque[Request] = deque()
        self.next_dispatch_r = 0.0
        self.seats_in_use = 0
        self.executing = 0
        self.cpu = INITIAL_CPU  # mean CPU of its recent requests


class Request:
    __slots__ = ("arrival_r", "charged", "future", "queue", "seats", "started", "timer")

    def __init__(self, seats: int, queue: Queue | None, arrival_r: float) -> None:
        self.seats = seats
        self.queue = queue
        self.arrival_r = arrival_r
        self.future: asyncio.Future[bool] | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.started = False
        self.charged = 0.0  # the CPU its queue was charged when it was dispatched


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
        self._hands: dict[tuple[str, str], tuple[int, ...]] = {}
        # The queues with requests waiting, by index: dispatch looks at these only
        # (a level has up to 128 queues, most of them empty).
        self._occupied: dict[int, Queue] = {}
        self._turn_cpu = 0.0
        self._next_turn = False

    # Queues ----------------------------------------------------------------------------
    def _activate(self, queue: Queue) -> None:
        if not queue.waiting and not queue.executing:
            self.active_queues += 1
            queue.next_dispatch_r = max(queue.next_dispatch_r, self.current_r)

    def _maybe_idle(self, queue: Queue) -> None:
        if not queue.waiting and not queue.executing:
            self.active_queues -= 1

    # Requests --------------------------------------------------------------------------
    def _fits(self, seats: int) -> bool:
        if seats > self.limit:
            return self.executing == 0  # a request wider than the level runs alone
        return self.seats_in_use + seats <= self.limit

    def start(self, seats: int, schema: str, distinguisher: str) -> Request:
        """A request that holds its seats now (`future` None) or waits in a queue
        (`await wait(...)`); raises Rejected."""
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
        self._occupied[queue.index] = queue
        self.waiting += 1
        self.seats_waiting += seats
        # Fair order decides at once (a request that wins runs now); requests that
        # take long are paced per turn, so those arriving together still compete.
        self._dispatch()
        if not req.started:
            req.future = asyncio.get_running_loop().create_future()
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
        if not queue.waiting:
            del self._occupied[queue.index]
        self.waiting -= 1
        self.seats_waiting -= req.seats
        self._maybe_idle(queue)
        self._bound(queue)

    def finish(self, req: Request, cpu: float = 0.0) -> None:
        """The request's handler is done after `cpu` seconds of its own: free its seats,
        charge its queue what it used, and dispatch."""
        self.executing -= 1
        self.seats_in_use -= req.seats
        queue = req.queue
        if queue is not None:
            queue.executing -= 1
            queue.seats_in_use -= req.seats
            queue.next_dispatch_r += cpu - req.charged
            queue.cpu = (queue.cpu + cpu) / 2
            self._maybe_idle(queue)
            self._bound(queue)
        self._dispatch()

    def _execute(self, req: Request) -> None:
        req.started = True
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
            if len(queue.waiting) * queue.cpu < len(best.waiting) * best.cpu:
                best = queue
        return best

    @staticmethod
    def _bound(queue: Queue) -> None:
        # A queue does not bank virtual time from before its oldest request came.
        if queue.waiting and queue.next_dispatch_r < queue.waiting[0].arrival_r:
            queue.next_dispatch_r = queue.waiting[0].arrival_r

    def _dispatch(self) -> None:
        while self.waiting and self.seats_in_use < self.limit:
            best = self._first(paced=False)
            assert best is not None
            if not self._fits(best.waiting[0].seats):
                return
            if not self._within_turn(best):
                # Long requests wait for the next turn; light ones go on in fair order.
                self._pace()
                best = self._first(paced=True)
                if best is None or not self._fits(best.waiting[0].seats):
                    return
            req = best.waiting.popleft()
            if not best.waiting:
                del self._occupied[best.index]
            self.waiting -= 1
            self.seats_waiting -= req.seats
            self._execute(req)
            best.executing += 1
            best.seats_in_use += req.seats
            req.charged = best.cpu
            best.next_dispatch_r += req.charged
            self.current_r = best.next_dispatch_r
            self._turn_cpu += req.charged
            self._pace()
            self._bound(best)
            if req.future is not None and not req.future.done():
                req.future.set_result(True)

    def _first(self, paced: bool) -> Queue | None:
        """The queue whose head would finish first (only light ones when `paced`)."""
        best: Queue | None = None
        best_finish = 0.0
        occupied = self._occupied
        # In index order, as a scan of every queue: the first of equal finishes wins.
        for index in sorted(occupied) if len(occupied) > 1 else occupied:
            queue = occupied[index]
            if not (paced and queue.cpu >= LIGHT_CPU):
                finish = queue.next_dispatch_r + queue.cpu
                if best is None or finish < best_finish:
                    best, best_finish = queue, finish
        return best

    def _within_turn(self, queue: Queue) -> bool:
        return queue.cpu < LIGHT_CPU or not self._turn_cpu or \
            self._turn_cpu + queue.cpu <= TURN_CPU

    def _pace(self) -> None:
        if not self._next_turn:
            self._next_turn = True
            asyncio.get_running_loop().call_soon(self._turn)

    def _turn(self) -> None:
        self._next_turn = False
        self._turn_cpu = 0.0
        self._dispatch()
