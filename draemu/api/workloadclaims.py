"""ResourceClaims shared by the pods of a PodGroup (DRAWorkloadResourceClaims), the rules
the resource claim controller, the scheduler and the kubelet share (upstream's
k8s.io/dynamic-resource-allocation/resourceclaim BindTo, IsForPod and IsReservedForPod).

A pod belongs to the PodGroup `spec.schedulingGroup.podGroupName`. A pod claim entry that
equals one of its PodGroup's `spec.resourceClaims` (same name, resourceClaimName and
resourceClaimTemplateName) uses the PodGroup's claim: made once for the group from the
template, owned by the PodGroup, reserved for the PodGroup rather than for each pod.
"""

from __future__ import annotations

from draemu.api.types import Obj

GROUP = "scheduling.k8s.io"
POD_GROUP_API_VERSION = "scheduling.k8s.io/v1beta1"


def pod_group_name(pod: Obj) -> str | None:
    return ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")


def _same(a: Obj, b: Obj) -> bool:
    return all(a.get(k) == b.get(k) for k in
               ("name", "resourceClaimName", "resourceClaimTemplateName"))


def group_claim(pod_claim: Obj, pod_group: Obj | None) -> Obj | None:
    """The PodGroup's `spec.resourceClaims` entry this pod claim entry is, if any."""
    if pod_group is None:
        return None
    for entry in (pod_group.get("spec") or {}).get("resourceClaims") or []:
        if isinstance(entry, dict) and _same(entry, pod_claim):
            return entry
    return None


def bind_to(pod: Obj, pod_group: Obj | None, pod_claim: Obj) -> Obj:
    """The `reservedFor` entry a pod's claim gets: the PodGroup's for a group claim, else
    the pod's."""
    if pod_group is not None and pod_group_name(pod) == pod_group["metadata"]["name"] and \
            group_claim(pod_claim, pod_group) is not None:
        meta = pod_group["metadata"]
        return {"apiGroup": GROUP, "resource": "podgroups", "name": meta["name"],
                "uid": meta.get("uid", "")}
    meta = pod["metadata"]
    return {"resource": "pods", "name": meta["name"], "uid": meta["uid"]}


def owned_by_pod_group(claim: Obj, pod: Obj) -> bool:
    """Made for the pod's PodGroup: pods do not know their group's UID, so kind, API
    group and name are compared (upstream's isForPodGroupByPod)."""
    group = pod_group_name(pod)
    return group is not None and any(
        ref.get("controller") and ref.get("kind") == "PodGroup" and ref.get("name") == group
        and str(ref.get("apiVersion", "")).startswith(GROUP + "/")
        for ref in (claim.get("metadata") or {}).get("ownerReferences") or [])


def reserved_for_pod(claim: Obj, pod: Obj, accept_pod_group: bool) -> bool:
    """The claim is reserved for the pod, or (`accept_pod_group`) for its PodGroup."""
    group = pod_group_name(pod) if accept_pod_group else None
    for ref in (claim.get("status") or {}).get("reservedFor") or []:
        if ref.get("uid") == pod["metadata"]["uid"]:
            return True
        if group is not None and ref.get("apiGroup") == GROUP and \
                ref.get("resource") == "podgroups" and ref.get("name") == group:
            return True
    return False
