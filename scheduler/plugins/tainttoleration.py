"""TaintToleration: NoSchedule/NoExecute taints must be tolerated; untolerated
PreferNoSchedule taints lower a node's score."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from operator import attrgetter

from draemu.api.meta import toleration_matches
from draemu.scheduler.framework import (
    SUCCESS,
    ClusterEvent,
    CycleState,
    FilterEquivalence,
    PreScorePlugin,
    QueueingHintPlugin,
    ScoreExtensions,
    Status,
)
from draemu.scheduler.framework.handle import Handle
from draemu.scheduler.nodeinfo import NodeInfo

REASON = "node(s) had untolerated taint(s)"
_TAINTS = attrgetter("taints")
MAX_SCORE = 100


def _tolerations(pod: dict) -> list[dict]:
    return (pod.get("spec") or {}).get("tolerations") or []


def _taints(node: dict) -> list[dict]:
    return (node.get("spec") or {}).get("taints") or []


def _untolerated(taints: list[dict], tolerations: list[dict]) -> bool:
    """Whether a NoSchedule or NoExecute taint is not tolerated (what Filter rejects)."""
    return any(taint.get("effect") in ("NoSchedule", "NoExecute")
               and not any(toleration_matches(t, taint) for t in tolerations)
               for taint in taints)


class TaintToleration(QueueingHintPlugin, FilterEquivalence, PreScorePlugin, ScoreExtensions):
    name = "TaintToleration"
    weight = 3  # upstream's default profile weight

    def __init__(self, has_prefer_no_schedule_taints: Callable[[], bool] | None = None) -> None:
        # Whether any node has a PreferNoSchedule taint (None: unknown, look at the nodes).
        self._has_prefer_no_schedule = has_prefer_no_schedule_taints

    def events(self) -> Iterable[ClusterEvent]:
        return [ClusterEvent("Node", "Add"), ClusterEvent("Node", "Update")]

    def queueing_hint(self, event: ClusterEvent, pod: dict, old: dict | None,
                      new: dict | None) -> bool:
        """Upstream's isSchedulableAfterNodeChange: the node's NoSchedule and NoExecute
        taints are all tolerated now and were not before (a node added counts as one
        that was not)."""
        if event.resource != "Node":
            return True
        if new is None:
            return False
        tolerations = _tolerations(pod)
        if _untolerated(_taints(new), tolerations):
            return False
        return old is None or _untolerated(_taints(old), tolerations)

    def filter_equivalence(self, state: CycleState, pod: dict) -> tuple[tuple[()], None]:
        return (), None  # the pod's tolerations and the node's taints only

    node_local_score = True

    def filter(self, state: CycleState, pod: dict, node: NodeInfo) -> Status:
        if node.taints and _untolerated(node.taints, _tolerations(pod)):
            return Status.unschedulable(REASON, resolvable=False)
        return SUCCESS

    def pre_score(self, state: CycleState, pod: dict, feasible: list[NodeInfo]) -> bool:
        """True (skip) when no feasible node has a PreferNoSchedule taint: every node
        would score the same (the maximum), which changes no node's rank."""
        if self._has_prefer_no_schedule is not None and not self._has_prefer_no_schedule():
            return True
        # Most nodes have no taints at all: those are passed over in C.
        return not any(taint.get("effect") == "PreferNoSchedule"
                       for taints in filter(None, map(_TAINTS, feasible)) for taint in taints)

    def score(self, state: CycleState, pod: dict, node: NodeInfo) -> int:
        if not node.taints:
            return 0
        prefer = [t for t in _tolerations(pod) if t.get("effect") in ("", None, "PreferNoSchedule")]
        return sum(1 for taint in node.taints if taint.get("effect") == "PreferNoSchedule"
                   and not any(toleration_matches(t, taint) for t in prefer))

    def normalize_scores(self, scores: dict[str, int]) -> None:
        # Fewer untolerated PreferNoSchedule taints is better (reverse normalisation).
        worst = max(scores.values(), default=0)
        for name, count in scores.items():
            scores[name] = MAX_SCORE if worst == 0 else MAX_SCORE - count * MAX_SCORE // worst


def new(_args: None, handle: Handle) -> TaintToleration:
    return TaintToleration(handle.snapshot.has_prefer_no_schedule_taints)
