"""NodeResourcesFit: the pod's requests (cpu, memory, ephemeral storage, extended
resources) must fit the node's allocatable minus what its pods request, and the node
must have room for one more pod. Scores by the configured strategy (upstream's default
LeastAllocated over cpu and memory, weight 1 each; MostAllocated;
RequestedToCapacityRatio), counting containers without requests as 100m / 200 MiB.

Extended resources that a node does not offer but a DeviceClass maps
(`extendedResourceName`, DRAExtendedResource) are left to DynamicResources.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from draemu.scheduler.framework import (
    SUCCESS,
    ClusterEvent,
    CycleState,
    FilterEquivalence,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHintPlugin,
    Status,
)
from draemu.scheduler.framework.handle import Handle
from draemu.scheduler.nodeinfo import CPU, EPHEMERAL, MEMORY, NodeInfo, Resource, pod_requests
from draemu.scheduler.pluginargs import NodeResourcesBalancedAllocationArgs, NodeResourcesFitArgs

MAX_SCORE = 100


class NodeResourcesFit(QueueingHintPlugin, PreFilterPlugin, FilterEquivalence, PreScorePlugin):
    name = "NodeResourcesFit"
    score_key = name + "/score"  # its PreScore state (Score reads it per node)
    requests_nothing_key = name + "/nothing"
    weight = 1

    def __init__(self, dra_backed: Callable[[str], bool] | None = None,
                 scoring: ScoringStrategy | None = None) -> None:
        # Tells whether an extended resource name is backed by a DeviceClass.
        self._dra_backed = dra_backed or (lambda _name: False)
        self.scoring = scoring or ScoringStrategy()

    def events(self) -> Iterable[ClusterEvent]:
        return [ClusterEvent("Pod", "Delete"), ClusterEvent("Node", "Add"),
                ClusterEvent("Node", "Update")]

    def queueing_hint(self, event: ClusterEvent, pod: dict, old: dict | None,
                      new: dict | None) -> bool:
        """Upstream's isSchedulableAfterNodeChange: the pod's requests fit the node's
        allocatable, and the node was just added or offers more of something the pod
        requests (or room for more pods) than before. A placed pod deleted always may."""
        if event.resource != "Node":
            return True
        if new is None:
            return False
        req = pod_requests(pod)
        now = Resource.from_list((new.get("status") or {}).get("allocatable"))
        if not self._fits_empty(req, now):
            return False
        if old is None:
            return True
        was = Resource.from_list((old.get("status") or {}).get("allocatable"))
        return now.allowed_pods > was.allowed_pods \
            or (req.milli_cpu > 0 and now.milli_cpu > was.milli_cpu) \
            or (req.memory > 0 and now.memory > was.memory) \
            or (req.ephemeral_storage > 0 and now.ephemeral_storage > was.ephemeral_storage) \
            or any(want and now.scalars.get(name, 0) > was.scalars.get(name, 0)
                   for name, want in req.scalars.items())

    def _fits_empty(self, req: Resource, alloc: Resource) -> bool:
        """Whether the pod would fit the node with nothing on it (upstream's isFit)."""
        return alloc.allowed_pods >= 1 and req.milli_cpu <= alloc.milli_cpu \
            and req.memory <= alloc.memory and req.ephemeral_storage <= alloc.ephemeral_storage \
            and all(want <= alloc.scalars.get(name, 0) for name, want in req.scalars.items()
                    if want and not (name not in alloc.scalars and self._dra_backed(name)))

    def pre_filter(self, state: CycleState, pod: dict) -> tuple[Status, PreFilterResult | None]:
        req = pod_requests(pod)
        state.write(self.name, req)
        # A pod that requests nothing only needs room for one more pod (Filter's shortcut).
        state.write(self.requests_nothing_key, not (
            req.milli_cpu or req.memory or req.ephemeral_storage or any(req.scalars.values())))
        return SUCCESS, None

    def _request(self, state: CycleState, pod: dict) -> Resource:
        req = state.read(self.name)
        return req if req is not None else pod_requests(pod)

    def filter_equivalence(self, state: CycleState, pod: dict
                           ) -> tuple[tuple[str, ...], None]:
        """The pod's requests against the node's; which requested extended resources a
        DeviceClass backs (those a node lacks are left to DynamicResources)."""
        req = self._request(state, pod)
        return tuple(sorted(n for n in req.scalars if self._dra_backed(n))), None

    node_local_score = True

    def filter(self, state: CycleState, pod: dict, node: NodeInfo) -> Status:
        if state.read(self.requests_nothing_key) and len(node.pods) < \
                node.allocatable.allowed_pods:
            return SUCCESS
        req = state.read(self.name)  # (self._request inline: this runs for every node)
        if req is None:
            req = pod_requests(pod)
        alloc, used = node.allocatable, node.requested
        # The common case first, in one test: room for the pod and its cpu, memory and
        # ephemeral storage, and no extended resources to look at.
        if len(node.pods) < alloc.allowed_pods and not req.scalars \
                and req.milli_cpu <= alloc.milli_cpu - used.milli_cpu \
                and req.memory <= alloc.memory - used.memory \
                and req.ephemeral_storage <= alloc.ephemeral_storage - used.ephemeral_storage:
            return SUCCESS
        reasons: list[str] = []
        if len(node.pods) + 1 > alloc.allowed_pods:
            reasons.append("Too many pods")
        if req.milli_cpu and req.milli_cpu > alloc.milli_cpu - used.milli_cpu:
            reasons.append("Insufficient cpu")
        if req.memory and req.memory > alloc.memory - used.memory:
            reasons.append("Insufficient memory")
        if req.ephemeral_storage and \
                req.ephemeral_storage > alloc.ephemeral_storage - used.ephemeral_storage:
            reasons.append("Insufficient ephemeral-storage")
        for name in sorted(req.scalars):
            want = req.scalars[name]
            if not want:
                continue
            if name not in alloc.scalars and self._dra_backed(name):
                continue
            if want > alloc.scalars.get(name, 0) - used.scalars.get(name, 0):
                reasons.append(f"Insufficient {name}")
        return Status.unschedulable(*reasons) if reasons else SUCCESS

    def pre_score(self, state: CycleState, pod: dict, feasible: list[NodeInfo]) -> bool:
        state.write(self.score_key, (_pod_request_list(
            pod, self.scoring.resources, non_zero=True), self.scoring.default))
        return False

    def score(self, state: CycleState, pod: dict, node: NodeInfo) -> int:
        pod_req, default = state.read(self.score_key) or (
            _pod_request_list(pod, self.scoring.resources, non_zero=True),
            self.scoring.default)
        if default:
            # LeastAllocated over cpu and memory, weight 1 each (the default), inline.
            alloc, used = node.allocatable, node.non_zero_requested
            total = count = 0
            cap = alloc.milli_cpu
            if cap:
                req = used.milli_cpu + pod_req[0]
                total += 0 if req > cap else (cap - req) * MAX_SCORE // cap
                count += 1
            cap = alloc.memory
            if cap:
                req = used.memory + pod_req[1]
                total += 0 if req > cap else (cap - req) * MAX_SCORE // cap
                count += 1
            return total // count if count else 0
        requested, allocatable = _node_lists(node, self.scoring.resources, pod_req,
                                             use_requested=False)
        return self.scoring.score(requested, allocatable)


@dataclass
class ScoringStrategy:
    """NodeResourcesFitArgs.scoringStrategy: LeastAllocated (default), MostAllocated or
    RequestedToCapacityRatio (with its shape of (utilization, score 0..10) points)."""

    type: str = "LeastAllocated"
    resources: list[tuple[str, int]] = field(
        default_factory=lambda: [(CPU, 1), (MEMORY, 1)])
    shape: list[tuple[int, int]] = field(default_factory=lambda: [(0, 10), (100, 0)])

    @property
    def default(self) -> bool:
        """LeastAllocated over cpu and memory with weight 1 each."""
        return self.type == "LeastAllocated" and self.resources == [(CPU, 1), (MEMORY, 1)]

    def score(self, requested: list[int], allocatable: list[int]) -> int:
        node_score = weight_sum = 0
        if self.type == "RequestedToCapacityRatio":
            points = [(u, s * (MAX_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for u, s in self.shape]
            for (_name, weight), req, cap in zip(self.resources, requested, allocatable,
                                                 strict=True):
                if cap == 0:
                    continue
                value = _broken_linear(points, 100 if req > cap else req * 100 // cap)
                if value > 0:
                    node_score += value * weight
                    weight_sum += weight
            return math.floor(node_score / weight_sum + 0.5) if weight_sum else 0
        for (_name, weight), req, cap in zip(self.resources, requested, allocatable,
                                             strict=True):
            if cap == 0:
                continue
            if self.type == "MostAllocated":
                value = min(req, cap) * MAX_SCORE // cap
            else:
                value = 0 if req > cap else (cap - req) * MAX_SCORE // cap
            node_score += value * weight
            weight_sum += weight
        return node_score // weight_sum if weight_sum else 0


MAX_CUSTOM_PRIORITY_SCORE = 10


def _trunc_div(a: int, b: int) -> int:
    """Go's integer division (towards zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _broken_linear(points: list[tuple[int, int]], p: int) -> int:
    for i, (u, score) in enumerate(points):
        if p <= u:
            if i == 0:
                return score
            u0, s0 = points[i - 1]
            return s0 + _trunc_div((score - s0) * (p - u0), u - u0)
    return points[-1][1]


def _pod_request_list(pod: dict, resources: list[tuple[str, int]], *, non_zero: bool
                      ) -> list[int]:
    req = pod_requests(pod, non_zero=non_zero)
    return [_get(req, name) for name, _w in resources]


def _get(r: Resource, name: str) -> int:
    if name == CPU:
        return r.milli_cpu
    if name == MEMORY:
        return r.memory
    if name == EPHEMERAL:
        return r.ephemeral_storage
    return r.scalars.get(name, 0)


def _node_lists(node: NodeInfo, resources: list[tuple[str, int]], pod_req: list[int], *,
                use_requested: bool) -> tuple[list[int], list[int]]:
    """Upstream's calculateResourceAllocatableRequest for each configured resource: an
    extended resource the pod does not request, or the node does not have, is left out
    (allocatable 0)."""
    requested, allocatable = [], []
    used = node.requested if use_requested else node.non_zero_requested
    for (name, _w), want in zip(resources, pod_req, strict=True):
        if name == CPU:
            alloc, have = node.allocatable.milli_cpu, used.milli_cpu
        elif name == MEMORY:
            alloc, have = node.allocatable.memory, used.memory
        elif name == EPHEMERAL:
            alloc, have = node.allocatable.ephemeral_storage, node.requested.ephemeral_storage
        elif want == 0 or name not in node.allocatable.scalars:
            alloc, have = 0, 0
        else:
            alloc, have = node.allocatable.scalars[name], node.requested.scalars.get(name, 0)
        allocatable.append(alloc)
        requested.append(have + want if alloc else 0)
    return requested, allocatable


class BalancedAllocation(PreScorePlugin):
    """NodeResourcesBalancedAllocation: favours nodes whose cpu and memory (by default)
    the pod makes more evenly used. Balance = (1 - standard deviation of the used
    fractions) * 100; as v1.37, the score is 50 + (50 + balance with the pod - balance
    without it) / 2. Pods that request none of the resources are not scored (upstream's
    best-effort skip)."""

    name = "NodeResourcesBalancedAllocation"
    weight = 1

    def __init__(self, resources: list[tuple[str, int]] | None = None) -> None:
        self.resources = resources or [(CPU, 1), (MEMORY, 1)]

    def events(self) -> Iterable[ClusterEvent]:
        return []

    node_local_score = True

    def pre_score(self, state: CycleState, pod: dict, feasible: list[NodeInfo]) -> bool:
        req = _pod_request_list(pod, self.resources, non_zero=False)
        if not any(req):
            return True
        state.write(self.name, req)
        return False

    def score(self, state: CycleState, pod: dict, node: NodeInfo) -> int:
        pod_req = state.read(self.name)
        requested, allocatable = _node_lists(node, self.resources, pod_req, use_requested=True)
        allocated, _ = _node_lists(node, self.resources, [0] * len(pod_req),
                                   use_requested=True)
        # v1.37 scores the change the pod makes: 50 + (50 + with - without) / 2.
        with_pod = _balance(requested, allocatable)
        without_pod = _balance(allocated, allocatable)
        return MAX_SCORE // 2 + _trunc_div(MAX_SCORE // 2 + with_pod - without_pod, 2)


def new_fit(args: NodeResourcesFitArgs, handle: Handle) -> NodeResourcesFit:
    scoring = ScoringStrategy(args.scoring_type)
    if args.resources:
        scoring.resources = args.resources
    if args.shape:
        scoring.shape = args.shape
    return NodeResourcesFit(handle.dra.backs_extended_resource, scoring)


def new_balanced_allocation(args: NodeResourcesBalancedAllocationArgs, _handle: Handle
                            ) -> BalancedAllocation:
    return BalancedAllocation(args.resources)


def _balance(requested: list[int], allocatable: list[int]) -> int:
    """(1 - the standard deviation of the used fractions) * 100."""
    fractions = [min(r / a, 1.0) for r, a in zip(requested, allocatable, strict=True) if a]
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    return int((1 - std) * MAX_SCORE)
