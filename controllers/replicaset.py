"""The ReplicaSet controller: keeps `spec.replicas` pods that match the selector,
adopting matching orphans and releasing owned pods that no longer match."""

from __future__ import annotations

import copy
from typing import Any

from draemu.api.labels import matches as _matches
from draemu.api.meta import (
    controller_of,
    get_condition,
    meta,
    name_of,
    namespace_of,
    now,
    owner_reference,
    parse_time,
    pod_is_ready,
    pod_is_terminal,
    uid_of,
)
from draemu.api.types import Obj
from draemu.client import ApiError, key_of
from draemu.controllers.base import Controller


def pod_from_template(template: Obj, owner: Obj, generate_name: str) -> Obj:
    tmeta = template.get("metadata") or {}
    pod_meta: Obj = {"generateName": generate_name, "namespace": namespace_of(owner),
                     "ownerReferences": [owner_reference(owner)]}
    for field in ("labels", "annotations", "finalizers"):
        if tmeta.get(field):
            pod_meta[field] = copy.deepcopy(tmeta[field])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta,
            "spec": copy.deepcopy(template.get("spec") or {})}


def pod_is_available(pod: Obj, min_ready_seconds: int) -> bool:
    if not pod_is_ready(pod):
        return False
    if min_ready_seconds <= 0:
        return True
    since = parse_time((get_condition(pod, "Ready") or {}).get("lastTransitionTime"))
    return since is not None and (now() - since).total_seconds() >= min_ready_seconds


def _deletion_rank(pod: Obj) -> tuple[int, int, int, str]:
    """Pods to remove first: unscheduled, then not running, then not ready, newest."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    created = meta(pod).get("creationTimestamp") or ""
    return (0 if not spec.get("nodeName") else 1,
            0 if status.get("phase") != "Running" else 1,
            0 if not pod_is_ready(pod) else 1,
            "".join(chr(255 - ord(c)) for c in created))


class ReplicaSetController(Controller):
    name = "replicaset"
    workers = 2
    kind = "ReplicaSet"
    api_version = "apps/v1"
    resource = "replicasets"

    def setup(self) -> None:
        inf = self.ctx.informers
        self.owners = inf.informer(self.api_version, self.resource)
        self.pods = inf.informer("v1", "pods")
        self.handlers_enqueue(self.owners)
        self.pods.add_handler(on_add=self._pod_changed,
                              on_update=lambda o, n: (self._pod_changed(o), self._pod_changed(n)),
                              on_delete=self._pod_changed)

    def primary(self) -> Any:
        return self.owners

    def selector_of(self, owner: Obj) -> Obj | None:
        """The owner's LabelSelector (None selects nothing)."""
        return (owner.get("spec") or {}).get("selector")

    def _pod_changed(self, pod: Obj) -> None:
        ref = controller_of(pod)
        if ref is not None:
            if ref.get("kind") == self.kind:
                self.queue.add(f"{namespace_of(pod)}/{ref.get('name')}")
            return
        for owner in self.owners.list():  # an orphan: whoever selects it may adopt it
            if namespace_of(owner) == namespace_of(pod) and matches(
                    self.selector_of(owner), meta(pod).get("labels")):
                self.queue.add(key_of(owner))

    def claimed_pods(self, rs: Obj) -> list[Obj]:
        uid = uid_of(rs)
        return [p for p in self.pods.list() if namespace_of(p) == namespace_of(rs)
                and (controller_of(p) or {}).get("uid") == uid]

    async def reconcile(self, key: str) -> float | None:
        rs = self.owners.get(key)
        if rs is None:
            return None
        spec = rs.get("spec") or {}
        selector = self.selector_of(rs)
        pods = await self._claim_pods(rs, selector)
        active = [p for p in pods if not pod_is_terminal(p) and not meta(p).get(
            "deletionTimestamp")]
        wanted = int(spec.get("replicas", 1))
        if not meta(rs).get("deletionTimestamp"):
            diff = wanted - len(active)
            if diff > 0:
                for _ in range(min(diff, 500)):
                    await self._create_pod(rs)
            elif diff < 0:
                for pod in sorted(active, key=_deletion_rank)[: -diff]:
                    await self._delete_pod(pod)
        return await self._update_status(rs, [p for p in self.claimed_pods(rs)
                                              if not pod_is_terminal(p)])

    async def _claim_pods(self, rs: Obj, selector: Obj | None) -> list[Obj]:
        """Adopt matching orphans and release owned pods that stopped matching."""
        out = []
        for pod in self.pods.list():
            if namespace_of(pod) != namespace_of(rs):
                continue
            ref = controller_of(pod)
            labels = meta(pod).get("labels")
            if ref is not None and ref.get("uid") == uid_of(rs):
                if matches(selector, labels):
                    out.append(pod)
                else:
                    await self._set_owner_refs(pod, [r for r in meta(pod).get(
                        "ownerReferences") or [] if r.get("uid") != uid_of(rs)])
            elif ref is None and matches(selector, labels) and not meta(pod).get(
                    "deletionTimestamp") and not meta(rs).get("deletionTimestamp"):
                refs = list(meta(pod).get("ownerReferences") or []) + [owner_reference(rs)]
                if await self._set_owner_refs(pod, refs):
                    out.append(pod)
        return out

    async def _set_owner_refs(self, pod: Obj, refs: list[Obj]) -> bool:
        try:
            await self.client.patch("v1", "pods", name_of(pod), {"metadata": {
                "ownerReferences": refs or None, "uid": uid_of(pod)}},
                namespace=namespace_of(pod))
            return True
        except ApiError as e:
            if e.code in (404, 409, 422):
                return False
            raise

    async def _create_pod(self, rs: Obj) -> None:
        template = (rs.get("spec") or {}).get("template") or {}
        pod = pod_from_template(template, rs, f"{name_of(rs)}-")
        try:
            created = await self.client.create("v1", "pods", pod, namespace=namespace_of(rs))
        except ApiError as e:
            await self.recorder.event(rs, "Warning", "FailedCreate",
                                      f"Error creating: {e.message}")
            raise
        await self.recorder.event(rs, "Normal", "SuccessfulCreate",
                                  f"Created pod: {name_of(created)}")

    async def _delete_pod(self, pod: Obj) -> None:
        ref = controller_of(pod) or {}
        try:
            await self.client.delete("v1", "pods", name_of(pod), namespace_of(pod))
        except ApiError as e:
            if e.code != 404:
                raise
            return
        owner = self.owners.get(f"{namespace_of(pod)}/{ref.get('name')}")
        if owner is not None:
            await self.recorder.event(owner, "Normal", "SuccessfulDelete",
                                      f"Deleted pod: {name_of(pod)}")

    async def _update_status(self, rs: Obj, pods: list[Obj]) -> float | None:
        spec = rs.get("spec") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        template_labels = ((spec.get("template") or {}).get("metadata") or {}).get(
            "labels") or {}
        live = [p for p in pods if not meta(p).get("deletionTimestamp")]
        status = {
            "replicas": len(live),
            "fullyLabeledReplicas": sum(1 for p in live if all(
                (meta(p).get("labels") or {}).get(k) == v for k, v in template_labels.items())),
            "readyReplicas": sum(1 for p in live if pod_is_ready(p)),
            "availableReplicas": sum(1 for p in live if pod_is_available(p, min_ready)),
            "terminatingReplicas": len(pods) - len(live),
            "observedGeneration": meta(rs).get("generation", 1),
        }
        old = rs.get("status") or {}
        if old.get("conditions"):
            status["conditions"] = old["conditions"]
        if all(old.get(k, 0) == v for k, v in status.items() if k != "conditions"):
            pass
        else:
            fresh = copy.deepcopy(rs)
            fresh["status"] = {k: v for k, v in status.items() if v or k in (
                "replicas", "observedGeneration")}
            try:
                await self.client.update(self.api_version, self.resource, fresh,
                                         subresource="status")
            except ApiError as e:
                if e.code != 404:
                    raise
        # Pods that are ready but not yet available need another look later.
        if min_ready and status["readyReplicas"] > status["availableReplicas"]:
            return float(min_ready)
        return None


def matches(selector: Obj | None, labels: dict[str, str] | None) -> bool:
    """A workload without a selector selects nothing."""
    return selector is not None and _matches(selector, labels)


class ReplicationControllerController(ReplicaSetController):
    """The replication controller: the ReplicaSet controller for core/v1
    ReplicationControllers, whose selector is a plain label map (upstream runs the same
    code behind a conversion)."""

    name = "replicationcontroller"
    kind = "ReplicationController"
    api_version = "v1"
    resource = "replicationcontrollers"

    def component(self) -> str:
        return "replication-controller"

    def selector_of(self, owner: Obj) -> Obj | None:
        labels = (owner.get("spec") or {}).get("selector")
        return {"matchLabels": labels} if labels else None
