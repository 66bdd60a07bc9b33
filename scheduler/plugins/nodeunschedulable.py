"""NodeUnschedulable: cordoned nodes (`spec.unschedulable`) take only pods that tolerate
the `node.kubernetes.io/unschedulable:NoSchedule` taint."""

from __future__ import annotations

from collections.abc import Iterable

from draemu.api.meta import toleration_matches
from draemu.scheduler.framework import SUCCESS, ClusterEvent, CycleState, Status
from draemu.scheduler.nodeinfo import NodeInfo

REASON = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


class NodeUnschedulable:
    name = "NodeUnschedulable"

    def events(self) -> Iterable[ClusterEvent]:
        return [ClusterEvent("Node", "Add"), ClusterEvent("Node", "Update")]

    def filter(self, state: CycleState, pod: dict, node: NodeInfo) -> Status:
        if not node.unschedulable:
            return SUCCESS
        tolerations = (pod.get("spec") or {}).get("tolerations") or []
        if any(toleration_matches(t, UNSCHEDULABLE_TAINT) for t in tolerations):
            return SUCCESS
        return Status.unschedulable(REASON, resolvable=False)
