"""The framework runner: the plugins of one profile, extension point by extension point
(upstream's frameworkImpl). The points and their Protocols are in `interface`; each
plugin's points are checked once, when its profile's Framework is built.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from draemu.scheduler.framework.cyclestate import CycleState
from draemu.scheduler.framework.interface import (
    BindPlugin,
    ClusterEvent,
    FilterEquivalence,
    FilterPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHintPlugin,
    ReservePlugin,
    ScoreEquivalence,
    ScoreExtensions,
    ScorePlugin,
    extension_points,
)
from draemu.scheduler.framework.status import SUCCESS, Code, Status
from draemu.scheduler.nodeinfo import NodeInfo

# Pod specs whose answers are kept at once (see Framework.find_feasible); past that the
# kept answers start over, so that one-off pods add up to nothing.
MAX_KEPT_SPECS = 256


@dataclass(frozen=True)
class _Scorer:
    """A Score plugin with its optional parts, looked up once."""

    plugin: ScorePlugin
    weight: int
    pre_score: Callable[[CycleState, dict, list[NodeInfo]], bool] | None
    equivalence: Callable[[CycleState, dict], Hashable | None] | None
    normalize: Callable[[dict[str, int]], None] | None


class Framework:
    """Runs the plugins of one profile, extension point by extension point."""

    def __init__(self, plugins: Sequence[Plugin], *,
                 disabled: dict[str, set[str]] | None = None,
                 enabled: dict[str, set[str]] | None = None,
                 weights: dict[str, int] | None = None,
                 percentage_of_nodes_to_score: int | None = None) -> None:
        """disabled / enabled: plugin names per extension point of the configuration file
        ("filter", "score", ...; "*" disables all but the enabled); weights: Score
        weights (default: the plugin's own). PluginError for a plugin whose methods do
        not match the extension points it declares."""
        self.plugins = list(plugins)
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        points = {id(p): extension_points(p) for p in self.plugins}
        off, on = disabled or {}, enabled or {}

        def at(protocol: type, point: str) -> list[Any]:
            gone = off.get(point, set())
            return [p for p in self.plugins if protocol in points[id(p)] and (
                p.name in on.get(point, ()) or (p.name not in gone and "*" not in gone))]

        self._pre_enqueue: list[PreEnqueuePlugin] = at(PreEnqueuePlugin, "preEnqueue")
        self._pre_filter: list[PreFilterPlugin] = at(PreFilterPlugin, "preFilter")
        self._filter: list[FilterPlugin] = at(FilterPlugin, "filter")
        self._post_filter: list[PostFilterPlugin] = at(PostFilterPlugin, "postFilter")
        self._reserve: list[ReservePlugin] = at(ReservePlugin, "reserve")
        self._pre_bind: list[PreBindPlugin] = at(PreBindPlugin, "preBind")
        self._bind: list[BindPlugin] = at(BindPlugin, "bind")
        self._post_bind: list[PostBindPlugin] = at(PostBindPlugin, "postBind")
        self._score = [_Scorer(
            p, (weights or {}).get(p.name) or p.weight,
            p.pre_score if PreScorePlugin in points[id(p)] else None,
            p.score_equivalence if ScoreEquivalence in points[id(p)] else None,
            p.normalize_scores if ScoreExtensions in points[id(p)] else None)
            for p in at(ScorePlugin, "score")]
        self._filter_equivalence_of = {
            p.name: p.filter_equivalence for p in self._filter
            if FilterEquivalence in points[id(p)]}
        self._hints = {p.name: p.queueing_hint for p in self.plugins
                       if QueueingHintPlugin in points[id(p)]}
        # Kept answers. Filter: (spec, tokens) -> node -> its verdict and what it was
        # for, for pods of one spec (pods of a template, the same pod retried); Score:
        # (spec, plugin, its token) -> node -> (generation, score).
        self._verdicts: dict[Hashable, dict[str, tuple[Any, ...]]] = {}
        self._scores: dict[tuple[str, str, Hashable], dict[str, tuple[int, int]]] = {}

    @property
    def weights(self) -> dict[str, int]:
        """The Score plugins' weights, by name."""
        return {s.plugin.name: s.weight for s in self._score}

    def plugin(self, name: str) -> Any:
        """The profile's plugin of this name (KeyError if it has none)."""
        for plugin in self.plugins:
            if plugin.name == name:
                return plugin
        raise KeyError(name)

    def events_by_plugin(self) -> dict[str, set[ClusterEvent]]:
        return {p.name: set(p.events()) for p in self.plugins}

    def hints_by_plugin(self) -> dict[str, Callable[[ClusterEvent, dict, Any, Any], bool]]:
        """The plugins' queueing hints (`queueing_hint(event, pod, old, new)`: may the
        event make the pod that plugin rejected schedulable?), by plugin name."""
        return dict(self._hints)

    def run_pre_enqueue(self, pod: dict) -> Status:
        """Whether the pod may be tried at all; a rejected pod waits for a cluster event."""
        for plugin in self._pre_enqueue:
            status = plugin.pre_enqueue(pod)
            if not status.ok:
                status.plugin = plugin.name
                return status
        return SUCCESS

    def run_pre_filter(self, state: CycleState, pod: dict) -> tuple[Status, PreFilterResult]:
        """The first rejection (or success) and the intersection of the node restrictions
        (with the names of the plugins that restricted, in `state.restricted_by`)."""
        allowed: set[str] | None = None
        for plugin in self._pre_filter:
            status, result = plugin.pre_filter(state, pod)
            if status.code == Code.SKIP:
                state.skip_filter.add(plugin.name)
                continue
            if not status.ok:
                status.plugin = plugin.name
                return status, PreFilterResult(allowed)
            if result is not None and result.node_names is not None:
                state.restricted_by.add(plugin.name)
                allowed = set(result.node_names) if allowed is None \
                    else allowed & result.node_names
        state.filters = [p for p in self._filter if p.name not in state.skip_filter]
        return SUCCESS, PreFilterResult(allowed)

    def run_filter(self, state: CycleState, pod: dict, node: NodeInfo) -> Status:
        # The hottest loop of the scheduler (nodes x plugins per pod): kept minimal.
        for plugin in state.filters:
            status = plugin.filter(state, pod, node)
            if status is not SUCCESS and not status.ok:
                status.plugin = plugin.name
                return status
        return SUCCESS

    def find_feasible(self, state: CycleState, pod: dict, nodes: Iterable[NodeInfo],
                      wanted: int) -> tuple[list[NodeInfo], dict[str, Status], Status | None,
                                            int]:
        """Runs Filter on `nodes` in order until `wanted` nodes pass: the feasible nodes,
        the rejected ones' statuses, the first error (which ends the search) and how many
        nodes were looked at (the one that erred included). `run_filter` per node,
        inlined (the hottest loop).

        When every Filter plugin can say what its verdict depends on
        (`filter_equivalence`), a node unchanged since it was filtered for a pod of the
        same spec and tokens gets the same verdict: it passes again without running the
        plugins, or only the plugin that rejected it runs again (for a fresh status and
        its notes on the node, e.g. DynamicResources' explanation) — and that only if no
        node passes: otherwise nobody reads the statuses, and those of nodes rejected on a
        kept verdict are left out. The same nodes pass and are rejected, in the same
        order, with the same statuses, as with every plugin run."""
        equivalence = self._filter_equivalence(state, pod) if state.filters else None
        if equivalence is not None:
            return self._find_feasible_kept(state, pod, nodes, wanted, *equivalence)
        feasible: list[NodeInfo] = []
        statuses: dict[str, Status] = {}
        filters = state.filters
        processed = 0
        for node in nodes:
            processed += 1
            for plugin in filters:
                status = plugin.filter(state, pod, node)
                if status is not SUCCESS and not status.ok:
                    status.plugin = plugin.name
                    if status.code == Code.ERROR:
                        return feasible, statuses, status, processed
                    statuses[node.name] = status
                    break
            else:
                feasible.append(node)
                if len(feasible) >= wanted:
                    break
        return feasible, statuses, None, processed

    def _filter_equivalence(self, state: CycleState, pod: dict
                            ) -> tuple[dict[str, tuple[Any, ...]],
                                       list[Mapping[str, int]]] | None:
        """The verdicts kept for this pod's spec and the Filter plugins' tokens, and the
        per-node versions a verdict also depends on; None if some plugin cannot say."""
        tokens: list[Hashable] = []
        versions: list[Mapping[str, int]] = []
        for plugin in state.filters:
            equivalence = self._filter_equivalence_of.get(plugin.name)
            answer = equivalence(state, pod) if equivalence is not None else None
            if answer is None:
                return None
            tokens.append((plugin.name, answer[0]))
            if answer[1] is not None:
                versions.append(answer[1])
        key = (state.spec_key(pod), tuple(tokens))
        kept = self._verdicts.get(key)
        if kept is None:
            if len(self._verdicts) >= MAX_KEPT_SPECS:
                self._verdicts.clear()
            kept = self._verdicts[key] = {}
        return kept, versions

    def _find_feasible_kept(self, state: CycleState, pod: dict, nodes: Iterable[NodeInfo],
                            wanted: int, verdicts: dict[str, tuple[Any, ...]],
                            versions: list[Mapping[str, int]]
                            ) -> tuple[list[NodeInfo], dict[str, Status], Status | None,
                                       int]:
        # verdicts: node -> (its generation, its versions, the index in state.filters of
        # the plugin that rejected it or -1 if it passed), as last filtered.
        feasible: list[NodeInfo] = []
        # Nodes rejected on a kept verdict hold None here (their place in the order) until
        # the end: their statuses are made only if no node passes (see `_kept_rejections`).
        statuses: dict[str, Status | None] = {}
        deferred: list[tuple[NodeInfo, int]] = []
        filters = state.filters
        processed = 0
        reused = False
        one = versions[0] if len(versions) == 1 else None
        version: Any = 0  # the node's versions, when a plugin has any
        error: Status | None = None
        for node in nodes:
            processed += 1
            name = node.name
            if versions:
                version = one.get(name, 0) if one is not None else \
                    tuple(v.get(name, 0) for v in versions)
            kept = verdicts.get(name)
            # The generation is compared by identity: each one is a new int object, and
            # the kept one is the object the node had.
            if kept is not None and kept[0] is node.generation and kept[1] == version:
                if kept[2] < 0:
                    reused = True
                    feasible.append(node)
                    if len(feasible) >= wanted:
                        break
                else:
                    statuses[name] = None
                    deferred.append((node, kept[2]))
                continue
            generation = node.generation  # what the verdict is for, before plugins run
            for index, plugin in enumerate(filters):
                status = plugin.filter(state, pod, node)
                if status is not SUCCESS and not status.ok:
                    status.plugin = plugin.name
                    if status.code == Code.ERROR:
                        verdicts.pop(name, None)
                        error = status
                        break
                    statuses[name] = status
                    verdicts[name] = (generation, version, index)
                    break
            else:
                verdicts[name] = (generation, version, -1)
                feasible.append(node)
                if len(feasible) >= wanted:
                    break
            if error is not None:
                break
        state.reused_verdicts = reused
        if deferred and error is None and not feasible:
            error = self._kept_rejections(state, pod, deferred, statuses, verdicts, feasible)
        if deferred and (feasible or error is not None):
            statuses = {name: status for name, status in statuses.items() if status is not None}
        return feasible, statuses, error, processed  # type: ignore[return-value]

    @staticmethod
    def _kept_rejections(state: CycleState, pod: dict, deferred: list[tuple[NodeInfo, int]],
                         statuses: dict[str, Status | None],
                         verdicts: dict[str, tuple[Any, ...]],
                         feasible: list[NodeInfo]) -> Status | None:
        """No node passed: the nodes rejected on a kept verdict get their statuses, from
        the plugin that rejected them run again (a fresh status, and its notes on the node,
        e.g. DynamicResources' explanation), in their places. When some node passed, only
        the number of rejected nodes matters (the next cycle's start), so their plugins
        are not run at all. The first error ends it."""
        filters = state.filters
        for node, index in deferred:
            plugin = filters[index]
            status = plugin.filter(state, pod, node)
            if status is SUCCESS or status.ok:
                # (Not expected: the plugins are deterministic.) Filter the node afresh.
                verdicts.pop(node.name, None)
                for plugin in filters:
                    status = plugin.filter(state, pod, node)
                    if status is not SUCCESS and not status.ok:
                        break
                else:
                    feasible.append(node)
                    statuses.pop(node.name, None)
                    continue
            status.plugin = plugin.name
            if status.code == Code.ERROR:
                return status
            statuses[node.name] = status
        return None

    def forget_kept_answers(self) -> None:
        self._verdicts.clear()
        self._scores.clear()

    async def run_post_filter(self, state: CycleState, pod: dict,
                              statuses: dict[str, Status]) -> Status:
        """No node fits: plugins may change the cluster so that a later attempt fits (DRA
        deallocates a claim). As upstream, the first success or unresolvable verdict ends the
        run; otherwise the reasons of all plugins are joined. A plugin with nothing to do for
        the pod answers Skip and adds no reason."""
        reasons: list[str] = []
        rejector = ""
        for plugin in self._post_filter:
            status = await _guarded(plugin.post_filter(state, pod, statuses))
            if status.code == Code.SKIP:
                continue
            if status.ok or status.code in (Code.ERROR, Code.UNSCHEDULABLE_AND_UNRESOLVABLE):
                if status is not SUCCESS:
                    status.plugin = plugin.name
                return status
            reasons.extend(status.reasons)
            rejector = rejector or plugin.name
        return Status(Code.UNSCHEDULABLE, reasons, rejector)

    def run_score(self, state: CycleState, pod: dict, nodes: list[NodeInfo],
                  by_plugin: dict[str, dict[str, int]] | None = None) -> dict[str, int]:
        """Sum of each plugin's scores, normalised by the plugin to 0..100 across nodes.
        A `node_local_score` plugin's score of a node unchanged since it was scored for a
        pod of the same spec is the one kept. `by_plugin`, when given, receives each
        plugin's weighted share per node (plugin -> node -> score; a plugin whose
        PreScore skipped the pod is absent), for explanations of a decision."""
        totals: dict[str, int] | None = None
        for scorer in self._score:
            plugin = scorer.plugin
            # PreScore (with the feasible nodes: spread, inter-pod affinity): True means
            # Skip, nothing to score for this pod.
            if scorer.pre_score is not None and scorer.pre_score(state, pod, nodes):
                continue
            token = scorer.equivalence(state, pod) if scorer.equivalence is not None else None
            if token is not None or plugin.node_local_score:
                scores = self._node_local_scores(state, pod, plugin, nodes, token)
            else:
                scores = {n.name: plugin.score(state, pod, n) for n in nodes}
            if scorer.normalize is not None:
                scorer.normalize(scores)
            weight = scorer.weight
            if by_plugin is not None:
                by_plugin[plugin.name] = {name: value * weight for name, value in scores.items()}
            if totals is None:
                totals = {name: value * weight for name, value in scores.items()} \
                    if weight != 1 else scores
            else:
                for name, value in scores.items():
                    totals[name] += value * weight
        return totals if totals is not None else {n.name: 0 for n in nodes}

    def _node_local_scores(self, state: CycleState, pod: dict, plugin: ScorePlugin,
                           nodes: list[NodeInfo], token: Hashable = None) -> dict[str, int]:
        key = (state.spec_key(pod), plugin.name, token)
        kept = self._scores.get(key)
        if kept is None:
            if len(self._scores) >= MAX_KEPT_SPECS:
                self._scores.clear()
            kept = self._scores[key] = {}
        scores: dict[str, int] = {}
        for node in nodes:
            name = node.name
            entry = kept.get(name)
            if entry is not None and entry[0] is node.generation:  # see _find_feasible_kept
                scores[name] = entry[1]
            else:
                score = scores[name] = plugin.score(state, pod, node)
                kept[name] = (node.generation, score)
        return scores

    def run_reserve(self, state: CycleState, pod: dict, node_name: str) -> Status:
        # On failure the caller runs run_unreserve, which calls every Reserve plugin
        # (Unreserve must be idempotent, as upstream requires).
        for plugin in self._reserve:
            status = plugin.reserve(state, pod, node_name)
            if not status.ok:
                status.plugin = plugin.name
                return status
        return SUCCESS

    def run_unreserve(self, state: CycleState, pod: dict, node_name: str
                      ) -> list[Awaitable[None]]:
        """Undoes Reserve at once in memory. A plugin that also has API writes to undo (DRA
        takes the pod out of `reservedFor`) returns them as an awaitable; the caller awaits
        them (binding cycle) or runs them in the background (scheduling cycle)."""
        pending: list[Awaitable[None]] = []
        # Reverse order, like upstream, so that later plugins undo first.
        for plugin in reversed(self._reserve):
            writes = plugin.unreserve(state, pod, node_name)
            if writes is not None:
                pending.append(writes)
        return pending

    async def run_pre_bind(self, state: CycleState, pod: dict, node_name: str) -> Status:
        for plugin in self._pre_bind:
            if plugin.name in state.skip_filter:
                continue
            status = await _guarded(plugin.pre_bind(state, pod, node_name))
            if not status.ok:
                status.plugin = plugin.name
                return status
        return SUCCESS

    async def run_bind(self, state: CycleState, pod: dict, node_name: str) -> Status:
        for plugin in self._bind:
            status = await _guarded(plugin.bind(state, pod, node_name))
            if status.code == Code.SKIP:
                continue
            if status is not SUCCESS:  # the shared constant keeps plugin ""
                status.plugin = plugin.name
            return status
        return Status.error("no bind plugin bound the pod")

    async def run_post_bind(self, state: CycleState, pod: dict, node_name: str) -> None:
        for plugin in self._post_bind:
            await plugin.post_bind(state, pod, node_name)


async def _guarded(call: Awaitable[Status]) -> Status:
    """A plugin's unexpected exception (a timeout, a lost connection) is its error status,
    so that the binding cycle always ends by binding or by requeueing the pod."""
    try:
        return await call
    except Exception as e:
        return Status.error(f"{type(e).__name__}: {e}" if str(e) else type(e).__name__)
