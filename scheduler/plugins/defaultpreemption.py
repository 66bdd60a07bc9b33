"""DefaultPreemption: when no node fits, evict lower-priority pods from the one node where
that makes the pod fit (after upstream's DefaultPreemption and its Evaluator, v1.37).

- Eligibility: `preemptionPolicy: Never` never preempts; a pod whose nominated node
  still has a lower-priority pod terminating waits for it.
- Candidates: nodes whose Filter verdict was Unschedulable (resolvable). Nodes the DRA
  plugin rejected ("cannot allocate all claims") are candidates too (DRA preemption,
  KEP-5690): in the dry run the devices of claims reserved only by the victims are free.
- On each candidate every lower-priority pod is removed; if the pod then fits (PreFilter
  and Filter of the whole profile are rerun: spread, affinity and devices see the node
  without them), victims are reprieved one by one, most important first, PDB-violating
  ones first; whoever can stay stays.
- The node is chosen as upstream's pickOneNodeForPreemption: fewest PDB violations,
  lowest highest-priority victim, lowest sum of priorities, fewest victims, latest start
  of the highest-priority victims.
- The victims get the DisruptionTarget condition (PreemptionByScheduler) and a Preempted
  event, and are deleted; lower-priority pods nominated to the node lose their
  nomination; the pod gets `status.nominatedNodeName`. Their claims are deallocated by the
  resource claim controller once they are gone; the pod is retried on those events.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from draemu.api import labels as labelsel
from draemu.api.meta import time_now
from draemu.client import ApiError
from draemu.log import get_logger
from draemu.scheduler.fiterror import fit_error_message
from draemu.scheduler.framework import (
    SUCCESS,
    ClusterEvent,
    Code,
    CycleState,
    PostFilterPlugin,
    Status,
)
from draemu.scheduler.framework.handle import Handle
from draemu.scheduler.nodeinfo import NodeInfo

log = get_logger("scheduler.preemption")

NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NEVER = "not eligible due to preemptionPolicy=Never."
TERMINATING = "not eligible due to a terminating pod on the nominated node."
DRA_PLUGIN = "DynamicResources"
DRA_UNAVAILABLE = "resourceclaim not available on the node"
DRA_TIMED_OUT = "timed out trying to allocate devices"
MAX_INT32 = 2**31 - 1


def priority(pod: dict) -> int:
    return int((pod.get("spec") or {}).get("priority") or 0)


def _start(pod: dict) -> str:
    # No start time counts as now (the least important); ISO timestamps sort as text.
    return (pod.get("status") or {}).get("startTime") or "9999"


def _importance(pod: dict) -> tuple[int, str]:
    """Sort key, most important first (upstream's MoreImportantPod)."""
    return -priority(pod), _start(pod)


class DefaultPreemption(PostFilterPlugin):
    name = "DefaultPreemption"

    def __init__(self, handle: Handle) -> None:
        self._handle = handle
        self._client = handle.client
        self._snapshot = handle.snapshot
        handle.watch("policy/v1", "poddisruptionbudgets")  # victims' budgets are respected
        handle.watch("v1", "pods")  # pending pods nominated to the node lose it

    def events(self) -> Iterable[ClusterEvent]:
        return []

    async def post_filter(self, state: CycleState, pod: dict,
                          statuses: dict[str, Status]) -> Status:
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        if spec.get("preemptionPolicy") == "Never":
            return Status.unschedulable("preemption: " + NEVER)
        nominated = status.get("nominatedNodeName")
        if nominated:
            info = self._snapshot.node(nominated)
            node_status = statuses.get(nominated)
            if info is not None and not (node_status is not None and
                                         node_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE):
                mine = priority(pod)
                if any((p.get("metadata") or {}).get("deletionTimestamp") and priority(p) < mine
                       for p, _r in info.pods.values()):
                    return Status.unschedulable("preemption: " + TERMINATING)
        candidates, node_statuses = self._find_candidates(pod, statuses)
        if not candidates:
            message = fit_error_message(len(self._snapshot), node_statuses=node_statuses,
                                        absent=Status.unschedulable(NOT_HELPFUL,
                                                                    resolvable=False))
            return Status.unschedulable("preemption: " + message)
        node_name, victims = _pick(candidates)
        await self._prepare(pod, node_name, victims)
        return SUCCESS

    # --- the dry run ---------------------------------------------------------------------

    def _helpful(self, status: Status) -> bool:
        if status.code == Code.UNSCHEDULABLE:
            return True
        # The DRA plugin's "cannot allocate all claims" (its reason may have been replaced
        # by the allocator's explanation already); not its verdicts on allocated claims.
        return status.plugin == DRA_PLUGIN and not {DRA_UNAVAILABLE, DRA_TIMED_OUT} & set(
            status.reasons)

    def _find_candidates(self, pod: dict, statuses: dict[str, Status]
                         ) -> tuple[dict[str, tuple[list[dict], int]], dict[str, Status]]:
        candidates: dict[str, tuple[list[dict], int]] = {}
        node_statuses: dict[str, Status] = {}
        budgets = self._handle.lister("poddisruptionbudgets")
        pdbs = [p for p in (budgets.list() if budgets is not None else ())
                if (p.get("metadata") or {}).get("namespace")]
        for name, status in statuses.items():
            if not self._helpful(status):
                continue
            info = self._snapshot.node(name)
            if info is None:
                continue
            victims, violations, verdict = self._select_victims(pod, info, pdbs)
            if verdict.ok:
                candidates[name] = (victims, violations)
            else:
                node_statuses[name] = verdict
        return candidates, node_statuses

    def _fits(self, pod: dict, info: NodeInfo, removed: set[str]) -> Status:
        framework = self._handle.framework
        with self._handle.dra.simulate_without(removed):
            state = CycleState()
            status, restriction = framework.run_pre_filter(state, pod)
            if not status.ok:
                return status
            if restriction.node_names is not None and info.name not in restriction.node_names:
                return Status.unschedulable("node(s) didn't satisfy plugin(s)",
                                            resolvable=False)
            return framework.run_filter(state, pod, info)

    def _select_victims(self, pod: dict, info: NodeInfo, pdbs: list[dict]
                        ) -> tuple[list[dict], int, Status]:
        mine = priority(pod)
        potential = [p for p, _r in info.pods.values() if priority(p) < mine]
        if not potential:
            return [], 0, Status.unschedulable(NO_VICTIMS, resolvable=False)
        removed: set[str] = set()
        for p in potential:
            info.remove_pod(p["metadata"]["uid"])
            removed.add(p["metadata"]["uid"])
        try:
            status = self._fits(pod, info, removed)
            if not status.ok:
                return [], 0, status
            potential.sort(key=_importance)
            violating, non_violating = _split_by_pdb(potential, pdbs)
            victims: list[dict] = []
            violations = 0
            for group, counts in ((violating, True), (non_violating, False)):
                for p in group:
                    uid = p["metadata"]["uid"]
                    info.add_pod(p)
                    removed.discard(uid)
                    if not self._fits(pod, info, removed).ok:
                        info.remove_pod(uid)
                        removed.add(uid)
                        victims.append(p)
                        violations += counts
            victims.sort(key=_importance)
            return victims, violations, SUCCESS
        finally:
            for p in potential:  # put the node back as it was
                if p["metadata"]["uid"] in removed:
                    info.add_pod(p)

    # --- acting on the choice ------------------------------------------------------------

    async def _prepare(self, pod: dict, node_name: str, victims: list[dict]) -> None:
        meta = pod["metadata"]
        scheduler_name = (pod.get("spec") or {}).get("schedulerName") or "default-scheduler"
        for victim in victims:
            vmeta = victim["metadata"]
            log.info("preempting", pod=f"{meta['namespace']}/{meta['name']}", node=node_name,
                     victim=f"{vmeta['namespace']}/{vmeta['name']}")
            condition = {"type": "DisruptionTarget", "status": "True",
                         "reason": "PreemptionByScheduler",
                         "message": f"{scheduler_name}: preempting to accommodate a higher "
                                    "priority pod", "lastTransitionTime": time_now()}
            conditions = [c for c in (victim.get("status") or {}).get("conditions") or []
                          if c.get("type") != "DisruptionTarget"] + [condition]
            try:
                await self._client.patch("v1", "pods", vmeta["name"],
                                         {"status": {"conditions": conditions}},
                                         namespace=vmeta["namespace"], subresource="status")
            except ApiError as e:
                if e.code != 404:
                    raise
            try:
                await self._client.delete("v1", "pods", vmeta["name"],
                                          namespace=vmeta["namespace"])
            except ApiError as e:
                if e.code != 404:
                    raise
            await self._handle.record(victim, "Normal", "Preempted",
                                      f"Preempted by pod {meta.get('uid')} on node {node_name}",
                                      "Preempting")
        mine = priority(pod)
        pods = self._handle.lister("pods")
        pending = [p for p in pods.list() if not (p.get("spec") or {}).get("nodeName")] \
            if pods is not None else []
        for other in pending:
            ostatus = other.get("status") or {}
            if ostatus.get("nominatedNodeName") == node_name and priority(other) < mine \
                    and other["metadata"].get("uid") != meta.get("uid"):
                await self._set_nominated(other, None)
        await self._set_nominated(pod, node_name)

    async def _set_nominated(self, pod: dict, node_name: str | None) -> None:
        meta = pod["metadata"]
        try:
            await self._client.patch("v1", "pods", meta["name"],
                                     {"status": {"nominatedNodeName": node_name}},
                                     namespace=meta["namespace"], subresource="status")
        except ApiError as e:
            if e.code != 404:
                raise


def new(_args: None, handle: Handle) -> DefaultPreemption:
    return DefaultPreemption(handle)


def _split_by_pdb(pods: list[dict], pdbs: list[dict]) -> tuple[list[dict], list[dict]]:
    """Upstream's filterPodsWithPDBViolation: each matching budget's disruptionsAllowed is
    spent pod by pod (pods already in its disruptedPods are not counted again)."""
    allowed = [int((p.get("status") or {}).get("disruptionsAllowed") or 0) for p in pdbs]
    violating: list[dict] = []
    non_violating: list[dict] = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        violated = False
        if labels:
            for i, pdb in enumerate(pdbs):
                if pdb["metadata"].get("namespace") != meta.get("namespace"):
                    continue
                selector = (pdb.get("spec") or {}).get("selector")
                if selector is None or labelsel.is_empty(selector) or \
                        not labelsel.matches(selector, labels):
                    continue
                if meta.get("name") in ((pdb.get("status") or {}).get("disruptedPods") or {}):
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(pod)
    return violating, non_violating


def _pick(candidates: dict[str, tuple[list[dict], int]]) -> tuple[str, list[dict]]:
    """Upstream's pickOneNodeForPreemption, criterion by criterion."""
    names = list(candidates)

    def keep(score: Callable[[str], Any]) -> None:
        nonlocal names
        best = min(score(n) for n in names)
        names = [n for n in names if score(n) == best]

    def victims(n: str) -> list[dict]:
        return candidates[n][0]

    keep(lambda n: candidates[n][1])
    keep(lambda n: priority(victims(n)[0]) if victims(n) else -MAX_INT32 - 1)
    keep(lambda n: sum(priority(p) + MAX_INT32 + 1 for p in victims(n)))
    keep(lambda n: len(victims(n)))

    def earliest_of_highest(n: str) -> str:
        vs = victims(n)
        if not vs:
            return ""
        top = priority(vs[0])
        return min(_start(p) for p in vs if priority(p) == top)

    # The latest "earliest start time" wins: negate by sorting descending.
    latest = max(earliest_of_highest(n) for n in names)
    names = [n for n in names if earliest_of_highest(n) == latest]
    return names[0], victims(names[0])
