"""The DRA workloads of bench/realk8s.py and bench/dracycles.py: upstream's scheduler_perf
DRA test cases (test/integration/scheduler_perf/dra/ of k8s.io/kubernetes v1.37.2), run
from upstream's own configurations and templates (bench/schedperf.py reads them), at the
node count asked for.

Each workload names an upstream test case and the workload of it whose parameters it
starts from (the 500-node one where there is one); `plan(nodes)` gives its operations
with the parameters for that many nodes: the node count replaced, and the counts that
upstream gives per node (claims allocated beforehand, pods) scaled with it. Two limits
keep a 5,000-node run of the real control plane within the hour: pods scheduled before
the measurement (`initPods`) and pods measured in one burst are at most MAX_POD_PHASE
each (claims allocated beforehand are not limited: they cost writes, not scheduling).
Where upstream's own sizes are fixed (FirstAvailable and DeviceTaintToleration exist only
at one node with 10 pods), the workload says how it grows (`measure`).

The operations (upstream's opcodes): createNodes (from the node template), createAny
(objects from a template, `count` of them), allocResourceClaims (every claim of a
namespace allocated on a node picked at random, as upstream's allocResourceClaims does:
here with draemu's allocator, seeded, so both sides get the same allocations),
createPodGroups, createPods (waited for until scheduled; the one with collectMetrics is
measured: all at once until every pod is scheduled, or with steadyState `count` pods kept
in flight for `duration`, each deleted once scheduled and replaced).

`check_allocations` says what is wrong with a set of allocated claims: a device given to
two claims (unless it allows multiple allocations), a counter or capacity overcommitted,
a constraint not held, a device that does not exist, a request given the wrong number of
devices.
"""

from __future__ import annotations

import asyncio
import importlib.util
import random
import sys
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from draemu.api.types import Obj


def _sibling(name: str) -> Any:
    """bench/NAME.py (bench/ is not a package), loaded once."""
    key = f"bench_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, Path(__file__).with_name(f"{name}.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


schedperf = _sibling("schedperf")

# Pods scheduled before the measurement, and pods of one measured burst, at most.
MAX_POD_PHASE = 5000
DEFAULT_DURATION = 10.0  # upstream's steady-state duration (s)


def _scale(value: int, nodes: int, base: int, limit: int | None = None) -> int:
    scaled = max(0, round(value * nodes / base))
    return min(scaled, limit) if limit is not None else scaled


@dataclass(frozen=True)
class Workload:
    name: str
    case: str                       # upstream test case
    variant: str                    # upstream workload the parameters start from
    summary: str
    base_nodes: int = 500           # the node count of `variant`
    per_node: tuple[str, ...] = ()  # parameters that grow with the nodes
    pod_phases: tuple[str, ...] = ("initPods", "measurePods")  # of those: pod counts
    # The measured createPods of a fixed `count` (upstream's FirstAvailable): pods per node.
    measure_per_node: float = 0.0
    extra_params: dict[str, Any] = field(default_factory=dict)
    # Devices upstream leaves free beside the claims it allocates beforehand ("full": all
    # but 10): the claims grow with the nodes, the free devices stay as many.
    free: int = 0

    @property
    def test_case(self) -> schedperf.TestCase:
        return schedperf.test_cases()[self.case]

    @property
    def gates(self) -> tuple[str, ...]:
        """The feature gates the case sets to true (both sides get them)."""
        return tuple(sorted(g for g, on in self.test_case.gates(self.variant).items() if on
                            and g != "DynamicResourceAllocation"))

    @property
    def runtime_config(self) -> tuple[str, ...]:
        """kube-apiserver's --runtime-config for the API versions of the objects that
        kube-apiserver v1.37 does not serve by default (PodGroup's scheduling.k8s.io/
        v1beta1, DeviceClasses written in resource.k8s.io/v1beta2)."""
        versions = {objects(op, 0)["apiVersion"] for op in self.plan(1)
                    if op.template is not None and op.count}
        return tuple(sorted(f"{v}=true" for v in versions & OFF_BY_DEFAULT))

    def params(self, nodes: int) -> dict[str, Any]:
        params = {**self.test_case.params(self.variant), **self.extra_params}
        for key in self.per_node:
            if key in params:
                limit = MAX_POD_PHASE if key in self.pod_phases else None
                free = self.free if key == "initClaims" else 0
                params[key] = _scale(int(params[key]) + free, nodes, self.base_nodes,
                                     limit) - free
        params["nodesWithDRA"] = nodes
        params["nodesWithoutDRA"] = 0
        # keep upstream's ratios where one count is derived from another
        if "measureClaims" in params:
            params["measureClaims"] = -(-int(params["measurePods"]) // 5)
            params["initClaims"] = -(-int(params["initPods"]) // 5)
        return params

    def plan(self, nodes: int, pods: int = 0, duration: float = 0.0) -> list[schedperf.Op]:
        """The operations for `nodes` nodes; `pods` > 0 replaces the measured pod count,
        `duration` > 0 the steady-state duration."""
        ops = self.test_case.resolve(self.params(nodes))
        out = []
        for op in ops:
            if op.opcode == "createNodes" and op.count == 0:
                continue
            if op.collect_metrics and op.opcode == "createPods":
                count = op.count
                if self.measure_per_node:
                    count = min(MAX_POD_PHASE, max(1, int(self.measure_per_node * nodes)))
                steady = duration or op.duration or DEFAULT_DURATION
                op = replace(op, count=pods or count,
                             duration=steady if op.steady_state else 0.0)
            out.append(op)
        return out

    def measured(self, nodes: int, pods: int = 0) -> schedperf.Op:
        return next(op for op in self.plan(nodes, pods) if op.collect_metrics)


# API versions kube-apiserver v1.37 serves only when --runtime-config asks for them.
OFF_BY_DEFAULT = {"resource.k8s.io/v1beta1", "resource.k8s.io/v1beta2",
                  "scheduling.k8s.io/v1beta1"}
_HALF = ("initClaims",)
WORKLOADS: dict[str, Workload] = {w.name: w for w in (
    Workload("template", "SchedulingWithResourceClaimTemplate", "5000pods_500nodes",
             "10 devices per node, half allocated beforehand; a burst of pods, each with "
             "a claim from one template",
             per_node=("initClaims", "measurePods")),
    Workload("churn", "SchedulingWithResourceClaimTemplate", "full_500nodes",
             "all devices but 10 allocated beforehand; 10 pods in flight for the duration, "
             "each deleted once scheduled and replaced",
             per_node=("initClaims",), free=10),
    Workload("claim", "SchedulingWithResourceClaim", "5000pods_500nodes",
             "2 devices per node; claims made beforehand, each shared by 5 pods; half the "
             "pods scheduled beforehand, then a burst of the rest",
             per_node=("initPods", "measurePods")),
    Workload("partitionable", "Partitionable", "half_500nodes",
             "per node a counter set and two devices consuming it; claims of 2 devices, "
             "half the nodes taken beforehand; 10 pods in flight",
             per_node=_HALF),
    Workload("backtracking", "PartitionableBacktracking", "half_500nodes",
             "per node 8 devices on a CPU and a 70Gi memory counter set; claims of 7 "
             "devices (only devices 2-8 fit together); half taken; 10 pods in flight",
             per_node=_HALF),
    Workload("compatibility", "CompatibilityGroups", "half_500nodes",
             "Partitionable with a compatibility group on every device; half taken; 10 "
             "pods in flight",
             per_node=_HALF),
    Workload("consumable", "ConsumableCapacity", "half_500nodes",
             "4 shareable devices of 10G bandwidth per node; claims of 2 distinct devices "
             "of 2500M; half the capacity taken by pods scheduled beforehand; 10 pods in "
             "flight",
             per_node=("initPods",)),
    Workload("firstavailable", "FirstAvailable", "fast",
             "firstAvailable: a class matching no device, then the test class; half the "
             "devices allocated beforehand; a burst of 5 pods per node",
             base_nodes=1, extra_params={"initClaims": 5}, per_node=("initClaims",),
             measure_per_node=5),
    Workload("listattributes", "SchedulingWithResourceClaimTemplateListAttributes",
             "empty_500nodes",
             "64 devices per node with list attributes, 32 requests with matchAttribute "
             "on the list (one pod per node); pods in flight as many as nodes",
             per_node=("measurePods",), pod_phases=()),
    Workload("taints", "DeviceTaintToleration", "fast",
             "a DeviceTaintRule tainting every device; claims that tolerate it; a burst "
             "of 5 pods per node",
             base_nodes=1, extra_params={"measurePods": 5}, per_node=("measurePods",)),
    Workload("extended", "ExtendedResource", "Explicit_25classes_5000pods_500nodes",
             "pods asking for extended resources of 25 DeviceClasses (no claims); half "
             "scheduled beforehand, then a burst of the rest",
             per_node=("initPods", "measurePods")),
    Workload("podgroupclaim", "SharedPodGroupResourceClaim", "100podgroups_5000pods",
             "PodGroups whose pods share one claim each (a network-attached device per "
             "group); a burst of pods",
             base_nodes=50, per_node=("measurePods",)),
    Workload("podgrouptemplate", "SharedPodGroupResourceClaimTemplate",
             "100podgroups_5000pods",
             "the same with the group's claim made from a template",
             base_nodes=50, per_node=("measurePods",)),
)}


def node_names(plan: Iterable[schedperf.Op]) -> list[str]:
    """The nodes a plan makes, by name."""
    names = []
    for op in plan:
        if op.opcode == "createNodes" and op.template is not None:
            names += [objects(op, i)["metadata"]["name"] for i in range(op.count)]
    return names


def objects(op: schedperf.Op, index: int) -> Obj:
    """The object number `index` of a createAny / createNodes / createPods /
    createPodGroups operation."""
    assert op.template is not None
    return schedperf.render(op.template, {**op.params, "Index": index, "Count": op.count})


# --- allocResourceClaims ---------------------------------------------------------------

def allocate_claims(claims: list[Obj], nodes: list[Obj], classes: list[Obj],
                    slices: list[Obj], allocated: list[Obj], gates: Iterable[str],
                    seed: int = 1) -> list[tuple[Obj, Obj]]:
    """(claim, its allocation) for each claim without one, each on a node picked at
    random among those where it fits (upstream's allocResourceClaims shuffles the nodes
    for each claim and takes the first that fits: the same distribution), with draemu's
    allocator, the claims allocated before counted as in use. Seeded: the same inputs
    give the same allocations."""
    from draemu.features import FeatureGates
    from draemu.scheduler.dra.manager import DRAManager

    dra = DRAManager(FeatureGates({g: True for g in gates}))
    for c in classes:
        dra.set_class(c)
    for s in slices:
        dra.set_slice(s)
    for k, c in enumerate(allocated):
        dra.set_claim(_with_uid(c, f"allocated-{k}"))
    rng = random.Random(seed)
    open_nodes = list(nodes)
    out = []
    allocator = dra.allocator()
    for k, claim in enumerate(claims):
        if (claim.get("status") or {}).get("allocation"):
            continue
        claim = _with_uid(claim, f"claim-{k}")
        while True:
            if not open_nodes:
                raise RuntimeError(f"could not allocate claim {k} of {len(claims)}: no node "
                                   "has room")
            i = rng.randrange(len(open_nodes))
            outcome = allocator.allocate(open_nodes[i], [claim])
            if outcome.results is not None:
                allocation = outcome.results[0]
                dra.set_claim({**claim, "status": {"allocation": allocation}})
                out.append((claim, allocation))
                break
            if outcome.error and not outcome.unsatisfiable:
                raise RuntimeError(f"claim {claim['metadata']['name']}: {outcome.error}")
            open_nodes[i] = open_nodes[-1]  # full for claims of this shape
            open_nodes.pop()
    return out


def _with_uid(claim: Obj, uid: str) -> Obj:
    meta = claim.get("metadata") or {}
    if meta.get("uid"):
        return claim
    return {**claim, "metadata": {**meta, "uid": uid, "namespace": meta.get("namespace", "")}}


# --- checks ------------------------------------------------------------------------------

def _results(claim: Obj) -> list[Obj]:
    alloc = (claim.get("status") or {}).get("allocation") or {}
    return list((alloc.get("devices") or {}).get("results") or [])


def _quantity(text: Any) -> Fraction:
    from draemu.api.quantity import parse_quantity

    return parse_quantity(str(text))


def _devices(slices: list[Obj]) -> tuple[dict[tuple[str, str, str], Obj],
                                        dict[tuple[str, str, str, str], Fraction]]:
    """Devices by (driver, pool, name), and counters by (driver, pool, set, counter)."""
    devices: dict[tuple[str, str, str], Obj] = {}
    counters: dict[tuple[str, str, str, str], Fraction] = {}
    for s in slices:
        spec = s["spec"]
        driver, pool = spec["driver"], spec["pool"]["name"]
        for d in spec.get("devices") or []:
            devices[(driver, pool, d["name"])] = d
        for cs in spec.get("sharedCounters") or []:
            for name, c in (cs.get("counters") or {}).items():
                counters[(driver, pool, cs["name"], name)] = _quantity(c["value"])
    return devices, counters


def _attribute(device: Obj, driver: str, name: str) -> Any:
    attrs = device.get("attributes") or {}
    value = attrs.get(name)
    if value is None and name.startswith(driver + "/"):
        value = attrs.get(name[len(driver) + 1:])
    if value is None:
        return None
    return next(iter(value.values())) if isinstance(value, dict) and value else value


def _constraint_problem(name: str, constraint: Obj, picked: list[tuple[Obj, Obj]]
                        ) -> str | None:
    requests = set(constraint.get("requests") or ())
    chosen = [(r, d) for r, d in picked if not requests
              or r["request"] in requests or r["request"].split("/")[0] in requests]
    attr = constraint.get("matchAttribute") or constraint.get("distinctAttribute")
    if not attr or len(chosen) < 2:
        return None
    values = [_attribute(d, r["driver"], attr) for r, d in chosen]
    if constraint.get("matchAttribute"):
        sets = [set(v) if isinstance(v, list) else {v} for v in values]
        if None in values or not set.intersection(*sets):
            return f"{name}: matchAttribute {attr} not held: {values}"
    elif len({str(v) for v in values}) != len(values):
        return f"{name}: distinctAttribute {attr} not held: {values}"
    return None


def check_allocations(claims: list[Obj], slices: list[Obj]) -> list[str]:
    """What is wrong with these allocated claims on these slices ([] if nothing)."""
    devices, counters = _devices(slices)
    problems: list[str] = []
    holder: dict[tuple[str, str, str], str] = {}
    used_counters: dict[tuple[str, str, str, str], Fraction] = {}
    consumed: dict[tuple[str, str, str, str], Fraction] = {}
    for c in claims:
        name = c["metadata"]["name"]
        picked = []
        for r in _results(c):
            key = (r["driver"], r["pool"], r["device"])
            device = devices.get(key)
            if device is None:
                problems.append(f"{name}: device {'/'.join(key)} does not exist")
                continue
            picked.append((r, device))
            if r.get("adminAccess"):
                continue
            if not device.get("allowMultipleAllocations"):
                if key in holder and holder[key] != name:
                    problems.append(f"device {'/'.join(key)} allocated to both "
                                    f"{holder[key]} and {name}")
                holder[key] = name
            for use in device.get("consumesCounters") or []:
                for counter, v in (use.get("counters") or {}).items():
                    ck = (key[0], key[1], use["counterSet"], counter)
                    used_counters[ck] = used_counters.get(ck, Fraction(0)) + \
                        _quantity(v["value"])
            for cap, v in (r.get("consumedCapacity") or {}).items():
                capk = (*key, cap)
                consumed[capk] = consumed.get(capk, Fraction(0)) + _quantity(v)
        spec_devices = (c.get("spec") or {}).get("devices") or {}
        for constraint in spec_devices.get("constraints") or []:
            problem = _constraint_problem(name, constraint, picked)
            if problem:
                problems.append(problem)
        for request in spec_devices.get("requests") or []:
            exactly = request.get("exactly")
            if exactly and exactly.get("allocationMode", "ExactCount") == "ExactCount":
                got = sum(1 for r in _results(c) if r["request"] == request["name"])
                want = int(exactly.get("count") or 1)
                if got != want:
                    problems.append(f"{name}: request {request['name']} got {got} devices, "
                                    f"asked {want}")
    for ck, n in sorted(used_counters.items()):
        have = counters.get(ck)
        if have is None or n > have:
            problems.append(f"counter {'/'.join(ck)}: {n} consumed of {have}")
    for capk, n in sorted(consumed.items()):
        cap = ((devices[capk[:3]].get("capacity") or {}).get(capk[3]) or {}).get("value")
        if cap is None or n > _quantity(cap):
            problems.append(f"capacity {'/'.join(capk)}: {n} consumed of {cap}")
    return problems


# --- helpers for the runners -------------------------------------------------------------

async def bounded(coros: Iterable[Awaitable[Any]], limit: int = 32) -> list[Any]:
    """Awaits all, at most `limit` at a time, in order of the results."""
    sem = asyncio.Semaphore(limit)

    async def one(c: Awaitable[Any]) -> Any:
        async with sem:
            return await c

    return list(await asyncio.gather(*(one(c) for c in coros)))


def namespaces(plan: Iterable[schedperf.Op]) -> list[str]:
    out: list[str] = []
    for op in plan:
        if op.namespace and op.namespace not in out:
            out.append(op.namespace)
    return out


def describe(name: str, nodes: int, pods: int = 0) -> str:
    w = WORKLOADS[name]
    m = w.measured(nodes, pods)
    how = f"{m.count} in flight for {m.duration:g}s" if m.steady_state else f"{m.count} pods"
    return f"{w.case}/{w.variant} at {nodes} nodes: {how}"


def template_path(name: str) -> Path:
    return schedperf.upstream_dir() / "templates" / name


Renderer = Callable[[schedperf.Op, int], Obj]
