"""Where each cycle's node search starts, and the Filter verdicts and scores kept across
cycles for pods of one spec: the decisions are those of a full search."""

from __future__ import annotations

import random
from typing import Any

import pytest
from sched_helpers import node, pod

from draemu.scheduler.scheduler import Scheduler

pytestmark = pytest.mark.unit

DRIVER = "gpu.example.com"
GPU_CLAIM_SPEC = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}
# A prioritized list: two GPUs if the node has them, else one (DynamicResources scores).
TWO_OR_ONE_SPEC = {"devices": {"requests": [{"name": "gpu", "firstAvailable": [
    {"name": "two", "deviceClassName": "gpu", "count": 2},
    {"name": "one", "deviceClassName": "gpu"}]}]}}


def scheduler(nodes: int, *, gpus: int = 0) -> Scheduler:
    """A scheduler (no API calls in its scheduling cycle) with nodes n000, n001, ...,
    each with `gpus` devices of one class if any."""
    s = Scheduler(None)  # type: ignore[arg-type]
    if gpus:
        s.dra.set_class({"metadata": {"name": "gpu"}, "spec": {"selectors": [
            {"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    for i in range(nodes):
        name = f"n{i:03d}"
        s.cache.set_node(node(name))
        if gpus:
            s.dra.set_slice(gpu_slice(name, gpus))
    return s


def gpu_slice(name: str, gpus: int) -> dict:
    return {"metadata": {"name": f"{name}-gpus"}, "spec": {
        "driver": DRIVER, "nodeName": name,
        "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": f"gpu-{k}"} for k in range(gpus)]}}


def gpu_pod(s: Scheduler, name: str, claim_spec: dict | None = None, **kwargs: Any) -> dict:
    """A pod with its own claim (already in the scheduler's informer), for one GPU by
    default."""
    s.dra.set_claim({"metadata": {"name": f"{name}-gpu", "namespace": "default",
                                  "uid": f"claim-{name}"},
                     "spec": claim_spec or GPU_CLAIM_SPEC})
    return pod(name, claims=[{"name": "gpu", "resourceClaimName": f"{name}-gpu"}], **kwargs)


def count_filter_calls(s: Scheduler, plugin_name: str) -> list[str]:
    """The nodes the plugin's Filter runs on, from now on."""
    plugin = next(p for p in s.framework.plugins if p.name == plugin_name)
    seen: list[str] = []
    original = plugin.filter

    def counting(state: Any, pod: dict, node: Any) -> Any:
        seen.append(node.name)
        return original(state, pod, node)

    plugin.filter = counting
    return seen


# --- where the search starts ------------------------------------------------------------


def test_the_search_starts_where_the_last_cycle_stopped():
    s = scheduler(250)  # 48% of 250 = 120 feasible nodes wanted
    names = [n.name for n in s.cache.nodes()]
    for start in (0, 120, 240, 110):
        assert s.cycle.next_start_node == start
        window = {names[(start + k) % 250] for k in range(120)}
        chosen = s.scheduling_cycle(pod(f"p{start}")).node_name
        assert chosen in window


def test_rejected_nodes_count_towards_the_next_start():
    s = scheduler(250)
    for i in range(0, 10):
        s.cache.set_node(node(f"n{i:03d}", unschedulable=True))
    s.scheduling_cycle(pod("p"))
    assert s.cycle.next_start_node == 130  # 10 rejected + 120 feasible


def test_a_restricted_search_advances_the_start_modulo_all_nodes():
    """As upstream: the candidates PreFilter left are indexed from the start modulo their
    number, and the start moves on by the nodes looked at, modulo all nodes."""
    s = scheduler(250)
    s.cycle.next_start_node = 249
    pinned = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                "values": ["n001", "n002", "n003"]}]}]}}}}
    assert s.scheduling_cycle(pod("p", spec=pinned)).node_name in {"n001", "n002", "n003"}
    assert s.cycle.next_start_node == (249 + 3) % 250


# --- kept verdicts and scores -----------------------------------------------------------


def test_unchanged_nodes_pass_on_the_verdict_kept_for_the_same_spec():
    s = scheduler(3)
    calls = count_filter_calls(s, "NodeResourcesFit")
    first = s.scheduling_cycle(pod("a", cpu="1")).node_name
    assert sorted(calls) == ["n000", "n001", "n002"]
    calls.clear()
    second = s.scheduling_cycle(pod("b", cpu="1")).node_name
    # The node the first pod went to changed, and the chosen node is filtered again
    # for Reserve: nothing else.
    assert calls == [first, second]
    assert second != first  # fewer requests on the others: LeastAllocated prefers them


def test_a_node_rejected_on_a_kept_verdict_runs_its_rejecting_plugin_only_if_needed():
    """When the pod fits elsewhere, nobody reads the statuses of rejected nodes: an
    unchanged node rejected before runs no plugin. When it fits nowhere, the plugin that
    rejected the node runs again, for the status in the message."""
    s = scheduler(2)
    s.cache.set_node(node("n001", cpu="1"))
    first = s.scheduling_cycle(pod("a", cpu="2"))
    unschedulable = count_filter_calls(s, "NodeUnschedulable")
    fit = count_filter_calls(s, "NodeResourcesFit")
    second = s.scheduling_cycle(pod("b", cpu="2"))
    assert first.node_name == second.node_name == "n000"
    # n000 changed (the first pod is assumed there): filtered afresh; n001 did not.
    assert unschedulable == ["n000"] and fit == ["n000"]
    assert s.cycle.next_start_node == 0  # both nodes count as looked at
    unschedulable.clear()
    fit.clear()
    s.cache.set_node(node("n000", cpu="1"))
    third = s.scheduling_cycle(pod("c", cpu="2"))
    assert third.message == "0/2 nodes are available: 2 Insufficient cpu."
    assert unschedulable == ["n000"] and fit == ["n000", "n001"]


def test_another_spec_does_not_share_the_kept_verdicts():
    s = scheduler(3)
    s.scheduling_cycle(pod("a", cpu="1"))
    calls = count_filter_calls(s, "NodeResourcesFit")
    s.scheduling_cycle(pod("b", cpu="2"))
    assert sorted(calls[:3]) == ["n000", "n001", "n002"]


def with_token_volume(p: dict, suffix: str, image: str) -> dict:
    """The pod as admission leaves it: a `kube-api-access-<5>` volume of its own, mounted
    in its container; and another image and environment."""
    name = f"kube-api-access-{suffix}"
    p["spec"]["volumes"] = [{"name": name, "projected": {"sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}]}}]
    container = p["spec"]["containers"][0]
    container.update(image=image, env=[{"name": "ID", "value": suffix}], volumeMounts=[
        {"name": name, "readOnly": True,
         "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}])
    return p


def test_pods_differing_only_in_what_no_plugin_reads_share_the_kept_verdicts():
    """Admission gives every pod a service account token volume of a random name: the
    pods of one workload still share their answers. Image, environment and mounts are
    read by no Filter or Score plugin either."""
    s = scheduler(3)
    first = s.scheduling_cycle(with_token_volume(pod("a", cpu="1"), "abcde", "one")).node_name
    calls = count_filter_calls(s, "NodeResourcesFit")
    second = s.scheduling_cycle(with_token_volume(pod("b", cpu="1"), "vwxyz", "two")).node_name
    assert calls == [first, second]


def test_a_claim_volume_or_host_port_is_part_of_the_spec():
    """What a plugin reads, or a volume a volume plugin would, is kept apart."""
    s = scheduler(3)
    s.scheduling_cycle(pod("a", cpu="1"))
    calls = count_filter_calls(s, "NodeResourcesFit")
    volume = {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]}
    s.scheduling_cycle(pod("b", cpu="1", spec=volume))
    assert sorted(calls[:3]) == ["n000", "n001", "n002"]
    calls.clear()
    ported = pod("c", cpu="1")
    ported["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    s.scheduling_cycle(ported)
    assert sorted(calls[:3]) == ["n000", "n001", "n002"]


def test_a_node_update_retires_its_kept_verdict():
    s = scheduler(2)
    s.scheduling_cycle(pod("a"))
    s.cache.set_node(node("n001", taints=[{"key": "k", "effect": "NoSchedule"}]))
    s.cache.set_node(node("n000", taints=[{"key": "k", "effect": "NoSchedule"}]))
    result = s.scheduling_cycle(pod("b"))
    assert result.node_name is None
    assert "2 node(s) had untolerated taint(s)" in result.message


def test_devices_taken_outside_the_cycle_retire_the_kept_verdict():
    """Only the DRA versions of the node move (a claim allocated by someone else, seen by
    the informer): its kept pass no longer holds."""
    s = scheduler(2, gpus=1)
    first = s.scheduling_cycle(gpu_pod(s, "a")).node_name
    other = "n001" if first == "n000" else "n000"
    s.dra.set_claim({"metadata": {"name": "elsewhere", "namespace": "default",
                                  "uid": "elsewhere"}, "spec": GPU_CLAIM_SPEC,
                     "status": {"allocation": {"devices": {"results": [
                         {"request": "gpu", "driver": DRIVER, "pool": other,
                          "device": "gpu-0"}]}}}})
    result = s.scheduling_cycle(gpu_pod(s, "b"))
    assert result.node_name is None and not result.error
    assert result.message.startswith("0/2 nodes are available: 2 cannot allocate all claims")


def test_the_chosen_node_has_its_allocation_for_reserve():
    s = scheduler(4, gpus=2)
    for i in range(8):
        p = gpu_pod(s, f"p{i}")
        assert s.scheduling_cycle(p).node_name is not None
    devices = {tuple(s.dra.assumed_claim(f"claim-p{i}")["status"]["allocation"]["devices"]
                     ["results"][0][k] for k in ("pool", "device")) for i in range(8)}
    assert len(devices) == 8  # every device once
    assert s.scheduling_cycle(gpu_pod(s, "p8")).node_name is None


def test_scores_of_unchanged_nodes_are_the_kept_ones():
    s = scheduler(3)
    fit = next(p for p in s.framework.plugins if p.name == "NodeResourcesFit")
    scored: list[str] = []
    original = fit.score

    def counting(state: Any, pod: dict, node: Any) -> int:
        scored.append(node.name)
        return original(state, pod, node)

    fit.score = counting
    first = s.scheduling_cycle(pod("a", cpu="1")).node_name
    scored.clear()
    s.scheduling_cycle(pod("b", cpu="1"))
    assert scored == [first]


def _run(seed: int, full_search: bool) -> list[tuple[str | None, str]]:
    """A random cluster (150 nodes: the search stops at 100 feasible) and a stream of pods
    of a few specs, with changes between cycles: nodes tainted, cordoned, relabelled,
    pods and claims deleted, claims landing. `full_search` forgets every kept answer
    before each cycle."""
    rng = random.Random(seed)
    random.seed(seed)  # the scheduler's tie-breaking
    s = scheduler(0, gpus=1)
    for i in range(150):
        name = f"n{i:03d}"
        s.cache.set_node(node(name, cpu=str(rng.choice([2, 4, 8]))))
        if rng.random() < 0.7:
            s.dra.set_slice(gpu_slice(name, rng.choice([1, 2])))
    specs: list[dict] = [
        {"cpu": "1"}, {"cpu": "500m"}, {},
        {"spec": {"tolerations": [{"key": "k", "operator": "Exists"}]}},
        {"spec": {"nodeSelector": {"zone": "a"}}},
    ]
    placed: list[tuple[dict, dict | None]] = []
    unseen: list[tuple[dict, dict | None]] = []
    decisions: list[tuple[str | None, str]] = []
    for i in range(300):
        kind = rng.random()
        if kind < 0.1:
            name = f"n{rng.randrange(150):03d}"
            taint = rng.choice([[], [{"key": "k", "effect": "NoSchedule"}],
                                [{"key": "k", "effect": "PreferNoSchedule"}]])
            s.cache.set_node(node(name, cpu=str(rng.choice([2, 4, 8])), taints=taint,
                                  unschedulable=rng.random() < 0.2,
                                  labels={"zone": rng.choice("ab")}))
        elif kind < 0.2 and placed:
            bound, claim = placed.pop(rng.randrange(len(placed)))
            s.cache.remove_pod(bound)
            if claim is not None:
                s.dra.remove_claim(claim)
        elif kind < 0.3:
            # Devices only: a claim of someone else's allocated or freed, a slice changed.
            name = f"n{rng.randrange(150):03d}"
            other = {"metadata": {"name": f"other-{name}", "namespace": "default",
                                  "uid": f"other-{name}"}, "spec": GPU_CLAIM_SPEC,
                     "status": {"allocation": {"devices": {"results": [
                         {"request": "gpu", "driver": DRIVER, "pool": name,
                          "device": "gpu-0"}]}}}}
            if rng.random() < 0.5:
                s.dra.set_claim(other)
            elif rng.random() < 0.5:
                s.dra.remove_claim(other)
            else:
                s.dra.set_slice(gpu_slice(name, rng.choice([1, 2, 3])))
        kwargs = dict(rng.choice(specs))
        draw = rng.random()
        p = gpu_pod(s, f"p{i}", **kwargs) if draw < 0.45 else \
            gpu_pod(s, f"p{i}", TWO_OR_ONE_SPEC, **kwargs) if draw < 0.6 else \
            pod(f"p{i}", **kwargs)
        if full_search:
            s.framework.forget_kept_answers()
        result = s.scheduling_cycle(p)
        assert not result.error, result.message
        decisions.append((result.node_name, result.message))
        if result.node_name is None:
            continue
        bound = {**p, "spec": {**p["spec"], "nodeName": result.node_name}}
        unseen.append((bound, s.dra.assumed_claim(f"claim-p{i}")))
        # The informers show some of the bindings and allocations, a few cycles late.
        while unseen and rng.random() < 0.5:
            bound, claim = unseen.pop(0)
            if claim is not None:
                s.dra.set_claim(claim)
            s.cache.add_pod(bound)
            placed.append((bound, claim))
    return decisions


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_decisions_with_kept_answers_are_those_of_a_full_search(seed: int):
    kept, full = _run(seed, full_search=False), _run(seed, full_search=True)
    assert kept == full
    assert any(name is None for name, _ in kept) and sum(
        name is not None for name, _ in kept) > 100


def test_prefer_no_schedule_taints_are_tracked_for_taint_scoring():
    """TaintToleration's PreScore skips at once when no node of the cluster has a
    PreferNoSchedule taint, and looks at the feasible nodes when one has."""
    s = scheduler(2)
    plugin = next(p for p in s.framework.plugins if p.name == "TaintToleration")
    prefer = [{"key": "k", "effect": "PreferNoSchedule"}]
    assert not s.cache.has_prefer_no_schedule_taints()
    s.cache.set_node(node("n001", taints=prefer))
    assert s.cache.has_prefer_no_schedule_taints()
    feasible = s.cache.nodes()
    assert plugin.pre_score(None, pod("p"), feasible) is False
    assert plugin.pre_score(None, pod("p"), feasible[:1]) is True  # not among the feasible
    for _ in range(4):  # the untainted node wins while it has room
        assert s.scheduling_cycle(pod("p", cpu="100m")).node_name == "n000"
    s.cache.set_node(node("n001", taints=[{"key": "k", "effect": "NoSchedule"}]))
    assert not s.cache.has_prefer_no_schedule_taints()
    s.cache.set_node(node("n000", taints=prefer))
    s.cache.remove_node("n000")
    assert not s.cache.has_prefer_no_schedule_taints()


def test_a_dra_version_change_moves_the_node_generation():
    """The scheduler follows the DRA node versions: a node's devices taken by someone else
    move its NodeInfo generation, so kept verdicts need no version look-up per node. A
    DynamicResources plugin nobody follows hands its versions to the framework instead."""
    from draemu.scheduler.dra.manager import DRAManager
    from draemu.scheduler.framework import CycleState
    from draemu.scheduler.plugins.dynamicresources import DynamicResources

    s = scheduler(2, gpus=1)
    before = s.cache.node("n001").generation
    s.dra.set_claim({"metadata": {"name": "elsewhere", "namespace": "default",
                                  "uid": "elsewhere"}, "spec": GPU_CLAIM_SPEC,
                     "status": {"allocation": {"devices": {"results": [
                         {"request": "gpu", "driver": DRIVER, "pool": "n001",
                          "device": "gpu-0"}]}}}})
    assert s.cache.node("n001").generation is not before
    p = gpu_pod(s, "p")
    state = CycleState()
    assert s.framework.run_pre_filter(state, p)[0].ok
    assert s.framework.plugin("DynamicResources").filter_equivalence(state, p)[1] is None

    dra = DRAManager()
    alone = DynamicResources(None, dra)  # type: ignore[arg-type]
    dra.set_claim({"metadata": {"name": "p-gpu", "namespace": "default", "uid": "c"},
                   "spec": GPU_CLAIM_SPEC})
    dra.set_class({"metadata": {"name": "gpu"}, "spec": {}})
    state = CycleState()
    assert alone.pre_filter(state, pod("q", claims=[
        {"name": "gpu", "resourceClaimName": "p-gpu"}]))[0].ok
    assert alone.filter_equivalence(state, p)[1] is dra.versions.by_node
