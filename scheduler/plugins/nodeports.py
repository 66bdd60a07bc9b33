"""NodePorts: a pod's host ports (containers and restartable init containers) must be
free on the node: a (protocol, hostPort) conflicts when either side binds 0.0.0.0 (the
default hostIP) or both bind the same address, as upstream's HostPortInfo."""

from __future__ import annotations

from collections.abc import Iterable

from draemu.scheduler.framework import (
    SUCCESS,
    ClusterEvent,
    Code,
    CycleState,
    FilterEquivalence,
    PreFilterPlugin,
    PreFilterResult,
    QueueingHintPlugin,
    Status,
)
from draemu.scheduler.framework.handle import Handle
from draemu.scheduler.nodeinfo import NodeInfo

REASON = "node(s) didn't have free ports for the requested pod ports"
ANY_IP = "0.0.0.0"


def host_ports(pod: dict) -> list[tuple[str, str, int]]:
    """(hostIP, protocol, hostPort) of every port with a hostPort."""
    spec = pod.get("spec") or {}
    containers = list(spec.get("containers") or [])
    containers += [c for c in spec.get("initContainers") or []
                   if c.get("restartPolicy") == "Always"]
    ports = []
    for c in containers:
        for p in c.get("ports") or []:
            port = int(p.get("hostPort") or 0)
            if port > 0:
                ports.append((p.get("hostIP") or ANY_IP, p.get("protocol") or "TCP", port))
    return ports


def _conflict(a: tuple[str, str, int], b: tuple[str, str, int]) -> bool:
    return a[1:] == b[1:] and (a[0] == b[0] or ANY_IP in (a[0], b[0]))


class NodePorts(QueueingHintPlugin, PreFilterPlugin, FilterEquivalence):
    name = "NodePorts"

    def events(self) -> Iterable[ClusterEvent]:
        return [ClusterEvent("Pod", "Delete"), ClusterEvent("Node", "Add")]

    def queueing_hint(self, event: ClusterEvent, pod: dict, old: dict | None,
                      new: dict | None) -> bool:
        """Upstream's isSchedulableAfterPodDeleted: a placed pod deleted whose host ports
        conflict with the waiting pod's (a node added may always help)."""
        if event.resource != "Pod" or old is None or new is not None:
            return True
        if not (old.get("spec") or {}).get("nodeName"):
            return False
        wanted, freed = host_ports(pod), host_ports(old)
        return any(_conflict(w, f) for w in wanted for f in freed)

    def pre_filter(self, state: CycleState, pod: dict) -> tuple[Status, PreFilterResult | None]:
        wanted = host_ports(pod)
        if not wanted:
            return Status(Code.SKIP), None
        state.write(self.name, wanted)
        return SUCCESS, None

    def filter_equivalence(self, state: CycleState, pod: dict) -> tuple[tuple[()], None]:
        return (), None  # the pod's host ports and those of the node's pods

    def filter(self, state: CycleState, pod: dict, node: NodeInfo) -> Status:
        wanted = state.read(self.name)
        if wanted is None:
            wanted = host_ports(pod)
        if not wanted:
            return SUCCESS
        for other, _req in node.pods.values():
            used = host_ports(other)
            if any(_conflict(w, u) for w in wanted for u in used):
                return Status.unschedulable(REASON)
        return SUCCESS


def new(_args: None, _handle: Handle) -> NodePorts:
    return NodePorts()
