"""NodeUnschedulable: cordoned nodes (`spec.unschedulable`) take only pods that tolerate
the `node.kubernetes.io/unschedulable:NoSchedule` taint."""

from __future__ import annotations

from collections.abc import Iterable

from draemu.api.meta import toleration_matches
from draemu.scheduler.framework import (
    SUCCESS,
    ClusterEvent,
    CycleState,
    FilterEquivalence,
    QueueingHintPlugin,
    Status,
)
from draemu.scheduler.framework.handle import Handle
from draemu.scheduler.nodeinfo import NodeInfo

REASON = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


class NodeUnschedulable(QueueingHintPlugin, FilterEquivalence):
    name = "NodeUnschedulable"

    def events(self) -> Iterable[ClusterEvent]:
        return [ClusterEvent("Node", "Add"), ClusterEvent("Node", "Update")]

    def queueing_hint(self, event: ClusterEvent, pod: dict, old: dict | None,
                      new: dict | None) -> bool:
        """Upstream's isSchedulableAfterNodeChange: a node added schedulable, or one
        uncordoned (no other node update helps: heartbeats, labels, status)."""
        if event.resource != "Node":
            return True
        if new is None:
            return False
        if _cordoned(new):
            return False
        return old is None or _cordoned(old)

    def filter_equivalence(self, state: CycleState, pod: dict) -> tuple[tuple[()], None]:
        return (), None  # the pod's tolerations and the node's spec only

    def filter(self, state: CycleState, pod: dict, node: NodeInfo) -> Status:
        if not node.unschedulable:
            return SUCCESS
        tolerations = (pod.get("spec") or {}).get("tolerations") or []
        if any(toleration_matches(t, UNSCHEDULABLE_TAINT) for t in tolerations):
            return SUCCESS
        return Status.unschedulable(REASON, resolvable=False)


def new(_args: None, _handle: Handle) -> NodeUnschedulable:
    return NodeUnschedulable()


def _cordoned(node: dict) -> bool:
    return bool((node.get("spec") or {}).get("unschedulable"))
