"""NodeResourcesFit: the pod's requests (cpu, memory, ephemeral storage, extended
resources) must fit the node's allocatable minus what its pods request, and the node
must have room for one more pod. Scores with upstream's default LeastAllocated strategy.

Extended resources that a node does not offer but a DeviceClass maps
(`extendedResourceName`, DRAExtendedResource) are left to DynamicResources.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from draemu.scheduler.framework import SUCCESS, ClusterEvent, CycleState, PreFilterResult, Status
from draemu.scheduler.nodeinfo import NodeInfo, Resource, pod_requests

MAX_SCORE = 100
# Upstream counts containers without requests as 0.1 cpu and 200 MiB when scoring.
DEFAULT_MILLI_CPU = 100
DEFAULT_MEMORY = 200 * 1024 * 1024


class NodeResourcesFit:
    name = "NodeResourcesFit"
    weight = 1

    def __init__(self, dra_backed: Callable[[str], bool] | None = None) -> None:
        # Tells whether an extended resource name is backed by a DeviceClass.
        self._dra_backed = dra_backed or (lambda _name: False)

    def events(self) -> Iterable[ClusterEvent]:
        return [ClusterEvent("Pod", "Delete"), ClusterEvent("Node", "Add"),
                ClusterEvent("Node", "Update")]

    def pre_filter(self, state: CycleState, pod: dict) -> tuple[Status, PreFilterResult | None]:
        state.write(self.name, pod_requests(pod))
        return SUCCESS, None

    def _request(self, state: CycleState, pod: dict) -> Resource:
        req = state.read(self.name)
        return req if req is not None else pod_requests(pod)

    def filter(self, state: CycleState, pod: dict, node: NodeInfo) -> Status:
        req = self._request(state, pod)
        alloc, used = node.allocatable, node.requested
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

    def score(self, state: CycleState, pod: dict, node: NodeInfo) -> int:
        req = self._request(state, pod)
        cpu = (req.milli_cpu or DEFAULT_MILLI_CPU) + node.requested.milli_cpu
        mem = (req.memory or DEFAULT_MEMORY) + node.requested.memory
        parts = [_least(cpu, node.allocatable.milli_cpu), _least(mem, node.allocatable.memory)]
        return sum(parts) // len(parts)


def _least(requested: int, capacity: int) -> int:
    if capacity <= 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_SCORE // capacity
