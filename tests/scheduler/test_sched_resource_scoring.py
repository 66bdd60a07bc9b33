"""NodeResourcesFit's scoring strategies, NodeResourcesBalancedAllocation and NodePorts,
with upstream's arithmetic (values worked out by hand from upstream's formulas)."""

from __future__ import annotations

import pytest
from sched_helpers import node, pod

from draemu.scheduler.framework import CycleState
from draemu.scheduler.nodeinfo import NodeInfo
from draemu.scheduler.plugins.nodeports import NodePorts
from draemu.scheduler.plugins.noderesources import (
    BalancedAllocation,
    NodeResourcesFit,
    ScoringStrategy,
)
from draemu.scheduler.scheduler import Scheduler

pytestmark = pytest.mark.unit


def busy_node(name: str = "n", cpu_used: str = "1", mem_used: str = "2Gi") -> NodeInfo:
    info = NodeInfo(node(name, cpu="4", memory="8Gi"))
    info.add_pod(pod("used", cpu=cpu_used, memory=mem_used))
    return info


def fit_score(strategy: ScoringStrategy | None, p: dict, info: NodeInfo) -> int:
    plugin, state = NodeResourcesFit(scoring=strategy), CycleState()
    plugin.pre_score(state, p, [info])
    return plugin.score(state, p, info)


def test_least_allocated_default():
    # cpu: (4000 - 2000) * 100 / 4000 = 50; memory: (8 - 4) * 100 / 8 = 50.
    assert fit_score(None, pod("p", cpu="1", memory="2Gi"), busy_node()) == 50


def test_containers_without_requests_count_as_100m_and_200mib():
    info = NodeInfo(node("n", cpu="1", memory="1000Mi"))
    info.add_pod(pod("best-effort"))
    # cpu: (1000 - 200) * 100 / 1000 = 80; memory: (1000 - 400) * 100 / 1000 = 60 -> 70.
    assert fit_score(None, pod("p"), info) == 70


def test_most_allocated():
    strategy = ScoringStrategy("MostAllocated", [("cpu", 1), ("memory", 1)])
    # cpu 2000/4000 = 50, memory 5/8 = 62 -> (50 + 62) / 2 = 56.
    assert fit_score(strategy, pod("p", cpu="1", memory="3Gi"), busy_node()) == 56


def test_requested_to_capacity_ratio_with_weights():
    strategy = ScoringStrategy("RequestedToCapacityRatio", [("cpu", 3), ("memory", 1)],
                               shape=[(0, 0), (100, 10)])
    # Utilisation cpu 50% -> 50, memory 62% -> 62; (50*3 + 62) / 4 = 53.
    assert fit_score(strategy, pod("p", cpu="1", memory="3Gi"), busy_node()) == 53


def test_requested_to_capacity_ratio_descending_shape_truncates_like_go():
    strategy = ScoringStrategy("RequestedToCapacityRatio", [("cpu", 1)],
                               shape=[(0, 10), (30, 3)])
    info = NodeInfo(node("n", cpu="3", memory="8Gi"))
    # 100m of 3000m: utilisation 3%; 100 + (30 - 100) * 3 / 30 = 100 - 7 = 93 (Go truncates).
    assert fit_score(strategy, pod("p", cpu="100m"), info) == 93


def test_balanced_allocation():
    plugin, state = BalancedAllocation(), CycleState()
    p = pod("p", cpu="1", memory="1Gi")
    info = busy_node()
    assert plugin.pre_score(state, p, [info]) is False
    # With the pod: cpu 2/4 = 0.5, memory 3/8 = 0.375: std 0.0625 -> 93; without it:
    # 1/4 and 2/8, std 0 -> 100. 50 + (50 + 93 - 100) / 2 = 71 (Go truncates 21.5).
    assert plugin.score(state, p, info) == 71
    assert BalancedAllocation().pre_score(CycleState(), pod("best-effort"), [info]) is True


def test_scheduler_prefers_the_emptier_node_by_default():
    s = Scheduler(None)  # type: ignore[arg-type]
    s.cache.set_node(node("full", cpu="4", memory="8Gi"))
    s.cache.set_node(node("empty", cpu="4", memory="8Gi"))
    s.cache.assume(pod("used", cpu="3", memory="6Gi"), "full")
    assert s.scheduling_cycle(pod("p", cpu="500m", memory="1Gi")).node_name == "empty"


def with_port(name: str, port: int, ip: str = "", protocol: str = "") -> dict:
    p = pod(name)
    entry = {"containerPort": 80, "hostPort": port}
    if ip:
        entry["hostIP"] = ip
    if protocol:
        entry["protocol"] = protocol
    p["spec"]["containers"][0]["ports"] = [entry]
    return p


@pytest.mark.parametrize(("used", "wanted", "fits"), [
    (("", ""), ("", ""), False),  # both 0.0.0.0/TCP
    (("10.0.0.1", ""), ("", ""), False),  # 0.0.0.0 conflicts with any address
    (("10.0.0.1", ""), ("10.0.0.2", ""), True),
    (("", "UDP"), ("", ""), True),  # other protocol
])
def test_node_ports(used, wanted, fits):
    info = NodeInfo(node("n"))
    info.add_pod(with_port("old", 8080, *used))
    plugin, state, p = NodePorts(), CycleState(), with_port("new", 8080, *wanted)
    assert plugin.pre_filter(state, p)[0].ok
    status = plugin.filter(state, p, info)
    assert status.ok is fits
    if not fits:
        assert status.reasons == ["node(s) didn't have free ports for the requested pod ports"]


def test_host_port_conflict_in_the_fit_error():
    s = Scheduler(None)  # type: ignore[arg-type]
    s.cache.set_node(node("n"))
    s.cache.assume(with_port("old", 80), "n")
    assert s.scheduling_cycle(with_port("new", 80)).message == (
        "0/1 nodes are available: 1 node(s) didn't have free ports for the requested "
        "pod ports.")
