"""The scheduling queue: active, backoff and unschedulable sub-queues (after upstream's
PriorityQueue).

- *active*: pods ready to be tried, highest priority first, then oldest first.
- *backoff*: pods that failed and wait out their backoff (1 s doubling to 10 s per attempt)
  before going back to active.
- *unschedulable*: pods no node could take. They leave only when a cluster event arrives
  that one of the plugins which rejected them registered for (a new slice, a freed claim,
  a new node...) and, if that plugin has a queueing hint for it, the hint says the
  event may help this pod (upstream's QueueingHintFn: a placed pod that matches none of
  the pod's affinity terms does not requeue it); or after `max_unschedulable_seconds`
  as a safety net (upstream's podMaxInUnschedulablePodsDuration, 5 minutes).

Events that arrive while a pod is being scheduled are remembered for it, so a pod that
fails just after the event that would have helped it is not parked forever.

Cost (the queue sees every cluster event; at 5,000 nodes and thousands of pods it must
not look at every waiting pod for each): the unschedulable pods are indexed by the
plugins that rejected them, so an event looks only at the pods of the plugins that
registered for it; they are kept in the order they were parked, so the safety-net scan
looks only at the oldest; and the events seen while pods are in flight are one shared
log (upstream's inFlightEvents) that each in-flight pod reads from where it was popped,
not a list per pod.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from draemu.scheduler.framework import ClusterEvent

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0
MAX_UNSCHEDULABLE_SECONDS = 300.0
LOG_PRUNE_AT = 1024  # in-flight events kept before looking for what no one reads


# A plugin's queueing hint: (event, the waiting pod, the object before, after) -> whether
# the event may make the pod schedulable (upstream's Queue; False is QueueSkip).
Hint = Callable[[ClusterEvent, dict, Any, Any], bool]


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
                 clock: Callable[[], float] = time.monotonic,
                 hints: dict[str, Hint] | None = None) -> None:
        """hints: the plugins' queueing hints by plugin name (a plugin without one is
        asked nothing: every event it registered for requeues the pods it rejected)."""
        self._hints = hints or {}
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self._max_unschedulable = max_unschedulable_seconds
        self._clock = clock
        self._seq = itertools.count()
        self._active: list[tuple[int, float, int, str]] = []
        self._active_keys: set[str] = set()
        self._backoff: list[tuple[float, int, str]] = []
        self._backoff_keys: set[str] = set()
        # key -> when it was parked; in the order parked (oldest first), so that the
        # safety net and the next deadline look at the front only.
        self._unschedulable: dict[str, float] = {}
        # Parked pods by the plugin that rejected them ("" = no known rejector: any event),
        # each with a number that orders them as parked.
        self._parked_by: dict[str, dict[str, int]] = {}
        # The plugins that registered for each event.
        self._plugins_for: dict[ClusterEvent, frozenset[str]] = {}
        for plugin, events in events_by_plugin.items():
            for event in events:
                self._plugins_for[event] = self._plugins_for.get(event, frozenset()) | {plugin}
        self._pods: dict[str, QueuedPod] = {}
        # In-flight pod -> the position in the event log when it was popped.
        self._in_flight: dict[str, int] = {}
        # Events seen while some pod was in flight, with the pods they are narrowed to
        # (None = every pod); _log[0] is event number _log_base.
        self._log: list[tuple[ClusterEvent, set[str] | None, Any, Any]] = []
        self._log_base = 0
        self._log_limit = LOG_PRUNE_AT
        self._wakeup = asyncio.Event()
        self._closed = False

    # --- bookkeeping -------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._pods)

    def stats(self) -> dict[str, int]:
        return {"active": len(self._active_keys), "backoff": len(self._backoff_keys),
                "unschedulable": len(self._unschedulable), "in_flight": len(self._in_flight)}

    def _unindex(self, qp: QueuedPod) -> None:
        for plugin in qp.rejectors or ("",):
            parked = self._parked_by.get(plugin)
            if parked is not None:
                parked.pop(qp.key, None)
                if not parked:
                    del self._parked_by[plugin]

    def _index(self, qp: QueuedPod, rejectors: set[str]) -> None:
        qp.rejectors = rejectors
        seq = next(self._seq)
        for plugin in rejectors or ("",):
            self._parked_by.setdefault(plugin, {})[qp.key] = seq

    def _unpark(self, key: str) -> None:
        if self._unschedulable.pop(key, None) is None:
            return
        qp = self._pods.get(key)
        if qp is not None:
            self._unindex(qp)

    def _park(self, qp: QueuedPod, rejectors: set[str]) -> None:
        self._active_keys.discard(qp.key)
        self._backoff_keys.discard(qp.key)
        self._unpark(qp.key)
        self._unschedulable[qp.key] = self._clock()  # at the end: the newest
        self._index(qp, rejectors)
        self._wakeup.set()  # the safety-net deadline may be earlier than the current wait

    def _push_active(self, qp: QueuedPod) -> None:
        self._unpark(qp.key)
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
        self._unpark(qp.key)
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
                self._unindex(qp)
                self._index(qp, {gated_by})
        elif requeue and key in self._unschedulable:
            self._push_backoff_or_active(qp)

    def requeue_gated(self, qp: QueuedPod, plugin: str) -> None:
        """A popped pod turned out to be held back by PreEnqueue: park it without counting
        the attempt (no backoff), unless an event during the attempt may have released it."""
        events = self._end_flight(qp.key)
        qp.attempts -= 1
        if qp.key not in self._pods:
            return
        if any(self._requeues(qp, {plugin}, *ev) for ev in events):
            self._push_backoff_or_active(qp)
        else:
            self._park(qp, {plugin})

    def delete(self, key: str) -> None:
        self._unpark(key)
        self._pods.pop(key, None)
        self._active_keys.discard(key)
        self._backoff_keys.discard(key)

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
                self._in_flight[key] = self._log_base + len(self._log)
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
            oldest = next(iter(self._unschedulable.values()))
            deadlines.append(oldest + self._max_unschedulable)
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
        stale = []
        for key, since in self._unschedulable.items():  # oldest first
            if now - since < self._max_unschedulable:
                break
            stale.append(key)
        for key in stale:
            self._push_backoff_or_active(self._pods[key])

    def _end_flight(self, key: str, *, collect: bool = True
                    ) -> list[tuple[ClusterEvent, Any, Any]]:
        """The pod's attempt is over: the events that concern it since it was popped (with
        their objects, for the hints); none gathered if not `collect` (a bound pod)."""
        start = self._in_flight.pop(key, None)
        if start is None:
            return []
        events = [(ev, old, new) for ev, only, old, new in self._log[start - self._log_base:]
                  if only is None or key in only] if collect else []
        if not self._in_flight:
            self._log_base += len(self._log)
            self._log.clear()
        return events

    def _prune_log(self) -> None:
        """Drops the events no in-flight pod has still to read."""
        first = min(self._in_flight.values())
        del self._log[:first - self._log_base]
        self._log_base = first
        self._log_limit = max(LOG_PRUNE_AT, 2 * len(self._log))

    def done(self, key: str) -> None:
        """The pod's attempt ended in success (bound or being bound): forget it."""
        self._end_flight(key, collect=False)
        self.delete(key)

    def requeue_unschedulable(self, qp: QueuedPod, rejectors: set[str]) -> None:
        """The pod fits no node. Park it, unless an event arrived during its attempt that
        one of its rejectors cares about."""
        events = self._end_flight(qp.key)
        if qp.key not in self._pods:
            return  # deleted meanwhile
        qp.last_failure = self._clock()
        if any(self._requeues(qp, rejectors, *ev) for ev in events):
            qp.rejectors = rejectors
            self._push_backoff_or_active(qp)
            return
        self._park(qp, rejectors)

    def requeue_error(self, qp: QueuedPod) -> None:
        """The attempt failed with an error (API failure, conflict...): retry after backoff."""
        self._end_flight(qp.key)
        if qp.key not in self._pods:
            return
        qp.last_failure = self._clock()
        self._push_backoff_or_active(qp)

    # --- cluster events ----------------------------------------------------------------

    def _requeues(self, qp: QueuedPod, rejectors: set[str], event: ClusterEvent,
                  old: Any = None, new: Any = None) -> bool:
        """Whether `event` may help the pod these plugins rejected: one of them registered
        for it and has no hint, or its hint says so (a failing hint says so too, as
        upstream's does on an error)."""
        if not rejectors:
            return True  # unknown rejector: any event may help
        registered = self._plugins_for.get(event, ())
        for plugin in rejectors:
            if plugin not in registered:
                continue
            hint = self._hints.get(plugin)
            if hint is None or (old is None and new is None):
                return True
            try:
                if hint(event, qp.pod, old, new):
                    return True
            except Exception:
                return True
        return False

    def on_event(self, event: ClusterEvent, only: set[str] | None = None, *,
                 old: Any = None, new: Any = None) -> int:
        """Moves the unschedulable pods that `event` may help; returns how many moved.
        `only` narrows the event to the pods it concerns, so that, say, a new claim wakes
        the pod it was made for and not every waiting pod; `old` and `new` are the object
        before and after (None for an add / a delete), for the plugins' hints."""
        if self._in_flight:
            self._log.append((event, only, old, new))
            if len(self._log) > self._log_limit:
                self._prune_log()
        if not self._unschedulable:
            return 0
        if only is not None:
            keys = [k for k in only if k in self._unschedulable]
        else:
            # The pods parked by a plugin that registered for the event, or by none, in
            # the order they were parked.
            groups = [self._parked_by[p] for p in (*self._plugins_for.get(event, ()), "")
                      if p in self._parked_by]
            if not groups:
                return 0
            if len(groups) == 1:
                keys = list(groups[0])
            else:
                merged = {k: seq for group in groups for k, seq in group.items()}
                keys = sorted(merged, key=merged.__getitem__)
        moved = 0
        for key in keys:
            qp = self._pods[key]
            if self._requeues(qp, qp.rejectors, event, old, new):
                self._push_backoff_or_active(qp)
                moved += 1
        return moved

    def close(self) -> None:
        self._closed = True
        self._wakeup.set()
