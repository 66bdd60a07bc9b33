"""The binding cycle (upstream's bindingCycle), one task per pod: PreBind (DRA writes the
claims' allocation and reservation), Bind, and PostBind; on failure, Unreserve (awaited:
the pod is retried only once its claims no longer name it) and back to the queue.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from draemu.scheduler.cache import Cache
from draemu.scheduler.failures import FailureReporter
from draemu.scheduler.framework import CycleState, Framework
from draemu.scheduler.framework.handle import Lister, Recorder
from draemu.scheduler.queue import QueuedPod, SchedulingQueue

# Binding cycles running at once: more would only queue on the client's connection pool
# (and time out there) without binding faster.
MAX_CONCURRENT_BINDINGS = 32


class BindingCycle:
    def __init__(self, cache: Cache, queue: SchedulingQueue, pods: Lister,
                 framework_for: Callable[[dict], Framework], failures: FailureReporter,
                 record: Recorder, *, bound: Callable[[dict], None],
                 forget_gate: Callable[[str], None]) -> None:
        """bound(pod): we bound it (the informer may not show it yet); forget_gate(key):
        its PreEnqueue report is moot."""
        self._cache = cache
        self._queue = queue
        self._pods = pods
        self._framework_for = framework_for
        self._failures = failures
        self._record = record
        self._bound = bound
        self._forget_gate = forget_gate
        self._slots = asyncio.Semaphore(MAX_CONCURRENT_BINDINGS)
        self.scheduled = 0  # pods bound so far (for benchmarks and logs)

    async def run(self, qp: QueuedPod, pod: dict, state: CycleState, node_name: str) -> None:
        fw = self._framework_for(pod)
        async with self._slots:
            status = await fw.run_pre_bind(state, pod, node_name)
            if not status.ok:
                message = f'running PreBind plugin "{status.plugin}": {status.message}'
            else:
                status = await fw.run_bind(state, pod, node_name)
                message = status.message
        if not status.ok:
            # The pod goes back to the queue only once its claims no longer name it, so
            # that the retry can go to another node.
            await asyncio.gather(*fw.run_unreserve(state, pod, node_name))
            self._cache.forget(pod)
            self._failures.fail(qp, pod, message, error=True)
            return
        self._queue.done(qp.key)
        self._forget_gate(qp.key)
        if not (self._pods.get(qp.key) or {}).get("spec", {}).get("nodeName"):
            self._bound(pod)
        self.scheduled += 1
        meta = pod["metadata"]
        await self._record(pod, "Normal", "Scheduled",
                           f"Successfully assigned {meta['namespace']}/{meta['name']} to "
                           f"{node_name}", "Binding")
        await fw.run_post_bind(state, pod, node_name)
