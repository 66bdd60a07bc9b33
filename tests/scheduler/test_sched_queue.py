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


# --- which pods an event wakes (the index by rejecting plugin) ----------------------------

POD_ADD = ClusterEvent("Pod", "Add")
CLAIM_ADD = ClusterEvent("ResourceClaim", "Add")
INDEXED = {"DynamicResources": {SLICE_ADD, NODE_ADD, CLAIM_ADD},
           "NodeAffinity": {NODE_ADD}, "InterPodAffinity": {POD_ADD, NODE_ADD}}


async def park(q: SchedulingQueue, name: str, rejectors: set[str]) -> None:
    q.add(f"ns/{name}", pod(name))
    q.requeue_unschedulable(await pop(q), rejectors)


async def test_an_event_wakes_exactly_the_pods_a_plugin_registered_for_it_rejected():
    clock = Clock()
    q = SchedulingQueue(INDEXED, clock=clock)
    await park(q, "dra", {"DynamicResources"})
    await park(q, "affinity", {"InterPodAffinity"})
    await park(q, "both", {"NodeAffinity", "InterPodAffinity"})
    await park(q, "unknown", set())  # no known rejector: every event may help
    clock.now += 60
    assert q.on_event(ClusterEvent("DeviceClass", "Add")) == 1  # registered by no plugin
    assert (await pop(q)).key == "ns/unknown"
    assert q.on_event(POD_ADD) == 2
    assert sorted([(await pop(q)).key for _ in range(2)]) == ["ns/affinity", "ns/both"]
    assert q.stats()["unschedulable"] == 1
    assert q.on_event(POD_ADD) == 0  # the DRA pod did not move
    assert q.on_event(SLICE_ADD) == 1
    assert (await pop(q)).key == "ns/dra"
    assert q.stats() == {"active": 0, "backoff": 0, "unschedulable": 0, "in_flight": 4}


async def test_pods_woken_together_keep_the_order_they_were_parked_in():
    clock = Clock()
    q = SchedulingQueue(INDEXED, clock=clock)
    for name, rejectors in (("a", {"NodeAffinity"}), ("b", {"DynamicResources"}),
                            ("c", {"InterPodAffinity"}), ("d", {"NodeAffinity"})):
        await park(q, name, rejectors)
        clock.now += 1
    clock.now += 60
    assert q.on_event(NODE_ADD) == 4
    # Same priority, added in that order: they pop as parked.
    assert [(await pop(q)).key for _ in range(4)] == ["ns/a", "ns/b", "ns/c", "ns/d"]


async def test_a_woken_deleted_or_regated_pod_leaves_the_index():
    clock = Clock()
    q = SchedulingQueue(INDEXED, clock=clock)
    await park(q, "p", {"InterPodAffinity"})
    await park(q, "gone", {"InterPodAffinity"})
    q.delete("ns/gone")
    # Held back by PreEnqueue now: only its gate's events count.
    q.update("ns/p", pod("p"), gated_by="DynamicResources")
    clock.now += 60
    assert q.on_event(POD_ADD) == 0
    assert q.on_event(CLAIM_ADD) == 1
    assert q.on_event(CLAIM_ADD) == 0  # already moved
    assert (await pop(q)).key == "ns/p"
    assert len(q) == 1


async def test_the_safety_net_retries_the_oldest_parked_pods_first():
    clock = Clock()
    q = SchedulingQueue(INDEXED, clock=clock, max_unschedulable_seconds=100)
    await park(q, "old", {"NodeAffinity"})
    clock.now += 50
    await park(q, "new", {"NodeAffinity"})
    clock.now += 60  # "old" parked 110 s ago, "new" 60 s ago
    assert (await pop(q)).key == "ns/old"
    assert q.stats()["unschedulable"] == 1
    clock.now += 50
    assert (await pop(q)).key == "ns/new"


async def test_in_flight_pods_see_the_events_since_they_were_popped_only():
    clock = Clock()
    q = SchedulingQueue(INDEXED, clock=clock)
    q.add("ns/first", pod("first"))
    q.add("ns/second", pod("second"))
    first = await pop(q)
    q.on_event(SLICE_ADD)  # while only the first is in flight
    second = await pop(q)
    q.on_event(POD_ADD, only={"ns/first"})  # narrowed to the first
    q.on_event(POD_ADD, only={"ns/other"})  # concerns neither
    q.requeue_unschedulable(second, {"DynamicResources", "InterPodAffinity"})
    assert q.stats()["unschedulable"] == 1  # neither event after its pop was for it
    q.requeue_unschedulable(first, {"InterPodAffinity"})
    assert q.stats()["unschedulable"] == 1 and q.stats()["backoff"] == 1  # POD_ADD was


async def test_the_in_flight_event_log_is_pruned_while_pods_stay_in_flight():
    q = SchedulingQueue(INDEXED, clock=Clock())
    for i in range(3):
        q.add(f"ns/p{i}", pod(f"p{i}"))
    slow = await pop(q)
    for _ in range(1500):
        q.on_event(SLICE_ADD)
    flying = await pop(q)
    q.done(slow.key)  # the oldest in flight ends: the events before `flying` can go
    for i in range(1500):
        q.on_event(NODE_ADD if i == 700 else SLICE_ADD)
    assert len(q._log) <= 1500
    q.requeue_unschedulable(flying, {"NodeAffinity"})
    assert q.stats()["backoff"] == 1  # NODE_ADD was still in the log for it
