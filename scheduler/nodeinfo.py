"""What the scheduler knows about one node: the Node object and the pods assigned to it.

Requests are summed the way kube-scheduler does (`computePodResourceRequest`): the
regular containers plus restartable init containers (sidecars), at least the largest
one-shot init container (with the sidecars started before it), plus pod overhead;
pod-level `spec.resources.requests` win for cpu and memory when set.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from functools import lru_cache
from math import ceil

from draemu.api.quantity import QuantityError, parse_quantity

CPU, MEMORY, PODS, EPHEMERAL = "cpu", "memory", "pods", "ephemeral-storage"


def _value(text: str | float, milli: bool = False) -> int:
    try:
        return _cached_value(text, milli)
    except TypeError:  # not hashable, so not a quantity either
        return 0


# The same few quantity strings ("100m", "1Gi") come back for every pod of a template and
# every node, and parsing them exactly (Fractions) is slow.
@lru_cache(maxsize=4096, typed=True)
def _cached_value(text: str | float, milli: bool) -> int:
    try:
        q = parse_quantity(text)
    except QuantityError:
        return 0
    return ceil(q * 1000) if milli else ceil(q)


@dataclass
class Resource:
    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pods: int = 0
    scalars: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_list(cls, rl: dict | None) -> Resource:
        r = cls()
        r.add_list(rl)
        return r

    def add_list(self, rl: dict | None) -> None:
        for name, q in (rl or {}).items():
            if name == CPU:
                self.milli_cpu += _value(q, milli=True)
            elif name == MEMORY:
                self.memory += _value(q)
            elif name == PODS:
                self.allowed_pods += _value(q)
            elif name == EPHEMERAL:
                self.ephemeral_storage += _value(q)
            else:
                self.scalars[name] = self.scalars.get(name, 0) + _value(q)

    def add(self, other: Resource, sign: int = 1) -> None:
        self.milli_cpu += sign * other.milli_cpu
        self.memory += sign * other.memory
        self.ephemeral_storage += sign * other.ephemeral_storage
        for name, v in other.scalars.items():
            self.scalars[name] = self.scalars.get(name, 0) + sign * v

    def set_max(self, other: Resource) -> None:
        self.milli_cpu = max(self.milli_cpu, other.milli_cpu)
        self.memory = max(self.memory, other.memory)
        self.ephemeral_storage = max(self.ephemeral_storage, other.ephemeral_storage)
        for name, v in other.scalars.items():
            self.scalars[name] = max(self.scalars.get(name, 0), v)


def _requests(container: dict) -> dict:
    return (container.get("resources") or {}).get("requests") or {}


# What scoring counts for a container that requests no cpu / memory (upstream's
# DefaultMilliCPURequest and DefaultMemoryRequest, "non-missing container requests").
DEFAULT_MILLI_CPU = 100
DEFAULT_MEMORY = 200 * 1024 * 1024


def _non_missing(container: dict) -> dict:
    req = dict(_requests(container))
    req.setdefault(CPU, "100m")
    req.setdefault(MEMORY, str(DEFAULT_MEMORY))
    return req


def pod_requests(pod: dict, non_zero: bool = False) -> Resource:
    """The pod's effective requests; `non_zero`: with the scoring defaults for containers
    that request no cpu or memory (pod-level requests still win), as NonZeroRequested."""
    spec = pod.get("spec") or {}
    of = _non_missing if non_zero else _requests
    total = Resource()
    for c in spec.get("containers") or []:
        total.add_list(of(c))
    sidecars = Resource()
    init_max = Resource()
    for c in spec.get("initContainers") or []:
        req = Resource.from_list(of(c))
        if c.get("restartPolicy") == "Always":
            sidecars.add(req)
            total.add(req)
            init_max.set_max(sidecars)
        else:
            with_sidecars = Resource()
            with_sidecars.add(req)
            with_sidecars.add(sidecars)
            init_max.set_max(with_sidecars)
    total.set_max(init_max)
    pod_level = _requests(spec)
    if pod_level.get(CPU) is not None:
        total.milli_cpu = _value(pod_level[CPU], milli=True)
    if pod_level.get(MEMORY) is not None:
        total.memory = _value(pod_level[MEMORY])
    total.add_list(spec.get("overhead"))
    return total


# Generations are unique across NodeInfo objects, so that a node deleted and added again
# never shows a generation an earlier answer was kept for.
_generations = itertools.count(1)


class NodeInfo:
    """A node plus the pods bound (or assumed) to it, with their summed requests.
    `generation` moves on every change (node object, pods): what Filter and Score
    answered for a node at one generation holds while it stays (see framework/runtime.py)."""

    __slots__ = (
        "affinity_pods",
        "allocatable",
        "anti_affinity_pods",
        "generation",
        "labels",
        "name",
        "node",
        "non_zero_requested",
        "pods",
        "requested",
        "taints",
        "unschedulable",
    )

    def __init__(self, node: dict) -> None:
        self.pods: dict[str, tuple[dict, Resource]] = {}
        # Upstream's PodsWithAffinity / PodsWithRequiredAntiAffinity: the pods that
        # InterPodAffinity must look at even when the incoming pod has no terms.
        self.affinity_pods: dict[str, dict] = {}
        self.anti_affinity_pods: dict[str, dict] = {}
        self.requested = Resource()
        self.non_zero_requested = Resource()  # cpu and memory with scoring defaults
        self.set_node(node)

    def set_node(self, node: dict) -> None:
        self.generation = next(_generations)
        self.node = node
        meta = node.get("metadata") or {}
        self.name: str = meta.get("name", "")
        self.labels: dict[str, str] = meta.get("labels") or {}
        spec = node.get("spec") or {}
        self.taints: list[dict] = spec.get("taints") or []
        self.unschedulable: bool = bool(spec.get("unschedulable"))
        self.allocatable = Resource.from_list((node.get("status") or {}).get("allocatable"))

    def touch(self) -> None:
        self.generation = next(_generations)

    def add_pod(self, pod: dict) -> None:
        uid = pod["metadata"]["uid"]
        if uid in self.pods:
            self.remove_pod(uid)
        self.generation = next(_generations)
        req = pod_requests(pod)
        self.pods[uid] = (pod, req)
        self.requested.add(req)
        self.non_zero_requested.add(_cpu_memory(pod_requests(pod, non_zero=True)))
        affinity = (pod.get("spec") or {}).get("affinity") or {}
        if affinity.get("podAffinity") or affinity.get("podAntiAffinity"):
            self.affinity_pods[uid] = pod
        if ((affinity.get("podAntiAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution")):
            self.anti_affinity_pods[uid] = pod

    def remove_pod(self, uid: str) -> None:
        self.generation = next(_generations)
        entry = self.pods.pop(uid, None)
        self.affinity_pods.pop(uid, None)
        self.anti_affinity_pods.pop(uid, None)
        if entry is not None:
            self.requested.add(entry[1], sign=-1)
            self.non_zero_requested.add(
                _cpu_memory(pod_requests(entry[0], non_zero=True)), sign=-1)


def _cpu_memory(r: Resource) -> Resource:
    return Resource(milli_cpu=r.milli_cpu, memory=r.memory)
