"""Node versions and the allocation cache: an answer is reused only while nothing it
depends on changed."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from draemu.scheduler.plugins.allocationcache import AllocationCache, NodeVersions
from draemu.scheduler.plugins.inflight import InFlight, pinned_nodes

pytestmark = pytest.mark.unit


def node_slice(name: str, node: str | None, pool: str) -> dict:
    spec = {"driver": "d", "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1}}
    if node:
        spec["nodeName"] = node
    else:
        spec["allNodes"] = True
    return {"metadata": {"name": name}, "spec": spec}


def allocation(pool: str, node: str | None = None) -> dict:
    result: dict = {"devices": {"results": [{"request": "r", "driver": "d", "pool": pool,
                                             "device": "x"}]}}
    if node:
        result["nodeSelector"] = {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [node]}]}]}
    return result


@dataclass
class Outcome:
    results: list | None


def test_allocation_in_a_node_pool_moves_only_that_node():
    v = NodeVersions()
    v.slice_set(node_slice("s1", "n1", "p1"))
    v.slice_set(node_slice("s2", "n2", "p2"))
    before = v.version("n1"), v.version("n2")
    v.allocation_changed(allocation("p1"))
    assert v.version("n1") != before[0]
    assert v.version("n2") == before[1]


def test_allocation_in_a_shared_pool_moves_every_node():
    v = NodeVersions()
    v.slice_set(node_slice("net", None, "fabric"))
    before = v.version("n2")
    v.allocation_changed(allocation("fabric"))
    assert v.version("n2") != before


def test_removed_slice_moves_its_node():
    v = NodeVersions()
    v.slice_set(node_slice("s1", "n1", "p1"))
    before = v.version("n1")
    v.slice_removed("s1")
    assert v.version("n1") != before


def test_cached_answer_is_reused_until_the_node_changes():
    v = NodeVersions()
    cache = AllocationCache(v)
    answer = Outcome([{"devices": {"results": [{"device": "x"}]}}])
    cache.put("spec", "n1", ("ns/a",), answer)
    assert cache.get("spec", "n1", ("ns/b",)) is answer  # same specs, other claims: fine
    v.node_changed("n1")
    assert cache.get("spec", "n1", ("ns/b",)) is None


def test_unsatisfiable_answer_is_reused_only_for_the_same_claims():
    cache = AllocationCache(NodeVersions())
    cache.put("spec", "n1", ("ns/a",), Outcome(None))
    assert cache.get("spec", "n1", ("ns/a",)) is not None
    assert cache.get("spec", "n1", ("ns/b",)) is None


def test_answers_with_share_ids_are_not_cached():
    cache = AllocationCache(NodeVersions())
    cache.put("spec", "n1", (), Outcome([{"devices": {"results": [{"shareID": "u"}]}}]))
    assert cache.get("spec", "n1", ()) is None


def test_in_flight_allocations_are_handed_out_per_node():
    flying = InFlight()
    flying.add("c1", {"status": {"allocation": allocation("p1", node="n1")}}, "pod-a")
    flying.add("c2", {"status": {"allocation": allocation("fabric")}}, "pod-b")
    assert len(flying.for_node("n1", exclude_pod="x")) == 2
    assert len(flying.for_node("n2", exclude_pod="x")) == 1
    assert len(flying.for_node("n1", exclude_pod="pod-a")) == 1
    flying.pop("c1")
    assert len(flying.for_node("n1", exclude_pod="x")) == 1


def test_only_metadata_name_selectors_pin_nodes():
    assert pinned_nodes(allocation("p", node="n1")) == {"n1"}
    assert pinned_nodes(allocation("p")) is None
    labelled = {"nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "zone", "operator": "In", "values": ["a"]}]}]}}
    assert pinned_nodes(labelled) is None
