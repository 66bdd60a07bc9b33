"""The scheduler's informer handlers (upstream's eventhandlers.go): pods, nodes,
namespaces and the DRA objects feed the node cache, the DRA manager and the scheduling
queue, and become the cluster events that requeue pods waiting for them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from draemu.client import key_of
from draemu.scheduler.cache import Cache
from draemu.scheduler.dra.manager import DRAManager
from draemu.scheduler.framework import ClusterEvent
from draemu.scheduler.informers import SchedulerInformers
from draemu.scheduler.queue import SchedulingQueue

RESOURCE_V1 = "resource.k8s.io/v1"


class EventHandlers:
    def __init__(self, cache: Cache, dra: DRAManager, queue: SchedulingQueue, *,
                 responsible: Callable[[dict], bool], gate: Callable[[dict], str],
                 forget_gate: Callable[[str], None]) -> None:
        """responsible(pod): whether a pending pod is ours to schedule; gate(pod): the
        PreEnqueue plugin holding it back ("" if none); forget_gate(key): the pod left
        the queue, its PreEnqueue report is moot."""
        self._cache = cache
        self._dra = dra
        self._queue = queue
        self._responsible = responsible
        self._gate = gate
        self._forget_gate = forget_gate
        # Pods bound by us that the pod informer has not shown bound yet: a late event
        # about them must not queue them again.
        self._bound_unseen: set[str] = set()

    def register(self, informers: SchedulerInformers, *, taint_rules: bool) -> None:
        """Adds the handlers to the informers (DeviceTaintRules' only if `taint_rules`)."""
        informers.informer("v1", "pods").add_handler(self.on_pod_add, self.on_pod_update,
                                                    self.on_pod_delete)
        informers.informer("v1", "nodes").add_handler(
            self.on_node, lambda old, new: self.on_node(new, "Update", old),
            self.on_node_delete)
        informers.informer("v1", "namespaces").add_handler(
            lambda _ns: self.event("Namespace", "Add"),
            lambda _old, _ns: self.event("Namespace", "Update"))
        informers.informer(RESOURCE_V1, "resourceclaims").add_handler(
            lambda c: self.on_claim(None, c), self.on_claim, self.on_claim_delete)
        dra = self._dra
        kinds: list[tuple[str, str, Any, Any]] = [
            ("deviceclasses", "DeviceClass", dra.set_class, dra.remove_class),
            ("resourceslices", "ResourceSlice", dra.set_slice, dra.remove_slice)]
        if taint_rules:
            kinds.append(("devicetaintrules", "DeviceTaintRule", dra.set_taint_rule,
                          dra.remove_taint_rule))
        for resource, kind, setter, remover in kinds:
            informers.informer(RESOURCE_V1, resource).add_handler(
                *self._cluster_scoped(kind, setter, remover))

    def bound(self, pod: dict) -> None:
        """We bound the pod; the informer may still show it pending for a while."""
        self._bound_unseen.add(pod["metadata"]["uid"])

    def event(self, resource: str, action: str, old: Any = None, new: Any = None) -> None:
        self._queue.on_event(ClusterEvent(resource, action), old=old, new=new)

    # --- pods --------------------------------------------------------------------------

    def on_pod_add(self, pod: dict) -> None:
        if (pod.get("spec") or {}).get("nodeName"):
            self._bound_unseen.discard(pod["metadata"]["uid"])
            if not _terminal(pod):
                self._cache.add_pod(pod)
                self.event("Pod", "Add", new=pod)  # spread and affinity count placed pods
        elif self._pending_and_ours(pod):
            self._dra.track_pod(pod)
            self._queue.add(key_of(pod), pod, gated_by=self._gate(pod))

    def on_pod_update(self, old: dict, pod: dict) -> None:
        key = key_of(pod)
        self._dra.untrack_pod(old)
        if (pod.get("spec") or {}).get("nodeName"):
            self._queue.delete(key)
            self._bound_unseen.discard(pod["metadata"]["uid"])
            self._placed_pod_updated(old, pod)
        elif self._pending_and_ours(pod):
            self._dra.track_pod(pod)
            self._queue.update(key, pod, gated_by=self._gate(pod),
                               requeue=_without_volatile(old) != _without_volatile(pod))
        else:
            self._queue.delete(key)
            self._forget_gate(key)

    def _placed_pod_updated(self, old: dict, pod: dict) -> None:
        if _terminal(pod):
            self._cache.remove_pod(pod)
            if not _terminal(old):
                self.event("Pod", "Delete", old=pod)  # its resources are free again
            return
        self._cache.add_pod(pod)
        if not (old.get("spec") or {}).get("nodeName"):
            self.event("Pod", "Add", new=pod)  # placed: as a placed pod added
        elif (old.get("metadata") or {}).get("labels") != \
                (pod.get("metadata") or {}).get("labels"):
            self.event("Pod", "Update", old=old, new=pod)

    def on_pod_delete(self, pod: dict) -> None:
        self._dra.untrack_pod(pod)
        self._queue.delete(key_of(pod))
        self._forget_gate(key_of(pod))
        self._bound_unseen.discard(pod["metadata"]["uid"])
        if (pod.get("spec") or {}).get("nodeName"):
            self._cache.remove_pod(pod)
            self.event("Pod", "Delete", old=pod)

    def _pending_and_ours(self, pod: dict) -> bool:
        return self._responsible(pod) and pod["metadata"]["uid"] not in self._bound_unseen

    # --- nodes -------------------------------------------------------------------------

    def on_node(self, node: dict, action: str = "Add", old: dict | None = None) -> None:
        self._cache.set_node(node)
        self._dra.node_changed(node["metadata"]["name"])
        if old is not None and not _scheduling_properties_changed(old, node):
            return  # a heartbeat, say: upstream queues no event for it either
        self.event("Node", action, old=old, new=node)

    def on_node_delete(self, node: dict) -> None:
        self._cache.remove_node(node["metadata"]["name"])
        self.event("Node", "Delete", old=node)

    # --- DRA ---------------------------------------------------------------------------

    def on_claim(self, old: dict | None, claim: dict) -> None:
        self._dra.set_claim(claim)
        self._claim_event(old, claim, "Add" if old is None else "Update")

    def on_claim_delete(self, claim: dict) -> None:
        self._dra.remove_claim(claim)
        self._claim_event(claim, None, "Delete")

    def _claim_event(self, old: dict | None, claim: dict | None, action: str) -> None:
        """Upstream's queueing hint for claims: freed devices may help any pod; otherwise
        only the pods that use the claim (named in their spec or status, or owning it)."""
        event = ClusterEvent("ResourceClaim", action)
        was = ((old or {}).get("status") or {}).get("allocation")
        now = ((claim or {}).get("status") or {}).get("allocation")
        if was and not now:
            self._queue.on_event(event)
            return
        obj = claim or old or {}
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace", "")
        users = self._dra.pods_using(ns, meta.get("name", ""))
        users |= {f"{ns}/{o.get('name')}" for o in meta.get("ownerReferences") or []
                  if o.get("kind") == "Pod"}
        self._queue.on_event(event, only=users)

    def _cluster_scoped(self, kind: str, setter: Callable[[dict], None],
                        remover: Callable[[str], None]
                        ) -> tuple[Callable[..., None], Callable[..., None], Callable[..., None]]:
        """Handlers that feed a cluster-scoped DRA kind to the manager, then queue its
        event."""
        def on_add(obj: dict) -> None:
            setter(obj)
            self.event(kind, "Add")

        def on_update(_old: dict, obj: dict) -> None:
            setter(obj)
            self.event(kind, "Update")

        def on_delete(obj: dict) -> None:
            remover(obj["metadata"]["name"])
            self.event(kind, "Delete")

        return on_add, on_update, on_delete


def _terminal(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _without_volatile(pod: dict) -> tuple[Any, ...]:
    """What of a pending pod can change its fate (not our own condition writes)."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    return (meta.get("labels"), meta.get("annotations"), pod.get("spec"),
            status.get("resourceClaimStatuses"), status.get("extendedResourceClaimStatus"))


def _scheduling_properties_changed(old: dict, new: dict) -> bool:
    """Upstream's nodeSchedulingPropertiesChange: whether a node update changed what
    scheduling looks at (cordon, allocatable, labels, taints, conditions' types and
    statuses, annotations, declared features), not just heartbeats or images."""
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    old_status, new_status = old.get("status") or {}, new.get("status") or {}
    return bool(old_spec.get("unschedulable")) != bool(new_spec.get("unschedulable")) \
        or old_status.get("allocatable") != new_status.get("allocatable") \
        or (old_meta.get("labels") or {}) != (new_meta.get("labels") or {}) \
        or (old_spec.get("taints") or []) != (new_spec.get("taints") or []) \
        or _condition_states(old_status) != _condition_states(new_status) \
        or (old_meta.get("annotations") or {}) != (new_meta.get("annotations") or {}) \
        or old_status.get("declaredFeatures") != new_status.get("declaredFeatures")


def _condition_states(status: dict) -> dict[str, str]:
    return {c.get("type", ""): c.get("status", "") for c in status.get("conditions") or []}
