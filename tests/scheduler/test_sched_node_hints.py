"""Node events and the pods they wake (upstream's isSchedulableAfterNodeChange hints of
NodeUnschedulable, TaintToleration, NodeAffinity and NodeResourcesFit, and its
nodeSchedulingPropertiesChange): in process, events fed to the scheduler's node handler
by hand, each pod parked as rejected by one plugin."""

from __future__ import annotations

import asyncio
import copy

import pytest
from sched_helpers import node, pod

from draemu.scheduler.scheduler import Scheduler

pytestmark = pytest.mark.unit

NO_SCHEDULE = {"key": "gpu", "value": "busy", "effect": "NoSchedule"}


def changed(n: dict, **parts: dict) -> dict:
    """A copy of node `n` with parts replaced: metadata=..., spec=..., status=..."""
    new = copy.deepcopy(n)
    for part, values in parts.items():
        new[part] = {**new[part], **values}
    return new


async def parked(s: Scheduler, p: dict, rejector: str) -> None:
    """The pod among the scheduler's unschedulable pods, rejected by `rejector`, past its
    backoff."""
    before = waiting(s)
    key = f"{p['metadata']['namespace']}/{p['metadata']['name']}"
    s.queue.add(key, p)
    qp = await asyncio.wait_for(s.queue.pop(), 1)
    while qp.key != key:  # a pod an earlier event woke: done with it
        s.queue.done(qp.key)
        qp = await asyncio.wait_for(s.queue.pop(), 1)
    s.queue.requeue_unschedulable(qp, {rejector})
    qp.last_failure -= 60
    assert waiting(s) == before + 1


def waiting(s: Scheduler) -> int:
    return s.queue.stats()["unschedulable"]


def scheduler_with(n: dict) -> Scheduler:
    s = Scheduler(None)  # type: ignore[arg-type]
    s.handlers.on_node(n)
    return s


async def test_a_heartbeat_wakes_no_pod_not_even_of_a_plugin_without_a_hint():
    n = node("n1")
    n["status"]["conditions"] = [{"type": "Ready", "status": "True",
                                  "lastHeartbeatTime": "2026-12-01T10:00:00Z"}]
    s = scheduler_with(n)
    await parked(s, pod("p"), "DynamicResources")
    beat = changed(n, metadata={"resourceVersion": "9"}, status={"conditions": [
        {"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-12-01T10:00:10Z"}]})
    s.handlers.on_node(beat, "Update", n)
    assert waiting(s) == 1
    # A condition that changes its status is a change scheduling looks at.
    s.handlers.on_node(changed(beat, status={"conditions": [{"type": "Ready", "status": "False"}]}),
               "Update", beat)
    assert waiting(s) == 0


async def test_node_unschedulable_waits_for_an_uncordon_or_a_schedulable_node():
    cordoned = node("n1", unschedulable=True)
    s = scheduler_with(cordoned)
    await parked(s, pod("p"), "NodeUnschedulable")
    relabelled = changed(cordoned, metadata={"labels": {"x": "y"}})
    s.handlers.on_node(relabelled, "Update", cordoned)
    s.handlers.on_node(node("n2", unschedulable=True))
    assert waiting(s) == 1
    s.handlers.on_node(changed(relabelled, spec={"unschedulable": False}), "Update", relabelled)
    assert waiting(s) == 0
    await parked(s, pod("q"), "NodeUnschedulable")
    s.handlers.on_node(node("n3"))
    assert waiting(s) == 0


async def test_taint_toleration_waits_until_the_taints_are_tolerated():
    tainted = node("n1", taints=[NO_SCHEDULE])
    s = scheduler_with(tainted)
    await parked(s, pod("p"), "TaintToleration")
    # Another untolerated taint, a PreferNoSchedule one gone, a tainted node added:
    more = changed(tainted, spec={"taints": [NO_SCHEDULE, {"key": "b", "effect": "NoExecute"}]})
    s.handlers.on_node(more, "Update", tainted)
    s.handlers.on_node(node("n2", taints=[NO_SCHEDULE]))
    assert waiting(s) == 1
    # A pod that tolerates the remaining taint wakes when the other goes.
    tolerant = pod("t", spec={"tolerations": [{"key": "gpu", "operator": "Exists"}]})
    await parked(s, tolerant, "TaintToleration")
    s.handlers.on_node(tainted, "Update", more)
    assert waiting(s) == 1  # p still does not tolerate gpu=busy
    s.handlers.on_node(changed(tainted, spec={"taints": [
        {"key": "gpu", "value": "busy", "effect": "PreferNoSchedule"}]}), "Update", tainted)
    assert waiting(s) == 0


async def test_node_affinity_waits_for_a_node_that_starts_to_match():
    n = node("n1", labels={"zone": "a"})
    s = scheduler_with(n)
    await parked(s, pod("p", spec={"nodeSelector": {"zone": "b"}}), "NodeAffinity")
    other = changed(n, metadata={"labels": {"zone": "a", "rack": "1"}})
    s.handlers.on_node(other, "Update", n)
    s.handlers.on_node(node("n2", labels={"zone": "c"}))
    assert waiting(s) == 1
    matching = changed(other, metadata={"labels": {"zone": "b", "rack": "1"}})
    s.handlers.on_node(matching, "Update", other)
    assert waiting(s) == 0
    # Already matching before the update: the update cannot be what helps.
    await parked(s, pod("q", spec={"nodeSelector": {"zone": "b"}}), "NodeAffinity")
    s.handlers.on_node(changed(matching, metadata={"labels": {"zone": "b", "rack": "2"}}),
               "Update", matching)
    assert waiting(s) == 1
    required = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "gpu", "operator": "Exists"}]}]}}}
    await parked(s, pod("r", spec={"affinity": required}), "NodeAffinity")
    s.handlers.on_node(node("n3", labels={"gpu": "yes"}))
    assert waiting(s) == 1  # r woke, q still waits


async def test_node_resources_fit_waits_for_more_of_what_the_pod_requests():
    n = node("n1", cpu="2", memory="4Gi", pods="10")
    s = scheduler_with(n)
    await parked(s, pod("p", cpu="3"), "NodeResourcesFit")
    more_memory = changed(n, status={"allocatable": {"cpu": "2", "memory": "8Gi",
                                                     "pods": "10"}})
    s.handlers.on_node(more_memory, "Update", n)  # not what it requests
    still_small = changed(more_memory, status={"allocatable": {"cpu": "2500m",
                                                               "memory": "8Gi", "pods": "10"}})
    s.handlers.on_node(still_small, "Update", more_memory)  # more cpu, still too little
    s.handlers.on_node(node("n2", cpu="1"))
    assert waiting(s) == 1
    s.handlers.on_node(changed(still_small, status={"allocatable": {"cpu": "4", "memory": "8Gi",
                                                            "pods": "10"}}),
               "Update", still_small)
    assert waiting(s) == 0
    # Room for more pods helps any pod that fits; a big enough node added too.
    await parked(s, pod("q", cpu="1"), "NodeResourcesFit")
    s.handlers.on_node(changed(n, status={"allocatable": {"cpu": "2", "memory": "4Gi",
                                                  "pods": "20"}}), "Update", n)
    assert waiting(s) == 0
    await parked(s, pod("r", cpu="8"), "NodeResourcesFit")
    s.handlers.on_node(node("n3", cpu="16"))
    assert waiting(s) == 0


async def test_a_placed_pod_deleted_still_wakes_a_pod_that_did_not_fit():
    s = scheduler_with(node("n1", cpu="2"))
    placed = pod("old", cpu="2")
    placed["spec"]["nodeName"] = "n1"
    s.handlers.on_pod_add(placed)
    await parked(s, pod("p", cpu="2"), "NodeResourcesFit")
    s.handlers.on_pod_delete(placed)
    assert waiting(s) == 0
