"""InterPodAffinity: required pod affinity and anti-affinity filter nodes (the incoming
pod's terms and the required anti-affinity of the pods already placed); preferred terms
(and, weighted by hardPodAffinityWeight, the required affinity of placed pods) score
them. After upstream's interpodaffinity plugin (v1.37):

- a term selects pods in `namespaces`, or in the namespaces its `namespaceSelector`
  matches (`{}` = all), or, with neither, in the pod's own namespace; a missing
  `labelSelector` selects no pod, `{}` every pod;
- a topology domain is (topologyKey, the node's value); a node without the key is in no
  domain (fails required affinity, passes anti-affinity);
- the first pod of a group that has affinity to its own labels may go anywhere the
  topology keys exist, when no pod matches the terms yet;
- Filter reasons: affinity is unresolvable (preemption cannot help), anti-affinity is not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from draemu.api import labels as labelsel
from draemu.scheduler.framework import (
    SUCCESS,
    ClusterEvent,
    Code,
    CycleState,
    FilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHintPlugin,
    ScoreExtensions,
    Status,
)
from draemu.scheduler.framework.handle import Handle
from draemu.scheduler.nodeinfo import NodeInfo
from draemu.scheduler.pluginargs import InterPodAffinityArgs

REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
MAX_SCORE = 100
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


@dataclass
class Term:
    topology_key: str
    selector: dict | None  # None selects nothing
    namespaces: frozenset[str]
    namespace_selector: dict | None  # None selects nothing
    weight: int = 0

    @classmethod
    def of(cls, pod: dict, term: dict, weight: int = 0) -> Term:
        namespaces = frozenset(term.get("namespaces") or ())
        ns_selector = term.get("namespaceSelector")
        if not namespaces and ns_selector is None:
            namespaces = frozenset([(pod.get("metadata") or {}).get("namespace", "")])
        return cls(term.get("topologyKey", ""), term.get("labelSelector"), namespaces,
                   ns_selector, weight)

    def matches(self, pod: dict, ns_labels: dict[str, str] | None) -> bool:
        meta = pod.get("metadata") or {}
        if meta.get("namespace", "") not in self.namespaces and (
                self.namespace_selector is None
                or not labelsel.matches(self.namespace_selector, ns_labels or {})):
            return False
        return self.selector is not None and labelsel.matches(self.selector, meta.get("labels"))


def _affinity(pod: dict) -> dict:
    return (pod.get("spec") or {}).get("affinity") or {}


def required_terms(pod: dict, kind: str) -> list[Term]:
    return [Term.of(pod, t) for t in (_affinity(pod).get(kind) or {}).get(REQUIRED) or []]


def preferred_terms(pod: dict, kind: str) -> list[Term]:
    return [Term.of(pod, w.get("podAffinityTerm") or {}, int(w.get("weight") or 0))
            for w in (_affinity(pod).get(kind) or {}).get(PREFERRED) or []]


def _pairs(node: NodeInfo, terms: Iterable[Term]) -> Iterable[tuple[str, str]]:
    for t in terms:
        value = node.labels.get(t.topology_key)
        if value is not None:
            yield t.topology_key, value


def _count(counts: dict[tuple[str, str], int], pairs: Iterable[tuple[str, str]]) -> None:
    for pair in pairs:
        counts[pair] = counts.get(pair, 0) + 1


@dataclass
class _FilterState:
    affinity: list[Term]
    anti_affinity: list[Term]
    affinity_counts: dict[tuple[str, str], int]
    anti_affinity_counts: dict[tuple[str, str], int]
    existing_anti_counts: dict[tuple[str, str], int]
    self_match: bool  # the pod matches all its own affinity terms


class InterPodAffinity(QueueingHintPlugin, PreFilterPlugin, FilterPlugin, PreScorePlugin,
                       ScoreExtensions):
    name = "InterPodAffinity"
    score_key = name + "/score"  # its PreScore state (Score reads it per node)
    weight = 2  # upstream's default profile weight

    def __init__(self, nodes: Callable[[], list[NodeInfo]],
                 namespace_labels: Callable[[str], dict[str, str] | None], *,
                 hard_pod_affinity_weight: int = 1,
                 ignore_preferred_terms_of_existing_pods: bool = False,
                 nodes_with_affinity: Callable[[], list[NodeInfo]] | None = None,
                 nodes_with_required_anti_affinity: Callable[[], list[NodeInfo]] | None = None,
                 ) -> None:
        """nodes_with_affinity / nodes_with_required_anti_affinity: the nodes that have pods
        with (anti-)affinity terms / with required anti-affinity terms, kept by the cache
        (default: found by looking at every node)."""
        self._nodes = nodes
        self._nodes_with_affinity = nodes_with_affinity or (
            lambda: [n for n in nodes() if n.affinity_pods])
        self._nodes_with_anti = nodes_with_required_anti_affinity or (
            lambda: [n for n in nodes() if n.anti_affinity_pods])
        self._ns_labels = namespace_labels
        self.hard_pod_affinity_weight = hard_pod_affinity_weight
        self.ignore_preferred_terms_of_existing_pods = ignore_preferred_terms_of_existing_pods

    def events(self) -> Iterable[ClusterEvent]:
        return [ClusterEvent("Pod", "Add"), ClusterEvent("Pod", "Update"),
                ClusterEvent("Pod", "Delete"), ClusterEvent("Node", "Add"),
                ClusterEvent("Node", "Update"), ClusterEvent("Namespace", "Add"),
                ClusterEvent("Namespace", "Update")]

    def queueing_hint(self, event: ClusterEvent, pod: dict, old: dict | None,
                      new: dict | None) -> bool:
        """Upstream's isSchedulableAfterPodChange / isSchedulableAfterNodeChange, for a pod
        this plugin rejected: a placed pod added (or relabelled) to match all its required
        affinity terms, relabelled not to match all its required anti-affinity terms, or
        deleted while matching them; a node with a topology key of one of its required
        terms (added, or its labels changed). As upstream, terms are matched without
        namespace labels (a namespace selector other than `{}` matches no namespace
        here). Unlike upstream, a deleted placed pod whose own required anti-affinity
        selected the waiting pod requeues it too (upstream leaves such a pod to the
        five-minute flush)."""
        affinity = required_terms(pod, "podAffinity")
        anti = required_terms(pod, "podAntiAffinity")
        if event.resource == "Node":
            labels = ((new or {}).get("metadata") or {}).get("labels") or {}
            if old is not None and ((old.get("metadata") or {}).get("labels") or {}) == labels:
                return False  # not a label change (upstream's UpdateNodeLabel)
            return any(t.topology_key in labels for t in (*affinity, *anti))
        if event.resource != "Pod":
            return True
        if any(o is not None and not (o.get("spec") or {}).get("nodeName") for o in (old, new)):
            return False  # not a placed pod

        def matches_all(terms: list[Term], other: dict) -> bool:
            return bool(terms) and all(t.matches(other, None) for t in terms)

        if old is not None and new is not None:
            return (not matches_all(affinity, old) and matches_all(affinity, new)) or \
                (matches_all(anti, old) and not matches_all(anti, new))
        if new is not None:
            return matches_all(affinity, new)
        deleted = old or {}
        own_ns_labels = self._labels_of(pod)
        return matches_all(anti, deleted) or any(
            t.matches(pod, own_ns_labels) for t in required_terms(deleted, "podAntiAffinity"))

    def _labels_of(self, pod: dict) -> dict[str, str]:
        return self._ns_labels((pod.get("metadata") or {}).get("namespace", "")) or {}

    # --- Filter --------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: dict) -> tuple[Status, PreFilterResult | None]:
        affinity = required_terms(pod, "podAffinity")
        anti = required_terms(pod, "podAntiAffinity")
        with_anti = self._nodes_with_anti()
        if not affinity and not anti and not with_anti:
            return Status(Code.SKIP), None
        own_ns_labels = self._labels_of(pod)
        existing: dict[tuple[str, str], int] = {}
        for node in with_anti:
            for other in node.anti_affinity_pods.values():
                terms = [t for t in required_terms(other, "podAntiAffinity")
                         if t.matches(pod, own_ns_labels)]
                _count(existing, _pairs(node, terms))
        affinity_counts: dict[tuple[str, str], int] = {}
        anti_counts: dict[tuple[str, str], int] = {}
        if affinity or anti:
            for node in self._nodes():
                for other, _req in node.pods.values():
                    ns_labels = self._labels_of(other)
                    if affinity and all(t.matches(other, ns_labels) for t in affinity):
                        _count(affinity_counts, _pairs(node, affinity))
                    for term in anti:
                        if term.matches(other, ns_labels):
                            _count(anti_counts, _pairs(node, [term]))
        self_match = all(t.matches(pod, own_ns_labels) for t in affinity)
        state.write(self.name, _FilterState(affinity, anti, affinity_counts, anti_counts,
                                            existing, self_match))
        return SUCCESS, None

    def filter(self, state: CycleState, pod: dict, node: NodeInfo) -> Status:
        s: _FilterState | None = state.read(self.name)
        if s is None:
            return SUCCESS
        if not _satisfies_affinity(s, node):
            return Status.unschedulable(REASON_AFFINITY, resolvable=False)
        for term in s.anti_affinity:
            value = node.labels.get(term.topology_key)
            if value is not None and s.anti_affinity_counts.get((term.topology_key, value), 0) > 0:
                return Status.unschedulable(REASON_ANTI_AFFINITY)
        if s.existing_anti_counts:
            for pair in node.labels.items():
                if s.existing_anti_counts.get(pair, 0) > 0:
                    return Status.unschedulable(REASON_EXISTING_ANTI_AFFINITY)
        return SUCCESS

    # --- Score ---------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: dict, feasible: list[NodeInfo]) -> bool:
        """Upstream's PreScore; True = Skip (nothing to score)."""
        affinity_pref = preferred_terms(pod, "podAffinity")
        anti_pref = preferred_terms(pod, "podAntiAffinity")
        has_constraints = bool(affinity_pref or anti_pref)
        if self.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return True
        # Unless the incoming pod has preferred terms, only the placed pods with terms
        # count; with none anywhere, there is nothing to score (upstream returns Skip).
        nodes = self._nodes() if has_constraints else self._nodes_with_affinity()
        if not nodes:
            return True
        own_ns_labels = self._labels_of(pod)
        scores: dict[str, dict[str, int]] = {}

        def add(term: Term, node: NodeInfo, amount: int) -> None:
            value = node.labels.get(term.topology_key)
            if value is not None:
                per_key = scores.setdefault(term.topology_key, {})
                per_key[value] = per_key.get(value, 0) + amount

        for node in nodes:
            if not node.labels:
                continue
            others = [p for p, _r in node.pods.values()] if has_constraints \
                else list(node.affinity_pods.values())
            for other in others:
                ns_labels = self._labels_of(other)
                for term in affinity_pref:
                    if term.matches(other, ns_labels):
                        add(term, node, term.weight)
                for term in anti_pref:
                    if term.matches(other, ns_labels):
                        add(term, node, -term.weight)
                if not _affinity(other):
                    continue
                if self.hard_pod_affinity_weight > 0:
                    for term in required_terms(other, "podAffinity"):
                        if term.matches(pod, own_ns_labels):
                            add(term, node, self.hard_pod_affinity_weight)
                for term in preferred_terms(other, "podAffinity"):
                    if term.matches(pod, own_ns_labels):
                        add(term, node, term.weight)
                for term in preferred_terms(other, "podAntiAffinity"):
                    if term.matches(pod, own_ns_labels):
                        add(term, node, -term.weight)
        scores = {k: v for k, v in scores.items() if v}
        if not scores:
            return True
        state.write(self.score_key, scores)
        return False

    def score(self, state: CycleState, pod: dict, node: NodeInfo) -> int:
        scores: dict[str, dict[str, int]] = state.read(self.score_key) or {}
        total = 0
        for key, per_value in scores.items():
            value = node.labels.get(key)
            if value is not None:
                total += per_value.get(value, 0)
        return total

    def normalize_scores(self, scores: dict[str, int]) -> None:
        if not scores:
            return
        low, high = min(scores.values()), max(scores.values())
        diff = high - low
        for name, value in scores.items():
            scores[name] = int(MAX_SCORE * (value - low) / diff) if diff > 0 else 0


def _satisfies_affinity(s: _FilterState, node: NodeInfo) -> bool:
    pods_exist = True
    for term in s.affinity:
        value = node.labels.get(term.topology_key)
        if value is None:
            return False  # every topology key must exist on the node
        if s.affinity_counts.get((term.topology_key, value), 0) <= 0:
            pods_exist = False
    if not pods_exist:
        # The first pod of a series with affinity to itself: allowed when no pod matches.
        return not s.affinity_counts and s.self_match
    return True


def new(args: InterPodAffinityArgs, handle: Handle) -> InterPodAffinity:
    handle.watch("v1", "namespaces")  # namespaceSelector terms match namespaces' labels

    def namespace_labels(name: str) -> dict[str, str] | None:
        namespaces = handle.lister("namespaces")
        namespace = namespaces.get(name) if namespaces is not None else None
        return (namespace["metadata"].get("labels") or {}) if namespace is not None else None

    snapshot = handle.snapshot
    return InterPodAffinity(
        snapshot.nodes, namespace_labels,
        hard_pod_affinity_weight=args.hard_pod_affinity_weight,
        ignore_preferred_terms_of_existing_pods=args.ignore_preferred_terms_of_existing_pods,
        nodes_with_affinity=snapshot.nodes_with_affinity,
        nodes_with_required_anti_affinity=snapshot.nodes_with_required_anti_affinity)
