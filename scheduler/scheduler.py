"""The scheduler component (upstream's Scheduler): informers feed the node cache, the DRA
manager and the queue (`eventhandlers`); one loop pops pods and runs their scheduling
cycle (`cycle`); binding cycles run concurrently as tasks (`binding`); pods not placed
are reported (`failures`).

Outcomes are written as on a real cluster: a `Scheduled` event on success (the binding
itself sets the pod's PodScheduled condition), a `FailedScheduling` event and a
`PodScheduled=False` condition on failure.
"""

from __future__ import annotations

import asyncio
import gc
import socket
from typing import Any

from draemu.cel import compile_expression
from draemu.client import ApiError, Client, EventRecorder, SharedInformers
from draemu.features import FeatureGates
from draemu.log import get_logger
from draemu.scheduler.binding import BindingCycle
from draemu.scheduler.cache import Cache
from draemu.scheduler.config import SchedulerConfig
from draemu.scheduler.cycle import CycleResult, SchedulingCycle, num_feasible_nodes_to_find
from draemu.scheduler.dra.manager import DRAManager
from draemu.scheduler.eventhandlers import RESOURCE_V1, EventHandlers
from draemu.scheduler.failures import FailureReporter, GateReports
from draemu.scheduler.framework import ClusterEvent, Code, Framework
from draemu.scheduler.framework.handle import Handle
from draemu.scheduler.informers import SchedulerInformers
from draemu.scheduler.pluginargs import FILTER_TIMEOUT, DynamicResourcesArgs
from draemu.scheduler.plugins.registry import IN_TREE, Registry
from draemu.scheduler.profiles import build_framework
from draemu.scheduler.queue import QueuedPod, SchedulingQueue
from draemu.scheduler.tasks import BackgroundTasks

__all__ = ["CycleResult", "Scheduler", "num_feasible_nodes_to_find"]

log = get_logger("scheduler")

SCHEDULER_NAME = "default-scheduler"
# A pod held back by PreEnqueue (its claims do not exist yet) gets its reason written only
# if it is still waiting after this long. Upstream writes nothing at all for such pods;
# we do, for the case where no claim controller runs, but late enough that a burst of
# new pods (the claim controller working through a backlog of seconds) costs no writes.
GATED_REPORT_DELAY = 30.0


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
        self.queue = self._queue(initial_backoff, max_backoff)
        self.tasks = BackgroundTasks()
        pods = self.informers.informer("v1", "pods")
        self._pods = pods
        self.failures = FailureReporter(client, self.queue, self._record, self.tasks)
        self.gate_reports = GateReports(self.framework_for, pods, self.failures, self.tasks,
                                      gated_report_delay)
        self.handlers = EventHandlers(self.cache, self.dra, self.queue,
                                      responsible=self.responsible, gate=self.gate_reports.gate,
                                      forget_gate=self.gate_reports.cancel)
        self.cycle = SchedulingCycle(self.cache, self.framework_for, self.tasks)
        self.binding = BindingCycle(self.cache, self.queue, pods, self.framework_for,
                                    self.failures, self._record, bound=self.handlers.bound,
                                    forget_gate=self.gate_reports.cancel)
        self._loop_task: asyncio.Task[None] | None = None

    def _handle(self, profile: str) -> Handle:
        return Handle(client=self.client, gates=self.gates, snapshot=self.cache,
                      informers=self.informers, recorder=self._record, dra=self.dra,
                      frameworks=self.profiles, profile=profile)

    def _queue(self, initial_backoff: float, max_backoff: float) -> SchedulingQueue:
        """The queue, with the events and queueing hints of every profile's plugins."""
        events: dict[str, set[ClusterEvent]] = {}
        hints: dict[str, Any] = {}
        for fw in self.profiles.values():
            for name, evs in fw.events_by_plugin().items():
                events.setdefault(name, set()).update(evs)
            for name, hint in fw.hints_by_plugin().items():
                hints.setdefault(name, hint)
        return SchedulingQueue(events, hints=hints, initial_backoff=initial_backoff,
                               max_backoff=max_backoff)

    @property
    def scheduled(self) -> int:
        """Pods bound so far (for benchmarks and logs)."""
        return self.binding.scheduled

    def framework_for(self, pod: dict) -> Framework:
        """The framework of the pod's profile (spec.schedulerName)."""
        return self.profiles.get((pod.get("spec") or {}).get("schedulerName")
                                 or SCHEDULER_NAME, self.framework)

    def responsible(self, pod: dict) -> bool:
        """Whether the pod is ours to schedule: one of our profiles, not being deleted."""
        spec = pod.get("spec") or {}
        return (spec.get("schedulerName") or SCHEDULER_NAME) in self.profiles \
            and not (pod.get("metadata") or {}).get("deletionTimestamp")

    def scheduling_cycle(self, pod: dict) -> CycleResult:
        """PreFilter, Filter, Score, then assume and Reserve on the chosen node. Pure
        computation on the caches (no API calls), so it can also be measured alone."""
        return self.cycle.run(pod)

    # --- lifecycle ---------------------------------------------------------------------

    async def start(self, timeout: float = 60.0) -> None:
        taint_rules = self.gates.enabled("DRADeviceTaintRules") and \
            await self._served("devicetaintrules")
        self.handlers.register(self.informers, taint_rules=taint_rules)
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
        self.gate_reports.stop()
        if self._loop_task is not None:
            self._loop_task.cancel()
            await asyncio.gather(self._loop_task, return_exceptions=True)
        await self.tasks.cancel()
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

    async def _record(self, pod: dict, type_: str, reason: str, message: str,
                      action: str = "") -> None:
        action = action or ("Binding" if reason == "Scheduled" else "Scheduling")
        try:
            await self.recorder.event(pod, type_, reason, message, action)
        except Exception as e:  # events are best effort; a lost one must not stop anything
            log.debug("event not recorded", reason=reason, error=repr(e))

    # --- the loop ----------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            qp = await self.queue.pop()
            if qp is None:
                return
            try:
                self._schedule_one(qp)
            except Exception as e:  # a bug must not stop the scheduler: retry with backoff
                log.exception("scheduling cycle failed", pod=qp.key)
                self.failures.fail(qp, qp.pod, f"internal error: {e}", error=True)
            # Let informers and binding tasks run between two cycles.
            await asyncio.sleep(0)

    def _schedule_one(self, qp: QueuedPod) -> None:
        pod = self._pods.get(qp.key)
        if pod is None or (pod.get("spec") or {}).get("nodeName") or not self.responsible(pod):
            self.queue.done(qp.key)
            return
        qp.pod = pod
        gated_by = self.gate_reports.gate(pod)
        if gated_by:
            self.queue.requeue_gated(qp, gated_by)
            return
        result = self.cycle.run(pod)
        if result.filtered is not None:
            self.tasks.spawn(self._post_filter(qp, pod, result))
            return
        if result.node_name is None:
            self.failures.fail(qp, pod, result.message, rejectors=result.rejectors,
                               error=result.error)
            return
        self.tasks.spawn(self.binding.run(qp, pod, result.state, result.node_name))

    async def _post_filter(self, qp: QueuedPod, pod: dict, result: CycleResult) -> None:
        """No node fits: PostFilter may free something (a claim allocated where the pod
        cannot go); its verdict is appended to the fit error, as upstream's FitError does.
        An event it causes (the deallocation) arrives while the pod is in flight, so the
        queue retries the pod at once."""
        status = await self.framework_for(pod).run_post_filter(result.state, pod,
                                                               result.filtered or {})
        message = result.message
        if status.message:
            # As the real kube-scheduler writes it: one period, also after preemption's
            # nested fit error (found by tests/e2e/realk8s/test_scheduler_differential.py).
            message += f" {status.message}" + ("" if status.message.endswith(".") else ".")
        if status.code == Code.ERROR:
            log.warning("PostFilter failed", pod=qp.key, plugin=status.plugin,
                        error=status.message)
        self.failures.fail(qp, pod, message, rejectors=result.rejectors)
