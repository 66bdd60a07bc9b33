"""The node cache: bound pods count against their node; assumed pods until confirmed."""

from __future__ import annotations

import pytest
from sched_helpers import node, pod

from draemu.scheduler.cache import Cache

pytestmark = pytest.mark.unit


def bound(p: dict, node_name: str) -> dict:
    return {**p, "spec": {**p["spec"], "nodeName": node_name}}


def test_bound_pod_requests_count_on_its_node():
    cache = Cache()
    cache.set_node(node("n1"))
    cache.add_pod(bound(pod("p", cpu="1"), "n1"))
    assert cache.node("n1").requested.milli_cpu == 1000


def test_forgetting_an_assumed_pod_frees_its_requests():
    cache = Cache()
    cache.set_node(node("n1"))
    p = pod("p", cpu="1")
    cache.assume(p, "n1")
    assert cache.node("n1").requested.milli_cpu == 1000
    cache.forget(p)
    assert cache.node("n1").requested.milli_cpu == 0


def test_confirmed_pod_is_not_forgotten():
    cache = Cache()
    cache.set_node(node("n1"))
    p = pod("p", cpu="1")
    cache.assume(p, "n1")
    cache.add_pod(bound(p, "n1"))
    cache.forget(p)
    assert cache.node("n1").requested.milli_cpu == 1000


def test_pod_seen_before_its_node_counts_once_the_node_appears():
    cache = Cache()
    cache.add_pod(bound(pod("p", cpu="2"), "late"))
    assert cache.node("late") is None
    cache.set_node(node("late"))
    assert cache.node("late").requested.milli_cpu == 2000


def test_nodes_keep_their_insertion_order():
    cache = Cache()
    for name in ("b", "a", "c"):
        cache.set_node(node(name))
    cache.set_node(node("a", cpu="8"))
    assert [n.name for n in cache.nodes()] == ["b", "a", "c"]


def test_the_cache_lists_the_ready_nodes_with_affinity_pods():
    cache = Cache()
    for name in ("n1", "n2"):
        cache.set_node(node(name))
    term = {"topologyKey": "zone", "labelSelector": {}}
    anti = pod("anti", spec={"affinity": {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [term]}}})
    preferred = pod("pref", spec={"affinity": {"podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "podAffinityTerm": term}]}}})
    cache.add_pod(bound(pod("plain"), "n1"))
    assert cache.nodes_with_affinity() == [] and cache.nodes_with_required_anti_affinity() == []
    cache.add_pod(bound(anti, "n1"))
    cache.assume(preferred, "n2")
    assert [n.name for n in cache.nodes_with_affinity()] == ["n1", "n2"]
    assert [n.name for n in cache.nodes_with_required_anti_affinity()] == ["n1"]
    cache.add_pod(bound(anti, "n2"))  # moved
    assert [n.name for n in cache.nodes_with_required_anti_affinity()] == ["n2"]
    cache.forget(preferred)
    cache.add_pod(bound(pod("on-unknown-node", spec={"affinity": anti["spec"]["affinity"]}),
                        "n3"))  # its Node object is not there yet: not listed
    assert [n.name for n in cache.nodes_with_affinity()] == ["n2"]
    cache.remove_pod(anti)
    assert cache.nodes_with_affinity() == []
    cache.set_node(node("n3"))
    assert [n.name for n in cache.nodes_with_required_anti_affinity()] == ["n3"]
