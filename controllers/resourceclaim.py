"""The resource claim controller.

- Creates the ResourceClaim of every `spec.resourceClaims[]` entry of a pod that names a
  ResourceClaimTemplate (owned by the pod, annotated with the pod's claim name) and
  records it in `pod.status.resourceClaimStatuses`.
- Removes pods that are done or gone from a claim's `status.reservedFor`.
- Deallocates claims when their last user goes (the transition from reserved to
  unreserved) and lifts the delete protection.
- Deletes generated claims whose pod will not run again.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from draemu.api.meta import meta, name_of, namespace_of, pod_is_done, uid_of
from draemu.api.types import Obj
from draemu.client import ApiError, key_of
from draemu.controllers.base import Controller, split_key

RESOURCE = "resource.k8s.io/v1"
POD_CLAIM_NAME = "resource.kubernetes.io/pod-claim-name"
DELETE_PROTECTION = "resource.kubernetes.io/delete-protection"
# Room for "-" and five random characters in a 63-character name.
_MAX_BASE = 57


def generate_name(pod_name: str, claim_name: str) -> str:
    """The claim's generateName: pod name and claim name, both shortened in proportion
    when together they are too long, so neither part is lost entirely."""
    base = f"{pod_name}-{claim_name}-"
    if len(base) > _MAX_BASE:
        total = len(base)
        base = (pod_name[: len(pod_name) * _MAX_BASE // total] + "-"
                + claim_name[: len(claim_name) * _MAX_BASE // total] + "-")
    return base


def owning_pod(claim: Obj) -> tuple[str, str]:
    for ref in meta(claim).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == "Pod" and ref.get(
                "apiVersion") == "v1":
            return ref.get("name", ""), ref.get("uid", "")
    return "", ""


class ResourceClaimController(Controller):
    name = "resourceclaim"
    # Keys are never worked on twice at once; more workers keep bulk pod creation from
    # queueing behind two sequential writes per pod.
    workers = 8

    def setup(self) -> None:
        # resourceclaim_controller_creates_total{status="success"|"failure"}
        self.creates: dict[str, int] = {"success": 0, "failure": 0}
        inf = self.ctx.informers
        self.pods = inf.informer("v1", "pods")
        self.claims = inf.informer(RESOURCE, "resourceclaims")
        self.templates = inf.informer(RESOURCE, "resourceclaimtemplates")
        self.pods.add_handler(on_add=self._pod_changed, on_update=lambda _o, n:
                              self._pod_changed(n), on_delete=self._pod_changed)
        # Generated claims by (owning pod uid, pod claim name) -> claim key, so finding a
        # pod's claim does not scan every claim.
        self.generated: dict[tuple[str, str], str] = {}
        self.claims.add_handler(on_add=self._claim_changed, on_update=lambda _o, n:
                                self._claim_changed(n), on_delete=self._claim_deleted)
        self.templates.add_handler(on_add=self._template_added)

    def primary(self) -> Any:
        return self.claims

    async def start(self) -> None:
        await super().start()
        for key in self.pods.keys():
            self.queue.add("pod:" + key)

    async def _resync(self) -> None:  # both pods and claims are primary here
        while True:
            await asyncio.sleep(self.resync_seconds)
            for key in self.pods.keys():
                self.queue.add("pod:" + key)
            for key in self.claims.keys():
                self.queue.add("claim:" + key)

    # Event handlers -------------------------------------------------------------------
    def _pod_changed(self, pod: Obj) -> None:
        spec = pod.get("spec") or {}
        if not spec.get("resourceClaims"):
            return
        self.queue.add("pod:" + key_of(pod))
        # A pod that is done or gone frees its claims' reservations.
        for name in self._claim_names(pod):
            self.queue.add(f"claim:{namespace_of(pod)}/{name}")

    @staticmethod
    def _generated_key(claim: Obj) -> tuple[str, str] | None:
        uid = owning_pod(claim)[1]
        name = (meta(claim).get("annotations") or {}).get(POD_CLAIM_NAME)
        return (uid, name) if uid and name else None

    def _claim_changed(self, claim: Obj) -> None:
        gen = self._generated_key(claim)
        if gen is not None:
            self.generated[gen] = key_of(claim)
        self.queue.add("claim:" + key_of(claim))

    def _claim_deleted(self, claim: Obj) -> None:
        gen = self._generated_key(claim)
        if gen is not None and self.generated.get(gen) == key_of(claim):
            del self.generated[gen]
        self.queue.add("claim:" + key_of(claim))

    def _template_added(self, template: Obj) -> None:
        ns = namespace_of(template)
        for pod in self.pods.list():
            if namespace_of(pod) != ns:
                continue
            for pc in (pod.get("spec") or {}).get("resourceClaims") or []:
                if pc.get("resourceClaimTemplateName") == name_of(template):
                    self.queue.add("pod:" + key_of(pod))

    @staticmethod
    def _claim_names(pod: Obj) -> list[str]:
        names = []
        statuses = {s.get("name"): s.get("resourceClaimName")
                    for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []}
        for pc in (pod.get("spec") or {}).get("resourceClaims") or []:
            if pc.get("resourceClaimName"):
                names.append(pc["resourceClaimName"])
            elif statuses.get(pc.get("name")):
                names.append(statuses[pc["name"]])
        return names

    # Reconcile ------------------------------------------------------------------------
    async def reconcile(self, key: str) -> float | None:
        what, _, rest = key.partition(":")
        if what == "pod":
            await self._sync_pod(rest)
        else:
            await self._sync_claim(rest)
        return None

    async def _sync_pod(self, key: str) -> None:
        pod = self.pods.get(key)
        if pod is None or meta(pod).get("deletionTimestamp") or pod_is_done(pod):
            return
        statuses = copy.deepcopy((pod.get("status") or {}).get("resourceClaimStatuses") or [])
        recorded = {s.get("name") for s in statuses}
        changed = False
        for pc in (pod.get("spec") or {}).get("resourceClaims") or []:
            template_name = pc.get("resourceClaimTemplateName")
            if not template_name or pc.get("name") in recorded:
                continue
            claim = self._find_generated(pod, pc["name"]) or await self._create_claim(
                pod, pc["name"], template_name)
            if claim is None:
                continue
            statuses.append({"name": pc["name"], "resourceClaimName": name_of(claim)})
            changed = True
        if changed:
            await self.client.patch("v1", "pods", name_of(pod),
                                    {"status": {"resourceClaimStatuses": statuses}},
                                    namespace=namespace_of(pod), subresource="status")

    def _find_generated(self, pod: Obj, pod_claim_name: str) -> Obj | None:
        key = self.generated.get((uid_of(pod), pod_claim_name))
        claim = self.claims.get(key) if key else None
        if claim is None or namespace_of(claim) != namespace_of(pod):
            return None
        return claim

    async def _create_claim(self, pod: Obj, pod_claim_name: str,
                            template_name: str) -> Obj | None:
        ns = namespace_of(pod)
        template = self.templates.get(f"{ns}/{template_name}")
        if template is None:
            try:
                template = await self.client.get(RESOURCE, "resourceclaimtemplates",
                                                  template_name, ns)
            except ApiError as e:
                if e.code != 404:
                    raise
                await self.recorder.event(
                    pod, "Warning", "FailedResourceClaimCreation",
                    f"PodResourceClaim {pod_claim_name}: resource claim template "
                    f'"{template_name}": resourceclaimtemplate.resource.k8s.io '
                    f'"{template_name}" not found')
                return None  # the template's arrival re-queues the pod
        tmeta = (template.get("spec") or {}).get("metadata") or {}
        annotations = dict(tmeta.get("annotations") or {})
        annotations[POD_CLAIM_NAME] = pod_claim_name
        claim = {
            "apiVersion": RESOURCE, "kind": "ResourceClaim",
            "metadata": {
                "generateName": generate_name(name_of(pod), pod_claim_name),
                "namespace": ns,
                "labels": dict(tmeta.get("labels") or {}),
                "annotations": annotations,
                "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": name_of(pod),
                                     "uid": uid_of(pod), "controller": True,
                                     "blockOwnerDeletion": True}],
            },
            "spec": copy.deepcopy((template.get("spec") or {}).get("spec") or {}),
        }
        if not claim["metadata"]["labels"]:
            del claim["metadata"]["labels"]
        try:
            created = await self.client.create(RESOURCE, "resourceclaims", claim, namespace=ns)
        except ApiError as e:
            self.creates["failure"] += 1
            await self.recorder.event(pod, "Warning", "FailedResourceClaimCreation",
                                      f"PodResourceClaim {pod_claim_name}: create "
                                      f"ResourceClaim: {e.message}")
            raise
        self.creates["success"] += 1
        self.log.info("created claim", pod=key_of(pod), claim=name_of(created))
        return created

    async def _sync_claim(self, key: str) -> None:
        claim = self.claims.get(key)
        if claim is None:
            return
        ns, _ = split_key(key)
        status = claim.get("status") or {}
        reserved = status.get("reservedFor") or []
        valid = []
        for ref in reserved:
            if ref.get("resource") == "pods" and not ref.get("apiGroup"):
                if await self._pod_still_needs(ns or "", ref):
                    valid.append(ref)
            else:
                valid.append(ref)
        if len(valid) < len(reserved):
            # Deallocation follows the transition from "in use" to "unused" only: a claim
            # that was never reserved (e.g. the scheduler has just added the finalizer and
            # is about to write the allocation) must be left alone.
            claim = copy.deepcopy(claim)
            claim.setdefault("status", {})["reservedFor"] = valid
            if not valid:
                del claim["status"]["reservedFor"]
                if DELETE_PROTECTION in (meta(claim).get("finalizers") or []):
                    claim["status"].pop("allocation", None)
                    claim["status"].pop("devices", None)
            claim = await self.client.update(RESOURCE, "resourceclaims", claim,
                                             subresource="status")
            if not valid:
                self.log.info("deallocated claim", claim=key)
            await self._lift_protection(claim)
        elif meta(claim).get("deletionTimestamp"):
            await self._lift_protection(claim)
        if not valid:
            await self._delete_if_pod_done(claim)

    async def _lift_protection(self, claim: Obj) -> None:
        """Remove the delete protection from a claim that is no longer allocated."""
        finalizers = meta(claim).get("finalizers") or []
        if DELETE_PROTECTION in finalizers and not (claim.get("status") or {}).get(
                "allocation"):
            claim = copy.deepcopy(claim)
            claim["metadata"]["finalizers"] = [f for f in finalizers if f != DELETE_PROTECTION]
            await self.client.update(RESOURCE, "resourceclaims", claim)

    async def _pod_still_needs(self, namespace: str, ref: Obj) -> bool:
        pod = self.pods.get(f"{namespace}/{ref.get('name')}")
        if pod is None:
            # The cache may lag behind a pod that was just created: ask the API.
            try:
                pod = await self.client.get("v1", "pods", ref.get("name", ""), namespace)
            except ApiError as e:
                if e.code == 404:
                    return False
                raise
        return uid_of(pod) == ref.get("uid") and not pod_is_done(pod)

    async def _delete_if_pod_done(self, claim: Obj) -> None:
        """An unreserved claim generated for a pod that will not run again is deleted."""
        pod_name, pod_uid = owning_pod(claim)
        if pod_name and not meta(claim).get("deletionTimestamp"):
            pod = self.pods.get(f"{namespace_of(claim)}/{pod_name}")
            # An unknown pod is left to the garbage collector, which checks the API.
            if pod is not None and (uid_of(pod) != pod_uid or pod_is_done(pod)):
                try:
                    await self.client.delete(RESOURCE, "resourceclaims", name_of(claim),
                                             namespace_of(claim))
                    self.log.info("deleted generated claim", claim=key_of(claim))
                except ApiError as e:
                    if e.code != 404:
                        raise
