"""A priority level's queues on their own: shuffle sharding, fair dispatch by the CPU
each flow used, queue-full and time-out rejections, per-turn pacing; and the handler
CPU clock."""

from __future__ import annotations

import asyncio
import time

import pytest

from draemu.apiserver.flowcontrol.cpu import Timed
from draemu.apiserver.flowcontrol.queueset import (
    QueueSet,
    QueuingConfig,
    Rejected,
    deal,
    flow_hash,
)

pytestmark = pytest.mark.unit


def test_a_hand_is_distinct_queues_of_the_deck() -> None:
    for schema in ("global-default", "catch-all"):
        for user in ("alice", "bob", "system:node:n1", ""):
            hand = deal(flow_hash(schema, user), 128, 6)
            assert len(set(hand)) == 6 and all(0 <= q < 128 for q in hand)
    assert deal(flow_hash("a", "b"), 64, 8) == deal(flow_hash("a", "b"), 64, 8)


async def test_a_flow_that_used_much_cpu_waits_behind_a_new_one() -> None:
    qs = QueueSet(1, QueuingConfig(queues=64, hand_size=2, queue_length_limit=10))
    first = qs.start(1, "fs", "flooder")
    assert first.future is None  # nobody waited: it runs at once
    later = [qs.start(1, "fs", "flooder") for _ in range(3)]
    light = qs.start(1, "fs", "light")
    assert all(r.future is not None for r in (*later, light))
    qs.finish(first, cpu=0.5)
    await asyncio.sleep(0)
    assert light.future is not None and light.future.done()
    assert not any(r.future.done() for r in later if r.future is not None)


async def test_a_full_queue_rejects_and_a_long_wait_times_out() -> None:
    qs = QueueSet(1, QueuingConfig(queues=1, hand_size=1, queue_length_limit=2))
    running = qs.start(1, "fs", "a")
    waiting = [qs.start(1, "fs", "a") for _ in range(2)]
    with pytest.raises(Rejected, match="queue-full"):
        qs.start(1, "fs", "a")
    with pytest.raises(Rejected, match="time-out"):
        await qs.wait(waiting[0], 0.05)
    assert qs.waiting == 1
    qs.finish(running, cpu=0.0)
    await qs.wait(waiting[1], 1.0)  # now it holds the seat
    assert qs.seats_in_use == 1


async def test_a_level_without_queues_rejects_beyond_its_seats() -> None:
    qs = QueueSet(2, QueuingConfig())
    held = [qs.start(1, "fs", ""), qs.start(1, "fs", "")]
    with pytest.raises(Rejected, match="concurrency-limit"):
        qs.start(1, "fs", "")
    qs.finish(held[0])
    assert qs.start(1, "fs", "").future is None


async def test_dispatch_is_paced_per_turn_of_the_loop() -> None:
    qs = QueueSet(100, QueuingConfig(queues=8, hand_size=1, queue_length_limit=100))
    first = qs.start(1, "fs", "heavy")
    qs.finish(first, cpu=0.2)  # the queue now expects 0.2 s of CPU a request
    heavy = [qs.start(1, "fs", "heavy") for _ in range(4)]
    dispatched = sum(1 for r in heavy if r.started)
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    # One long request a turn, not all of them at once.
    assert dispatched + sum(1 for r in heavy if r.started) <= 3
    for _ in range(10):
        await asyncio.sleep(0)
    assert all(r.started for r in heavy)


async def test_handler_cpu_counts_its_own_steps_only() -> None:
    async def handler() -> int:
        total = sum(range(300_000))
        await asyncio.sleep(0.1)
        return total

    async def neighbour() -> None:
        end = time.perf_counter() + 0.08
        while time.perf_counter() < end:
            await asyncio.sleep(0)

    timed = Timed(handler())
    other = asyncio.create_task(neighbour())
    started = time.perf_counter()
    assert await timed == sum(range(300_000))
    await other
    assert timed.cpu < (time.perf_counter() - started) / 2
    assert timed.cpu > 0


async def test_a_stopped_timer_counts_no_more_and_still_passes_results_and_errors() -> None:
    steps: list[str] = []

    async def handler() -> str:
        for i in range(3):
            sum(range(200_000))
            steps.append(f"step{i}")
            await asyncio.sleep(0)
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            steps.append("cancelled")
            raise
        return "never"

    timed = Timed(handler())
    task = asyncio.ensure_future(timed)
    while len(steps) < 1:
        await asyncio.sleep(0)
    timed.stop()
    counted = timed.cpu
    assert counted > 0
    while len(steps) < 3:
        await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert timed.cpu == counted  # the later steps' CPU is not counted
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert steps == ["step0", "step1", "step2", "cancelled"]

    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    quick = Timed(answer())
    quick.stop()
    assert await quick == 42


async def test_dispatch_looks_at_the_occupied_queues_as_a_scan_of_all_would() -> None:
    """Random starts, finishes and leaving waiters on a level: the queues dispatch looks
    at are those with waiters, and the order requests start in is the one a scan of
    every queue (the first of equal finishes winning) gives."""
    import random

    from draemu.apiserver.flowcontrol import queueset

    def scan_first(qs: QueueSet, paced: bool) -> queueset.Queue | None:
        best, best_finish = None, 0.0
        for queue in qs.queues:
            if queue.waiting and not (paced and queue.cpu >= queueset.LIGHT_CPU):
                finish = queue.next_dispatch_r + queue.cpu
                if best is None or finish < best_finish:
                    best, best_finish = queue, finish
        return best

    class Scanning(QueueSet):
        def _first(self, paced: bool) -> queueset.Queue | None:
            return scan_first(self, paced)

    async def run(qs: QueueSet, seed: int) -> list[int]:
        rng = random.Random(seed)
        started: list[int] = []
        running: list[tuple[int, object]] = []
        waiting: list[tuple[int, object]] = []
        for n in range(400):
            move = rng.random()
            if move < 0.5:
                try:
                    req = qs.start(rng.choice((1, 1, 2)), "fs", f"u{rng.randrange(12)}")
                except Rejected:
                    continue
                (running if req.started else waiting).append((n, req))
            elif move < 0.85 and running:
                _, req = running.pop(rng.randrange(len(running)))
                qs.finish(req, cpu=rng.choice((0.0001, 0.001, 0.003, 0.01)))
            elif waiting:
                _, req = waiting.pop(rng.randrange(len(waiting)))
                qs._leave(req)
            if isinstance(qs, QueueSet) and not isinstance(qs, Scanning):
                assert qs._occupied == {q.index: q for q in qs.queues if q.waiting}
            if rng.random() < 0.2:
                await asyncio.sleep(0)  # a turn: paced requests go on
            for item in [w for w in waiting if w[1].started]:
                waiting.remove(item)
                running.append(item)
                started.append(item[0])
        return started

    for seed in range(5):
        config = QueuingConfig(queues=16, hand_size=3, queue_length_limit=6)
        assert await run(QueueSet(3, config), seed) == await run(Scanning(3, config), seed)
