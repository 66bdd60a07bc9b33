"""What the scheduler reports about pods it did not place (upstream's
handleSchedulingFailure): the pod goes back to the queue, a `FailedScheduling` event and
a `PodScheduled=False` condition say why; and, for pods PreEnqueue holds back, the same
report once they have waited `delay` seconds (scheduling gates excepted).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from draemu.api.meta import time_now
from draemu.client import Client, key_of
from draemu.log import get_logger
from draemu.scheduler.framework import Framework
from draemu.scheduler.framework.handle import Lister, Recorder
from draemu.scheduler.plugins.schedulinggates import SchedulingGates
from draemu.scheduler.queue import QueuedPod, SchedulingQueue
from draemu.scheduler.tasks import BackgroundTasks

log = get_logger("scheduler")


class FailureReporter:
    def __init__(self, client: Client, queue: SchedulingQueue, record: Recorder,
                 tasks: BackgroundTasks) -> None:
        self._client = client
        self._queue = queue
        self._record = record
        self._tasks = tasks

    def fail(self, qp: QueuedPod, pod: dict, message: str, *,
             rejectors: set[str] | None = None, error: bool = False) -> None:
        """Requeues the pod (after backoff for an error, else until an event of one of
        the `rejectors` may help) and reports why."""
        log.info("pod not scheduled", pod=qp.key, reason=message)
        if error:
            self._queue.requeue_error(qp)
        else:
            self._queue.requeue_unschedulable(qp, rejectors or set())
        self._tasks.spawn(self.report(pod, message,
                                      "SchedulerError" if error else "Unschedulable"))

    async def report(self, pod: dict, message: str, reason: str) -> None:
        await self._record(pod, "Warning", "FailedScheduling", message, "Scheduling")
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
            await self._client.patch("v1", "pods", meta["name"],
                                     {"status": {"conditions": conditions}},
                                     namespace=meta["namespace"], subresource="status")
        except Exception as e:  # best effort, like the event; the next attempt retries
            log.debug("could not update PodScheduled", pod=meta["name"], error=repr(e))


class GateReports:
    """PreEnqueue: which plugin holds a pod back, and the delayed report of why."""

    def __init__(self, framework_for: Callable[[dict], Framework], pods: Lister,
                 failures: FailureReporter, tasks: BackgroundTasks, delay: float) -> None:
        self._framework_for = framework_for
        self._pods = pods
        self._failures = failures
        self._tasks = tasks
        self._delay = delay
        self._pending: dict[str, asyncio.TimerHandle] = {}
        # What was last reported for a gated pod: reported once, not on every pod update
        # (our own condition write is one).
        self._reported: dict[str, str] = {}

    def gate(self, pod: dict) -> str:
        """The PreEnqueue plugin holding the pod back ("" if none)."""
        status = self._framework_for(pod).run_pre_enqueue(pod)
        key = key_of(pod)
        if status.ok:
            self.cancel(key)
            return ""
        if status.plugin == SchedulingGates.name:
            # Scheduling gates are the user's choice, already shown by the apiserver's
            # SchedulingGated condition: nothing to report.
            self.cancel(key)
            return status.plugin
        if key not in self._pending and self._reported.get(key) != status.message:
            self._pending[key] = asyncio.get_running_loop().call_later(
                self._delay, self._report, key)
        return status.plugin

    def cancel(self, key: str) -> None:
        """The pod is no longer held back (or gone): nothing to report."""
        self._reported.pop(key, None)
        handle = self._pending.pop(key, None)
        if handle is not None:
            handle.cancel()

    def stop(self) -> None:
        for handle in self._pending.values():
            handle.cancel()

    def _report(self, key: str) -> None:
        self._pending.pop(key, None)
        pod = self._pods.get(key)
        if pod is None or (pod.get("spec") or {}).get("nodeName"):
            return
        status = self._framework_for(pod).run_pre_enqueue(pod)
        if not status.ok and self._reported.get(key) != status.message:
            self._reported[key] = status.message
            self._tasks.spawn(self._failures.report(pod, status.message, "Unschedulable"))
