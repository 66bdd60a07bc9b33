"""The scheduling queue: active, backoff and unschedulable sub-queues (after upstream's
PriorityQueue).

- *active*: pods ready to be tried, highest priority first, then oldest first.
- *backoff*: pods that failed and wait out their backoff (1 s doubling to 10 s per attempt)
  before going back to active.
- *unschedulable*: pods no node could take. They leave only when a cluster event arrives
  that one of the plugins which rejected them registered for (a new slice, a freed claim,
  a new node...), or after `max_unschedulable_seconds` as a safety net (upstream's
  podMaxInUnschedulablePodsDuration, 5 minutes).

Events that arrive while a pod is being scheduled are remembered for it, so a pod that
fails just after the event that would have helped it is not parked forever.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from draemu.scheduler.framework import ClusterEvent

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0
MAX_UNSCHEDULABLE_SECONDS = 300.0


@dataclass
class QueuedPod:
    key: str  # namespace/name
    pod: dict
    added: float = field(default_factory=time.monotonic)
    attempts: int = 0
    last_failure: float = 0.0
    # Plugins that rejected the pod in its last attempt: their events can requeue it.
    rejectors: set[str] = field(default_factory=set)

    @property
    def priority(self) -> int:
        return int((self.pod.get("spec") or {}).get("priority") or 0)


class SchedulingQueue:
    def __init__(self, events_by_plugin: dict[str, set[ClusterEvent]], *,
                 initial_backoff: float = INITIAL_BACKOFF, max_backoff: float = MAX_BACKOFF,
                 max_unschedulable_seconds: float = MAX_UNSCHEDULABLE_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._events_by_plugin = events_by_plugin
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self._max_unschedulable = max_unschedulable_seconds
        self._clock = clock
        self._seq = itertools.count()
        self._active: list[tuple[int, float, int, str]] = []
        self._active_keys: set[str] = set()
        self._backoff: list[tuple[float, int, str]] = []
        self._backoff_keys: set[str] = set()
        self._unschedulable: dict[str, float] = {}  # key -> when it was parked
        self._pods: dict[str, QueuedPod] = {}
        self._in_flight: dict[str, list[ClusterEvent]] = {}
        self._wakeup = asyncio.Event()
        self._closed = False

    # --- bookkeeping -------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._pods)

    def stats(self) -> dict[str, int]:
        return {"active": len(self._active_keys), "backoff": len(self._backoff_keys),
                "unschedulable": len(self._unschedulable), "in_flight": len(self._in_flight)}

    def _push_active(self, qp: QueuedPod) -> None:
        self._unschedulable.pop(qp.key, None)
        self._backoff_keys.discard(qp.key)
        if qp.key in self._active_keys:
            return
        self._active_keys.add(qp.key)
        heapq.heappush(self._active, (-qp.priority, qp.added, next(self._seq), qp.key))
        self._wakeup.set()

    def _backoff_until(self, qp: QueuedPod) -> float:
        delay = min(self._initial_backoff * 2 ** max(qp.attempts - 1, 0), self._max_backoff)
        return qp.last_failure + delay

    def _push_backoff_or_active(self, qp: QueuedPod) -> None:
        until = self._backoff_until(qp)
        if qp.attempts == 0 or until <= self._clock():
            self._push_active(qp)
            return
        self._unschedulable.pop(qp.key, None)
        if qp.key not in self._backoff_keys:
            self._backoff_keys.add(qp.key)
            heapq.heappush(self._backoff, (until, next(self._seq), qp.key))
            self._wakeup.set()

    # --- pod lifecycle -----------------------------------------------------------------

    def add(self, key: str, pod: dict, *, gated_by: str = "") -> None:
        """A new pending pod; `gated_by` names the PreEnqueue plugin that holds it back."""
        if key in self._pods:
            self.update(key, pod, requeue=True, gated_by=gated_by)
            return
        qp = QueuedPod(key, pod)
        self._pods[key] = qp
        if gated_by:
            self._park(qp, {gated_by})
        else:
            self._push_active(qp)

    def update(self, key: str, pod: dict, *, requeue: bool = False, gated_by: str = "") -> None:
        """A pending pod changed; `requeue` when the change may make it schedulable."""
        qp = self._pods.get(key)
        if qp is None:
            self.add(key, pod, gated_by=gated_by)
            return
        qp.pod = pod
        if key in self._in_flight:
            return
        if gated_by:
            if key in self._unschedulable:
                qp.rejectors = {gated_by}
        elif requeue and key in self._unschedulable:
            self._push_backoff_or_active(qp)

    def _park(self, qp: QueuedPod, rejectors: set[str]) -> None:
        qp.rejectors = rejectors
        self._active_keys.discard(qp.key)
        self._backoff_keys.discard(qp.key)
        self._unschedulable[qp.key] = self._clock()
        self._wakeup.set()  # the safety-net deadline may be earlier than the current wait

    def requeue_gated(self, qp: QueuedPod, plugin: str) -> None:
        """A popped pod turned out to be held back by PreEnqueue: park it without counting
        the attempt (no backoff), unless an event during the attempt may have released it."""
        events = self._in_flight.pop(qp.key, [])
        qp.attempts -= 1
        if qp.key not in self._pods:
            return
        if any(self._interested({plugin}, ev) for ev in events):
            self._push_backoff_or_active(qp)
        else:
            self._park(qp, {plugin})

    def delete(self, key: str) -> None:
        self._pods.pop(key, None)
        self._active_keys.discard(key)
        self._backoff_keys.discard(key)
        self._unschedulable.pop(key, None)

    async def pop(self) -> QueuedPod | None:
        """The next pod to schedule; None once the queue is closed."""
        while not self._closed:
            self._flush()
            while self._active:
                _, _, _, key = heapq.heappop(self._active)
                if key not in self._active_keys:
                    continue  # stale heap entry (deleted or moved)
                self._active_keys.discard(key)
                qp = self._pods[key]
                qp.attempts += 1
                self._in_flight[key] = []
                return qp
            self._wakeup.clear()
            timeout = self._next_deadline()
            try:
                await asyncio.wait_for(self._wakeup.wait(), timeout)
            except TimeoutError:
                pass
        return None

    def _next_deadline(self) -> float | None:
        deadlines = []
        if self._backoff:
            deadlines.append(self._backoff[0][0])
        if self._unschedulable:
            deadlines.append(min(self._unschedulable.values()) + self._max_unschedulable)
        if not deadlines:
            return None
        return max(min(deadlines) - self._clock(), 0.0) + 0.001

    def _flush(self) -> None:
        now = self._clock()
        while self._backoff and self._backoff[0][0] <= now:
            _, _, key = heapq.heappop(self._backoff)
            if key in self._backoff_keys:
                self._backoff_keys.discard(key)
                self._push_active(self._pods[key])
        stale = [k for k, t in self._unschedulable.items() if now - t >= self._max_unschedulable]
        for key in stale:
            self._push_backoff_or_active(self._pods[key])

    def done(self, key: str) -> None:
        """The pod's attempt ended in success (bound or being bound): forget it."""
        self._in_flight.pop(key, None)
        self.delete(key)

    def requeue_unschedulable(self, qp: QueuedPod, rejectors: set[str]) -> None:
        """The pod fits no node. Park it, unless an event arrived during its attempt that
        one of its rejectors cares about."""
        events = self._in_flight.pop(qp.key, [])
        if qp.key not in self._pods:
            return  # deleted meanwhile
        qp.last_failure = self._clock()
        if any(self._interested(rejectors, ev) for ev in events):
            qp.rejectors = rejectors
            self._push_backoff_or_active(qp)
            return
        self._park(qp, rejectors)

    def requeue_error(self, qp: QueuedPod) -> None:
        """The attempt failed with an error (API failure, conflict...): retry after backoff."""
        self._in_flight.pop(qp.key, None)
        if qp.key not in self._pods:
            return
        qp.last_failure = self._clock()
        self._push_backoff_or_active(qp)

    # --- cluster events ----------------------------------------------------------------

    def _interested(self, rejectors: set[str], event: ClusterEvent) -> bool:
        if not rejectors:
            return True  # unknown rejector: any event may help
        return any(event in self._events_by_plugin.get(p, ()) for p in rejectors)

    def on_event(self, event: ClusterEvent, only: set[str] | None = None) -> int:
        """Moves the unschedulable pods that `event` may help; returns how many moved.
        `only` narrows the event to the pods it concerns (upstream's queueing hints), so
        that, say, a new claim wakes the pod it was made for and not every waiting pod."""
        for key, events in self._in_flight.items():
            if only is None or key in only:
                events.append(event)
        keys = list(self._unschedulable) if only is None else \
            [k for k in only if k in self._unschedulable]
        moved = 0
        for key in keys:
            qp = self._pods[key]
            if self._interested(qp.rejectors, event):
                self._push_backoff_or_active(qp)
                moved += 1
        return moved

    def close(self) -> None:
        self._closed = True
        self._wakeup.set()
