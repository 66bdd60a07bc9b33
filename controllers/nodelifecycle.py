"""The node lifecycle controller and its NoExecute taint manager.

A node whose kubelet stops renewing its Lease (in `kube-node-lease`) for longer than
the grace period gets its conditions set to Unknown and the
`node.kubernetes.io/unreachable` taints; a node that reports Ready=False gets the
`node.kubernetes.io/not-ready` taints; both go away when the node is Ready again.
Pods on a node with NoExecute taints they do not tolerate are deleted, at once or after
their `tolerationSeconds`. Pods bound to a node that no longer exists are deleted.
"""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

from draemu.api.meta import (
    format_time,
    get_condition,
    meta,
    name_of,
    namespace_of,
    now,
    parse_time,
    pod_is_terminal,
    toleration_matches,
)
from draemu.api.types import Obj
from draemu.client import ApiError, key_of
from draemu.controllers.base import Controller

UNREACHABLE = "node.kubernetes.io/unreachable"
NOT_READY = "node.kubernetes.io/not-ready"
_MANAGED = (UNREACHABLE, NOT_READY)


def _node_name(pod: Obj) -> str | None:
    return (pod.get("spec") or {}).get("nodeName") or None


def _taint_key(t: Obj) -> tuple[str, str]:
    return t.get("key", ""), t.get("effect", "")


def eviction_delay(pod: Obj, taints: list[Obj]) -> float | None:
    """Seconds until the pod must go because of NoExecute taints (0: now), or None if
    it tolerates them all forever."""
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    delay: float | None = None
    for taint in taints:
        if taint.get("effect") != "NoExecute":
            continue
        matching = [t for t in tolerations if toleration_matches(t, taint)]
        if not matching:
            return 0.0
        seconds = [t["tolerationSeconds"] for t in matching
                   if t.get("tolerationSeconds") is not None]
        if not seconds:
            continue
        added = parse_time(taint.get("timeAdded")) or now()
        remaining = (added + timedelta(seconds=max(0, min(seconds))) - now()).total_seconds()
        delay = remaining if delay is None else min(delay, remaining)
    return None if delay is None else max(0.0, delay)


class NodeLifecycleController(Controller):
    name = "node-lifecycle"
    resync_seconds = 5.0

    def setup(self) -> None:
        self.grace = self.ctx.setting("node_monitor_grace_period", 40.0)
        self.orphan_grace = self.ctx.setting("orphaned_pod_grace_period", 20.0)
        self.resync_seconds = self.ctx.setting("node_monitor_period", 5.0)
        inf = self.ctx.informers
        self.nodes = inf.informer("v1", "nodes")
        self.leases = inf.informer("coordination.k8s.io/v1", "leases",
                                   namespace="kube-node-lease")
        self.pods = inf.informer("v1", "pods")
        # node name -> keys of the pods bound to it: a node's reconcile looks at its own
        # pods, not at every pod of the cluster (at 5,000 nodes and 10,000 pods, that
        # scan was half of the controllers' process).
        self._on_node: dict[str, set[str]] = {}
        self.nodes.add_handler(on_add=self.enqueue, on_update=lambda _o, n: self.enqueue(n),
                               on_delete=self._node_deleted)
        self.pods.add_handler(on_add=lambda p: self._pod_changed(None, p),
                              on_update=self._pod_changed, on_delete=self._pod_deleted)

    def primary(self) -> Any:
        return self.nodes

    def _pod_changed(self, old: Obj | None, pod: Obj) -> None:
        node = _node_name(pod)
        before = _node_name(old) if old is not None else None
        if before != node:
            key = key_of(pod)
            if before:
                self._unindex(before, key)
            if node:
                self._on_node.setdefault(node, set()).add(key)
        if node:
            self.queue.add(node)

    def _pod_deleted(self, pod: Obj) -> None:
        node = _node_name(pod)
        if node:
            self._unindex(node, key_of(pod))

    def _unindex(self, node: str, key: str) -> None:
        keys = self._on_node.get(node)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._on_node[node]

    def _pods_on(self, node_name: str) -> list[Obj]:
        pods = (self.pods.get(k) for k in self._on_node.get(node_name, ()))
        return [p for p in pods if p is not None
                and (p.get("spec") or {}).get("nodeName") == node_name]

    def _node_deleted(self, node: Obj) -> None:
        self.queue.add(name_of(node))

    async def reconcile(self, key: str) -> float | None:
        node = self.nodes.get(key)
        if node is None:
            return await self._delete_orphaned_pods(key)
        node = await self._monitor_health(node)
        taints = (node.get("spec") or {}).get("taints") or []
        if not any(t.get("effect") == "NoExecute" for t in taints):
            return None if not self._is_unhealthy(node) else self.resync_seconds
        next_check: float | None = None
        for pod in self._pods_on(key):
            if pod_is_terminal(pod):
                continue
            if meta(pod).get("deletionTimestamp"):
                continue
            delay = eviction_delay(pod, taints)
            if delay is None:
                continue
            if delay <= 0:
                await self._evict(pod)
            else:
                next_check = delay if next_check is None else min(next_check, delay)
        return next_check

    def _is_unhealthy(self, node: Obj) -> bool:
        ready = get_condition(node, "Ready")
        return not ready or ready.get("status") != "True"

    def _last_heartbeat(self, node: Obj) -> Any:
        lease = self.leases.get(f"kube-node-lease/{name_of(node)}")
        stamps = []
        if lease is not None:
            stamps.append(parse_time((lease.get("spec") or {}).get("renewTime")))
        ready = get_condition(node, "Ready")
        if ready:
            stamps.append(parse_time(ready.get("lastHeartbeatTime")))
        stamps.append(parse_time(meta(node).get("creationTimestamp")))
        return max((s for s in stamps if s is not None), default=None)

    async def _monitor_health(self, node: Obj) -> Obj:
        heartbeat = self._last_heartbeat(node)
        stale = heartbeat is not None and (now() - heartbeat).total_seconds() > self.grace
        ready = get_condition(node, "Ready")
        if stale and (ready is None or ready.get("status") != "Unknown"):
            node = await self._mark_unknown(node)
            ready = get_condition(node, "Ready")
        status = (ready or {}).get("status")
        wanted: list[str] = []
        if status == "Unknown":
            wanted = [UNREACHABLE]
        elif status == "False":
            wanted = [NOT_READY]
        return await self._set_taints(node, wanted)

    async def _mark_unknown(self, node: Obj) -> Obj:
        fresh = copy.deepcopy(node)
        stamp = format_time(now())
        for cond in (fresh.get("status") or {}).get("conditions") or []:
            if cond.get("status") != "Unknown":
                cond["lastTransitionTime"] = stamp
            cond.update({"status": "Unknown", "reason": "NodeStatusUnknown",
                         "message": "Kubelet stopped posting node status."})
        try:
            updated = await self.client.update("v1", "nodes", fresh, subresource="status")
        except ApiError as e:
            if e.code == 404:
                return node
            raise
        self.log.info("node stopped posting status", node=name_of(node))
        await self.recorder.event(updated, "Normal", "NodeNotReady",
                                  f"Node {name_of(node)} status is now: NodeNotReady")
        return updated

    async def _set_taints(self, node: Obj, wanted_keys: list[str]) -> Obj:
        taints = (node.get("spec") or {}).get("taints") or []
        keep = [t for t in taints if t.get("key") not in _MANAGED or t.get("key") in wanted_keys]
        have = {_taint_key(t) for t in keep}
        stamp = format_time(now())
        for key in wanted_keys:
            if (key, "NoSchedule") not in have:
                keep.append({"key": key, "effect": "NoSchedule"})
            if (key, "NoExecute") not in have:
                keep.append({"key": key, "effect": "NoExecute", "timeAdded": stamp})
        if keep == taints:
            return node
        fresh = copy.deepcopy(node)
        fresh.setdefault("spec", {})["taints"] = keep
        if not keep:
            del fresh["spec"]["taints"]
        try:
            return await self.client.update("v1", "nodes", fresh)
        except ApiError as e:
            if e.code == 404:
                return node
            raise

    async def _evict(self, pod: Obj) -> None:
        try:
            await self.client.delete("v1", "pods", name_of(pod), namespace_of(pod),
                                     preconditions={"uid": meta(pod).get("uid", "")})
        except ApiError as e:
            if e.code not in (404, 409):
                raise
            return
        self.log.info("evicted pod for NoExecute taint", pod=key_of(pod))
        await self.recorder.event(pod, "Normal", "TaintManagerEviction",
                                  f"Marking for deletion Pod {key_of(pod)}")

    async def _delete_orphaned_pods(self, node_name: str) -> float | None:
        """Pods bound to a node that is gone are force-deleted, as the pod garbage
        collector does, after a short grace in case the node comes back."""
        orphans = self._pods_on(node_name)
        if not orphans:
            return None
        try:  # the cache may not know a node that was just registered
            await self.client.get("v1", "nodes", node_name)
            return None
        except ApiError as e:
            if e.code != 404:
                raise
        oldest_ok = now() - timedelta(seconds=self.orphan_grace)
        pending = False
        for pod in orphans:
            seen = parse_time(meta(pod).get("deletionTimestamp")) or parse_time(
                meta(pod).get("creationTimestamp"))
            if seen is not None and seen > oldest_ok and not pod_is_terminal(pod):
                pending = True
                continue
            try:
                await self.client.delete("v1", "pods", name_of(pod), namespace_of(pod),
                                         grace_period_seconds=0)
            except ApiError as e:
                if e.code != 404:
                    raise
        return self.orphan_grace if pending else None
