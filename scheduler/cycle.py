"""The scheduling cycle (upstream's schedulingCycle and schedulePod): PreFilter, Filter
over the nodes round-robin until enough fit, Score, then assume and Reserve on the chosen
node. Pure computation on the caches (no API calls but Unreserve's, in the background),
so it can also be measured alone (bench/dracycles.py).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from draemu.scheduler.cache import Cache
from draemu.scheduler.fiterror import NO_NODES, fit_error_message
from draemu.scheduler.framework import Code, CycleState, Framework, PreFilterResult, Status
from draemu.scheduler.nodeinfo import NodeInfo
from draemu.scheduler.tasks import BackgroundTasks

MIN_FEASIBLE_NODES = 100
MIN_FEASIBLE_PERCENTAGE = 5
BASE_PERCENTAGE = 50


def num_feasible_nodes_to_find(num_all: int, percentage: int | None = 0) -> int:
    """Upstream's percentageOfNodesToScore (0 = adaptive): big clusters stop filtering
    early."""
    if num_all < MIN_FEASIBLE_NODES:
        return num_all
    if not percentage:
        percentage = max(BASE_PERCENTAGE - num_all // 125, MIN_FEASIBLE_PERCENTAGE)
    return max(num_all * percentage // 100, MIN_FEASIBLE_NODES)


@dataclass
class CycleResult:
    state: CycleState
    node_name: str | None = None  # the node the pod is reserved on, if it fits one
    message: str = ""  # why not
    rejectors: set[str] = field(default_factory=set)  # plugins whose events may help
    error: bool = False  # an error, not a verdict: retry after backoff
    # Filter found no node: each rejected node's status, for PostFilter (None otherwise).
    filtered: dict[str, Status] | None = None


class SchedulingCycle:
    def __init__(self, cache: Cache, framework_for: Callable[[dict], Framework],
                 tasks: BackgroundTasks) -> None:
        self._cache = cache
        self._framework_for = framework_for
        self._tasks = tasks
        # Where the next cycle starts filtering (upstream's nextStartNodeIndex).
        self.next_start_node = 0

    def run(self, pod: dict) -> CycleResult:
        state = CycleState()
        num_nodes = len(self._cache)
        if num_nodes == 0:
            # No rejector: any cluster event (a node appearing) retries the pod.
            return CycleResult(state, message=NO_NODES)
        fw = self._framework_for(pod)
        status, restriction = fw.run_pre_filter(state, pod)
        if not status.ok:
            if status.code == Code.ERROR:
                return CycleResult(state, message=status.message, error=True)
            return CycleResult(state, rejectors={status.plugin}, message=fit_error_message(
                num_nodes, pre_filter=status.message))
        nominated = self._cache.node((pod.get("status") or {}).get("nominatedNodeName") or "")
        if nominated is not None and (restriction.node_names is None
                                      or nominated.name in restriction.node_names) \
                and fw.run_filter(state, pod, nominated).ok:
            # Upstream's evaluateNominatedNode: the node preemption made room on comes first.
            return self._reserve(fw, state, pod, nominated.name)
        return self._schedule(fw, state, pod, restriction, num_nodes)

    def _schedule(self, fw: Framework, state: CycleState, pod: dict,
                  restriction: PreFilterResult, num_nodes: int) -> CycleResult:
        """Filter, Score and Reserve, on the nodes PreFilter left."""
        candidates = self._cache.nodes()
        absent = None
        if restriction.node_names is not None:
            candidates = [n for n in candidates if n.name in restriction.node_names]
            absent = Status.unschedulable(
                f"node(s) didn't satisfy plugin(s) [{', '.join(sorted(state.restricted_by))}]",
                resolvable=False)
        feasible, statuses, error = self._find_feasible(fw, state, pod, candidates)
        if error is not None:
            return CycleResult(state, message=error.message, error=True)
        if not feasible:
            return CycleResult(
                state, rejectors={s.plugin for s in statuses.values()} | state.restricted_by,
                message=fit_error_message(num_nodes, node_statuses=statuses, absent=absent),
                filtered=statuses)
        chosen = _select_host(fw, state, pod, feasible)
        if state.reused_verdicts:
            # Passed on a kept verdict: Filter again on the chosen node, for the state
            # Reserve needs (the DRA allocation); it passes again, as nothing changed.
            status = fw.run_filter(state, pod, self._cache.node(chosen))
            if not status.ok:
                fw.forget_kept_answers()
                return CycleResult(state, error=True, message=(
                    f"node {chosen} passed Filter on a kept verdict but not again: "
                    f"{status.message}"))
        return self._reserve(fw, state, pod, chosen)

    def _reserve(self, fw: Framework, state: CycleState, pod: dict, node_name: str
                 ) -> CycleResult:
        self._cache.assume(pod, node_name)
        status = fw.run_reserve(state, pod, node_name)
        if not status.ok:
            for writes in fw.run_unreserve(state, pod, node_name):
                self._tasks.spawn(writes)
            self._cache.forget(pod)
            if status.code == Code.ERROR:
                return CycleResult(state, error=True, message=f'running Reserve plugin '
                                   f'"{status.plugin}": {status.message}')
            return CycleResult(state, rejectors={status.plugin}, message=status.message)
        return CycleResult(state, node_name=node_name)

    def _find_feasible(self, fw: Framework, state: CycleState, pod: dict,
                       nodes: list[NodeInfo]
                       ) -> tuple[list[NodeInfo], dict[str, Status], Status | None]:
        """Filters nodes round-robin from where the last cycle stopped, until enough feasible
        nodes are found (upstream's numFeasibleNodesToFind). As upstream, `nodes` are the
        candidates PreFilter left; the start index advances by the nodes looked at (those
        that passed and those rejected), modulo the number of all nodes, errors or not."""
        total = len(nodes)
        wanted = num_feasible_nodes_to_find(total, fw.percentage_of_nodes_to_score)
        start = self.next_start_node % total if total else 0
        # The nodes in round-robin order from `start`, without an index computation each.
        feasible, statuses, error, processed = fw.find_feasible(
            state, pod, itertools.chain(itertools.islice(nodes, start, None),
                                        itertools.islice(nodes, start)), wanted)
        all_nodes = len(self._cache)
        if all_nodes:
            # Upstream counts the nodes that passed or got a status (not the one that erred).
            looked_at = processed - 1 if error is not None else processed
            self.next_start_node = (self.next_start_node + looked_at) % all_nodes
        if error is not None:
            return [], statuses, error
        return feasible, statuses, None


def _select_host(fw: Framework, state: CycleState, pod: dict, feasible: list[NodeInfo]) -> str:
    if len(feasible) == 1:
        return feasible[0].name
    scores = fw.run_score(state, pod, feasible)
    best = max(scores.values())
    # Ties are broken at random, as upstream does, to spread pods.
    return random.choice([name for name, score in scores.items() if score == best])
