"""PodTopologySpread and InterPodAffinity through the scheduling cycle (in process: the
cache is filled by hand, pods are assumed where the cycle puts them)."""

from __future__ import annotations

from collections import Counter

import pytest
from sched_helpers import node, pod

from draemu.scheduler.framework import CycleState
from draemu.scheduler.informers import ObjectLister
from draemu.scheduler.nodeinfo import NodeInfo
from draemu.scheduler.plugins.podtopologyspread import PodTopologySpread
from draemu.scheduler.scheduler import Scheduler

pytestmark = pytest.mark.unit

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def cluster(zones: dict[str, int], **node_kwargs) -> Scheduler:
    s = Scheduler(None)  # type: ignore[arg-type]  (no API calls in the scheduling cycle)
    for zone, count in zones.items():
        for i in range(count):
            name = f"{zone}-{i}"
            s.cache.set_node(node(name, labels={ZONE: zone, HOST: name}, **node_kwargs))
    return s


def labelled(name: str, labels: dict[str, str], namespace: str = "default", **kw) -> dict:
    p = pod(name, namespace=namespace, **kw)
    p["metadata"]["labels"] = labels
    return p


def place(s: Scheduler, p: dict) -> str:
    result = s.scheduling_cycle(p)
    return result.node_name or result.message


def spread(key: str = ZONE, when: str = "DoNotSchedule", skew: int = 1, **extra) -> dict:
    return {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": {"app": "web"}}, **extra}


def zone_of(name: str) -> str:
    return name.split("-")[0]


# --- PodTopologySpread ------------------------------------------------------------------

def test_deployment_spreads_evenly_over_three_zones():
    s = cluster({"a": 2, "b": 2, "c": 2})
    placed = [place(s, labelled(f"web-{i}", {"app": "web"},
                                spec={"topologySpreadConstraints": [spread()]}))
              for i in range(9)]
    assert Counter(zone_of(n) for n in placed) == {"a": 3, "b": 3, "c": 3}


def test_spread_rejects_the_overfull_zone_and_counts_reasons():
    s = cluster({"a": 1, "b": 1, "c": 1})
    s.cache.set_node(node("c-0", cpu="100m", labels={ZONE: "c", HOST: "c-0"}))
    web = {"topologySpreadConstraints": [spread()]}
    assert zone_of(place(s, labelled("w0", {"app": "web"}, cpu="500m", spec=web))) in "ab"
    assert zone_of(place(s, labelled("w1", {"app": "web"}, cpu="500m", spec=web))) in "ab"
    # Zone c cannot take a pod (cpu) and is at 0: a and b (at 1) would go to skew 2.
    assert place(s, labelled("w2", {"app": "web"}, cpu="500m", spec=web)) == (
        "0/3 nodes are available: 1 Insufficient cpu, "
        "2 node(s) didn't match pod topology spread constraints.")


def test_node_without_the_topology_key_is_unresolvable():
    s = Scheduler(None)  # type: ignore[arg-type]
    s.cache.set_node(node("bare"))
    p = labelled("w", {"app": "web"}, spec={"topologySpreadConstraints": [spread()]})
    assert place(s, p) == ("0/1 nodes are available: 1 node(s) didn't match pod topology "
                           "spread constraints (missing required label).")


def test_min_domains_counts_missing_domains_as_empty():
    s = cluster({"a": 2, "b": 2})
    web = {"topologySpreadConstraints": [spread(minDomains=3)]}
    assert {zone_of(place(s, labelled(f"w{i}", {"app": "web"}, spec=web))) for i in range(2)} \
        == {"a", "b"}
    # Only 2 of 3 domains exist: the global minimum is 0, so skew would be 2 everywhere.
    assert "4 node(s) didn't match pod topology spread constraints" in \
        place(s, labelled("w2", {"app": "web"}, spec=web))


def test_node_affinity_policy_decides_which_nodes_count():
    s = cluster({"a": 1, "b": 1})
    s.cache.assume(labelled("old", {"app": "web"}), "b-0")
    pinned = {"nodeSelector": {ZONE: "a"}}
    honor = {**pinned, "topologySpreadConstraints": [spread()]}
    # Honor (default): zone b does not count, so zone a is alone and always at the minimum.
    assert place(s, labelled("w0", {"app": "web"}, spec=honor)) == "a-0"
    assert place(s, labelled("w1", {"app": "web"}, spec=honor)) == "a-0"
    ignore = {**pinned, "topologySpreadConstraints": [spread(nodeAffinityPolicy="Ignore")]}
    # Ignore: zone b (1 pod) is the minimum; zone a has 2: 2 + 1 - 1 > 1.
    assert "didn't match pod topology spread constraints" in \
        place(s, labelled("w2", {"app": "web"}, spec=ignore))


def test_node_taints_policy_honor_leaves_out_tainted_nodes():
    s = cluster({"a": 1})
    taint = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
    s.cache.set_node(node("b-0", labels={ZONE: "b", HOST: "b-0"}, taints=[taint]))
    ignore = {"topologySpreadConstraints": [spread()]}
    honor = {"topologySpreadConstraints": [spread(nodeTaintsPolicy="Honor")]}
    assert place(s, labelled("w0", {"app": "web"}, spec=ignore)) == "a-0"
    # Ignore (default): zone b counts with 0 pods, so a second pod in zone a is skew 2.
    assert "1 node(s) didn't match pod topology spread constraints" in \
        place(s, labelled("w1", {"app": "web"}, spec=ignore))
    assert place(s, labelled("w2", {"app": "web"}, spec=honor)) == "a-0"


def test_schedule_anyway_prefers_the_emptier_zone():
    s = cluster({"a": 1, "b": 1, "c": 1})
    for i in range(2):
        s.cache.assume(labelled(f"old-a{i}", {"app": "web"}), "a-0")
    s.cache.assume(labelled("old-b", {"app": "web"}), "b-0")
    soft = {"topologySpreadConstraints": [spread(when="ScheduleAnyway")]}
    assert place(s, labelled("w", {"app": "web"}, spec=soft)) == "c-0"


def test_default_constraints_use_the_selector_of_the_pods_controller():
    nodes = [NodeInfo(node(f"n{i}", labels={ZONE: "z", HOST: f"n{i}"})) for i in range(2)]
    for i in range(3):
        nodes[0].add_pod(labelled(f"old{i}", {"app": "web"}))
    selector = {"matchLabels": {"app": "web"}}
    plugin = PodTopologySpread(lambda: nodes, lambda _pod: selector)
    state = CycleState()
    new = labelled("new", {"app": "web"})
    assert plugin.pre_score(state, new, nodes) is False
    scores = {n.name: plugin.score(state, new, n) for n in nodes}
    plugin.normalize_scores(scores)
    assert scores["n1"] == 100 and scores["n0"] < scores["n1"]
    # Without a Service or controller selecting the pod there is nothing to spread.
    assert PodTopologySpread(lambda: nodes).pre_score(CycleState(), new, nodes) is True


# --- InterPodAffinity -------------------------------------------------------------------

def anti(key: str = HOST, labels: dict | None = None) -> dict:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": key, "labelSelector": {"matchLabels": labels or {"app": "db"}}}]}}


def test_required_anti_affinity_keeps_replicas_apart():
    s = cluster({"a": 1, "b": 1, "c": 1})
    placed = [place(s, labelled(f"db-{i}", {"app": "db"}, spec={"affinity": anti()}))
              for i in range(3)]
    assert sorted(placed) == ["a-0", "b-0", "c-0"]
    assert place(s, labelled("db-3", {"app": "db"}, spec={"affinity": anti()})) == (
        "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules.")


def test_existing_pods_anti_affinity_keeps_other_pods_away():
    s = cluster({"a": 1, "b": 1})
    s.cache.assume(labelled("loner", {"app": "loner"},
                            spec={"affinity": anti(ZONE, {"app": "noisy"})}), "a-0")
    assert place(s, labelled("n0", {"app": "noisy"}, cpu="3")) == "b-0"
    assert place(s, labelled("n1", {"app": "noisy"}, cpu="3")) == (
        "0/2 nodes are available: 1 Insufficient cpu, "
        "1 node(s) didn't satisfy existing pods anti-affinity rules.")


def test_required_affinity_follows_the_matching_pod_and_lets_the_first_one_in():
    s = cluster({"a": 2, "b": 2})
    together = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"app": "cache"}}}]}}
    first = place(s, labelled("c0", {"app": "cache"}, spec={"affinity": together}))
    assert first in ("a-0", "a-1", "b-0", "b-1")  # nothing matches yet: anywhere
    for i in range(4):
        assert zone_of(place(s, labelled(f"c{i + 1}", {"app": "cache"},
                                         spec={"affinity": together}))) == zone_of(first)
    # A pod that does not match its own term cannot be the first of anything.
    s2 = cluster({"a": 1})
    assert place(s2, labelled("x", {"app": "other"}, spec={"affinity": together})) == (
        "0/1 nodes are available: 1 node(s) didn't match pod affinity rules.")


def test_terms_select_pods_in_namespaces_by_name_or_selector():
    s = cluster({"a": 1, "b": 1})
    s.informers.serve_from("namespaces", ObjectLister([
        {"metadata": {"name": "default"}},
        {"metadata": {"name": "team", "labels": {"tier": "gold"}}}]))
    s.cache.assume(labelled("gold", {"app": "db"}, namespace="team"), "a-0")
    # Same namespace only (default): the pod in "team" does not count.
    assert place(s, labelled("p0", {}, spec={"affinity": anti(ZONE)})) in ("a-0", "b-0")
    by_selector = anti(ZONE)
    term = by_selector["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    term["namespaceSelector"] = {"matchLabels": {"tier": "gold"}}
    assert place(s, labelled("p1", {}, spec={"affinity": by_selector})) == "b-0"
    term.pop("namespaceSelector")
    term["namespaces"] = ["team"]
    assert place(s, labelled("p2", {}, spec={"affinity": by_selector})) == "b-0"


def test_preferred_anti_affinity_scores_nodes_apart():
    s = cluster({"a": 1, "b": 1})
    s.cache.assume(labelled("db0", {"app": "db"}), "a-0")
    apart = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": {"topologyKey": HOST,
                                            "labelSelector": {"matchLabels": {"app": "db"}}}}]}}
    for i in range(5):
        p = labelled(f"db{i + 1}", {"app": "db"}, spec={"affinity": apart})
        assert place(s, p) == "b-0"
        s.cache.forget(p)


def test_placed_pods_required_affinity_draws_a_pod_without_terms_of_its_own():
    # Upstream's hardPodAffinityWeight: found through the cache's list of nodes with
    # affinity pods, not by looking at every node.
    s = cluster({"a": 3, "b": 3})
    together = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"app": "web"}}}]}}
    s.cache.assume(labelled("front", {"app": "front"}, spec={"affinity": together}), "b-1")
    assert [n.name for n in s.cache.nodes_with_affinity()] == ["b-1"]
    for i in range(4):
        p = labelled(f"web{i}", {"app": "web"})
        assert zone_of(place(s, p)) == "b"
        s.cache.forget(p)
    # A pod the term does not select is not drawn: nothing to score, PreScore skips.
    ipa = next(p for p in s.framework.plugins if p.name == "InterPodAffinity")
    assert ipa.pre_score(CycleState(), labelled("other", {"app": "other"}),
                         s.cache.nodes()) is True


def test_pre_score_skips_without_looking_at_nodes_when_no_pod_has_terms():
    from draemu.scheduler.plugins.interpodaffinity import InterPodAffinity

    def every_node() -> list[NodeInfo]:
        raise AssertionError("looked at every node")

    ipa = InterPodAffinity(every_node, lambda _ns: {}, nodes_with_affinity=lambda: [],
                           nodes_with_required_anti_affinity=lambda: [])
    p = labelled("p", {"app": "web"})
    assert ipa.pre_score(CycleState(), p, []) is True
    status, _ = ipa.pre_filter(CycleState(), p)
    assert status.code.name == "SKIP"
