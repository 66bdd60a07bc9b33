"""What the server derives from a pod: its QoS class, and the cells `kubectl get pods`
prints (READY, STATUS, RESTARTS), computed as the upstream server printer does."""

from __future__ import annotations

from datetime import datetime
from fractions import Fraction

from draemu.api.meta import format_time
from draemu.api.quantity import QuantityError
from draemu.api.types import Obj
from draemu.apiserver.registry.core.common import parse_quantity, parse_time, since

_QOS_RESOURCES = ("cpu", "memory")


def _sum(resources: Obj, into: dict[str, Fraction]) -> set[str]:
    """Add the positive cpu/memory quantities of `resources` to `into`; return the
    names that were present."""
    found: set[str] = set()
    for name, raw in (resources or {}).items():
        if name not in _QOS_RESOURCES:
            continue
        try:
            value = parse_quantity(raw).value
        except (QuantityError, TypeError):
            continue
        if value > 0:
            into[name] = into.get(name, Fraction(0)) + value
            found.add(name)
    return found


def qos_class(spec: Obj) -> str:
    """Guaranteed, Burstable or BestEffort, from cpu and memory requests and limits
    (pod-level resources when the pod sets them, else every container's)."""
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    pod_resources = spec.get("resources") or {}
    if pod_resources.get("requests") or pod_resources.get("limits"):
        sources = [pod_resources]
    else:
        sources = [c.get("resources") or {} for c in
                   (spec.get("containers") or []) + (spec.get("initContainers") or [])]
    for resources in sources:
        _sum(resources.get("requests"), requests)
        if _sum(resources.get("limits"), limits) != set(_QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and requests.keys() == limits.keys() and all(
            requests[k] == limits[k] for k in requests):
        return "Guaranteed"
    return "Burstable"


def _terminated_reason(state: Obj, prefix: str) -> str:
    if state.get("reason"):
        return prefix + state["reason"]
    if state.get("signal"):
        return f"{prefix}Signal:{state['signal']}"
    return f"{prefix}ExitCode:{state.get('exitCode', 0)}"


def _has_condition(status: Obj, kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in status.get("conditions") or [])


class _Restarts:
    def __init__(self) -> None:
        self.count = 0
        self.last: datetime | None = None

    def add(self, container_status: Obj) -> None:
        self.count += int(container_status.get("restartCount") or 0)
        finished = parse_time(((container_status.get("lastState") or {}).get("terminated")
                               or {}).get("finishedAt"))
        if finished and (self.last is None or finished > self.last):
            self.last = finished


def pod_row_cells(pod: Obj, now: datetime | None = None) -> tuple[str, str, str]:
    """(Ready, Status, Restarts) cells of a pod."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    phase = status.get("phase") or ""
    reason = status.get("reason") or phase
    if any(c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated"
           for c in status.get("conditions") or []):
        reason = "SchedulingGated"
    init_specs = {c.get("name"): c for c in spec.get("initContainers") or []}
    total = len(spec.get("containers") or []) + sum(
        1 for c in init_specs.values() if c.get("restartPolicy") == "Always")
    ready = 0
    all_restarts, sidecar_restarts = _Restarts(), _Restarts()
    initializing = False
    init_statuses = status.get("initContainerStatuses") or []
    for i, cs in enumerate(init_statuses):
        all_restarts.add(cs)
        sidecar = (init_specs.get(cs.get("name")) or {}).get("restartPolicy") == "Always"
        if sidecar:
            sidecar_restarts.add(cs)
        state = cs.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if terminated is not None and terminated.get("exitCode", 0) == 0:
            continue
        if sidecar and cs.get("started"):
            ready += 1 if cs.get("ready") else 0
            continue
        if terminated is not None:
            reason = _terminated_reason(terminated, "Init:")
        elif waiting and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break
    restarts = all_restarts
    if not initializing or _has_condition(status, "Initialized"):
        restarts = sidecar_restarts
        has_running = False
        for cs in reversed(status.get("containerStatuses") or []):
            restarts.add(cs)
            state = cs.get("state") or {}
            waiting, terminated = state.get("waiting") or {}, state.get("terminated")
            if waiting.get("reason"):
                reason = waiting["reason"]
            elif terminated is not None:
                reason = _terminated_reason(terminated, "")
            elif cs.get("ready") and state.get("running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            reason = "Running" if _has_condition(status, "Ready") else "NotReady"
    deleting = bool((pod.get("metadata") or {}).get("deletionTimestamp"))
    if deleting and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif deleting and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"
    restarts_cell = str(restarts.count)
    if restarts.count and restarts.last is not None:
        last = format_time(restarts.last)
        restarts_cell = f"{restarts.count} ({since(last, now)} ago)"
    return f"{ready}/{total}", reason, restarts_cell


def readiness_gates_cell(pod: Obj) -> str:
    gates = (pod.get("spec") or {}).get("readinessGates") or []
    if not gates:
        return "<none>"
    conditions = {c.get("type"): c.get("status")
                  for c in (pod.get("status") or {}).get("conditions") or []}
    true = sum(1 for g in gates if conditions.get(g.get("conditionType")) == "True")
    return f"{true}/{len(gates)}"
