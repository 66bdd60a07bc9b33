"""The scheduling queue: ordering, backoff, and waking unschedulable pods on events."""

from __future__ import annotations

import asyncio

import pytest
from sched_helpers import pod

from draemu.scheduler.framework import ClusterEvent
from draemu.scheduler.queue import SchedulingQueue

pytestmark = pytest.mark.unit

SLICE_ADD = ClusterEvent("ResourceSlice", "Add")
NODE_ADD = ClusterEvent("Node", "Add")
EVENTS = {"DynamicResources": {SLICE_ADD}, "NodeAffinity": {NODE_ADD}}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make_queue(clock: Clock | None = None) -> SchedulingQueue:
    return SchedulingQueue(EVENTS, clock=clock or Clock())


async def pop(q: SchedulingQueue):
    return await asyncio.wait_for(q.pop(), 1)


async def test_higher_priority_pops_first_then_oldest():
    q = make_queue()
    q.add("ns/low", pod("low"))
    q.add("ns/high", pod("high", spec={"priority": 100}))
    q.add("ns/low2", pod("low2"))
    assert [(await pop(q)).key for _ in range(3)] == ["ns/high", "ns/low", "ns/low2"]


async def test_unschedulable_pod_waits_for_an_event_its_rejector_registered():
    clock = Clock()
    q = make_queue(clock)
    q.add("ns/p", pod("p"))
    qp = await pop(q)
    q.requeue_unschedulable(qp, {"DynamicResources"})
    assert q.stats()["unschedulable"] == 1
    assert q.on_event(NODE_ADD) == 0
    clock.now += 60  # backoff long over
    assert q.on_event(SLICE_ADD) == 1
    assert (await pop(q)).key == "ns/p"


async def test_event_during_backoff_moves_pod_to_backoff_not_active():
    clock = Clock()
    q = make_queue(clock)
    q.add("ns/p", pod("p"))
    q.requeue_unschedulable(await pop(q), {"DynamicResources"})
    q.on_event(SLICE_ADD)
    assert q.stats() == {"active": 0, "backoff": 1, "unschedulable": 0, "in_flight": 0}


async def test_backoff_expires_into_active():
    q = SchedulingQueue(EVENTS, initial_backoff=0.01, max_backoff=0.01)
    q.add("ns/p", pod("p"))
    q.requeue_error(await pop(q))
    assert (await pop(q)).key == "ns/p"


async def test_event_while_pod_is_in_flight_is_not_lost():
    clock = Clock()
    q = make_queue(clock)
    q.add("ns/p", pod("p"))
    qp = await pop(q)
    q.on_event(SLICE_ADD)  # arrives while the pod is being scheduled
    q.requeue_unschedulable(qp, {"DynamicResources"})
    assert q.stats()["unschedulable"] == 0
    assert q.stats()["backoff"] == 1


async def test_unrelated_in_flight_event_parks_the_pod():
    q = make_queue()
    q.add("ns/p", pod("p"))
    qp = await pop(q)
    q.on_event(NODE_ADD)
    q.requeue_unschedulable(qp, {"DynamicResources"})
    assert q.stats()["unschedulable"] == 1


async def test_pod_update_that_may_help_requeues_it():
    clock = Clock()
    q = make_queue(clock)
    q.add("ns/p", pod("p"))
    q.requeue_unschedulable(await pop(q), {"DynamicResources"})
    clock.now += 60
    q.update("ns/p", pod("p"), requeue=True)
    assert q.stats()["active"] == 1


async def test_deleted_pod_is_not_requeued():
    q = make_queue()
    q.add("ns/p", pod("p"))
    qp = await pop(q)
    q.delete("ns/p")
    q.requeue_unschedulable(qp, {"DynamicResources"})
    assert len(q) == 0


async def test_unschedulable_pods_are_retried_after_the_safety_net_interval():
    q = SchedulingQueue(EVENTS, initial_backoff=0.001, max_backoff=0.001,
                        max_unschedulable_seconds=0.05)
    q.add("ns/p", pod("p"))
    q.requeue_unschedulable(await pop(q), {"DynamicResources"})
    assert (await pop(q)).key == "ns/p"


async def test_close_wakes_a_waiting_pop():
    q = make_queue()
    waiter = asyncio.create_task(q.pop())
    await asyncio.sleep(0)
    q.close()
    assert await asyncio.wait_for(waiter, 1) is None


async def test_event_narrowed_to_some_pods_moves_only_those():
    clock = Clock()
    q = make_queue(clock)
    for name in ("a", "b"):
        q.add(f"ns/{name}", pod(name))
        q.requeue_unschedulable(await pop(q), {"DynamicResources"})
    clock.now += 60
    assert q.on_event(SLICE_ADD, only={"ns/b"}) == 1
    assert (await pop(q)).key == "ns/b"
    assert q.stats()["unschedulable"] == 1
