"""A pod's claims as DynamicResources sees them, read from the DRA manager: which exist
and belong to the pod, whether an unallocated one can be allocated now, the leftover
extended-resource claim of an earlier attempt, and whom a claim is reserved for."""

from __future__ import annotations

from draemu.api.workloadclaims import owned_by_pod_group
from draemu.scheduler.dra.extendedresources import CLAIM_ANNOTATION
from draemu.scheduler.dra.manager import DRAManager
from draemu.scheduler.framework import SUCCESS, Status
from draemu.scheduler.plugins.dynamicresources.podstate import claim_key


class ClaimLookup:
    def __init__(self, dra: DRAManager) -> None:
        self._dra = dra
        self._features = dra.features

    def of_pod(self, pod: dict) -> tuple[list[dict], Status]:
        """The pod's claims in pod order, or why the pod cannot be tried yet (a claim not
        created, gone, being deleted, or not the pod's own)."""
        meta, spec = pod["metadata"], pod.get("spec") or {}
        statuses = {s.get("name"): s for s in
                    (pod.get("status") or {}).get("resourceClaimStatuses") or []}
        claims: list[dict] = []
        for entry in spec.get("resourceClaims") or []:
            generated = bool(entry.get("resourceClaimTemplateName"))
            if generated:
                status = statuses.get(entry["name"])
                if status is None:
                    # Upstream's words (resourceclaim.Name), so that searches find them.
                    return [], Status.unschedulable(
                        f"pod \"{meta['namespace']}/{meta['name']}\": ResourceClaim not "
                        f"created yet", resolvable=False)
                name = status.get("resourceClaimName")
                if not name:
                    continue  # the controller decided no claim is needed
            else:
                name = entry.get("resourceClaimName") or ""
            claim = self._dra.claim(meta["namespace"], name)
            problem = self._unusable(claim, name, pod, generated)
            if problem is not None:
                return [], problem
            assert claim is not None
            claims.append(claim)
        return claims, SUCCESS

    def _unusable(self, claim: dict | None, name: str, pod: dict, generated: bool
                  ) -> Status | None:
        meta = pod["metadata"]
        if claim is None:
            return Status.unschedulable(f"resourceclaim \"{name}\" not found",
                                        resolvable=False)
        cmeta = claim["metadata"]
        if cmeta.get("deletionTimestamp"):
            return Status.unschedulable(f"resourceclaim \"{name}\" is being deleted",
                                        resolvable=False)
        if generated and not any(o.get("uid") == meta["uid"] and o.get("controller")
                                 for o in cmeta.get("ownerReferences") or []) and not (
                self._features.workload_claims and owned_by_pod_group(claim, pod)):
            return Status.unschedulable(
                f"ResourceClaim {meta['namespace']}/{name} was not created for pod "
                f"{meta['namespace']}/{meta['name']} (pod is not owner)", resolvable=False)
        return None

    def check_unallocated(self, claim: dict, pod_uid: str) -> Status:
        """Whether an unallocated claim can be allocated for the pod now: not in flight
        for another pod, its requests of a supported kind with existing classes."""
        uid = claim["metadata"].get("uid", "")
        flying = self._dra.in_flight(uid)
        if flying is not None and flying.pod_uid != pod_uid:
            meta = claim["metadata"]
            return Status.unschedulable(
                f"resource claim {claim_key(meta['namespace'], meta['name'])} is in the "
                "process of being allocated", resolvable=False)
        for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
            subrequests = request.get("firstAvailable")
            if subrequests and not self._features.prioritized_list:
                return Status.unschedulable(
                    f"resource claim {claim['metadata']['name']}, request {request['name']}: "
                    "has subrequests, but the DRAPrioritizedList feature is disabled",
                    resolvable=False)
            for exact in subrequests or [request.get("exactly") or {}]:
                cls = exact.get("deviceClassName")
                if not cls:
                    return Status.error(f"request {request['name']}: unsupported request type")
                if not self._dra.has_class(cls):
                    return Status.unschedulable(
                        f"request {request['name']}: device class {cls} does not exist",
                        resolvable=False)
        return SUCCESS

    def leftover_extended(self, pod: dict) -> dict | None:
        """The extended-resource claim the pod status names, if it still exists for it."""
        meta = pod["metadata"]
        name = ((pod.get("status") or {}).get("extendedResourceClaimStatus") or {}).get(
            "resourceClaimName")
        claim = self._dra.claim(meta["namespace"], name) if name else None
        if claim is None:
            return None
        cmeta = claim["metadata"]
        ours = (cmeta.get("annotations") or {}).get(CLAIM_ANNOTATION) == "true" and any(
            o.get("uid") == meta["uid"] and o.get("controller")
            for o in cmeta.get("ownerReferences") or [])
        return claim if ours and not cmeta.get("deletionTimestamp") else None

    def consumer(self, claim: dict, pod: dict) -> dict:
        """Whom the claim is reserved for: the pod, or (DRAWorkloadResourceClaims) the
        pod's PodGroup when the claim was made for the group."""
        if self._features.workload_claims and owned_by_pod_group(claim, pod):
            owner = next(r for r in claim["metadata"].get("ownerReferences") or []
                         if r.get("controller") and r.get("kind") == "PodGroup")
            return {"apiGroup": "scheduling.k8s.io", "resource": "podgroups",
                    "name": owner["name"], "uid": owner.get("uid", "")}
        meta = pod["metadata"]
        return {"resource": "pods", "name": meta["name"], "uid": meta["uid"]}
