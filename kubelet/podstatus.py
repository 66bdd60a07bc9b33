"""A pod's status as the kubelet reports it, built from the kubelet's view of the pod."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from draemu.api.meta import time_now
from draemu.api.types import Obj
from draemu.kubelet.runtime.base import Container

if TYPE_CHECKING:
    from draemu.kubelet.volumes import VolumeSource

# Conditions the kubelet owns; others (PodScheduled, DisruptionTarget, ...) are kept.
KUBELET_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")


@dataclass
class ContainerRecord:
    name: str
    image: str
    init: bool
    handle: Container | None = None
    restart_count: int = 0
    last_terminated: Obj | None = None
    final: Obj | None = None  # terminated and not restarting
    waiting_reason: str = "ContainerCreating"
    waiting_message: str = ""
    next_start: float = 0.0
    prober: Any = None  # kubelet/probes.py ContainerProber while the container runs

    @property
    def probed_started(self) -> bool:
        return self.prober is None or self.prober.started

    @property
    def probed_ready(self) -> bool:
        return self.prober is None or (self.prober.started and self.prober.ready)

    def state(self) -> tuple[Obj, bool]:
        """(state object, running)."""
        if self.final is not None:
            return {"terminated": self.final}, False
        if self.handle is not None and not self.handle.exit_code.done():
            return {"running": {"startedAt": self.handle.started_at}}, True
        waiting: Obj = {"reason": self.waiting_reason}
        if self.waiting_message:
            waiting["message"] = self.waiting_message
        return {"waiting": waiting}, False


@dataclass
class PodState:
    uid: str
    namespace: str
    name: str
    start_time: str = field(default_factory=time_now)
    ip: str | None = None
    stage: str = "pending"  # pending → init → running → finished
    prepared: bool = False
    init_index: int = 0
    containers: dict[str, ContainerRecord] = field(default_factory=dict)
    transitions: dict[str, tuple[str, str]] = field(default_factory=dict)
    phase_override: str | None = None
    last_posted: Obj | None = None
    volumes: dict[str, VolumeSource] | None = None  # by volume name (process runtime)
    # /etc/hosts, /etc/hostname, /etc/resolv.conf (process runtime)
    pod_files: dict[str, VolumeSource] | None = None


def terminated_state(handle: Container) -> Obj:
    state: Obj = {"exitCode": handle.exit_code.result(), "reason": handle.reason,
                  "startedAt": handle.started_at, "finishedAt": handle.finished_at,
                  "containerID": f"draemu://{handle.id}"}
    if handle.message:
        state["message"] = handle.message
    return state


def image_id(image: str) -> str:
    name = image if "/" in image else f"docker.io/library/{image}"
    digest = hashlib.sha256(image.encode()).hexdigest()
    return f"{name.split(':')[0]}@sha256:{digest}"


def container_status(rec: ContainerRecord, health: list[Obj] | None) -> Obj:
    state, running = rec.state()
    status: Obj = {"name": rec.name, "image": rec.image, "imageID": image_id(rec.image),
                   "ready": running and not rec.init and rec.probed_ready,
                   "restartCount": rec.restart_count,
                   "started": running and rec.probed_started, "state": state,
                   "lastState": {"terminated": rec.last_terminated} if rec.last_terminated
                   else {}}
    if rec.init and rec.final is not None:
        status["ready"] = rec.final.get("exitCode") == 0
    if rec.handle is not None:
        status["containerID"] = f"draemu://{rec.handle.id}"
    if health:
        status["allocatedResourcesStatus"] = health
    return status


def _condition(state: PodState, type_: str, ok: bool, reason: str | None = None,
               message: str | None = None) -> Obj:
    status = "True" if ok else "False"
    previous = state.transitions.get(type_)
    since = previous[1] if previous and previous[0] == status else time_now()
    state.transitions[type_] = (status, since)
    cond: Obj = {"type": type_, "status": status, "lastProbeTime": None,
                 "lastTransitionTime": since}
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    return cond


def build_status(pod: Obj, state: PodState, host_ip: str,
                 health: dict[str, list[Obj]]) -> Obj:
    spec = pod.get("spec") or {}
    inits = [state.containers[c["name"]] for c in spec.get("initContainers") or []]
    regular = [state.containers[c["name"]] for c in spec.get("containers") or []]
    finished = state.stage == "finished"
    not_ready = [r.name for r in regular if not (r.state()[1] and r.probed_ready)]
    incomplete = [r.name for r in inits if not (r.final and r.final.get("exitCode") == 0)]
    conditions = [c for c in (pod.get("status") or {}).get("conditions") or []
                  if c.get("type") not in KUBELET_CONDITIONS]
    conditions += [
        _condition(state, "PodReadyToStartContainers", state.prepared and not finished),
        _condition(state, "Initialized", not incomplete or state.stage in ("running",
                                                                         "finished"),
                   None if not incomplete or state.stage != "init" else
                   "ContainersNotInitialized",
                   None if not incomplete or state.stage != "init" else
                   f"containers with incomplete status: [{' '.join(incomplete)}]"),
    ]
    ready = not not_ready and state.stage == "running"
    reason = None if ready else ("PodCompleted" if finished else "ContainersNotReady")
    message = None if ready or finished else \
        f"containers with unready status: [{' '.join(not_ready)}]"
    conditions.append(_condition(state, "Ready", ready, reason, message))
    conditions.append(_condition(state, "ContainersReady", ready, reason, message))
    if state.phase_override:
        phase = state.phase_override
    elif finished:
        phase = "Succeeded" if all((r.final or {}).get("exitCode") == 0 for r in regular) \
            else "Failed"
    elif state.stage == "running":
        phase = running_phase(regular)
    else:
        phase = "Pending"
    status: Obj = {
        "phase": phase, "conditions": conditions, "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}], "startTime": state.start_time,
        "containerStatuses": [container_status(r, health.get(r.name)) for r in regular],
    }
    if inits:
        status["initContainerStatuses"] = [container_status(r, None) for r in inits]
    if state.ip:
        status["podIP"] = state.ip
        status["podIPs"] = [{"ip": state.ip}]
    qos = (pod.get("status") or {}).get("qosClass")
    status["qosClass"] = qos or qos_class(spec)
    return status


def running_phase(regular: list[ContainerRecord]) -> str:
    """The phase of a pod whose containers are being started, by the kubelet's getPhase:
    a container waiting without having run before (CreateContainerError, an image still
    pulling) keeps the pod Pending; one waiting to be restarted counts as stopped."""
    for rec in regular:
        current, running = rec.state()
        if not running and "waiting" in current and rec.last_terminated is None:
            return "Pending"
    return "Running"


def qos_class(spec: Obj) -> str:
    requests_seen = limits_seen = False
    guaranteed = True
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        requests_seen |= bool(req)
        limits_seen |= bool(lim)
        for name in ("cpu", "memory"):
            if name not in lim or req.get(name, lim.get(name)) != lim.get(name):
                guaranteed = False
    if not requests_seen and not limits_seen:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"
