"""NodeName: a pod that names a node fits only that node."""

from __future__ import annotations

from collections.abc import Iterable

from draemu.scheduler.framework import (
    SUCCESS,
    ClusterEvent,
    Code,
    CycleState,
    FilterEquivalence,
    PreFilterPlugin,
    PreFilterResult,
    Status,
)
from draemu.scheduler.framework.handle import Handle
from draemu.scheduler.nodeinfo import NodeInfo

REASON = "node(s) didn't match the requested node name"


class NodeName(PreFilterPlugin, FilterEquivalence):
    name = "NodeName"

    def events(self) -> Iterable[ClusterEvent]:
        return [ClusterEvent("Node", "Add")]

    def pre_filter(self, state: CycleState, pod: dict) -> tuple[Status, PreFilterResult | None]:
        wanted = (pod.get("spec") or {}).get("nodeName")
        if not wanted:
            return Status(Code.SKIP), None
        return SUCCESS, PreFilterResult({wanted})

    def filter_equivalence(self, state: CycleState, pod: dict) -> tuple[tuple[()], None]:
        return (), None  # the pod's spec.nodeName and the node's name only

    def filter(self, state: CycleState, pod: dict, node: NodeInfo) -> Status:
        wanted = (pod.get("spec") or {}).get("nodeName")
        if wanted and wanted != node.name:
            return Status.unschedulable(REASON, resolvable=False)
        return SUCCESS


def new(_args: None, _handle: Handle) -> NodeName:
    return NodeName()
