"""The StatefulSet controller (upstream's pkg/controller/statefulset): pods with stable
names `<set>-<ordinal>` (from `spec.ordinals.start`), hostname and subdomain, and one
PersistentVolumeClaim per volumeClaimTemplate and ordinal (`<template>-<pod>`).

With `OrderedReady` pod management a pod is created only when every lower ordinal is
running and ready (and available after minReadySeconds), and scale-down removes the
highest ordinal first, one at a time, while the others are healthy; `Parallel` creates
and deletes all at once. The template's history is kept in ControllerRevisions; pods
carry `controller-revision-hash` = the revision's name. RollingUpdate replaces pods from
the highest ordinal down to `partition`, one at a time, each after the one above it is
available again; OnDelete replaces a pod only when it is deleted. Status: replicas,
ready, available, current and updated replicas, current and update revision.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from draemu.api.meta import controller_of, meta, name_of, namespace_of, owner_reference, uid_of
from draemu.api.types import Obj
from draemu.client import ApiError, key_of
from draemu.controllers import history
from draemu.controllers.base import Controller
from draemu.controllers.deployment import resolve
from draemu.controllers.expectations import Expectations
from draemu.controllers.refmanager import claim, selects
from draemu.controllers.replicaset import pod_is_available

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
REVISION_LABEL = history.POD_REVISION_HASH


def ordinal_of(set_name: str, pod: Obj) -> int:
    """The ordinal in `<set>-<ordinal>`, or -1 when the name is not of that form."""
    match = re.fullmatch(rf"{re.escape(set_name)}-(\d+)", name_of(pod))
    return int(match.group(1)) if match else -1


def start_ordinal(sts: Obj) -> int:
    return int(((sts.get("spec") or {}).get("ordinals") or {}).get("start") or 0)


def replicas_of(sts: Obj) -> int:
    return int((sts.get("spec") or {}).get("replicas", 1))


def claim_name(template: Obj, pod_name: str) -> str:
    return f"{name_of(template)}-{pod_name}"


def _phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def _created(pod: Obj) -> bool:
    return _phase(pod) != ""


def _terminating(pod: Obj) -> bool:
    return bool(meta(pod).get("deletionTimestamp"))


def _running_and_ready(pod: Obj) -> bool:
    return _phase(pod) == "Running" and pod_is_available(pod, 0)


def _unavailable(pod: Obj, min_ready: int) -> bool:
    return not pod_is_available(pod, min_ready) or _terminating(pod)


def template_of(revision: Obj) -> Obj:
    """The pod template a revision recorded (upstream's ApplyRevision)."""
    template = copy.deepcopy(((revision.get("data") or {}).get("spec") or {}).get(
        "template") or {})
    template.pop("$patch", None)
    return template


def _retention(sts: Obj) -> Obj:
    return (sts.get("spec") or {}).get("persistentVolumeClaimRetentionPolicy") or {}


class StatefulSetController(Controller):
    name = "statefulset"
    workers = 2

    def component(self) -> str:
        return "statefulset-controller"

    def setup(self) -> None:
        inf = self.ctx.informers
        self.sets = inf.informer("apps/v1", "statefulsets")
        self.pods = inf.informer("v1", "pods")
        self.revisions = inf.informer("apps/v1", "controllerrevisions")
        self.claims = inf.informer("v1", "persistentvolumeclaims")
        self.expectations = Expectations()
        self.handlers_enqueue(self.sets)
        for informer in (self.pods, self.revisions):
            informer.add_handler(on_add=self._dependent_changed,
                                 on_update=lambda o, n: (self._dependent_changed(o),
                                                         self._dependent_changed(n)),
                                 on_delete=self._dependent_changed)

    def primary(self) -> Any:
        return self.sets

    def _dependent_changed(self, obj: Obj) -> None:
        ref = controller_of(obj)
        if ref is not None:
            if ref.get("kind") == "StatefulSet":
                self.queue.add(f"{namespace_of(obj)}/{ref.get('name')}")
            return
        for sts in self.sets.list():
            if namespace_of(sts) == namespace_of(obj) and selects(
                    (sts.get("spec") or {}).get("selector"), meta(obj).get("labels")):
                self.queue.add(key_of(sts))

    async def reconcile(self, key: str) -> float | None:
        sts = self.sets.get(key)
        if sts is None:
            self.expectations.forget(key)
            return None
        spec = sts.get("spec") or {}
        selector = spec.get("selector")
        namespace = namespace_of(sts)
        revisions = await claim(self.client, sts, [
            r for r in self.revisions.list() if namespace_of(r) == namespace],
            selector, "apps/v1", "controllerrevisions")
        pods = await claim(self.client, sts, [
            p for p in self.pods.list() if namespace_of(p) == namespace
            and ordinal_of(name_of(sts), p) >= 0], selector, "v1", "pods")
        update, old = await history.current_revision(self.client, sts, revisions,
                                                     history.REVISION_HASH, "statefulsets")
        wanted = (sts.get("status") or {}).get("currentRevision")
        current = next((r for r in [update, *old] if name_of(r) == wanted), update)
        status = self._status(sts, current, update, pods)
        if self.expectations.satisfied(key, lambda n: self.pods.get(f"{namespace}/{n}")) \
                and not meta(sts).get("deletionTimestamp"):
            await self._update_set(sts, current, update, pods, status)
        await self._write_status(sts, status)
        live = {name_of(current), name_of(update)} | {
            (meta(p).get("labels") or {}).get(REVISION_LABEL) for p in pods}
        await history.cleanup(self.client, [r for r in old if name_of(r) not in live],
                              int(spec.get("revisionHistoryLimit", 10)), set(), name_of)
        min_ready = int(spec.get("minReadySeconds") or 0)
        if min_ready and status["readyReplicas"] != status["availableReplicas"]:
            return float(min_ready)
        return None

    # --- status --------------------------------------------------------------------------

    def _status(self, sts: Obj, current: Obj, update: Obj, pods: list[Obj]) -> Obj:
        min_ready = int((sts.get("spec") or {}).get("minReadySeconds") or 0)
        counts = {"replicas": 0, "readyReplicas": 0, "availableReplicas": 0,
                  "currentReplicas": 0, "updatedReplicas": 0}
        for pod in pods:
            if _created(pod):
                counts["replicas"] += 1
            if _running_and_ready(pod):
                counts["readyReplicas"] += 1
                if pod_is_available(pod, min_ready):
                    counts["availableReplicas"] += 1
            if _created(pod) and not _terminating(pod):
                revision = (meta(pod).get("labels") or {}).get(REVISION_LABEL)
                counts["currentReplicas"] += revision == name_of(current)
                counts["updatedReplicas"] += revision == name_of(update)
        return {"observedGeneration": meta(sts).get("generation") or 1, **counts,
                "currentRevision": name_of(current), "updateRevision": name_of(update),
                "collisionCount": history.collision_count(sts),
                **({"conditions": (sts.get("status") or {})["conditions"]}
                   if (sts.get("status") or {}).get("conditions") else {})}

    async def _write_status(self, sts: Obj, status: Obj) -> None:
        want = replicas_of(sts)
        if status["updatedReplicas"] == status["readyReplicas"] == status["replicas"] == want:
            status["currentReplicas"] = status["updatedReplicas"]
            status["currentRevision"] = status["updateRevision"]
        old = sts.get("status") or {}
        written = {k: v for k, v in status.items()
                   if v or k in ("replicas", "availableReplicas", "collisionCount")}
        if all(old.get(k) == v for k, v in written.items()) and set(old) <= set(written):
            return
        fresh = copy.deepcopy(sts)
        fresh["status"] = written
        try:
            await self.client.update("apps/v1", "statefulsets", fresh, subresource="status")
        except ApiError as e:
            if e.code != 404:
                raise

    # --- pods ----------------------------------------------------------------------------

    def _new_pod(self, sts: Obj, template: Obj, revision: str, ordinal: int) -> Obj:
        name = f"{name_of(sts)}-{ordinal}"
        tmeta = template.get("metadata") or {}
        labels = {**(tmeta.get("labels") or {}), POD_NAME_LABEL: name,
                  POD_INDEX_LABEL: str(ordinal), REVISION_LABEL: revision}
        md: Obj = {"name": name, "namespace": namespace_of(sts), "labels": labels,
                   "ownerReferences": [owner_reference(sts)]}
        for field in ("annotations", "finalizers"):
            if tmeta.get(field):
                md[field] = copy.deepcopy(tmeta[field])
        spec = copy.deepcopy(template.get("spec") or {})
        spec["hostname"] = name
        if (sts.get("spec") or {}).get("serviceName"):
            spec["subdomain"] = sts["spec"]["serviceName"]
        claims = {name_of(t): claim_name(t, name) for t in
                  (sts.get("spec") or {}).get("volumeClaimTemplates") or []}
        volumes = [{"name": v, "persistentVolumeClaim": {"claimName": c}}
                   for v, c in claims.items()]
        volumes += [v for v in spec.get("volumes") or [] if v.get("name") not in claims]
        if volumes:
            spec["volumes"] = volumes
        return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec}

    def _versioned_pod(self, sts: Obj, current: Obj, update: Obj, ordinal: int) -> Obj:
        """A missing pod is recreated at the current revision below the partition (or
        the count of current replicas), at the update revision above it."""
        strategy = (sts.get("spec") or {}).get("updateStrategy") or {"type": "RollingUpdate"}
        start = start_ordinal(sts)
        if strategy.get("type", "RollingUpdate") == "RollingUpdate":
            rolling = strategy.get("rollingUpdate")
            if rolling is None:
                below = ordinal < start + int((sts.get("status") or {}).get(
                    "currentReplicas") or 0)
            else:
                below = ordinal < start + int(rolling.get("partition") or 0)
            if below:
                return self._new_pod(sts, template_of(current), name_of(current), ordinal)
        return self._new_pod(sts, template_of(update), name_of(update), ordinal)

    async def _ensure_claims(self, sts: Obj, pod: Obj) -> None:
        namespace = namespace_of(sts)
        policy = _retention(sts)
        labels = ((sts.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        for template in (sts.get("spec") or {}).get("volumeClaimTemplates") or []:
            name = claim_name(template, name_of(pod))
            if self.claims.get(f"{namespace}/{name}") is not None:
                continue
            pvc = copy.deepcopy(template)
            pvc["apiVersion"], pvc["kind"] = "v1", "PersistentVolumeClaim"
            md = pvc.setdefault("metadata", {})
            md["name"], md["namespace"] = name, namespace
            md["labels"] = {**(md.get("labels") or {}), **labels}
            pvc.pop("status", None)
            if policy.get("whenDeleted") == "Delete":
                md["ownerReferences"] = [owner_reference(sts)]
            try:
                await self.client.create("v1", "persistentvolumeclaims", pvc,
                                         namespace=namespace)
            except ApiError as e:
                if e.code == 409:
                    continue
                await self.recorder.event(
                    sts, "Warning", "FailedCreate",
                    f"create Claim {name} for Pod {name_of(pod)} in StatefulSet "
                    f"{name_of(sts)} failed error: {e.message}")
                raise
            await self.recorder.event(sts, "Normal", "SuccessfulCreate",
                                      f"create Claim {name} Pod {name_of(pod)} in "
                                      f"StatefulSet {name_of(sts)} success")

    async def _create(self, sts: Obj, pod: Obj) -> None:
        await self._ensure_claims(sts, pod)
        try:
            await self.client.create("v1", "pods", pod, namespace=namespace_of(sts))
        except ApiError as e:
            if e.code == 409:
                return
            await self.recorder.event(sts, "Warning", "FailedCreate",
                                      f"create Pod {name_of(pod)} in StatefulSet "
                                      f"{name_of(sts)} failed error: {e.message}")
            raise
        self.expectations.expect_add(key_of(sts), name_of(pod))
        await self.recorder.event(sts, "Normal", "SuccessfulCreate",
                                  f"create Pod {name_of(pod)} in StatefulSet {name_of(sts)} "
                                  "successful")

    async def _delete(self, sts: Obj, pod: Obj) -> None:
        try:
            await self.client.delete("v1", "pods", name_of(pod), namespace_of(pod))
        except ApiError as e:
            if e.code != 404:
                await self.recorder.event(sts, "Warning", "FailedDelete",
                                          f"delete Pod {name_of(pod)} in StatefulSet "
                                          f"{name_of(sts)} failed error: {e.message}")
                raise
            return
        self.expectations.expect_delete(key_of(sts), name_of(pod))
        await self.recorder.event(sts, "Normal", "SuccessfulDelete",
                                  f"delete Pod {name_of(pod)} in StatefulSet {name_of(sts)} "
                                  "successful")

    async def _release_claims_to(self, sts: Obj, pod: Obj) -> None:
        """whenScaled: Delete — a condemned pod owns its claims, so they go with it."""
        for template in (sts.get("spec") or {}).get("volumeClaimTemplates") or []:
            pvc = self.claims.get(f"{namespace_of(sts)}/{claim_name(template, name_of(pod))}")
            if pvc is None or any(r.get("uid") == uid_of(pod)
                                  for r in meta(pvc).get("ownerReferences") or []):
                continue
            ref = owner_reference(pod)
            await self.client.patch("v1", "persistentvolumeclaims", name_of(pvc), {
                "metadata": {"ownerReferences": [*(meta(pvc).get("ownerReferences") or []),
                                                 {**ref, "controller": False}]}},
                namespace=namespace_of(pvc))

    async def _update_set(self, sts: Obj, current: Obj, update: Obj, pods: list[Obj],
                          status: Obj) -> None:
        spec = sts.get("spec") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        monotonic = spec.get("podManagementPolicy", "OrderedReady") != "Parallel"
        start, count = start_ordinal(sts), replicas_of(sts)
        replicas: list[Obj | None] = [None] * count
        condemned: list[Obj] = []
        for pod in pods:
            ordinal = ordinal_of(name_of(sts), pod)
            if start <= ordinal < start + count:
                replicas[ordinal - start] = pod
            elif ordinal >= 0:
                condemned.append(pod)
        planned = [p if p is not None else self._versioned_pod(sts, current, update, start + i)
                   for i, p in enumerate(replicas)]
        condemned.sort(key=lambda p: -ordinal_of(name_of(sts), p))
        first_unhealthy = next((p for p in [*planned, *reversed(condemned)]
                                if _unavailable(p, min_ready)), None)
        for pod in planned:
            if _phase(pod) in ("Succeeded", "Failed"):
                if not _terminating(pod):
                    await self._delete(sts, pod)
                return  # recreated on the next sync
            if not _created(pod):
                await self._create(sts, pod)
                if monotonic:
                    return
                continue
            if _phase(pod) == "Pending":
                await self._ensure_claims(sts, pod)
            if monotonic and (_terminating(pod) or not _running_and_ready(pod)
                              or not pod_is_available(pod, min_ready)):
                return
        if _retention(sts).get("whenScaled") == "Delete":
            for pod in condemned:
                await self._release_claims_to(sts, pod)
        for pod in condemned:
            if _terminating(pod):
                if monotonic:
                    return
                continue
            if monotonic and pod is not first_unhealthy and (
                    not _running_and_ready(pod) or not pod_is_available(pod, min_ready)):
                return
            await self._delete(sts, pod)
            if monotonic:
                return
        strategy = spec.get("updateStrategy") or {"type": "RollingUpdate"}
        if strategy.get("type", "RollingUpdate") != "RollingUpdate":
            return
        rolling = strategy.get("rollingUpdate") or {}
        partition = int(rolling.get("partition") or 0)
        if self.ctx.gates.enabled("MaxUnavailableStatefulSet"):
            await self._roll_within_budget(sts, planned, update, partition, status)
            return
        for pod in reversed(planned[partition:]):
            if (meta(pod).get("labels") or {}).get(REVISION_LABEL) != name_of(update) \
                    and not _terminating(pod):
                await self._delete(sts, pod)
                status["currentReplicas"] -= 1
                return
            if _unavailable(pod, min_ready):
                return

    async def _roll_within_budget(self, sts: Obj, planned: list[Obj], update: Obj,
                                  partition: int, status: Obj) -> None:
        """MaxUnavailableStatefulSet: replace old pods from the highest ordinal down to the
        partition while fewer than rollingUpdate.maxUnavailable (default 1, at least 1)
        pods are unavailable; with Parallel, unavailable old pods go at once."""
        spec = sts.get("spec") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        parallel = spec.get("podManagementPolicy") == "Parallel"
        rolling = (spec.get("updateStrategy") or {}).get("rollingUpdate") or {}
        budget = max(1, resolve(rolling.get("maxUnavailable", 1), len(planned), False))

        def old(pod: Obj) -> bool:
            return (meta(pod).get("labels") or {}).get(REVISION_LABEL) != name_of(update)

        unavailable = sum(1 for p in planned if _unavailable(p, min_ready))
        stuck = sum(1 for p in planned if parallel and _unavailable(p, min_ready) and old(p)
                    and not _terminating(p))
        if unavailable >= budget and stuck == 0:
            return
        targets = list(reversed(planned[partition:]))
        if parallel:
            for pod in targets:
                if old(pod) and not pod_is_available(pod, min_ready) and not _terminating(pod):
                    await self._delete(sts, pod)
                    status["currentReplicas"] -= 1
            room = budget - unavailable
            for pod in targets:
                if room <= 0:
                    break
                if old(pod) and not _unavailable(pod, min_ready):
                    await self._delete(sts, pod)
                    room -= 1
                    status["currentReplicas"] -= 1
            return
        room = budget - unavailable
        for pod in targets:
            if room <= 0:
                break
            if old(pod) and not _terminating(pod):
                await self._delete(sts, pod)
                room -= 1
                status["currentReplicas"] -= 1
