"""Extended resources backed by DeviceClasses (DRAExtendedResource).

A DeviceClass offers the extended resource `deviceclass.resource.kubernetes.io/<class>`
and, if set, `spec.extendedResourceName` (several classes with the same name: the newest
wins, ties go to the smaller class name). On a node that does not offer such a resource
itself (no device plugin), a pod's request for it is served by a claim the scheduler
makes: one ExactCount request `container-<i>-request-<j>` per container and resource
(i over init containers then containers, j over the container's sorted resource names).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from draemu.api.quantity import QuantityError, parse_quantity

IMPLICIT_PREFIX = "deviceclass.resource.kubernetes.io/"
CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"


def is_extended(name: str) -> bool:
    """Extended resources have a domain outside kubernetes.io (and the implicit DRA ones)."""
    if name.startswith(IMPLICIT_PREFIX):
        return True
    if "/" not in name or name.startswith("requests."):
        return False
    return "kubernetes.io/" not in name


def class_mapping(classes: list[dict]) -> dict[str, str]:
    """Extended resource name -> DeviceClass name."""
    mapping = {IMPLICIT_PREFIX + c["metadata"]["name"]: c["metadata"]["name"] for c in classes}
    explicit: dict[str, dict] = {}
    for c in classes:
        name = (c.get("spec") or {}).get("extendedResourceName")
        if not name:
            continue
        best = explicit.get(name)
        key = (c["metadata"].get("creationTimestamp") or "", _neg(c["metadata"]["name"]))
        if best is None or key > (best["metadata"].get("creationTimestamp") or "",
                                  _neg(best["metadata"]["name"])):
            explicit[name] = c
    mapping.update({name: c["metadata"]["name"] for name, c in explicit.items()})
    return mapping


def _neg(text: str) -> tuple[int, ...]:
    """Sort key that orders strings in reverse, so that max() prefers the smaller name."""
    return tuple(-ord(ch) for ch in text) + (0,)


@dataclass(frozen=True)
class ResourceRequest:
    request_name: str  # container-<i>-request-<j>
    container: str
    resource: str
    count: int


def pod_extended_requests(pod: dict) -> list[ResourceRequest]:
    spec = pod.get("spec") or {}
    containers = list(spec.get("initContainers") or []) + list(spec.get("containers") or [])
    out: list[ResourceRequest] = []
    for i, container in enumerate(containers):
        requests = (container.get("resources") or {}).get("requests") or {}
        for j, name in enumerate(sorted(requests)):
            if not is_extended(name):
                continue
            try:
                count = ceil(parse_quantity(requests[name]))
            except QuantityError:
                continue
            if count > 0:
                out.append(ResourceRequest(f"container-{i}-request-{j}",
                                           container.get("name", ""), name, count))
    return out


def claim_for_node(pod: dict, requests: list[ResourceRequest], mapping: dict[str, str],
                   node_allocatable: dict[str, int]) -> tuple[dict | None, list[ResourceRequest]]:
    """The in-memory claim for the requests this node leaves to DRA (None if none)."""
    wanted = [r for r in requests
              if node_allocatable.get(r.resource, 0) <= 0 and r.resource in mapping]
    if not wanted:
        return None, []
    meta = pod["metadata"]
    claim = {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {
            "name": f"{meta['name']}-extended-resources",
            "generateName": f"{meta['name']}-extended-resources-",
            "namespace": meta["namespace"],
            "annotations": {CLAIM_ANNOTATION: "true"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": meta["name"],
                                 "uid": meta["uid"], "controller": True,
                                 "blockOwnerDeletion": True}],
        },
        "spec": {"devices": {"requests": [
            {"name": r.request_name, "exactly": {
                "deviceClassName": mapping[r.resource], "allocationMode": "ExactCount",
                "count": r.count}}
            for r in sorted(wanted, key=lambda r: r.request_name)]}},
    }
    return claim, wanted
