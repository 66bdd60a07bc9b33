"""Differential test: draemu's scheduler and the real kube-scheduler v1.37.2 decide the
same, on the same draemu apiserver and the same objects, one after the other.

Hypothesis (seeded: derandomize, bounded examples) generates a small cluster (nodes with
zones, hostnames, cpu, sometimes a taint) with pods already bound to it (labels, some with
required or preferred anti-affinity) and one incoming pod (cpu, nodeSelector,
tolerations, topology spread constraints, pod affinity / anti-affinity, required or
preferred). The incoming pod is given to the real scheduler (schedulerName `real`),
its outcome read, the pod deleted; then the same pod to draemu's (`ours`). Compared:
- scheduled or not; when not, the whole PodScheduled message ("0/N nodes are
  available: ... preemption: ...");
- when scheduled and draemu's own scoring of the feasible nodes has a single best node,
  the chosen node (with ties both pick at random, so only membership in the tie is
  checked).
A difference is a bug in draemu or a documented difference (none known today); keep
the failing example's seed in SEEDS below.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, seed, settings
from hypothesis import strategies as st
from test_real_components import binaries, identity_kubeconfig

from draemu.client import ApiError, Client
from draemu.cmd.testing.process import draemu_up

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(1500)]

NS = "diff"
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
EXAMPLES = int(os.environ.get("DRAEMU_DIFF_EXAMPLES", "300"))
_ids = itertools.count()

REAL_CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {{kubeconfig: {kubeconfig}}}
leaderElection: {{leaderElect: false}}
profiles:
- schedulerName: real
"""
OUR_CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: ours
"""

# No controllers run: the ReplicaSet only gives its selector to the default constraints.
REPLICASET = f"""apiVersion: apps/v1
kind: ReplicaSet
metadata: {{name: web, namespace: {NS}}}
spec:
  replicas: 0
  selector: {{matchLabels: {{app: a}}}}
  template:
    metadata: {{labels: {{app: a}}}}
    spec: {{containers: [{{name: c, image: pause}}]}}
"""

# --- generated objects -------------------------------------------------------------------

labels_st = st.sampled_from([{"app": "a"}, {"app": "b"}, {"app": "a", "tier": "x"}, {}])
cpu_st = st.sampled_from(["100m", "500m", "1", "2"])
selector_st = st.sampled_from([{"matchLabels": {"app": "a"}}, {"matchLabels": {"app": "b"}},
                               {"matchExpressions": [{"key": "app", "operator": "Exists"}]}])
topology_st = st.sampled_from([ZONE, HOST])


@st.composite
def node_st(draw: Any, i: int) -> dict:
    zone = draw(st.sampled_from(["z1", "z2", "z3"]))
    taints = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}] \
        if draw(st.integers(0, 5)) == 0 else []
    return {"name": f"n{i}", "zone": zone, "cpu": draw(st.sampled_from(["2", "4", "8"])),
            "taints": taints, "no_zone": draw(st.integers(0, 9)) == 0}


def term(draw: Any) -> dict:
    t = {"topologyKey": draw(topology_st), "labelSelector": draw(selector_st)}
    if draw(st.integers(0, 4)) == 0:
        t["namespaceSelector"] = draw(st.sampled_from([{}, {"matchLabels": {"team": "x"}}]))
    return t


@st.composite
def affinity_st(draw: Any) -> dict | None:
    choice = draw(st.integers(0, 5))
    if choice == 0:
        return None
    kind = draw(st.sampled_from(["podAffinity", "podAntiAffinity"]))
    if draw(st.booleans()):
        return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term(draw)]}}
    return {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": draw(st.sampled_from([1, 50, 100])), "podAffinityTerm": term(draw)}]}}


@st.composite
def spread_st(draw: Any) -> list[dict]:
    if draw(st.integers(0, 2)) == 0:
        return []
    c = {"maxSkew": draw(st.integers(1, 2)), "topologyKey": draw(topology_st),
         "whenUnsatisfiable": draw(st.sampled_from(["DoNotSchedule", "ScheduleAnyway"])),
         "labelSelector": draw(selector_st)}
    if draw(st.integers(0, 3)) == 0:
        c["minDomains"] = draw(st.integers(2, 4))
        c["whenUnsatisfiable"] = "DoNotSchedule"
    if draw(st.integers(0, 3)) == 0:
        c["nodeAffinityPolicy"] = draw(st.sampled_from(["Honor", "Ignore"]))
        c["nodeTaintsPolicy"] = draw(st.sampled_from(["Honor", "Ignore"]))
    if draw(st.integers(0, 4)) == 0:
        c["matchLabelKeys"] = ["tier"]
    return [c]


@st.composite
def scenario_st(draw: Any) -> dict:
    nodes = [draw(node_st(i)) for i in range(draw(st.integers(2, 5)))]
    bound = [{"labels": draw(labels_st), "cpu": draw(cpu_st),
              "node": draw(st.sampled_from([n["name"] for n in nodes])),
              "affinity": draw(affinity_st())} for _ in range(draw(st.integers(0, 6)))]
    incoming = {"labels": draw(labels_st), "cpu": draw(cpu_st),
                "affinity": draw(affinity_st()), "spread": draw(spread_st()),
                "selector": {ZONE: draw(st.sampled_from(["z1", "z2"]))}
                if draw(st.integers(0, 4)) == 0 else {},
                "tolerate": draw(st.booleans()),
                # Controlled by the ReplicaSet "web" (selector app=a): the cluster's
                # default spread constraints apply when the pod has none of its own.
                "owned": draw(st.booleans()),
                # Preemption is not compared (it would delete the bound pods): a
                # higher-priority pod never preempts, which its message says.
                "priority": draw(st.sampled_from([None, 100]))}
    return {"nodes": nodes, "bound": bound, "incoming": incoming}


def node_obj(prefix: str, n: dict) -> dict:
    name = f"{prefix}-{n['name']}"
    labels = {HOST: name} | ({} if n["no_zone"] else {ZONE: n["zone"]})
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "spec": {"taints": n["taints"]},
            "status": {"capacity": {"cpu": n["cpu"], "memory": "16Gi", "pods": "110"},
                       "allocatable": {"cpu": n["cpu"], "memory": "16Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def pod_obj(name: str, p: dict, *, node: str | None = None, scheduler: str = "") -> dict:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "pause", "resources": {
        "requests": {"cpu": p["cpu"], "memory": "256Mi"}}}]}
    if node:
        spec["nodeName"] = node
    if scheduler:
        spec["schedulerName"] = scheduler
    if p.get("affinity"):
        spec["affinity"] = p["affinity"]
    if p.get("spread"):
        spec["topologySpreadConstraints"] = p["spread"]
    if p.get("selector"):
        spec["nodeSelector"] = p["selector"]
    if p.get("tolerate"):
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    meta: dict[str, Any] = {"name": name, "namespace": NS, "labels": p["labels"]}
    if p.get("owned") and RS_UID:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                    "name": "web", "uid": RS_UID[0], "controller": True}]
    if p.get("priority"):
        # 100, preemptionPolicy Never: admission fills both from the class.
        spec["priorityClassName"] = "high"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


RS_UID: list[str] = []  # the ReplicaSet "web", once created


# --- running one scenario ------------------------------------------------------------------

async def outcome(client: Client, name: str, timeout: float = 20.0) -> tuple[str, str]:
    """("node", name) once bound, ("message", text) once PodScheduled=False says why."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pod = await client.get("v1", "pods", name, NS)
        if (pod.get("spec") or {}).get("nodeName"):
            return "node", pod["spec"]["nodeName"]
        for c in (pod.get("status") or {}).get("conditions") or []:
            if c.get("type") == "PodScheduled" and c.get("status") == "False" and \
                    c.get("message", "").startswith("0/"):
                return "message", c["message"]
        await asyncio.sleep(0.1)
    raise AssertionError(f"pod {name} neither scheduled nor reported in {timeout}s")


async def delete_pod(client: Client, name: str) -> None:
    try:
        await client.delete("v1", "pods", name, NS, grace_period_seconds=0)
    except ApiError as e:
        if e.code != 404:
            raise
    while True:
        try:
            await client.get("v1", "pods", name, NS)
        except ApiError as e:
            if e.code == 404:
                return
            raise
        await asyncio.sleep(0.05)


def best_nodes(nodes: list[dict], bound: list[dict], incoming: dict) -> set[str] | None:
    """The nodes draemu's own scoring ranks first (None: the pod fits nowhere)."""
    from draemu.scheduler.framework import CycleState
    from draemu.scheduler.informers import ObjectLister
    from draemu.scheduler.scheduler import Scheduler

    s = Scheduler(None)  # type: ignore[arg-type]
    s.informers.serve_from("namespaces", ObjectLister([{"metadata": {
        "name": NS, "labels": {"kubernetes.io/metadata.name": NS, "team": "x"}}}]))
    rs = {"metadata": {"name": "web", "namespace": NS},
          "spec": {"selector": {"matchLabels": {"app": "a"}}}}
    s.informers.serve_from("replicasets", ObjectLister([rs]))
    for n in nodes:
        s.cache.set_node(n)
    for i, b in enumerate(bound):
        p = b
        p["metadata"]["uid"] = f"bound-{i}"
        s.cache.add_pod(p)
    pod = dict(incoming)
    pod["metadata"] = {**incoming["metadata"], "uid": "incoming"}
    state = CycleState()
    status, _ = s.framework.run_pre_filter(state, pod)
    if not status.ok:
        return None
    feasible = [n for n in s.cache.nodes() if s.framework.run_filter(state, pod, n).ok]
    if not feasible:
        return None
    if len(feasible) == 1:
        return {feasible[0].name}
    scores = s.framework.run_score(state, pod, feasible)
    top = max(scores.values())
    return {n for n, v in scores.items() if v == top}


async def run_scenario(client: Client, scenario: dict) -> None:
    prefix = f"s{next(_ids)}"
    nodes = [node_obj(prefix, n) for n in scenario["nodes"]]
    bound = [pod_obj(f"{prefix}-b{i}", b, node=f"{prefix}-{b['node']}")
             for i, b in enumerate(scenario["bound"])]
    for n in nodes:
        await client.create("v1", "nodes", n)
    for b in bound:
        await client.create("v1", "pods", b, NS)
    await asyncio.sleep(0.5)  # both schedulers' informers see them
    try:
        results = {}
        for scheduler in ("real", "ours"):
            name = f"{prefix}-in-{scheduler}"
            await client.create("v1", "pods",
                                pod_obj(name, scenario["incoming"], scheduler=scheduler), NS)
            results[scheduler] = await outcome(client, name)
            await delete_pod(client, name)
            await asyncio.sleep(0.3)  # the pod's deletion reaches both caches
        real, ours = results["real"], results["ours"]
        incoming = pod_obj("x", scenario["incoming"])
        context = f"scenario {scenario!r}"
        assert real[0] == ours[0], f"real {real}, draemu {ours}; {context}"
        if real[0] == "message":
            assert ours[1] == real[1], f"real: {real[1]!r}\ndraemu: {ours[1]!r}\n{context}"
        else:
            best = best_nodes(nodes, [dict(b) for b in bound], incoming)
            assert best is not None and real[1] in best, \
                f"real chose {real[1]}, draemu's best {best}; {context}"
            if len(best) == 1:
                assert ours[1] == real[1], f"real: {real[1]!r}\ndraemu: {ours[1]!r}\n{context}"
    finally:
        for b in bound:
            await delete_pod(client, b["metadata"]["name"])
        for n in nodes:
            await client.delete("v1", "nodes", n["metadata"]["name"])
        await asyncio.sleep(0.5)


@pytest.fixture(scope="module")
def schedulers(tmp_path_factory: pytest.TempPathFactory):
    bins = binaries()
    folder = tmp_path_factory.mktemp("differential")
    with draemu_up(folder, "--preset", "empty", "--no-scheduler", "--no-controllers") as up:
        kubeconfig = identity_kubeconfig(folder, "system:kube-scheduler")
        real_cfg = folder / "real.yaml"
        real_cfg.write_text(REAL_CONFIG.format(kubeconfig=kubeconfig))
        our_cfg = folder / "ours.yaml"
        our_cfg.write_text(OUR_CONFIG)
        procs = []
        with open(folder / "kube-scheduler.log", "wb") as log:
            procs.append(subprocess.Popen(
                [str(bins["kube-scheduler"]), f"--config={real_cfg}", "--secure-port=0",
                 f"--v={os.environ.get('DRAEMU_DIFF_V', '2')}"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
        with open(folder / "draemu-scheduler.log", "wb") as log:
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "draemu", "scheduler",
                 "--kubeconfig", str(kubeconfig), "--config", str(our_cfg)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
        try:
            up.kubectl("create", "namespace", NS)
            up.kubectl("label", "namespace", NS, "team=x")
            up.kubectl("apply", "-f", "-", input=REPLICASET)
            up.kubectl("create", "priorityclass", "high", "--value=100",
                       "--preemption-policy=Never")
            RS_UID[:] = [up.kubectl("get", "replicaset", "web", "-n", NS, "-o",
                                    "jsonpath={.metadata.uid}").stdout.strip()]
            time.sleep(3)  # both started and synced
            for p, name in zip(procs, ("kube-scheduler", "draemu-scheduler"), strict=True):
                if p.poll() is not None:
                    pytest.fail(f"{name} exited: "
                                + (folder / f"{name}.log").read_text()[-3000:])
            yield up.kubeconfig
        finally:
            for p in procs:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()


# Differences found, kept as regression cases (each an explicit example).
REGRESSIONS: list[dict] = [
    # Scoring: a bound pod's required zone affinity (hardPodAffinityWeight) and another's
    # preferred anti-affinity, a node without a zone label.
    {"nodes": [{"name": "n0", "zone": "z1", "cpu": "2", "taints": [], "no_zone": True},
               {"name": "n1", "zone": "z1", "cpu": "2", "taints": [], "no_zone": False},
               {"name": "n2", "zone": "z3", "cpu": "8", "taints": [], "no_zone": False}],
     "bound": [{"labels": {"app": "a"}, "cpu": "100m", "node": "n1", "affinity": {
         "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
             {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"app": "a"}}}]}}},
               {"labels": {"app": "a"}, "cpu": "100m", "node": "n2", "affinity": {
         "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
             {"weight": 50, "podAffinityTerm": {"topologyKey": ZONE, "labelSelector": {
                 "matchLabels": {"app": "a"}}}}]}}}],
     "incoming": {"labels": {"app": "a"}, "cpu": "100m", "affinity": None, "spread": [],
                  "selector": {}, "tolerate": False}},
]


def _with_regressions(test):
    for case in REGRESSIONS:
        test = example(scenario=case)(test)
    return test


@_with_regressions
@seed(int(os.environ.get("DRAEMU_DIFF_SEED", "20261201")))
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(scenario=scenario_st())
def test_real_and_draemu_scheduler_agree(schedulers: Path, scenario: dict) -> None:
    async def main() -> None:
        async with Client.from_kubeconfig(str(schedulers)) as client:
            await run_scenario(client, scenario)

    asyncio.run(main())
