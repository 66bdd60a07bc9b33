"""The Deployment controller: one ReplicaSet per pod template (named by the template's
hash), rolled out with the RollingUpdate or Recreate strategy, with the status and
conditions `kubectl rollout status` reads."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

from draemu.api.meta import (
    controller_of,
    meta,
    name_of,
    namespace_of,
    owner_reference,
    set_condition,
    uid_of,
)
from draemu.api.types import Obj
from draemu.client import ApiError, key_of
from draemu.controllers.base import Controller
from draemu.controllers.replicaset import matches

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
_SAFE = "bcdfghjklmnpqrstvwxz2456789"


def template_hash(template: Obj, collision_count: int = 0) -> str:
    """FNV-1a (32 bit) of the template, written with the alphabet Kubernetes uses for
    generated names (no vowels, so no words)."""
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    if collision_count:
        data += str(collision_count).encode()
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return "".join(_SAFE[ord(c) % len(_SAFE)] for c in str(h))


def resolve(value: Any, total: int, round_up: bool) -> int:
    if value is None:
        value = "25%"
    if isinstance(value, str) and value.endswith("%"):
        scaled = int(value[:-1]) * total / 100
        return math.ceil(scaled) if round_up else math.floor(scaled)
    return int(value)


def _without_hash(template: Obj) -> Obj:
    t = copy.deepcopy(template)
    labels = (t.get("metadata") or {}).get("labels") or {}
    labels.pop(HASH_LABEL, None)
    return t


def _replicas(rs: Obj) -> int:
    return int((rs.get("spec") or {}).get("replicas", 0))


def _status(rs: Obj, field: str) -> int:
    return int((rs.get("status") or {}).get(field, 0))


class DeploymentController(Controller):
    name = "deployment"
    workers = 2

    def setup(self) -> None:
        inf = self.ctx.informers
        self.deployments = inf.informer("apps/v1", "deployments")
        self.replicasets = inf.informer("apps/v1", "replicasets")
        self.pods = inf.informer("v1", "pods")
        self.handlers_enqueue(self.deployments)
        self.replicasets.add_handler(on_add=self._rs_changed,
                                     on_update=lambda _o, n: self._rs_changed(n),
                                     on_delete=self._rs_changed)

    def primary(self) -> Any:
        return self.deployments

    def _rs_changed(self, rs: Obj) -> None:
        ref = controller_of(rs)
        if ref and ref.get("kind") == "Deployment":
            self.queue.add(f"{namespace_of(rs)}/{ref.get('name')}")

    def _owned(self, d: Obj) -> list[Obj]:
        return [rs for rs in self.replicasets.list() if namespace_of(rs) == namespace_of(d)
                and (controller_of(rs) or {}).get("uid") == uid_of(d)]

    async def reconcile(self, key: str) -> float | None:
        d = self.deployments.get(key)
        if d is None or meta(d).get("deletionTimestamp"):
            return None
        spec = d.get("spec") or {}
        owned = await self._adopt(d, self._owned(d))
        template = spec.get("template") or {}
        new = next((rs for rs in owned if _without_hash(
            (rs.get("spec") or {}).get("template") or {}) == template), None)
        olds = [rs for rs in owned if rs is not new]
        revision = max([int((meta(rs).get("annotations") or {}).get(REVISION, "0") or 0)
                        for rs in owned] or [0])
        if new is None:
            new = await self._create_rs(d, revision + 1, olds)
        elif int((meta(new).get("annotations") or {}).get(REVISION, "0") or 0) < revision:
            new = await self._annotate(new, revision + 1)  # rolled back to an older template
        await self._sync_revision(d, new)
        wanted = int(spec.get("replicas", 1))
        if not spec.get("paused"):
            strategy = (spec.get("strategy") or {}).get("type", "RollingUpdate")
            if strategy == "Recreate":
                await self._recreate(d, new, olds, wanted)
            else:
                await self._rolling(d, new, olds, wanted)
            await self._cleanup(d, olds)
        await self._update_status(d, new, olds)
        return None

    async def _adopt(self, d: Obj, owned: list[Obj]) -> list[Obj]:
        selector = (d.get("spec") or {}).get("selector")
        for rs in self.replicasets.list():
            if namespace_of(rs) != namespace_of(d) or controller_of(rs) is not None:
                continue
            if matches(selector, meta(rs).get("labels")):
                refs = list(meta(rs).get("ownerReferences") or []) + [owner_reference(d)]
                try:
                    adopted = await self.client.patch("apps/v1", "replicasets", name_of(rs), {
                        "metadata": {"ownerReferences": refs, "uid": uid_of(rs)}},
                        namespace=namespace_of(rs))
                    owned.append(adopted)
                except ApiError as e:
                    if e.code not in (404, 409, 422):
                        raise
        return owned

    async def _create_rs(self, d: Obj, revision: int, olds: list[Obj]) -> Obj:
        spec = d.get("spec") or {}
        template = copy.deepcopy(spec.get("template") or {})
        collisions = int((d.get("status") or {}).get("collisionCount", 0))
        h = template_hash(template, collisions)
        template.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = h
        selector = copy.deepcopy(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})[HASH_LABEL] = h
        wanted = int(spec.get("replicas", 1))
        strategy = spec.get("strategy") or {}
        if strategy.get("type", "RollingUpdate") == "Recreate" or not olds:
            initial = 0 if olds else wanted
        else:
            initial = 0
        surge = resolve((strategy.get("rollingUpdate") or {}).get("maxSurge"), wanted, True)
        rs = {
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {
                "name": f"{name_of(d)}-{h}", "namespace": namespace_of(d),
                "labels": dict(template["metadata"]["labels"]),
                "annotations": {REVISION: str(revision),
                                "deployment.kubernetes.io/desired-replicas": str(wanted),
                                "deployment.kubernetes.io/max-replicas": str(wanted + surge)},
                "ownerReferences": [owner_reference(d)],
            },
            "spec": {"replicas": initial, "selector": selector, "template": template,
                     "minReadySeconds": int(spec.get("minReadySeconds") or 0)},
        }
        try:
            created = await self.client.create("apps/v1", "replicasets", rs,
                                               namespace=namespace_of(d))
        except ApiError as e:
            if e.code == 409:  # a hash collision with a foreign ReplicaSet
                await self.client.patch("apps/v1", "deployments", name_of(d),
                                        {"status": {"collisionCount": collisions + 1}},
                                        namespace=namespace_of(d), subresource="status")
            raise
        await self.recorder.event(d, "Normal", "ScalingReplicaSet",
                                  f"Scaled up replica set {name_of(created)} from 0 to {initial}")
        return created

    async def _sync_revision(self, d: Obj, new: Obj) -> None:
        """The Deployment carries its new ReplicaSet's revision annotation, as upstream's
        SetDeploymentRevision keeps it (clients wait for it after a rollout); written by
        an update, as upstream's controller (its role may update Deployments, not patch
        them)."""
        revision = (meta(new).get("annotations") or {}).get(REVISION)
        if not revision or (meta(d).get("annotations") or {}).get(REVISION) == revision:
            return
        fresh = copy.deepcopy(d)
        fresh["metadata"].setdefault("annotations", {})[REVISION] = revision
        try:
            await self.client.update("apps/v1", "deployments", fresh)
        except ApiError as e:
            if e.code != 404:
                raise

    async def _annotate(self, rs: Obj, revision: int) -> Obj:
        return await self.client.patch("apps/v1", "replicasets", name_of(rs), {
            "metadata": {"annotations": {REVISION: str(revision)}}}, namespace=namespace_of(rs))

    async def _scale(self, d: Obj, rs: Obj, replicas: int) -> Obj:
        before = _replicas(rs)
        if before == replicas:
            return rs
        fresh = copy.deepcopy(rs)
        fresh["spec"]["replicas"] = replicas
        wanted = int((d.get("spec") or {}).get("replicas", 1))
        fresh["metadata"].setdefault("annotations", {})[
            "deployment.kubernetes.io/desired-replicas"] = str(wanted)
        updated = await self.client.update("apps/v1", "replicasets", fresh)
        verb = "up" if replicas > before else "down"
        await self.recorder.event(d, "Normal", "ScalingReplicaSet",
                                  f"Scaled {verb} replica set {name_of(rs)} from {before} to "
                                  f"{replicas}")
        return updated

    async def _recreate(self, d: Obj, new: Obj, olds: list[Obj], wanted: int) -> None:
        for rs in olds:
            await self._scale(d, rs, 0)
        if any(_status(rs, "replicas") for rs in olds):
            return  # old pods still terminating
        await self._scale(d, new, wanted)

    async def _rolling(self, d: Obj, new: Obj, olds: list[Obj], wanted: int) -> None:
        ru = ((d.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}
        surge = resolve(ru.get("maxSurge"), wanted, True)
        unavailable = resolve(ru.get("maxUnavailable"), wanted, False)
        if surge == 0 and unavailable == 0:
            unavailable = 1
        if not olds:
            await self._scale(d, new, wanted)
            return
        total = _replicas(new) + sum(_replicas(rs) for rs in olds)
        room = wanted + surge - total
        if room > 0 and _replicas(new) < wanted:
            new = await self._scale(d, new, min(wanted, _replicas(new) + room))
        available = _status(new, "availableReplicas") + sum(
            _status(rs, "availableReplicas") for rs in olds)
        can_remove = available - (wanted - unavailable)
        # Old replicas that are not available cost nothing to remove.
        for rs in sorted(olds, key=lambda r: meta(r).get("creationTimestamp") or ""):
            unhealthy = _replicas(rs) - _status(rs, "availableReplicas")
            remove = max(0, unhealthy) + max(0, can_remove)
            target = max(0, _replicas(rs) - remove)
            if target != _replicas(rs):
                removed = _replicas(rs) - target
                can_remove -= max(0, removed - max(0, unhealthy))
                await self._scale(d, rs, target)

    async def _cleanup(self, d: Obj, olds: list[Obj]) -> None:
        limit = int((d.get("spec") or {}).get("revisionHistoryLimit", 10))
        idle = sorted([rs for rs in olds if _replicas(rs) == 0 and not _status(rs, "replicas")],
                      key=lambda r: int((meta(r).get("annotations") or {}).get(REVISION, "0")))
        for rs in idle[: max(0, len(idle) - limit)]:
            try:
                await self.client.delete("apps/v1", "replicasets", name_of(rs),
                                         namespace_of(rs))
            except ApiError as e:
                if e.code != 404:
                    raise

    async def _update_status(self, d: Obj, new: Obj, olds: list[Obj]) -> None:
        spec = d.get("spec") or {}
        wanted = int(spec.get("replicas", 1))
        every = [new, *olds]
        replicas = sum(_status(rs, "replicas") for rs in every)
        available = sum(_status(rs, "availableReplicas") for rs in every)
        ready = sum(_status(rs, "readyReplicas") for rs in every)
        updated = _status(new, "replicas")
        old_status = d.get("status") or {}
        conditions = copy.deepcopy(old_status.get("conditions") or [])
        ru = (spec.get("strategy") or {}).get("rollingUpdate") or {}
        max_unavailable = resolve(ru.get("maxUnavailable"), wanted, False) if (
            spec.get("strategy") or {}).get("type", "RollingUpdate") == "RollingUpdate" else 0
        if available >= wanted - max_unavailable:
            set_condition(conditions, "Available", "True", "MinimumReplicasAvailable",
                          "Deployment has minimum availability.")
        else:
            set_condition(conditions, "Available", "False", "MinimumReplicasUnavailable",
                          "Deployment does not have minimum availability.")
        if updated == wanted and replicas == wanted and available >= wanted:
            set_condition(conditions, "Progressing", "True", "NewReplicaSetAvailable",
                          f'ReplicaSet "{name_of(new)}" has successfully progressed.')
        else:
            set_condition(conditions, "Progressing", "True", "ReplicaSetUpdated",
                          f'ReplicaSet "{name_of(new)}" is progressing.')
        status: Obj = {
            "observedGeneration": meta(d).get("generation", 1),
            "replicas": replicas, "updatedReplicas": updated, "readyReplicas": ready,
            "availableReplicas": available,
            "unavailableReplicas": max(0, wanted - available),
            "conditions": conditions,
        }
        if old_status.get("collisionCount"):
            status["collisionCount"] = old_status["collisionCount"]
        status = {k: v for k, v in status.items() if v or k == "observedGeneration"}
        if _same_status(old_status, status):
            return
        fresh = copy.deepcopy(d)
        fresh["status"] = status
        try:
            await self.client.update("apps/v1", "deployments", fresh, subresource="status")
        except ApiError as e:
            if e.code not in (404, 409):
                raise
            if e.code == 409:
                self.queue.add(key_of(d))


def _same_status(old: Obj, new: Obj) -> bool:
    def strip(s: Obj) -> Obj:
        s = copy.deepcopy(s)
        for c in s.get("conditions") or []:
            c.pop("lastUpdateTime", None)
            c.pop("lastProbeTime", None)
            c.pop("lastTransitionTime", None)
        return s
    return strip(old) == strip(new)
