"""The resource claim controller.

- Creates the ResourceClaim of every `spec.resourceClaims[]` entry of a pod that names a
  ResourceClaimTemplate (owned by the pod, annotated with the pod's claim name) and
  records it in `pod.status.resourceClaimStatuses`.
- Removes pods that are done or gone from a claim's `status.reservedFor`.
- Deallocates claims when their last user goes (the transition from reserved to
  unreserved) and lifts the delete protection.
- Deletes generated claims whose pod will not run again.
- DRAWorkloadResourceClaims: creates the claim of every PodGroup `spec.resourceClaims[]`
  entry that names a template (owned by the PodGroup) and records it in the PodGroup's
  `status.resourceClaimStatuses`; a pod entry that equals one of its PodGroup's uses that
  claim (recorded in the pod's status once the group has it) instead of one of its own;
  reservations for a PodGroup stay while the PodGroup exists.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from draemu.api.meta import meta, name_of, namespace_of, pod_is_done, uid_of
from draemu.api.types import Obj
from draemu.api.workloadclaims import POD_GROUP_API_VERSION, group_claim, pod_group_name
from draemu.client import ApiError, key_of
from draemu.controllers.base import Controller, split_key

RESOURCE = "resource.k8s.io/v1"
POD_CLAIM_NAME = "resource.kubernetes.io/pod-claim-name"
DELETE_PROTECTION = "resource.kubernetes.io/delete-protection"
# Room for "-" and five random characters in a 63-character name.
_MAX_BASE = 57
# A pod's PodGroup that the informer does not have (yet).
_UNKNOWN: Obj = {}


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


def owner_uid(claim: Obj) -> str:
    """The uid of the pod or PodGroup a generated claim was made for."""
    for ref in meta(claim).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") in ("Pod", "PodGroup"):
            return ref.get("uid", "")
    return ""


class ResourceClaimController(Controller):
    name = "resourceclaim"
    # Keys are never worked on twice at once; more workers keep bulk pod creation from
    # queueing behind two sequential writes per pod.
    workers = 8

    def metrics(self) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
        return {"resourceclaim_controller_creates_total": {
            (("status", status),): float(n) for status, n in self.creates.items()}}

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
        gates = self.ctx.gates
        self.pod_groups = None
        if gates.enabled("GenericWorkload") and gates.enabled("DRAWorkloadResourceClaims"):
            self.pod_groups = inf.informer(POD_GROUP_API_VERSION, "podgroups")
            self.pod_groups.add_handler(
                on_add=self._pod_group_changed,
                on_update=lambda _o, n: self._pod_group_changed(n),
                on_delete=self._pod_group_changed)

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

    def _pod_group_changed(self, pod_group: Obj) -> None:
        self.queue.add("podgroup:" + key_of(pod_group))
        ns, name = namespace_of(pod_group), name_of(pod_group)
        for pod in self.pods.list():  # its pods wait for the group's claims
            if namespace_of(pod) == ns and pod_group_name(pod) == name:
                self.queue.add("pod:" + key_of(pod))
        for claim in self.claims.list():  # reservations of a PodGroup that is gone
            if namespace_of(claim) == ns and any(
                    r.get("resource") == "podgroups" and r.get("name") == name
                    for r in (claim.get("status") or {}).get("reservedFor") or []):
                self.queue.add("claim:" + key_of(claim))

    @staticmethod
    def _generated_key(claim: Obj) -> tuple[str, str] | None:
        uid = owner_uid(claim)
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
        elif what == "podgroup":
            await self._sync_pod_group(rest)
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
        group = self._pod_group_of(pod)
        for pc in (pod.get("spec") or {}).get("resourceClaims") or []:
            template_name = pc.get("resourceClaimTemplateName")
            if not template_name or pc.get("name") in recorded:
                continue
            if group is not None:
                if group is _UNKNOWN:
                    continue  # the PodGroup's arrival re-queues the pod
                if group_claim(pc, group) is not None:
                    made = {s.get("name"): s.get("resourceClaimName") for s in (
                        group.get("status") or {}).get("resourceClaimStatuses") or []}
                    if made.get(pc["name"]):  # else: the group's status update re-queues
                        statuses.append({"name": pc["name"],
                                         "resourceClaimName": made[pc["name"]]})
                        changed = True
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
                                    namespace=namespace_of(pod), subresource="status",
                                    decode=False)

    def _pod_group_of(self, pod: Obj) -> Obj | None:
        """The pod's PodGroup when group claims are on; _UNKNOWN while it is not known."""
        name = pod_group_name(pod)
        if self.pod_groups is None or name is None:
            return None
        return self.pod_groups.get(f"{namespace_of(pod)}/{name}") or _UNKNOWN

    async def _sync_pod_group(self, key: str) -> None:
        assert self.pod_groups is not None
        group = self.pod_groups.get(key)
        if group is None or meta(group).get("deletionTimestamp"):
            return
        statuses = copy.deepcopy((group.get("status") or {}).get("resourceClaimStatuses")
                                 or [])
        recorded = {s.get("name") for s in statuses}
        changed = False
        for entry in (group.get("spec") or {}).get("resourceClaims") or []:
            template_name = entry.get("resourceClaimTemplateName")
            if not template_name or entry.get("name") in recorded:
                continue
            claim = self._find_generated(group, entry["name"]) or await self._create_claim(
                group, entry["name"], template_name, is_group=True)
            if claim is None:
                continue
            statuses.append({"name": entry["name"], "resourceClaimName": name_of(claim)})
            changed = True
        if changed:
            await self.client.patch(POD_GROUP_API_VERSION, "podgroups", name_of(group),
                                    {"status": {"resourceClaimStatuses": statuses}},
                                    namespace=namespace_of(group), subresource="status")

    def _find_generated(self, pod: Obj, pod_claim_name: str) -> Obj | None:
        key = self.generated.get((uid_of(pod), pod_claim_name))
        claim = self.claims.get(key) if key else None
        if claim is None or namespace_of(claim) != namespace_of(pod):
            return None
        return claim

    async def _create_claim(self, pod: Obj, pod_claim_name: str, template_name: str,
                            is_group: bool = False) -> Obj | None:
        """The claim of a pod's (or, `is_group`, a PodGroup's) claim entry."""
        ns = namespace_of(pod)
        # From the informer's cache only, as upstream's lister (its role may not read
        # templates one by one): one not there yet is "not found" until it arrives.
        template = self.templates.get(f"{ns}/{template_name}")
        if template is None:
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
                "ownerReferences": [
                    {"apiVersion": POD_GROUP_API_VERSION, "kind": "PodGroup",
                     "name": name_of(pod), "uid": uid_of(pod), "controller": True}
                    if is_group else
                    {"apiVersion": "v1", "kind": "Pod", "name": name_of(pod),
                     "uid": uid_of(pod), "controller": True, "blockOwnerDeletion": True}],
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
            elif ref.get("resource") == "podgroups" and self.pod_groups is not None:
                group = self.pod_groups.get(f"{ns}/{ref.get('name')}")
                if group is not None and uid_of(group) == ref.get("uid"):
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
