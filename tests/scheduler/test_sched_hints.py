"""Queueing hints: a pod a plugin rejected leaves the unschedulable pods on exactly the
events upstream's QueueingHintFn of that plugin answers Queue for (in process: events
fed to the scheduler's informer handlers by hand)."""

from __future__ import annotations

import asyncio

import pytest
from sched_helpers import node, pod

from draemu.scheduler.framework import ClusterEvent
from draemu.scheduler.queue import SchedulingQueue
from draemu.scheduler.scheduler import Scheduler

pytestmark = pytest.mark.unit

ZONE = "topology.kubernetes.io/zone"


def labelled(name: str, labels: dict[str, str], namespace: str = "default", **kw) -> dict:
    p = pod(name, namespace=namespace, **kw)
    p["metadata"]["labels"] = labels
    return p


def placed(p: dict, node_name: str = "n1") -> dict:
    return {**p, "spec": {**p["spec"], "nodeName": node_name}}


async def parked(s: Scheduler, p: dict, rejector: str) -> str:
    """The pod in the scheduler's queue as rejected by `rejector`, past its backoff."""
    key = f"{p['metadata']['namespace']}/{p['metadata']['name']}"
    s.queue.add(key, p)
    qp = await asyncio.wait_for(s.queue.pop(), 1)
    s.queue.requeue_unschedulable(qp, {rejector})
    qp.last_failure -= 60
    assert s.queue.stats()["unschedulable"] == 1
    return key


def waiting(s: Scheduler) -> int:
    return s.queue.stats()["unschedulable"]


def with_affinity(name: str, kind: str, labels: dict[str, str]) -> dict:
    return labelled(name, {}, spec={"affinity": {kind: {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": ZONE, "labelSelector": {"matchLabels": labels}}]}}})


async def test_affinity_waits_for_a_placed_pod_that_matches_its_terms():
    s = Scheduler(None)  # type: ignore[arg-type]
    s.cache.set_node(node("n1", labels={ZONE: "a"}))
    await parked(s, with_affinity("p", "podAffinity", {"app": "db"}), "InterPodAffinity")
    s.handlers.on_pod_add(placed(labelled("web", {"app": "web"})))  # does not match
    s.handlers.on_pod_add(labelled("db-pending", {"app": "db"}))  # matches, but not placed
    assert waiting(s) == 1
    db = labelled("db", {"app": "db"})
    s.handlers.on_pod_add(db)
    s.handlers.on_pod_update(db, placed(db))  # placed now: as a placed pod added
    assert waiting(s) == 0


async def test_affinity_relabel_requeues_only_when_the_match_appears():
    s = Scheduler(None)  # type: ignore[arg-type]
    s.cache.set_node(node("n1", labels={ZONE: "a"}))
    await parked(s, with_affinity("p", "podAffinity", {"app": "db"}), "InterPodAffinity")
    other = placed(labelled("o", {"app": "web"}))
    s.handlers.on_pod_add(other)
    s.handlers.on_pod_update(other, {**other, "metadata": {**other["metadata"],
                                                   "labels": {"app": "web", "x": "y"}}})
    assert waiting(s) == 1
    s.handlers.on_pod_update(other, {**other, "metadata": {**other["metadata"],
                                                   "labels": {"app": "db"}}})
    assert waiting(s) == 0


async def test_anti_affinity_waits_for_the_blocking_pod_to_go():
    s = Scheduler(None)  # type: ignore[arg-type]
    s.cache.set_node(node("n1", labels={ZONE: "a"}))
    blocker = placed(labelled("db", {"app": "db"}))
    s.handlers.on_pod_add(blocker)
    await parked(s, with_affinity("p", "podAntiAffinity", {"app": "db"}), "InterPodAffinity")
    s.handlers.on_pod_add(placed(labelled("db2", {"app": "db"})))  # one more: cannot help
    unrelated = placed(labelled("web", {"app": "web"}))
    s.handlers.on_pod_add(unrelated)
    s.handlers.on_pod_delete(unrelated)
    assert waiting(s) == 1
    s.handlers.on_pod_delete(blocker)
    assert waiting(s) == 0


async def test_a_placed_pods_anti_affinity_requeues_the_pod_it_kept_out_when_deleted():
    s = Scheduler(None)  # type: ignore[arg-type]
    s.cache.set_node(node("n1", labels={ZONE: "a"}))
    loner = placed(with_affinity("loner", "podAntiAffinity", {"app": "noisy"}))
    s.handlers.on_pod_add(loner)
    await parked(s, labelled("n0", {"app": "noisy"}), "InterPodAffinity")
    s.handlers.on_pod_delete(placed(labelled("other", {})))
    assert waiting(s) == 1
    s.handlers.on_pod_delete(loner)
    assert waiting(s) == 0


async def test_affinity_node_events_need_a_topology_key_label_change():
    s = Scheduler(None)  # type: ignore[arg-type]
    await parked(s, with_affinity("p", "podAffinity", {"app": "db"}), "InterPodAffinity")
    bare = node("n2")
    s.handlers.on_node(bare)  # no zone label
    s.handlers.on_node({**bare, "status": {**bare["status"], "phase": "x"}}, "Update", bare)
    assert waiting(s) == 1
    zoned = node("n2", labels={ZONE: "b"})
    s.handlers.on_node(zoned, "Update", bare)
    assert waiting(s) == 0


def spread_pod(name: str, **extra) -> dict:
    return labelled(name, {"app": "web"}, spec={"topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "web"}}, **extra}]})


async def test_spread_waits_for_a_selected_placed_pod_of_its_namespace():
    s = Scheduler(None)  # type: ignore[arg-type]
    s.cache.set_node(node("n1", labels={ZONE: "a"}))
    await parked(s, spread_pod("p"), "PodTopologySpread")
    s.handlers.on_pod_add(placed(labelled("db", {"app": "db"})))  # not selected
    s.handlers.on_pod_add(placed(labelled("w", {"app": "web"}, namespace="other")))  # other ns
    s.handlers.on_pod_add(labelled("pending", {"app": "web"}))  # not placed
    assert waiting(s) == 1
    web = placed(labelled("w", {"app": "web"}))
    s.handlers.on_pod_add(web)
    assert waiting(s) == 0
    await parked(s, spread_pod("q"), "PodTopologySpread")
    s.handlers.on_pod_update(web, {**web, "metadata": {**web["metadata"],
                                               "labels": {"app": "web", "v": "2"}}})
    assert waiting(s) == 1  # still selected: the counts do not change
    s.handlers.on_pod_delete(web)
    assert waiting(s) == 0


async def test_spread_node_events_count_when_a_domain_can_change():
    s = Scheduler(None)  # type: ignore[arg-type]
    await parked(s, spread_pod("p"), "PodTopologySpread")
    zoned = node("n1", labels={ZONE: "a"})
    s.handlers.on_node(node("n0"))  # no zone: in no domain
    s.handlers.on_node(zoned, "Update", zoned)  # nothing that counts changed
    assert waiting(s) == 1
    s.handlers.on_node(zoned)
    assert waiting(s) == 0
    await parked(s, spread_pod("q"), "PodTopologySpread")
    tainted = node("n1", labels={ZONE: "a"}, taints=[{"key": "k", "effect": "NoSchedule"}])
    s.handlers.on_node(tainted, "Update", zoned)
    assert waiting(s) == 0


async def test_node_ports_wait_for_a_conflicting_pod_to_go():
    s = Scheduler(None)  # type: ignore[arg-type]
    s.cache.set_node(node("n1"))

    def with_port(name: str, port: int) -> dict:
        return pod(name, spec={"containers": [{"name": "c", "image": "pause", "ports": [
            {"containerPort": 80, "hostPort": port}]}]})

    await parked(s, with_port("p", 8080), "NodePorts")
    s.handlers.on_pod_delete(placed(with_port("other", 9090)))
    s.handlers.on_pod_delete(with_port("pending", 8080))  # never placed: freed nothing
    assert waiting(s) == 1
    s.handlers.on_pod_delete(placed(with_port("holder", 8080)))
    assert waiting(s) == 0


async def test_a_hint_is_asked_for_in_flight_events_too_and_a_failing_one_requeues():
    seen = []

    def hint(event, p, old, new):
        seen.append((event.resource, p["metadata"]["name"], old, new))
        if new == "boom":
            raise RuntimeError("hint bug")
        return new == "yes"

    pod_add = ClusterEvent("Pod", "Add")
    now = [1000.0]
    q = SchedulingQueue({"P": {pod_add}}, hints={"P": hint}, clock=lambda: now[0])
    q.add("ns/a", pod("a"))
    qp = await asyncio.wait_for(q.pop(), 1)
    q.on_event(pod_add, new="no")  # while "a" is in flight
    q.requeue_unschedulable(qp, {"P"})
    assert q.stats()["unschedulable"] == 1
    assert seen == [("Pod", "a", None, "no")]
    now[0] += 60
    assert q.on_event(pod_add, new="no") == 0
    assert q.on_event(pod_add, new="boom") == 1  # an error: upstream queues
    q.add("ns/b", pod("b"))
    first = await asyncio.wait_for(q.pop(), 1)
    second = await asyncio.wait_for(q.pop(), 1)
    q.on_event(pod_add, new="yes")  # while both are in flight
    q.requeue_unschedulable(first, {"P"})
    q.requeue_unschedulable(second, {"P"})
    assert q.stats()["unschedulable"] == 0 and q.stats()["backoff"] == 2
