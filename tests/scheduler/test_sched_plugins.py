"""The non-DRA plugins, one behaviour per test, on plain Node and Pod objects."""

from __future__ import annotations

import pytest
from sched_helpers import node, pod

from draemu.scheduler.framework import Code, CycleState
from draemu.scheduler.nodeinfo import NodeInfo, pod_requests
from draemu.scheduler.plugins.nodeaffinity import NodeAffinity
from draemu.scheduler.plugins.nodename import NodeName
from draemu.scheduler.plugins.noderesources import NodeResourcesFit
from draemu.scheduler.plugins.nodeunschedulable import NodeUnschedulable
from draemu.scheduler.plugins.tainttoleration import TaintToleration

pytestmark = pytest.mark.unit


def run_filter(plugin, p: dict, info: NodeInfo):
    state = CycleState()
    if hasattr(plugin, "pre_filter"):
        status, _ = plugin.pre_filter(state, p)
        assert status.ok
    return plugin.filter(state, p, info)


def test_node_name_rejects_other_nodes():
    p = pod("p", spec={"nodeName": "n1"})
    assert run_filter(NodeName(), p, NodeInfo(node("n1"))).ok
    status = run_filter(NodeName(), p, NodeInfo(node("n2")))
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ["node(s) didn't match the requested node name"]


def test_node_name_prefilter_restricts_to_the_named_node():
    _, result = NodeName().pre_filter(CycleState(), pod("p", spec={"nodeName": "n1"}))
    assert result.node_names == {"n1"}


def test_cordoned_node_rejects_pods_without_toleration():
    status = run_filter(NodeUnschedulable(), pod("p"), NodeInfo(node("n", unschedulable=True)))
    assert status.reasons == ["node(s) were unschedulable"]


def test_cordoned_node_accepts_pod_tolerating_unschedulable_taint():
    p = pod("p", spec={"tolerations": [{"key": "node.kubernetes.io/unschedulable",
                                        "operator": "Exists", "effect": "NoSchedule"}]})
    assert run_filter(NodeUnschedulable(), p, NodeInfo(node("n", unschedulable=True))).ok


def test_node_selector_must_match_labels():
    p = pod("p", spec={"nodeSelector": {"gpu": "a100"}})
    assert run_filter(NodeAffinity(), p, NodeInfo(node("n", labels={"gpu": "a100"}))).ok
    status = run_filter(NodeAffinity(), p, NodeInfo(node("n", labels={"gpu": "t4"})))
    assert status.reasons == ["node(s) didn't match Pod's node affinity/selector"]


def test_required_node_affinity_supports_operators():
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["a", "b"]},
            {"key": "cores", "operator": "Gt", "values": ["8"]},
            {"key": "spot", "operator": "DoesNotExist"}]}]}}}
    p = pod("p", spec={"affinity": affinity})
    fits = NodeInfo(node("n", labels={"zone": "a", "cores": "16"}))
    too_small = NodeInfo(node("n", labels={"zone": "a", "cores": "4"}))
    spot = NodeInfo(node("n", labels={"zone": "b", "cores": "16", "spot": "true"}))
    assert run_filter(NodeAffinity(), p, fits).ok
    assert not run_filter(NodeAffinity(), p, too_small).ok
    assert not run_filter(NodeAffinity(), p, spot).ok


def test_node_affinity_on_metadata_name_narrows_nodes_in_prefilter():
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}}}
    _, result = NodeAffinity().pre_filter(CycleState(), pod("p", spec={"affinity": affinity}))
    assert result.node_names == {"n2"}


def test_preferred_node_affinity_scores_matching_nodes_higher():
    affinity = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "preference": {"matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["a"]}]}}]}}
    plugin, p = NodeAffinity(), pod("p", spec={"affinity": affinity})
    scores = {"a": plugin.score(CycleState(), p, NodeInfo(node("a", labels={"zone": "a"}))),
              "b": plugin.score(CycleState(), p, NodeInfo(node("b", labels={"zone": "b"})))}
    plugin.normalize_scores(scores)
    assert scores == {"a": 100, "b": 0}


def test_untolerated_noschedule_taint_rejects():
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    status = run_filter(TaintToleration(), pod("p"), NodeInfo(node("n", taints=[taint])))
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ["node(s) had untolerated taint(s)"]


def test_matching_toleration_admits_tainted_node():
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    p = pod("p", spec={"tolerations": [{"key": "dedicated", "operator": "Equal",
                                        "value": "gpu", "effect": "NoSchedule"}]})
    assert run_filter(TaintToleration(), p, NodeInfo(node("n", taints=[taint]))).ok


def test_prefer_no_schedule_taint_only_lowers_score():
    taint = {"key": "k", "value": "v", "effect": "PreferNoSchedule"}
    plugin, p = TaintToleration(), pod("p")
    tainted, clean = NodeInfo(node("t", taints=[taint])), NodeInfo(node("c"))
    assert run_filter(plugin, p, tainted).ok
    scores = {"t": plugin.score(CycleState(), p, tainted),
              "c": plugin.score(CycleState(), p, clean)}
    plugin.normalize_scores(scores)
    assert scores["c"] > scores["t"]
    # Scored only when some feasible node has such a taint; otherwise every node would
    # get the same score, and PreScore skips.
    assert plugin.pre_score(CycleState(), p, [tainted, clean]) is False
    no_schedule = NodeInfo(node("ns", taints=[{**taint, "effect": "NoSchedule"}]))
    assert plugin.pre_score(CycleState(), p, [clean, no_schedule]) is True


def test_insufficient_cpu_and_memory_are_both_reported():
    info = NodeInfo(node("n", cpu="1", memory="1Gi"))
    status = run_filter(NodeResourcesFit(), pod("p", cpu="2", memory="2Gi"), info)
    assert status.code == Code.UNSCHEDULABLE
    assert status.reasons == ["Insufficient cpu", "Insufficient memory"]


def test_requests_of_pods_on_the_node_count():
    info = NodeInfo(node("n", cpu="1"))
    info.add_pod(pod("running", cpu="600m"))
    assert not run_filter(NodeResourcesFit(), pod("p", cpu="500m"), info).ok
    assert run_filter(NodeResourcesFit(), pod("p", cpu="400m"), info).ok


def test_pod_count_limit_is_too_many_pods():
    info = NodeInfo(node("n", pods="1"))
    info.add_pod(pod("running"))
    assert run_filter(NodeResourcesFit(), pod("p"), info).reasons == ["Too many pods"]


def test_extended_resources_must_be_allocatable():
    p = pod("p", extra={"example.com/foo": "2"})
    assert run_filter(NodeResourcesFit(), p,
                      NodeInfo(node("n", extra={"example.com/foo": "2"}))).ok
    assert run_filter(NodeResourcesFit(), p, NodeInfo(node("n"))).reasons == \
        ["Insufficient example.com/foo"]


def test_dra_backed_extended_resource_is_left_to_dynamic_resources():
    plugin = NodeResourcesFit(dra_backed=lambda name: name == "example.com/gpu")
    assert run_filter(plugin, pod("p", extra={"example.com/gpu": "1"}), NodeInfo(node("n"))).ok


def test_init_containers_and_sidecars_are_summed_like_upstream():
    p = pod("p", cpu="1")
    p["spec"]["initContainers"] = [
        {"name": "sidecar", "restartPolicy": "Always",
         "resources": {"requests": {"cpu": "500m"}}},
        {"name": "setup", "resources": {"requests": {"cpu": "3"}}},
    ]
    # regular 1 + sidecar 0.5 = 1.5, but the one-shot init container needs 3 + 0.5.
    assert pod_requests(p).milli_cpu == 3500


def test_least_allocated_prefers_emptier_nodes():
    plugin, p = NodeResourcesFit(), pod("p", cpu="1", memory="1Gi")
    busy = NodeInfo(node("busy"))
    busy.add_pod(pod("other", cpu="3", memory="6Gi"))
    empty = NodeInfo(node("empty"))
    assert plugin.score(CycleState(), p, empty) > plugin.score(CycleState(), p, busy)


def test_scheduling_gates_are_named_in_the_pre_enqueue_verdict():
    from draemu.scheduler.plugins.schedulinggates import SchedulingGates

    p = pod("p", spec={"schedulingGates": [{"name": "example.com/a"}, {"name": "b"}]})
    status = SchedulingGates().pre_enqueue(p)
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message == "waiting for scheduling gates: [example.com/a b]"
    assert SchedulingGates().pre_enqueue(pod("q")).ok


def test_a_pod_requesting_nothing_needs_only_room_for_one_more_pod():
    fit = NodeResourcesFit()
    overcommitted = NodeInfo(node("n", cpu="1", pods="2"))
    overcommitted.add_pod({**pod("big", cpu="2"), "spec": {
        **pod("big", cpu="2")["spec"], "nodeName": "n"}})
    assert run_filter(fit, pod("nothing"), overcommitted).ok
    assert run_filter(fit, pod("some", cpu="100m"), overcommitted).reasons == [
        "Insufficient cpu"]
    overcommitted.add_pod({**pod("second"), "spec": {**pod("second")["spec"], "nodeName": "n"}})
    assert run_filter(fit, pod("nothing"), overcommitted).reasons == ["Too many pods"]
