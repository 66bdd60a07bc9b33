"""A pod's scheduling decision, replayed with the scheduler's own plugins: node by node,
whether it fits (and which Filter plugin said no, in its words), device by device what
the DRA allocator made of each of the pod's requests (the part of a selector that is
false with the values it saw, a taint, capacity left, a constraint, a counter), and
among the nodes that fit, the scores that decided — or that they tied and the scheduler
picked at random among the best, as kube-scheduler does.

Why replayed: the scheduler records where a pod went (a `Scheduled` event, as upstream)
but not the scores (upstream logs them only at high verbosity), so the decision is
computed again here, offline, with the same plugins in the default profile's order and
weights, fed what the scheduler's informers would hold now. A placed pod is replayed as
not yet placed and with its own claims not yet allocated; everything else is as it is
now. The DRA introduction's "❌ gpu-node-03: T4 16GB — too small / ✅ gpu-node-01 GPU
0/1: A100 80GB — matches" is `Decision.text()` and the web view's table.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from draemu.client import key_of
from draemu.cmd.explain.snapshot import Cluster
from draemu.features import FeatureGates
from draemu.scheduler.config import SchedulerConfig
from draemu.scheduler.dra.allocator import Allocator
from draemu.scheduler.dra.explain import DeviceReport, Explanation
from draemu.scheduler.dra.inventory import claim_key
from draemu.scheduler.framework import CycleState
from draemu.scheduler.informers import ObjectLister
from draemu.scheduler.scheduler import SCHEDULER_NAME, Scheduler

MAX_DETAILED = 16  # nodes shown device by device; the others are counted by reason
_MODEL_KEYS = ("model", "productName", "type")


@dataclass
class DeviceVerdict:
    """One device for one request, on one node."""

    id: str  # driver/pool/name
    model: str
    ok: bool
    reason: str  # the allocator's reason ("matches", "in use by claim ...", ...)
    words: str = ""  # a false selector's failing part in words ("memory 16Gi, too small ...")
    clause: str = ""  # that failing part of the selector
    seen: str = ""  # the values the selector looked at
    chosen: bool = False  # the pod got it (on the node it is on)
    pick: bool = False  # the allocator would take it on this node now
    attributes: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.id.rsplit("/", 1)[-1]

    def short(self) -> str:
        if self.chosen:
            return "chosen"
        if self.ok:
            return "matches"
        return self.words or self.reason + (f" ({self.seen})" if self.seen else "")

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "model": self.model, "ok": self.ok,
                "chosen": self.chosen, "pick": self.pick, "reason": self.reason,
                "words": self.words, "clause": self.clause, "seen": self.seen,
                "short": self.short(), "attributes": self.attributes}


@dataclass
class RequestVerdict:
    claim: str
    request: str
    device_class: str
    needed: str
    devices: list[DeviceVerdict]

    def to_dict(self) -> dict[str, Any]:
        return {"claim": self.claim, "request": self.request, "deviceClass": self.device_class,
                "needed": self.needed, "devices": [d.to_dict() for d in self.devices]}


@dataclass
class NodeVerdict:
    name: str
    feasible: bool
    plugin: str = ""  # the plugin that rejected the node
    reason: str = ""  # its message
    requests: list[RequestVerdict] = field(default_factory=list)
    dra: str = ""  # the allocator's one-line verdict on this node
    score: int | None = None
    scores: dict[str, int] = field(default_factory=dict)  # plugin -> weighted score
    scheduled: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "feasible": self.feasible, "plugin": self.plugin,
                "reason": self.reason, "dra": self.dra, "score": self.score,
                "scores": self.scores, "scheduled": self.scheduled,
                "requests": [r.to_dict() for r in self.requests]}


@dataclass
class Decision:
    pod: str
    status: str
    node: str | None  # where the pod is (None: pending)
    claims: list[dict[str, Any]]  # {"key", "devices", "sharedWith"}
    missing: list[str]
    replayed: bool  # a placed pod: its claims taken as not yet allocated
    nodes: list[NodeVerdict]
    more: dict[str, int]  # nodes not shown one by one: "plugin: reason" -> how many
    verdict: str  # which node and why, in one sentence
    weights: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"pod": self.pod, "status": self.status, "node": self.node,
                "claims": self.claims, "missing": self.missing, "replayed": self.replayed,
                "nodes": [n.to_dict() for n in self.nodes], "more": self.more,
                "verdict": self.verdict, "weights": self.weights}

    def text(self) -> str:
        return render(self)


# --- the replay -------------------------------------------------------------------------

def replay(c: Cluster, gates: FeatureGates | None = None,
           config: SchedulerConfig | None = None) -> Decision:
    """The decision for `c.pod` (see the module's docstring); `config`: the scheduler's
    KubeSchedulerConfiguration (default: upstream's default profile)."""
    gates = gates or c.gates or FeatureGates()
    pod = c.pod
    placed = (pod.get("spec") or {}).get("nodeName")
    own = {claim_key(x) for x in c.pod_claims.claims}
    sched = _scheduler(c, gates, own if placed else set(), config)
    name = (pod.get("spec") or {}).get("schedulerName") or SCHEDULER_NAME
    fw = sched.profiles.get(name, sched.framework)
    probe = _unplaced(pod)
    state = CycleState()
    status, restriction = fw.run_pre_filter(state, probe)
    verdicts: list[NodeVerdict] = []
    for info in sched.cache.nodes():
        if not status.ok:
            verdicts.append(NodeVerdict(info.name, False, status.plugin, status.message))
        elif restriction.node_names is not None and info.name not in restriction.node_names:
            verdicts.append(NodeVerdict(info.name, False, ", ".join(sorted(
                state.restricted_by)), "not among the nodes PreFilter allows"))
        else:
            st = fw.run_filter(state, probe, info)
            verdicts.append(NodeVerdict(info.name, st.ok, "" if st.ok else st.plugin,
                                        "" if st.ok else st.message))
    feasible = [v for v in verdicts if v.feasible]
    if len(feasible) > 1:
        by_plugin: dict[str, dict[str, int]] = {}
        infos = [i for i in sched.cache.nodes() if i.name in {v.name for v in feasible}]
        totals = fw.run_score(state, probe, infos, by_plugin)
        for v in feasible:
            v.score = totals[v.name]
            v.scores = {p: s[v.name] for p, s in by_plugin.items()}
    for v in verdicts:
        v.scheduled = v.name == placed
    shown, more = _detailed(verdicts, placed)
    _devices(c, shown, placed)
    return Decision(key_of(pod), _status(pod), placed, _claims(c), list(c.pod_claims.missing),
                    bool(placed and c.pod_claims.claims), shown, more,
                    _verdict(verdicts, placed), fw.weights)


def _scheduler(c: Cluster, gates: FeatureGates, unallocated: set[str],
               config: SchedulerConfig | None) -> Scheduler:
    """A scheduler that makes no API calls, fed what its informers would hold now, with
    the pod itself and its claims' allocations (`unallocated`) left out."""
    sched = Scheduler(None, gates, config=config)  # type: ignore[arg-type]  # no API calls
    for obj in c.classes:
        sched.dra.set_class(obj)
    for obj in c.slices:
        sched.dra.set_slice(obj)
    if gates.enabled("DRADeviceTaintRules"):
        for obj in c.taint_rules:
            sched.dra.set_taint_rule(obj)
    for obj in c.claims:
        if claim_key(obj) in unallocated:
            obj = {k: v for k, v in obj.items() if k != "status"}
        sched.dra.set_claim(obj)
    for node in c.nodes:
        sched.cache.set_node(node)
    me = c.pod["metadata"].get("uid")
    for pod in c.pods:
        spec, meta = pod.get("spec") or {}, pod.get("metadata") or {}
        if spec.get("nodeName") and meta.get("uid") and meta["uid"] != me and \
                (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            sched.cache.add_pod(pod)
    for resource, objects in c.workloads.items():
        sched.informers.serve_from(resource, ObjectLister(objects))
    sched.informers.serve_from("pods", ObjectLister(c.pods))
    return sched


def _unplaced(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod as the scheduler saw it before placing it."""
    probe = copy.deepcopy(pod)
    probe.setdefault("metadata", {}).setdefault("uid", "draemu-replay")
    probe.setdefault("spec", {}).pop("nodeName", None)
    status = probe.get("status") or {}
    probe["status"] = {k: status[k] for k in ("resourceClaimStatuses",
                                              "extendedResourceClaimStatus") if k in status}
    return probe


def _detailed(verdicts: list[NodeVerdict], placed: str | None
              ) -> tuple[list[NodeVerdict], dict[str, int]]:
    """The nodes shown one by one (the pod's node, the feasible ones best first, then the
    rejected ones), and the others counted by reason."""
    order = sorted(verdicts, key=lambda v: (not v.scheduled, not v.feasible,
                                            -(v.score or 0), v.name))
    shown = sorted(order[:MAX_DETAILED], key=lambda v: v.name)
    more = Counter(f"{v.plugin}: {v.reason}" if not v.feasible else "fits"
                   for v in order[MAX_DETAILED:])
    return shown, dict(more)


# --- devices ------------------------------------------------------------------------------

def _devices(c: Cluster, shown: list[NodeVerdict], placed: str | None) -> None:
    """Each shown node's devices for the pod's claims to allocate, as the allocator saw
    them there."""
    own = {claim_key(x) for x in c.pod_claims.claims}
    pending = [_without_status(x) if placed else x for x in c.pod_claims.claims
               if placed or not (x.get("status") or {}).get("allocation")]
    if not pending:
        return
    got = _allocated_devices(c.pod_claims.claims) if placed else set()
    published = _published(c.slices)
    allocator = Allocator(c.inventory)
    nodes = {n["metadata"]["name"]: n for n in c.nodes}
    for verdict in shown:
        node = nodes.get(verdict.name)
        if node is None:
            continue
        outcome = allocator.allocate(node, pending)
        verdict.dra = outcome.explanation.summary
        verdict.requests = _requests(outcome.explanation, published,
                                     got if verdict.scheduled else set(), own)


def _without_status(claim: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in claim.items() if k != "status"}


def _allocated_devices(claims: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """(claim, request, device id) of the pod's claims' allocations."""
    out = set()
    for claim in claims:
        allocation = (claim.get("status") or {}).get("allocation") or {}
        for r in (allocation.get("devices") or {}).get("results") or []:
            out.add((claim_key(claim), r.get("request", ""),
                     f"{r.get('driver')}/{r.get('pool')}/{r.get('device')}"))
    return out


def _requests(expl: Explanation, published: dict[str, dict[str, Any]],
              got: set[tuple[str, str, str]], own: set[str]) -> list[RequestVerdict]:
    out = []
    for r in expl.requests:
        rows = []
        for d in r.devices:
            if _another_driver(d):
                continue  # not a device of the request's class at all
            dev = published.get(d.device, {})
            rows.append(DeviceVerdict(
                d.device, _model(dev), d.ok, d.reason, d.plain, d.clause, d.seen,
                chosen=(r.claim, r.request, d.device) in got,
                pick=d.device in r.chosen, attributes=_attributes(dev, d.device)))
        out.append(RequestVerdict(r.claim, r.request, r.device_class, r.needed, rows))
    return out


def _another_driver(d: DeviceReport) -> bool:
    """A device its class's selector turns down for its driver: another driver's."""
    return not d.ok and d.reason.startswith("class ") and d.plain.startswith("driver ")


def _published(slices: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {}
    for s in slices:
        spec = s.get("spec") or {}
        for dev in spec.get("devices") or []:
            out[f"{spec.get('driver')}/{(spec.get('pool') or {}).get('name')}/{dev['name']}"] = dev
    return out


def _model(dev: dict[str, Any]) -> str:
    attributes = dev.get("attributes") or {}
    for key in _MODEL_KEYS:
        for name, value in attributes.items():
            if name.rsplit("/", 1)[-1] == key and isinstance(value, dict) and value:
                return str(next(iter(value.values())))
    return ""


def _attributes(dev: dict[str, Any], device_id: str) -> dict[str, str]:
    """Every attribute and capacity with its full value (the driver's domain left off)."""
    driver = device_id.split("/", 1)[0]
    out = {}
    for name, value in sorted((dev.get("attributes") or {}).items()):
        short = name.split("/", 1)[1] if name.startswith(driver + "/") else name
        out[short] = str(next(iter(value.values()))) if isinstance(value, dict) and value \
            else str(value)
    for name, value in sorted((dev.get("capacity") or {}).items()):
        out[f"capacity {name}"] = str(value.get("value") if isinstance(value, dict) else value)
    if dev.get("allowMultipleAllocations"):
        out["allowMultipleAllocations"] = "true"
    return out


# --- the words ----------------------------------------------------------------------------

def _status(pod: dict[str, Any]) -> str:
    phase = (pod.get("status") or {}).get("phase", "Pending")
    node = (pod.get("spec") or {}).get("nodeName")
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return f"{phase}, unschedulable: {c.get('message', '')}".rstrip(": ")
    return f"{phase}, on node {node}" if node else phase


def _claims(c: Cluster) -> list[dict[str, Any]]:
    me = key_of(c.pod)
    ns = c.pod["metadata"].get("namespace", "default")
    out = []
    for claim in c.pod_claims.claims:
        allocation = (claim.get("status") or {}).get("allocation") or {}
        devices = [f"{r['driver']}/{r['pool']}/{r['device']}"
                   for r in (allocation.get("devices") or {}).get("results") or []]
        shared = [f"{ns}/{r.get('name')}" for r in
                  (claim.get("status") or {}).get("reservedFor") or []
                  if r.get("resource") == "pods" and f"{ns}/{r.get('name')}" != me]
        out.append({"key": claim_key(claim), "devices": devices, "sharedWith": shared})
    return out


def _verdict(verdicts: list[NodeVerdict], placed: str | None) -> str:
    """Which node, and what decided it, in one sentence."""
    feasible = [v for v in verdicts if v.feasible]
    if not feasible:
        if placed:
            return (f"No node fits the pod now: the cluster changed after it was placed on "
                    f"{placed}.")
        return f"No node fits: each of the {len(verdicts)} nodes turns the pod down (above)."
    if len(feasible) == 1:
        [only] = feasible
        if placed and placed != only.name:
            return (f"Only {only.name} fits now; the pod went to {placed} when the cluster "
                    "differed.")
        if placed:
            return f"{only.name} is the only node that fits."
        return f"{only.name} is the only node that fits: the scheduler will place it there."
    best = max(v.score or 0 for v in feasible)
    top = [v for v in feasible if v.score == best]
    names = ", ".join(v.name for v in top)
    if placed and any(v.name == placed for v in top):
        if len(top) > 1:
            return (f"{names} tie at the highest score, {best}: kube-scheduler picks at "
                    f"random among the best, and picked {placed}.")
        return f"{placed} has the highest score, {best}{_lead(feasible, top[0])}."
    if placed:
        return (f"Replayed now, {names} score{'s' if len(top) == 1 else ''} highest ({best}); "
                f"the pod went to {placed} when the cluster differed.")
    which = names if len(top) == 1 else "one of " + names
    return f"The pod fits now; the scheduler would pick {which} (score {best})."


def _lead(feasible: list[NodeVerdict], winner: NodeVerdict) -> str:
    """What put the winner ahead of the runner-up: the plugins whose scores differ."""
    rest = sorted((v for v in feasible if v is not winner), key=lambda v: -(v.score or 0))
    if not rest:
        return ""
    second = rest[0]
    ahead = [f"{p} {winner.scores.get(p, 0) - second.scores.get(p, 0):+d}"
             for p in winner.scores if winner.scores.get(p, 0) != second.scores.get(p, 0)]
    return f", ahead of {second.name} ({second.score}) by " + ", ".join(ahead) if ahead else ""


def render(d: Decision) -> str:
    lines = [f"Pod {d.pod}: {d.status}"]
    for claim in d.claims:
        state = "allocated: " + ", ".join(claim["devices"]) if claim["devices"] \
            else "not allocated"
        shared = f" (shared with {', '.join(claim['sharedWith'])})" if claim["sharedWith"] else ""
        lines.append(f"  claim {claim['key']}: {state}{shared}")
    lines += [f"  claim {m}" for m in d.missing]
    if d.missing:
        lines.append("The pod waits until all its claims exist.")
    if not d.nodes:
        lines.append("There are no nodes.")
        return "\n".join(lines)
    if d.replayed:
        lines.append("\nThe decision, replayed with the scheduler's plugins (this pod's claims "
                     "taken as not yet allocated):")
    else:
        lines.append("")
    for v in d.nodes:
        lines += _node_lines(v)
    for reason, count in sorted(d.more.items()):
        lines.append(f"   ... and {count} more node{'s' if count > 1 else ''}: {reason}")
    lines.append(d.verdict)
    return "\n".join(lines)


def _node_lines(v: NodeVerdict) -> list[str]:
    mark = "✅" if v.feasible else "❌"
    where = "  ← scheduled here" if v.scheduled else ""
    if v.feasible:
        head = "fits" + (f", score {v.score}" if v.score is not None else "")
    elif v.plugin == "DynamicResources" and v.requests:
        # The devices below say why; the first words say what.
        head = f"{v.plugin}: {v.reason.split(': ', 1)[0]}"
    else:
        head = f"{v.plugin}: {v.reason}" if v.plugin else v.reason
    lines = [f"{mark} {v.name}: {head}{where}"]
    for r in v.requests:
        groups: dict[tuple[bool, str, str], list[str]] = {}
        for dev in r.devices:
            groups.setdefault((dev.ok, dev.model, dev.short()), []).append(dev.name)
        for (ok, model, reason), names in groups.items():
            label = f" ({model})" if model else ""
            lines.append(f"     {'✅' if ok else '❌'} {r.request}: {', '.join(names)}{label}"
                         f" — {reason}")
    return lines
