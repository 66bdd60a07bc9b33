"""NodeAffinity: `spec.nodeSelector` and required node affinity filter nodes; preferred
node affinity scores them."""

from __future__ import annotations

from collections.abc import Iterable

from draemu.api.nodeselector import selector_matches, term_matches
from draemu.scheduler.framework import (
    SUCCESS,
    ClusterEvent,
    Code,
    CycleState,
    FilterEquivalence,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHintPlugin,
    ScoreExtensions,
    Status,
)
from draemu.scheduler.framework.handle import Handle
from draemu.scheduler.nodeinfo import NodeInfo

REASON = "node(s) didn't match Pod's node affinity/selector"
MAX_SCORE = 100


def _node_affinity(pod: dict) -> dict:
    return ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}


def _matches(pod: dict, labels: dict[str, str], name: str) -> bool:
    """The pod's nodeSelector and required node affinity both match the node."""
    wanted = (pod.get("spec") or {}).get("nodeSelector") or {}
    if any(labels.get(k) != v for k, v in wanted.items()):
        return False
    required = _node_affinity(pod).get("requiredDuringSchedulingIgnoredDuringExecution")
    return required is None or selector_matches(required, labels, name)


def _labels_and_name(node: dict) -> tuple[dict[str, str], str]:
    meta = node.get("metadata") or {}
    return meta.get("labels") or {}, meta.get("name") or ""


def _names_from_fields(required: dict) -> set[str] | None:
    """Upstream's PreFilter shortcut: when every term pins `metadata.name In [...]`, only
    those nodes need filtering."""
    names: set[str] = set()
    for term in required.get("nodeSelectorTerms") or []:
        pinned = [f for f in term.get("matchFields") or []
                  if f.get("key") == "metadata.name" and f.get("operator") == "In"]
        if not pinned:
            return None
        term_names = set(pinned[0].get("values") or [])
        for f in pinned[1:]:
            term_names &= set(f.get("values") or [])
        names |= term_names
    return names


class NodeAffinity(PreFilterPlugin, QueueingHintPlugin, FilterEquivalence, PreScorePlugin,
                   ScoreExtensions):
    name = "NodeAffinity"
    weight = 2  # upstream's default profile weight

    def events(self) -> Iterable[ClusterEvent]:
        return [ClusterEvent("Node", "Add"), ClusterEvent("Node", "Update")]

    def pre_filter(self, state: CycleState, pod: dict) -> tuple[Status, PreFilterResult | None]:
        required = _node_affinity(pod).get("requiredDuringSchedulingIgnoredDuringExecution")
        if required is None and not (pod.get("spec") or {}).get("nodeSelector"):
            return Status(Code.SKIP), None  # nothing to filter on
        if required:
            names = _names_from_fields(required)
            if names is not None:
                if not names:
                    return Status.unschedulable(REASON, resolvable=False), None
                return SUCCESS, PreFilterResult(names)
        return SUCCESS, None

    def queueing_hint(self, event: ClusterEvent, pod: dict, old: dict | None,
                      new: dict | None) -> bool:
        """Upstream's isSchedulableAfterNodeChange: the node matches the pod's node
        selector and required affinity now and did not before (or was just added)."""
        if event.resource != "Node":
            return True
        if new is None:
            return False
        if not _matches(pod, *_labels_and_name(new)):
            return False
        return old is None or not _matches(pod, *_labels_and_name(old))

    def filter_equivalence(self, state: CycleState, pod: dict) -> tuple[tuple[()], None]:
        return (), None  # the pod's selector and affinity, the node's name and labels

    node_local_score = True

    def filter(self, state: CycleState, pod: dict, node: NodeInfo) -> Status:
        if not _matches(pod, node.labels, node.name):
            return Status.unschedulable(REASON, resolvable=False)
        return SUCCESS

    def pre_score(self, state: CycleState, pod: dict, feasible: list[NodeInfo]) -> bool:
        return not _node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution")

    def score(self, state: CycleState, pod: dict, node: NodeInfo) -> int:
        preferred = _node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution")
        return sum(int(p.get("weight") or 0) for p in preferred or []
                   if term_matches(p.get("preference") or {}, node.labels, node.name))

    def normalize_scores(self, scores: dict[str, int]) -> None:
        best = max(scores.values(), default=0)
        if best > 0:
            for name, value in scores.items():
                scores[name] = value * MAX_SCORE // best


def new(_args: None, _handle: Handle) -> NodeAffinity:
    return NodeAffinity()
