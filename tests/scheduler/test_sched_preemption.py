"""DefaultPreemption in process: victims, node choice, PDBs, eligibility and messages
(the API writes go to a recording stub)."""

from __future__ import annotations

import asyncio

import pytest
from sched_helpers import node, pod

from draemu.scheduler.framework import Code
from draemu.scheduler.informers import ObjectLister
from draemu.scheduler.scheduler import Scheduler

pytestmark = pytest.mark.unit


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    async def patch(self, api, resource, name, body, namespace=None, subresource=None):
        self.calls.append(("patch", name, subresource, body))
        return {}

    async def delete(self, api, resource, name, namespace=None):
        self.calls.append(("delete", name))
        return {}

    def deleted(self) -> list[str]:
        return [c[1] for c in self.calls if c[0] == "delete"]

    def nominated(self, name: str) -> str | None:
        found = [c[3]["status"]["nominatedNodeName"] for c in self.calls
                 if c[0] == "patch" and c[1] == name and "nominatedNodeName" in c[3]["status"]]
        return found[-1] if found else None


def prio(name: str, priority: int, cpu: str = "1", labels: dict | None = None,
         **kw) -> dict:
    p = pod(name, cpu=cpu, **kw)
    p["spec"]["priority"] = priority
    if labels:
        p["metadata"]["labels"] = labels
    return p


def cluster(*names: str, cpu: str = "4") -> tuple[Scheduler, Recorder]:
    client = Recorder()
    s = Scheduler(client)  # type: ignore[arg-type]
    for name in names:
        s.cache.set_node(node(name, cpu=cpu))
    return s, client


def preempt(s: Scheduler, p: dict):
    result = s.scheduling_cycle(p)
    assert result.filtered is not None, result.message
    return result.message, asyncio.run(
        s.framework.run_post_filter(result.state, p, result.filtered))


def test_fewest_and_least_important_victims():
    s, client = cluster("n1")
    for name, priority in (("low", 1), ("mid", 2), ("other", 1)):
        s.cache.assume(prio(name, priority, cpu="1"), "n1")
    s.cache.assume(prio("high", 100, cpu="1"), "n1")  # not a victim: higher priority
    _, status = preempt(s, prio("new", 10, cpu="1"))
    assert status.ok
    # Removing every lower-priority pod makes room; then "mid" (most important) is
    # reprieved, then one of the priority-1 pods; the last one must go.
    assert len(client.deleted()) == 1 and client.deleted()[0] in ("low", "other")
    assert client.nominated("new") == "n1"


def test_node_with_lower_priority_victims_is_chosen():
    s, client = cluster("a", "b")
    s.cache.assume(prio("on-a", 5, cpu="4"), "a")
    s.cache.assume(prio("on-b", 3, cpu="4"), "b")
    _, status = preempt(s, prio("new", 10, cpu="1"))
    assert status.ok and client.deleted() == ["on-b"] and client.nominated("new") == "b"


def test_pod_disruption_budgets_are_respected_when_possible():
    s, client = cluster("a", "b")
    s.cache.assume(prio("guarded", 1, cpu="4", labels={"app": "db"}), "a")
    s.cache.assume(prio("free", 5, cpu="4", labels={"app": "web"}), "b")
    s.informers.serve_from("poddisruptionbudgets", ObjectLister([{
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "db"}}},
        "status": {"disruptionsAllowed": 0}}]))
    _, status = preempt(s, prio("new", 10, cpu="1"))
    # Fewest PDB violations comes before the lowest victim priority.
    assert status.ok and client.deleted() == ["free"]


def test_preemption_policy_never():
    s, client = cluster("n1", cpu="1")
    s.cache.assume(prio("low", 1, cpu="1"), "n1")
    new = prio("new", 10, cpu="1", spec={"preemptionPolicy": "Never"})
    _, status = preempt(s, new)
    assert status.code == Code.UNSCHEDULABLE
    assert status.message == "preemption: not eligible due to preemptionPolicy=Never."
    assert client.deleted() == []


def test_no_victims_and_unhelpful_nodes_are_counted():
    s, client = cluster("busy", "cordoned", cpu="1")
    s.cache.set_node(node("cordoned", cpu="1", unschedulable=True))
    s.cache.assume(prio("same", 10, cpu="1"), "busy")
    message, status = preempt(s, prio("new", 10, cpu="1"))
    assert message == ("0/2 nodes are available: 1 Insufficient cpu, "
                       "1 node(s) were unschedulable.")
    assert status.message == ("preemption: 0/2 nodes are available: 1 No preemption victims "
                              "found for incoming pod, 1 Preemption is not helpful for "
                              "scheduling.")
    assert client.deleted() == []


def test_preemption_that_cannot_help_leaves_everyone_alone():
    s, client = cluster("n1", cpu="2")
    s.cache.assume(prio("low", 1, cpu="1"), "n1")
    _, status = preempt(s, prio("huge", 10, cpu="3"))
    assert not status.ok
    assert "1 Insufficient cpu" in status.message and client.deleted() == []


def test_spread_constraints_see_the_node_without_the_victims():
    s, client = cluster("a", "b", cpu="1")
    for n in ("a", "b"):
        s.cache.set_node(node(n, cpu="1", labels={"zone": n}))
    s.cache.assume(prio("low", 1, cpu="1", labels={"app": "x"}), "a")
    s.cache.assume(prio("peer", 20, cpu="1", labels={"app": "web"}), "b")
    spread = {"topologySpreadConstraints": [{
        "maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}}}]}
    new = prio("new", 10, cpu="1", labels={"app": "web"}, spec=spread)
    _, status = preempt(s, new)
    assert status.ok and client.deleted() == ["low"] and client.nominated("new") == "a"


def test_nominated_node_is_tried_first():
    s, _ = cluster("a", "b")
    s.cache.assume(prio("x", 1, cpu="3"), "b")
    new = prio("new", 10, cpu="1", status={"phase": "Pending", "nominatedNodeName": "b"})
    assert s.scheduling_cycle(new).node_name == "b"  # although "a" is emptier
