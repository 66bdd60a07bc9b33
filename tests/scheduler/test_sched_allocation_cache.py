"""Node versions and the allocation cache: an answer is reused only while nothing it
depends on changed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from draemu.scheduler.dra.allocationcache import AllocationCache, NodeVersions
from draemu.scheduler.dra.inflight import InFlight, pinned_nodes

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


def test_an_answer_with_share_ids_is_retired_once_reserved():
    v = NodeVersions()
    v.slice_set(node_slice("s1", "n1", "p1"))
    cache = AllocationCache(v)
    shared = allocation("p1")
    shared["devices"]["results"][0]["shareID"] = "u"
    cache.put("spec", "n1", (), Outcome([shared]))
    assert cache.get("spec", "n1", ()) is not None
    v.allocation_changed(shared)  # what Reserve does with the allocation it flies
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


def _scheduler_with_gpus(count: int) -> tuple[Any, str]:
    """A scheduler (no API calls in its scheduling cycle) with a GPU class and one node
    n1 offering `count` GPUs; and the driver's name."""
    from sched_helpers import node

    from draemu.scheduler.scheduler import Scheduler

    driver = "gpu.example.com"
    s = Scheduler(None)  # type: ignore[arg-type]
    s.dra.set_class({"metadata": {"name": "gpu"}, "spec": {"selectors": [
        {"cel": {"expression": f'device.driver == "{driver}"'}}]}})
    s.cache.set_node(node("n1"))
    s.dra.set_slice({"metadata": {"name": "n1-gpus"}, "spec": {
        "driver": driver, "nodeName": "n1",
        "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": f"gpu-{i}"} for i in range(count)]}})
    return s, driver


def test_an_allocation_landing_as_reserved_keeps_the_cached_answers():
    """The informer showing the claim allocated exactly as Reserve chose changes no device
    in use: the node's version (so its cached answers) stays; another allocation than the
    one in flight moves it."""
    from sched_helpers import pod

    s, driver = _scheduler_with_gpus(4)

    def claimed(i: int) -> tuple[dict, dict]:
        c = {"metadata": {"name": f"c{i}", "namespace": "default", "uid": f"claim-{i}"},
             "spec": {"devices": {"requests": [
                 {"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}
        s.dra.set_claim(c)
        return pod(f"p{i}", claims=[{"name": "gpu", "resourceClaimName": f"c{i}"}]), c

    first, c0 = claimed(0)
    assert s.scheduling_cycle(first).node_name == "n1"
    assumed = s.dra.assumed_claim("claim-0")
    version = s.dra.versions.version("n1")
    s.dra.set_claim(assumed)  # landed as reserved
    assert s.dra.assumed_claim("claim-0") is None
    assert s.dra.versions.version("n1") == version
    second, _ = claimed(1)
    assert s.scheduling_cycle(second).node_name == "n1"

    def device(uid: str) -> str:
        claim = s.dra.assumed_claim(uid) or assumed
        return claim["status"]["allocation"]["devices"]["results"][0]["device"]

    assert device("claim-1") != device("claim-0")  # the landed device counts as in use
    other = {**assumed, "status": {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": driver, "pool": "n1", "device": "gpu-3"}]}}}}
    s.dra.set_claim(s.dra.assumed_claim("claim-1"))
    s.dra.set_claim({**c0, "status": {}})  # deallocated ...
    version = s.dra.versions.version("n1")
    s.dra.set_claim(other)  # ... and allocated otherwise, by someone else
    assert s.dra.versions.version("n1") != version


def test_an_unsatisfiable_verdict_holds_for_other_claims_until_the_node_changes():
    v = NodeVersions()
    cache = AllocationCache(v)
    cache.put("spec", "n1", ("ns/a",), Outcome(None))
    cache.put("spec", "n2", ("ns/a",), Outcome([{"devices": {"results": [{"device": "x"}]}}]))
    assert cache.unsatisfiable("spec", "n1")
    assert not cache.unsatisfiable("spec", "n2")  # allocated: not a verdict of this kind
    assert not cache.unsatisfiable("other spec", "n1")
    v.node_changed("n1")
    assert not cache.unsatisfiable("spec", "n1")


def test_a_pod_rejected_on_another_pods_verdict_is_told_about_its_own_claim():
    """The second pod of the same claim specs is turned down on the first one's verdict
    (no allocation on the node), and its message still names its own claim."""
    from sched_helpers import pod

    s, driver = _scheduler_with_gpus(1)
    request = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}
    s.dra.set_claim({"metadata": {"name": "fill", "namespace": "default", "uid": "fill"},
                     "spec": request, "status": {"allocation": {"devices": {"results": [
                         {"request": "gpu", "driver": driver, "pool": "n1",
                          "device": "gpu-0"}]}}}})
    messages = []
    for i in range(2):
        s.dra.set_claim({"metadata": {"name": f"c{i}", "namespace": "default",
                                      "uid": f"claim-{i}"}, "spec": request})
        hits = s.dra.cache.hits
        result = s.scheduling_cycle(pod(f"p{i}", claims=[
            {"name": "gpu", "resourceClaimName": f"c{i}"}]))
        assert result.node_name is None
        messages.append((result.message, s.dra.cache.hits - hits))
    assert "claim default/c0" in messages[0][0] and messages[0][1] == 0
    assert "claim default/c1" in messages[1][0] and messages[1][1] == 1
    assert messages[1][0] == messages[0][0].replace("default/c0", "default/c1")
