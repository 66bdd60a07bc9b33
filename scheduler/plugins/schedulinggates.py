"""SchedulingGates: a pod with `spec.schedulingGates` is not tried until they are removed.

The apiserver marks such a pod `PodScheduled=False` with reason `SchedulingGated` when it
is created; the scheduler writes nothing about it (no event, no condition), as upstream.
"""

from __future__ import annotations

from collections.abc import Iterable

from draemu.scheduler.framework import SUCCESS, ClusterEvent, PreEnqueuePlugin, Status
from draemu.scheduler.framework.handle import Handle

NAME = "SchedulingGates"


class SchedulingGates(PreEnqueuePlugin):
    name = NAME

    def events(self) -> Iterable[ClusterEvent]:
        return [ClusterEvent("Pod", "Update")]  # the gates can only be removed

    def pre_enqueue(self, pod: dict) -> Status:
        gates = (pod.get("spec") or {}).get("schedulingGates")
        if not gates:
            return SUCCESS
        # Go's %v of a []string: "[a b]".
        names = " ".join(g.get("name", "") for g in gates)
        return Status.unschedulable(f"waiting for scheduling gates: [{names}]",
                                    resolvable=False)


def new(_args: None, _handle: Handle) -> SchedulingGates:
    return SchedulingGates()
