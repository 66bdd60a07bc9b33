"""The scheduler component: informers feed the cache, the queue and the DRA inventory; one
loop runs scheduling cycles; binding cycles run concurrently as tasks.

Outcomes are written as on a real cluster: a `Scheduled` event on success (the binding
itself sets the pod's PodScheduled condition), a `FailedScheduling` event and a
`PodScheduled=False` condition on failure.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import random
import socket
from dataclasses import dataclass, field
from typing import Any

from draemu.api.meta import time_now
from draemu.cel import compile_expression
from draemu.client import ApiError, Client, EventRecorder, SharedInformers, key_of
from draemu.features import FeatureGates
from draemu.log import get_logger
from draemu.scheduler.cache import Cache
from draemu.scheduler.config import SchedulerConfig
from draemu.scheduler.dra.manager import DRAManager
from draemu.scheduler.fiterror import NO_NODES, fit_error_message
from draemu.scheduler.framework import (
    ClusterEvent,
    Code,
    CycleState,
    Framework,
    Status,
)
from draemu.scheduler.framework.handle import Handle
from draemu.scheduler.informers import SchedulerInformers
from draemu.scheduler.nodeinfo import NodeInfo
from draemu.scheduler.pluginargs import FILTER_TIMEOUT, DynamicResourcesArgs
from draemu.scheduler.plugins.dynamicresources import RESOURCE_V1
from draemu.scheduler.plugins.registry import IN_TREE, Registry
from draemu.scheduler.plugins.schedulinggates import SchedulingGates
from draemu.scheduler.profiles import build_framework
from draemu.scheduler.queue import QueuedPod, SchedulingQueue

log = get_logger("scheduler")

SCHEDULER_NAME = "default-scheduler"
# A pod held back by PreEnqueue (its claims do not exist yet) gets its reason written only
# if it is still waiting after this long. Upstream writes nothing at all for such pods;
# we do, for the case where no claim controller runs, but late enough that a burst of
# new pods (the claim controller working through a backlog of seconds) costs no writes.
GATED_REPORT_DELAY = 30.0
# Binding cycles running at once: more would only queue on the client's connection pool
# (and time out there) without binding faster.
MAX_CONCURRENT_BINDINGS = 32
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


def _without_volatile(pod: dict) -> tuple[Any, ...]:
    """What of a pending pod can change its fate (not our own condition writes)."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    return (meta.get("labels"), meta.get("annotations"), pod.get("spec"),
            status.get("resourceClaimStatuses"), status.get("extendedResourceClaimStatus"))


@dataclass
class CycleResult:
    state: CycleState
    node_name: str | None = None  # the node the pod is reserved on, if it fits one
    message: str = ""  # why not
    rejectors: set[str] = field(default_factory=set)  # plugins whose events may help
    error: bool = False  # an error, not a verdict: retry after backoff
    # Filter found no node: each rejected node's status, for PostFilter (None otherwise).
    filtered: dict[str, Status] | None = None


class Scheduler:
    def __init__(self, client: Client, gates: FeatureGates | None = None, *,
                 initial_backoff: float = 1.0, max_backoff: float = 10.0,
                 gated_report_delay: float = GATED_REPORT_DELAY,
                 dra_filter_timeout: float = FILTER_TIMEOUT,
                 config: SchedulerConfig | None = None,
                 informers: SharedInformers | None = None,
                 registry: Registry = IN_TREE) -> None:
        """`informers`: list+watch through these shared informers (those of controllers
        in the same process, say: each watch event is then read and decoded once for
        both) instead of informers of our own; their owner starts and stops them too.
        `dra_filter_timeout`: DynamicResources' filterTimeout (seconds the allocator may
        spend on one node, 0 = no limit) in profiles whose configuration sets none.
        `registry`: the plugins the configuration may name (default: the in-tree ones).
        PluginError for a plugin whose methods do not match its extension points."""
        self.client = client
        self.gates = gates or FeatureGates()
        self.dra = DRAManager(self.gates)
        self.cache = Cache()
        self.dra.follow_node_versions(self.cache.touch)
        self.informers = SchedulerInformers(client, informers)
        self.recorder = EventRecorder(client, SCHEDULER_NAME, socket.gethostname(),
                                      api="events.k8s.io/v1")
        self.config = config or SchedulerConfig.default(registry)
        # One Framework per profile, by schedulerName; the first is the default one.
        self.profiles: dict[str, Framework] = {}
        defaults = {"DynamicResources": DynamicResourcesArgs(dra_filter_timeout)}
        for profile in self.config.profiles:
            self.profiles[profile.scheduler_name] = build_framework(
                profile, registry, self._handle(profile.scheduler_name), default_args=defaults,
                percentage_of_nodes_to_score=self.config.percentage_of_nodes_to_score)
        self.framework = next(iter(self.profiles.values()))
        events: dict[str, set[ClusterEvent]] = {}
        hints: dict[str, Any] = {}
        for fw in self.profiles.values():
            for name, evs in fw.events_by_plugin().items():
                events.setdefault(name, set()).update(evs)
            for name, hint in fw.hints_by_plugin().items():
                hints.setdefault(name, hint)
        self.queue = SchedulingQueue(events, hints=hints,
                                     initial_backoff=initial_backoff, max_backoff=max_backoff)
        self._pods = self.informers.informer("v1", "pods")
        self._loop_task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._next_start_node = 0
        # Pods bound by us that the pod informer has not shown bound yet: a late event
        # about them must not queue them again.
        self._bound_unseen: set[str] = set()
        self._gate_reports: dict[str, asyncio.TimerHandle] = {}
        # What was last reported for a gated pod: reported once, not on every pod update
        # (our own condition write is one).
        self._gate_reported: dict[str, str] = {}
        self._gated_report_delay = gated_report_delay
        self._binding_slots = asyncio.Semaphore(MAX_CONCURRENT_BINDINGS)
        self.scheduled = 0  # pods bound so far (for benchmarks and logs)

    def _handle(self, profile: str) -> Handle:
        return Handle(client=self.client, gates=self.gates, snapshot=self.cache,
                      informers=self.informers, recorder=self._record, dra=self.dra,
                      frameworks=self.profiles, profile=profile)

    def _fw(self, pod: dict) -> Framework:
        return self.profiles.get((pod.get("spec") or {}).get("schedulerName")
                                 or SCHEDULER_NAME, self.framework)

    # --- lifecycle ---------------------------------------------------------------------

    async def start(self, timeout: float = 60.0) -> None:
        self._pods.add_handler(self._on_pod_add, self._on_pod_update, self._on_pod_delete)
        nodes = self.informers.informer("v1", "nodes")
        nodes.add_handler(self._on_node, lambda old, new: self._on_node(new, "Update", old),
                          self._on_node_delete)
        namespaces = self.informers.informer("v1", "namespaces")
        namespaces.add_handler(lambda _ns: self._event("Namespace", "Add"),
                               lambda _old, _ns: self._event("Namespace", "Update"))
        claims = self.informers.informer(RESOURCE_V1, "resourceclaims")
        claims.add_handler(lambda c: self._on_claim(None, c), self._on_claim,
                           self._on_claim_delete)
        self._watch_cluster_scoped("deviceclasses", "DeviceClass",
                                   self.dra.set_class, self.dra.remove_class)
        self._watch_cluster_scoped("resourceslices", "ResourceSlice",
                                   self.dra.set_slice, self.dra.remove_slice)
        if self.gates.enabled("DRADeviceTaintRules") and await self._served("devicetaintrules"):
            self._watch_cluster_scoped("devicetaintrules", "DeviceTaintRule",
                                       self.dra.set_taint_rule, self.dra.remove_taint_rule)
        # Building the CEL parser takes seconds the first time: pay it now, in a thread,
        # rather than in the first pod's scheduling cycle.
        await asyncio.to_thread(compile_expression, "true")
        informers = self.informers.all()
        for inf in informers:
            await inf.start()
        await asyncio.gather(*(inf.wait_synced(timeout) for inf in informers))
        # The informers' caches (nodes, slices, claims, pods) live as long as the scheduler;
        # the cyclic GC scanning them again and again cost a quarter of the scheduler's CPU
        # at 500 nodes. Frozen objects are left out of collections until stop().
        gc.collect()
        gc.freeze()
        self._loop_task = asyncio.create_task(self._run(), name="scheduler-loop")
        log.info("scheduler started", nodes=len(self.cache), pending=len(self.queue))

    async def stop(self) -> None:
        self.queue.close()
        for handle in self._gate_reports.values():
            handle.cancel()
        tasks = [t for t in (self._loop_task, *self._tasks) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self.informers.owned:
            await asyncio.gather(*(inf.stop() for inf in self.informers.all()))
        gc.unfreeze()  # what was frozen may become garbage now

    async def _served(self, resource: str) -> bool:
        try:
            await self.client.list(RESOURCE_V1, resource, limit=1)
        except ApiError as e:
            if e.code == 404:
                log.info("not served, not watched", resource=resource)
                return False
            raise
        return True

    def _watch_cluster_scoped(self, resource: str, kind: str, setter: Any, remover: Any) -> None:
        def on_add(obj: dict) -> None:
            setter(obj)
            self._event(kind, "Add")

        def on_update(_old: dict, obj: dict) -> None:
            setter(obj)
            self._event(kind, "Update")

        def on_delete(obj: dict) -> None:
            remover(obj["metadata"]["name"])
            self._event(kind, "Delete")

        self.informers.informer(RESOURCE_V1, resource).add_handler(on_add, on_update,
                                                                   on_delete)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # --- informer handlers -------------------------------------------------------------

    def _event(self, resource: str, action: str, old: Any = None, new: Any = None) -> None:
        self.queue.on_event(ClusterEvent(resource, action), old=old, new=new)

    def _responsible(self, pod: dict) -> bool:
        spec = pod.get("spec") or {}
        return (spec.get("schedulerName") or SCHEDULER_NAME) in self.profiles \
            and not (pod.get("metadata") or {}).get("deletionTimestamp")

    @staticmethod
    def _terminal(pod: dict) -> bool:
        return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")

    def _on_pod_add(self, pod: dict) -> None:
        if (pod.get("spec") or {}).get("nodeName"):
            self._bound_unseen.discard(pod["metadata"]["uid"])
            if not self._terminal(pod):
                self.cache.add_pod(pod)
                self._event("Pod", "Add", new=pod)  # spread and affinity count placed pods
        elif self._responsible(pod) and pod["metadata"]["uid"] not in self._bound_unseen:
            self.dra.track_pod(pod)
            self.queue.add(key_of(pod), pod, gated_by=self._gate(pod))

    def _on_pod_update(self, old: dict, pod: dict) -> None:
        key = key_of(pod)
        self.dra.untrack_pod(old)
        if (pod.get("spec") or {}).get("nodeName"):
            self.queue.delete(key)
            self._bound_unseen.discard(pod["metadata"]["uid"])
            if self._terminal(pod):
                self.cache.remove_pod(pod)
                if not self._terminal(old):
                    self._event("Pod", "Delete", old=pod)  # its resources are free again
            else:
                self.cache.add_pod(pod)
                if not (old.get("spec") or {}).get("nodeName"):
                    self._event("Pod", "Add", new=pod)  # placed: as a placed pod added
                elif (old.get("metadata") or {}).get("labels") != \
                        (pod.get("metadata") or {}).get("labels"):
                    self._event("Pod", "Update", old=old, new=pod)
        elif self._responsible(pod) and pod["metadata"]["uid"] not in self._bound_unseen:
            self.dra.track_pod(pod)
            self.queue.update(key, pod, gated_by=self._gate(pod),
                              requeue=_without_volatile(old) != _without_volatile(pod))
        else:
            self.queue.delete(key)
            self._cancel_gate_report(key)

    def _on_pod_delete(self, pod: dict) -> None:
        self.dra.untrack_pod(pod)
        self.queue.delete(key_of(pod))
        self._cancel_gate_report(key_of(pod))
        self._bound_unseen.discard(pod["metadata"]["uid"])
        if (pod.get("spec") or {}).get("nodeName"):
            self.cache.remove_pod(pod)
            self._event("Pod", "Delete", old=pod)

    def _on_node(self, node: dict, action: str = "Add", old: dict | None = None) -> None:
        self.cache.set_node(node)
        self.dra.node_changed(node["metadata"]["name"])
        if old is not None and not _scheduling_properties_changed(old, node):
            return  # a heartbeat, say: upstream queues no event for it either
        self._event("Node", action, old=old, new=node)

    def _on_node_delete(self, node: dict) -> None:
        self.cache.remove_node(node["metadata"]["name"])
        self._event("Node", "Delete", old=node)

    def _claim_event(self, old: dict | None, claim: dict | None, action: str) -> None:
        """Upstream's queueing hint for claims: freed devices may help any pod; otherwise
        only the pods that use the claim (named in their spec or status, or owning it)."""
        event = ClusterEvent("ResourceClaim", action)
        was = ((old or {}).get("status") or {}).get("allocation")
        now = ((claim or {}).get("status") or {}).get("allocation")
        if was and not now:
            self.queue.on_event(event)
            return
        obj = claim or old or {}
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace", "")
        users = self.dra.pods_using(ns, meta.get("name", ""))
        users |= {f"{ns}/{o.get('name')}" for o in meta.get("ownerReferences") or []
                  if o.get("kind") == "Pod"}
        self.queue.on_event(event, only=users)

    def _on_claim(self, old: dict | None, claim: dict) -> None:
        self.dra.set_claim(claim)
        self._claim_event(old, claim, "Add" if old is None else "Update")

    def _on_claim_delete(self, claim: dict) -> None:
        self.dra.remove_claim(claim)
        self._claim_event(claim, None, "Delete")

    # --- PreEnqueue gating ------------------------------------------------------------

    def _gate(self, pod: dict) -> str:
        """The PreEnqueue plugin holding the pod back ("" if none)."""
        status = self._fw(pod).run_pre_enqueue(pod)
        key = key_of(pod)
        if status.ok:
            self._cancel_gate_report(key)
            return ""
        if status.plugin == SchedulingGates.name:
            # Scheduling gates are the user's choice, already shown by the apiserver's
            # SchedulingGated condition: nothing to report.
            self._cancel_gate_report(key)
            return status.plugin
        if key not in self._gate_reports and self._gate_reported.get(key) != status.message:
            self._gate_reports[key] = asyncio.get_running_loop().call_later(
                self._gated_report_delay, self._report_gated, key)
        return status.plugin

    def _cancel_gate_report(self, key: str) -> None:
        self._gate_reported.pop(key, None)
        handle = self._gate_reports.pop(key, None)
        if handle is not None:
            handle.cancel()

    def _report_gated(self, key: str) -> None:
        self._gate_reports.pop(key, None)
        pod = self._pods.get(key)
        if pod is None or (pod.get("spec") or {}).get("nodeName"):
            return
        status = self._fw(pod).run_pre_enqueue(pod)
        if not status.ok and self._gate_reported.get(key) != status.message:
            self._gate_reported[key] = status.message
            self._spawn(self._report_failure(pod, status.message, "Unschedulable"))

    # --- the scheduling cycle ----------------------------------------------------------

    async def _run(self) -> None:
        while True:
            qp = await self.queue.pop()
            if qp is None:
                return
            try:
                self._schedule_one(qp)
            except Exception as e:  # a bug must not stop the scheduler: retry with backoff
                log.exception("scheduling cycle failed", pod=qp.key)
                self._fail(qp, qp.pod, f"internal error: {e}", error=True)
            # Let informers and binding tasks run between two cycles.
            await asyncio.sleep(0)

    def _schedule_one(self, qp: QueuedPod) -> None:
        pod = self._pods.get(qp.key)
        if pod is None or (pod.get("spec") or {}).get("nodeName") or not self._responsible(pod):
            self.queue.done(qp.key)
            return
        qp.pod = pod
        gated_by = self._gate(pod)
        if gated_by:
            self.queue.requeue_gated(qp, gated_by)
            return
        result = self.scheduling_cycle(pod)
        if result.filtered is not None:
            self._spawn(self._post_filter(qp, pod, result))
            return
        if result.node_name is None:
            self._fail(qp, pod, result.message, rejectors=result.rejectors, error=result.error)
            return
        self._spawn(self._binding_cycle(qp, pod, result.state, result.node_name))

    def scheduling_cycle(self, pod: dict) -> CycleResult:
        """PreFilter, Filter, Score, then assume and Reserve on the chosen node. Pure
        computation on the caches (no API calls), so it can also be measured alone."""
        state = CycleState()
        num_nodes = len(self.cache)
        if num_nodes == 0:
            # No rejector: any cluster event (a node appearing) retries the pod.
            return CycleResult(state, message=NO_NODES)
        status, restriction = self._fw(pod).run_pre_filter(state, pod)
        if not status.ok:
            if status.code == Code.ERROR:
                return CycleResult(state, message=status.message, error=True)
            return CycleResult(state, rejectors={status.plugin}, message=fit_error_message(
                num_nodes, pre_filter=status.message))
        nominated = self.cache.node((pod.get("status") or {}).get("nominatedNodeName") or "")
        if nominated is not None and (restriction.node_names is None
                                      or nominated.name in restriction.node_names) \
                and self._fw(pod).run_filter(state, pod, nominated).ok:
            # Upstream's evaluateNominatedNode: the node preemption made room on comes first.
            return self._reserve(state, pod, nominated.name)
        candidates = self.cache.nodes()
        absent = None
        if restriction.node_names is not None:
            candidates = [n for n in candidates if n.name in restriction.node_names]
            absent = Status.unschedulable(
                f"node(s) didn't satisfy plugin(s) [{', '.join(sorted(state.restricted_by))}]",
                resolvable=False)
        feasible, statuses, error = self._find_feasible(state, pod, candidates)
        if error is not None:
            return CycleResult(state, message=error.message, error=True)
        if not feasible:
            return CycleResult(
                state, rejectors={s.plugin for s in statuses.values()} | state.restricted_by,
                message=fit_error_message(num_nodes, node_statuses=statuses, absent=absent),
                filtered=statuses)
        chosen = self._select_host(state, pod, feasible)
        if state.reused_verdicts:
            # Passed on a kept verdict: Filter again on the chosen node, for the state
            # Reserve needs (the DRA allocation); it passes again, as nothing changed.
            status = self._fw(pod).run_filter(state, pod, self.cache.node(chosen))
            if not status.ok:
                self._fw(pod).forget_kept_answers()
                return CycleResult(state, error=True, message=(
                    f"node {chosen} passed Filter on a kept verdict but not again: "
                    f"{status.message}"))
        return self._reserve(state, pod, chosen)

    def _reserve(self, state: CycleState, pod: dict, node_name: str) -> CycleResult:
        self.cache.assume(pod, node_name)
        status = self._fw(pod).run_reserve(state, pod, node_name)
        if not status.ok:
            for writes in self._fw(pod).run_unreserve(state, pod, node_name):
                self._spawn(writes)
            self.cache.forget(pod)
            if status.code == Code.ERROR:
                return CycleResult(state, error=True, message=f'running Reserve plugin '
                                   f'"{status.plugin}": {status.message}')
            return CycleResult(state, rejectors={status.plugin}, message=status.message)
        return CycleResult(state, node_name=node_name)

    async def _post_filter(self, qp: QueuedPod, pod: dict, result: CycleResult) -> None:
        """No node fits: PostFilter may free something (a claim allocated where the pod
        cannot go); its verdict is appended to the fit error, as upstream's FitError does.
        An event it causes (the deallocation) arrives while the pod is in flight, so the
        queue retries the pod at once."""
        status = await self._fw(pod).run_post_filter(result.state, pod, result.filtered or {})
        message = result.message
        if status.message:
            # As the real kube-scheduler writes it: one period, also after preemption's
            # nested fit error (found by tests/e2e/realk8s/test_scheduler_differential.py).
            message += f" {status.message}" + ("" if status.message.endswith(".") else ".")
        if status.code == Code.ERROR:
            log.warning("PostFilter failed", pod=qp.key, plugin=status.plugin,
                        error=status.message)
        self._fail(qp, pod, message, rejectors=result.rejectors)

    def _find_feasible(self, state: CycleState, pod: dict, nodes: list[NodeInfo]
                       ) -> tuple[list[NodeInfo], dict[str, Status], Status | None]:
        """Filters nodes round-robin from where the last cycle stopped, until enough feasible
        nodes are found (upstream's numFeasibleNodesToFind). As upstream, `nodes` are the
        candidates PreFilter left; the start index advances by the nodes looked at (those
        that passed and those rejected), modulo the number of all nodes, errors or not."""
        total = len(nodes)
        fw = self._fw(pod)
        wanted = num_feasible_nodes_to_find(total, fw.percentage_of_nodes_to_score)
        start = self._next_start_node % total if total else 0
        # The nodes in round-robin order from `start`, without an index computation each.
        feasible, statuses, error, processed = fw.find_feasible(
            state, pod, itertools.chain(itertools.islice(nodes, start, None),
                                        itertools.islice(nodes, start)), wanted)
        all_nodes = len(self.cache)
        if all_nodes:
            # Upstream counts the nodes that passed or got a status (not the one that erred).
            looked_at = processed - 1 if error is not None else processed
            self._next_start_node = (self._next_start_node + looked_at) % all_nodes
        if error is not None:
            return [], statuses, error
        return feasible, statuses, None

    def _select_host(self, state: CycleState, pod: dict, feasible: list[NodeInfo]) -> str:
        if len(feasible) == 1:
            return feasible[0].name
        scores = self._fw(pod).run_score(state, pod, feasible)
        best = max(scores.values())
        # Ties are broken at random, as upstream does, to spread pods.
        return random.choice([name for name, score in scores.items() if score == best])

    # --- the binding cycle -------------------------------------------------------------

    async def _binding_cycle(self, qp: QueuedPod, pod: dict, state: CycleState,
                             node_name: str) -> None:
        async with self._binding_slots:
            status = await self._fw(pod).run_pre_bind(state, pod, node_name)
            if not status.ok:
                message = f'running PreBind plugin "{status.plugin}": {status.message}'
            else:
                status = await self._fw(pod).run_bind(state, pod, node_name)
                message = status.message
        if not status.ok:
            # The pod goes back to the queue only once its claims no longer name it, so
            # that the retry can go to another node.
            await asyncio.gather(*self._fw(pod).run_unreserve(state, pod, node_name))
            self.cache.forget(pod)
            self._fail(qp, pod, message, error=True)
            return
        self.queue.done(qp.key)
        self._cancel_gate_report(qp.key)
        if not (self._pods.get(qp.key) or {}).get("spec", {}).get("nodeName"):
            self._bound_unseen.add(pod["metadata"]["uid"])
        self.scheduled += 1
        meta = pod["metadata"]
        await self._record(pod, "Normal", "Scheduled",
                           f"Successfully assigned {meta['namespace']}/{meta['name']} to "
                           f"{node_name}")
        await self._fw(pod).run_post_bind(state, pod, node_name)

    async def _record(self, pod: dict, type_: str, reason: str, message: str,
                      action: str = "") -> None:
        action = action or ("Binding" if reason == "Scheduled" else "Scheduling")
        try:
            await self.recorder.event(pod, type_, reason, message, action)
        except Exception as e:  # events are best effort; a lost one must not stop anything
            log.debug("event not recorded", reason=reason, error=repr(e))

    # --- failures ----------------------------------------------------------------------

    def _fail(self, qp: QueuedPod, pod: dict, message: str, *,
              rejectors: set[str] | None = None, error: bool = False) -> None:
        log.info("pod not scheduled", pod=qp.key, reason=message)
        if error:
            self.queue.requeue_error(qp)
        else:
            self.queue.requeue_unschedulable(qp, rejectors or set())
        self._spawn(self._report_failure(pod, message,
                                         "SchedulerError" if error else "Unschedulable"))

    async def _report_failure(self, pod: dict, message: str, reason: str) -> None:
        await self._record(pod, "Warning", "FailedScheduling", message)
        conditions = list((pod.get("status") or {}).get("conditions") or [])
        old = next((c for c in conditions if c.get("type") == "PodScheduled"), None)
        if old and old.get("status") == "False" and old.get("reason") == reason \
                and old.get("message") == message:
            return
        new = {"type": "PodScheduled", "status": "False", "reason": reason,
               "message": message, "lastProbeTime": None,
               "lastTransitionTime": old["lastTransitionTime"]
               if old and old.get("status") == "False" and old.get("lastTransitionTime")
               else time_now()}
        conditions = [c for c in conditions if c.get("type") != "PodScheduled"] + [new]
        meta = pod["metadata"]
        try:
            await self.client.patch("v1", "pods", meta["name"],
                                    {"status": {"conditions": conditions}},
                                    namespace=meta["namespace"], subresource="status")
        except Exception as e:  # best effort, like the event; the next attempt retries
            log.debug("could not update PodScheduled", pod=meta["name"], error=repr(e))


def _scheduling_properties_changed(old: dict, new: dict) -> bool:
    """Upstream's nodeSchedulingPropertiesChange: whether a node update changed what
    scheduling looks at (cordon, allocatable, labels, taints, conditions' types and
    statuses, annotations, declared features), not just heartbeats or images."""
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    old_status, new_status = old.get("status") or {}, new.get("status") or {}
    return bool(old_spec.get("unschedulable")) != bool(new_spec.get("unschedulable")) \
        or old_status.get("allocatable") != new_status.get("allocatable") \
        or (old_meta.get("labels") or {}) != (new_meta.get("labels") or {}) \
        or (old_spec.get("taints") or []) != (new_spec.get("taints") or []) \
        or _condition_states(old_status) != _condition_states(new_status) \
        or (old_meta.get("annotations") or {}) != (new_meta.get("annotations") or {}) \
        or old_status.get("declaredFeatures") != new_status.get("declaredFeatures")


def _condition_states(status: dict) -> dict[str, str]:
    return {c.get("type", ""): c.get("status", "") for c in status.get("conditions") or []}
