"""PodTopologySpread: `spec.topologySpreadConstraints` (after upstream's plugin, v1.37).

- A constraint counts the pods of the incoming pod's namespace that its `labelSelector`
  (plus `matchLabelKeys`, as `key In (pod's value)`) selects, per topology domain; pods
  being deleted do not count. Nodes count only if they carry every constraint's key and
  pass `nodeAffinityPolicy` (default Honor: the pod's nodeSelector/required node affinity)
  and `nodeTaintsPolicy` (default Ignore; Honor: NoSchedule/NoExecute taints tolerated).
- Filter (DoNotSchedule): `matching pods in the node's domain + (1 if the pod matches
  itself) - the global minimum <= maxSkew`; the minimum is 0 while fewer than
  `minDomains` domains exist. A node without the key is unresolvable.
- Score (ScheduleAnyway): fewer matching pods in the node's domains is better, weighted by
  log(number of domains + 2), as upstream's scoreForCount/NormalizeScore.
- A pod without constraints gets the cluster defaults (defaultingType System: hostname
  maxSkew 3 and zone maxSkew 5, both ScheduleAnyway), selecting the pods of its Services
  and of its controlling ReplicaSet/StatefulSet/ReplicationController; no such selector,
  no constraint.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from draemu.api import labels as labelsel
from draemu.api.meta import toleration_matches
from draemu.api.nodeselector import pod_fits_node
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
from draemu.scheduler.pluginargs import PodTopologySpreadArgs

REASON = "node(s) didn't match pod topology spread constraints"
REASON_MISSING_LABEL = REASON + " (missing required label)"
MAX_SCORE = 100
INVALID_SCORE = -1  # a node without the constraints' keys (upstream's invalidScore)
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
SYSTEM_DEFAULT_CONSTRAINTS = [
    {"topologyKey": HOSTNAME, "whenUnsatisfiable": "ScheduleAnyway", "maxSkew": 3},
    {"topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway", "maxSkew": 5},
]


@dataclass
class Constraint:
    max_skew: int
    topology_key: str
    selector: dict | None  # None selects nothing
    min_domains: int
    honor_affinity: bool
    honor_taints: bool

    def counts_node(self, pod: dict, node: NodeInfo) -> bool:
        spec = pod.get("spec") or {}
        if self.honor_affinity and not pod_fits_node(spec, node.node):
            return False
        if self.honor_taints:
            tolerations = spec.get("tolerations") or []
            for taint in node.taints:
                if taint.get("effect") in ("NoSchedule", "NoExecute") and \
                        not any(toleration_matches(t, taint) for t in tolerations):
                    return False
        return True

    def count(self, node: NodeInfo, namespace: str) -> int:
        if self.selector is None or labelsel.is_empty(self.selector):
            return 0  # upstream: an empty selector counts nothing
        n = 0
        for other, _req in node.pods.values():
            meta = other.get("metadata") or {}
            if meta.get("deletionTimestamp") or meta.get("namespace", "") != namespace:
                continue
            if labelsel.matches(self.selector, meta.get("labels")):
                n += 1
        return n

    def selects(self, pod: dict) -> bool:
        return self.selector is not None and \
            labelsel.matches(self.selector, (pod.get("metadata") or {}).get("labels"))


def _constraint(c: dict, pod: dict, selector: dict | None = None,
                from_pod: bool = True) -> Constraint:
    if from_pod:
        selector = c.get("labelSelector")
        pod_labels = (pod.get("metadata") or {}).get("labels") or {}
        keys = [k for k in c.get("matchLabelKeys") or [] if k in pod_labels]
        if keys and selector is not None:
            selector = {**selector, "matchExpressions": list(selector.get("matchExpressions")
                                                             or []) + [
                {"key": k, "operator": "In", "values": [pod_labels[k]]} for k in keys]}
    return Constraint(
        max_skew=int(c.get("maxSkew") or 1), topology_key=c.get("topologyKey", ""),
        selector=selector, min_domains=int(c.get("minDomains") or 1),
        honor_affinity=(c.get("nodeAffinityPolicy") or "Honor") == "Honor",
        honor_taints=(c.get("nodeTaintsPolicy") or "Ignore") == "Honor")


def _has_keys(node: NodeInfo, constraints: list[Constraint]) -> bool:
    return all(c.topology_key in node.labels for c in constraints)


@dataclass
class _FilterState:
    constraints: list[Constraint]
    counts: list[dict[str, int]]  # per constraint: domain value -> matching pods
    self_match: list[bool]


class PodTopologySpread(QueueingHintPlugin, PreFilterPlugin, FilterPlugin, PreScorePlugin,
                        ScoreExtensions):
    name = "PodTopologySpread"
    score_key = name + "/score"  # its PreScore state (Score reads it per node)
    weight = 2  # upstream's default profile weight

    def __init__(self, nodes: Callable[[], list[NodeInfo]],
                 default_selector: Callable[[dict], dict | None] | None = None, *,
                 default_constraints: list[dict] | None = None,
                 system_defaulted: bool = True) -> None:
        """default_selector(pod): the label selector of the pod's Services and controller
        (None: none), for the default constraints."""
        self._nodes = nodes
        self._default_selector = default_selector or (lambda _pod: None)
        self.default_constraints = SYSTEM_DEFAULT_CONSTRAINTS if default_constraints is None \
            else default_constraints
        self.system_defaulted = system_defaulted and default_constraints is None

    def events(self) -> Iterable[ClusterEvent]:
        return [ClusterEvent("Pod", "Add"), ClusterEvent("Pod", "Update"),
                ClusterEvent("Pod", "Delete"), ClusterEvent("Node", "Add"),
                ClusterEvent("Node", "Update"), ClusterEvent("Node", "Delete")]

    def queueing_hint(self, event: ClusterEvent, pod: dict, old: dict | None,
                      new: dict | None) -> bool:
        """Upstream's isSchedulableAfterPodChange / isSchedulableAfterNodeChange, for a pod
        this plugin rejected (its DoNotSchedule constraints): a placed pod of its namespace
        added or deleted that a constraint selects, or relabelled so that a constraint's
        verdict on it changes; the pod itself given new tolerations when a constraint
        honours taints; a node added or deleted that has every topology key, or updated
        so that it gains or loses one, changes a key's value, or changes its taints."""
        constraints = self._constraints(pod, "DoNotSchedule")
        if event.resource == "Node":
            def keys(node: dict | None) -> dict[str, str] | None:
                if node is None:
                    return None
                labels = (node.get("metadata") or {}).get("labels") or {}
                return labels if all(c.topology_key in labels for c in constraints) else None

            before, after = keys(old), keys(new)
            if old is not None and new is not None:
                if (before is None) != (after is None):
                    return True
                return after is not None and (
                    any(before.get(c.topology_key) != after.get(c.topology_key)
                        for c in constraints)
                    or (old.get("spec") or {}).get("taints") != (new.get("spec") or {}).get(
                        "taints"))
            return (after if new is not None else before) is not None
        if event.resource != "Pod":
            return True
        meta = pod.get("metadata") or {}

        def involved(other: dict) -> bool:
            ometa = other.get("metadata") or {}
            return ometa.get("uid") == meta.get("uid") or (
                bool((other.get("spec") or {}).get("nodeName"))
                and ometa.get("namespace") == meta.get("namespace"))

        if any(o is not None and not involved(o) for o in (old, new)):
            return False
        if old is not None and new is not None:
            if (new.get("metadata") or {}).get("uid") == meta.get("uid") and \
                    (old.get("spec") or {}).get("tolerations") != \
                    (new.get("spec") or {}).get("tolerations") and \
                    any(c.honor_taints for c in constraints):
                return True
            if (old.get("metadata") or {}).get("labels") == \
                    (new.get("metadata") or {}).get("labels"):
                return False
            return any(c.selects(old) != c.selects(new) for c in constraints)
        return any(c.selects(new if new is not None else old or {}) for c in constraints)

    def _constraints(self, pod: dict, action: str) -> list[Constraint]:
        own = (pod.get("spec") or {}).get("topologySpreadConstraints") or []
        if own:
            return [_constraint(c, pod) for c in own
                    if (c.get("whenUnsatisfiable") or "DoNotSchedule") == action]
        defaults = [c for c in self.default_constraints
                    if (c.get("whenUnsatisfiable") or "DoNotSchedule") == action]
        if not defaults:
            return []
        selector = self._default_selector(pod)
        if selector is None or labelsel.is_empty(selector):
            return []
        return [_constraint(c, pod, selector, from_pod=False) for c in defaults]

    # --- Filter --------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: dict) -> tuple[Status, PreFilterResult | None]:
        constraints = self._constraints(pod, "DoNotSchedule")
        if not constraints:
            return Status(Code.SKIP), None
        namespace = (pod.get("metadata") or {}).get("namespace", "")
        counts: list[dict[str, int]] = [{} for _ in constraints]
        for node in self._nodes():
            if not _has_keys(node, constraints):
                continue
            for i, c in enumerate(constraints):
                if not c.counts_node(pod, node):
                    continue
                value = node.labels[c.topology_key]
                counts[i][value] = counts[i].get(value, 0) + c.count(node, namespace)
        state.write(self.name, _FilterState(constraints, counts,
                                            [c.selects(pod) for c in constraints]))
        return SUCCESS, None

    def filter(self, state: CycleState, pod: dict, node: NodeInfo) -> Status:
        s: _FilterState | None = state.read(self.name)
        if s is None:
            return SUCCESS
        for i, c in enumerate(s.constraints):
            value = node.labels.get(c.topology_key)
            if value is None:
                return Status.unschedulable(REASON_MISSING_LABEL, resolvable=False)
            domains = s.counts[i]
            minimum = min(domains.values()) if domains else 2**31 - 1
            if len(domains) < c.min_domains:
                minimum = 0
            skew = domains.get(value, 0) + (1 if s.self_match[i] else 0) - minimum
            if skew > c.max_skew:
                return Status.unschedulable(REASON)
        return SUCCESS

    # --- Score ---------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: dict, feasible: list[NodeInfo]) -> bool:
        constraints = self._constraints(pod, "ScheduleAnyway")
        if not constraints or not feasible:
            return True
        require_all = bool((pod.get("spec") or {}).get("topologySpreadConstraints")) \
            or not self.system_defaulted
        ignored: set[str] = set()
        counts: list[dict[str, int]] = [{} for _ in constraints]
        for node in feasible:
            if require_all and not _has_keys(node, constraints):
                ignored.add(node.name)
                continue
            for i, c in enumerate(constraints):
                if c.topology_key != HOSTNAME:
                    counts[i].setdefault(node.labels.get(c.topology_key, ""), 0)
        weights = []
        for i, c in enumerate(constraints):
            size = len(feasible) - len(ignored) if c.topology_key == HOSTNAME \
                else len(counts[i])
            weights.append(math.log(size + 2))
        namespace = (pod.get("metadata") or {}).get("namespace", "")
        for node in self._nodes():
            if require_all and not _has_keys(node, constraints):
                continue
            for i, c in enumerate(constraints):
                if c.topology_key == HOSTNAME or not c.counts_node(pod, node):
                    continue
                value = node.labels.get(c.topology_key, "")
                if value in counts[i]:
                    counts[i][value] += c.count(node, namespace)
        state.write(self.score_key, (constraints, counts, weights, ignored, namespace))
        return False

    def score(self, state: CycleState, pod: dict, node: NodeInfo) -> int:
        constraints, counts, weights, ignored, namespace = state.read(self.score_key)
        if node.name in ignored:
            return INVALID_SCORE
        total = 0.0
        for i, c in enumerate(constraints):
            value = node.labels.get(c.topology_key)
            if value is None:
                continue
            n = c.count(node, namespace) if c.topology_key == HOSTNAME else counts[i][value]
            total += n * weights[i] + (c.max_skew - 1)
        return math.floor(total + 0.5)  # Go's math.Round: halves away from zero

    def normalize_scores(self, scores: dict[str, int]) -> None:
        valid = [v for v in scores.values() if v != INVALID_SCORE]
        low = min(valid, default=0)
        high = max(valid, default=0)
        for name, value in scores.items():
            if value == INVALID_SCORE:
                scores[name] = 0
            elif high == 0:
                scores[name] = MAX_SCORE
            else:
                scores[name] = MAX_SCORE * (high + low - value) // high


# The owners whose selectors the default constraints use (upstream's DefaultSelector).
_OWNERS = {("v1", "ReplicationController"): "replicationcontrollers",
           ("apps/v1", "ReplicaSet"): "replicasets",
           ("apps/v1", "StatefulSet"): "statefulsets"}


def new(args: PodTopologySpreadArgs, handle: Handle) -> PodTopologySpread:
    handle.watch("v1", "services")
    for (api_version, _kind), resource in _OWNERS.items():
        handle.watch(api_version, resource)
    return PodTopologySpread(handle.snapshot.nodes, lambda pod: default_selector(handle, pod),
                             default_constraints=args.default_constraints)


def default_selector(handle: Handle, pod: dict) -> dict | None:
    """Upstream's DefaultSelector: the selectors of the Services that select the pod, and
    of its controlling ReplicationController, ReplicaSet or StatefulSet, merged."""
    meta = pod.get("metadata") or {}
    ns, pod_labels = meta.get("namespace", ""), meta.get("labels") or {}
    match_labels: dict[str, str] = {}
    services = handle.lister("services")
    for svc in services.list() if services is not None else ():
        selector = (svc.get("spec") or {}).get("selector")
        if svc["metadata"].get("namespace") != ns or selector is None:
            continue
        if all(pod_labels.get(k) == v for k, v in selector.items()):
            match_labels.update(selector)
    expressions: list[dict] = []
    owner = next((o for o in meta.get("ownerReferences") or [] if o.get("controller")), None)
    if owner is not None:
        resource = _OWNERS.get((owner.get("apiVersion"), owner.get("kind")))
        lister = handle.lister(resource) if resource else None
        obj = lister.get(f"{ns}/{owner.get('name')}") if lister is not None else None
        selector = (obj or {}).get("spec", {}).get("selector") if obj else None
        if resource == "replicationcontrollers" and selector:
            match_labels.update(selector)
        elif isinstance(selector, dict):
            expressions.extend({"key": k, "operator": "In", "values": [v]}
                               for k, v in (selector.get("matchLabels") or {}).items())
            expressions.extend(selector.get("matchExpressions") or [])
    if not match_labels and not expressions:
        return None
    return {"matchLabels": match_labels, "matchExpressions": expressions}
