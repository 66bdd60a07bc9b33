"""Extended resources backed by DeviceClasses (DRAExtendedResource).

A DeviceClass offers the extended resource `deviceclass.resource.kubernetes.io/<class>`
and, if set, `spec.extendedResourceName` (several classes with the same name: the newest
wins, ties go to the smaller class name). On a node that does not offer such a resource
itself (no device plugin), a pod's request for it is served by a claim the scheduler
makes: ExactCount requests `container-<i>-request-<j>` (i over init containers then
containers, j over the container's sorted resource names), as upstream's scheduler makes
them (1.37): per resource, one request per long-lived container (sidecars and regular
containers); a short-lived init container first reuses the requests of the long-lived
containers from its own index on (they run after it) and asks only for what they lack,
and the short-lived ones share the largest of their requests.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from draemu.api.quantity import QuantityError, parse_quantity
from draemu.api.types import Obj

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


def _count(container: dict, resource: str) -> int:
    quantity = ((container.get("resources") or {}).get("requests") or {}).get(resource)
    try:
        return ceil(parse_quantity(quantity)) if quantity is not None else 0
    except QuantityError:
        return 0


def _container_request(index: int, container: dict, resource: str, reusable: list[Obj | None]
                       ) -> tuple[Obj | None, list[ResourceRequest]]:
    """One container's request for `resource` (None when the reusable requests cover
    it) and its mappings."""
    wanted = _count(container, resource)
    if wanted <= 0:
        return None, []
    name, mappings, covered = container.get("name", ""), [], 0
    for request in reusable:
        if request is not None:
            covered += request["count"]
            mappings.append(ResourceRequest(request["name"], name, resource, wanted))
            if covered >= wanted:
                return None, mappings
    names = sorted(((container.get("resources") or {}).get("requests") or {}))
    request = {"name": f"container-{index}-request-{names.index(resource)}",
               "count": wanted - covered}
    return request, [*mappings, ResourceRequest(request["name"], name, resource, wanted)]


def requests_and_mappings(pod: dict, resources: set[str]
                          ) -> tuple[list[tuple[str, str, int]], list[ResourceRequest]]:
    """The claim's requests (name, resource, count), by name, and the pod status's
    mappings for the extended resources left to DRA, as upstream's scheduler makes them."""
    spec = pod.get("spec") or {}
    inits = list(spec.get("initContainers") or [])
    containers = inits + list(spec.get("containers") or [])
    short = [i for i, c in enumerate(containers)
             if i < len(inits) and c.get("restartPolicy") != "Always"]
    long = [i for i in range(len(containers)) if i not in short]
    requests: list[tuple[str, str, int]] = []
    mappings: list[ResourceRequest] = []
    for resource in sorted(resources):
        lived: list[Obj | None] = [None] * len(containers)
        long_maps: list[ResourceRequest] = []
        for i in long:
            lived[i], found = _container_request(i, containers[i], resource, [])
            long_maps += found
        largest: Obj | None = None
        short_names: set[str] = set()
        short_maps: list[ResourceRequest] = []
        for i in short:
            request, found = _container_request(i, containers[i], resource, lived[i:])
            short_maps += found
            if request is not None:
                short_names.add(request["name"])
                if largest is None or largest["count"] < request["count"]:
                    largest = request
        if largest is not None and len(short_names) > 1:
            short_maps = [ResourceRequest(largest["name"], m.container, m.resource, m.count)
                          if m.request_name in short_names else m for m in short_maps]
        for request in ([largest] if largest else []) + lived:
            if request is not None:
                requests.append((request["name"], resource, request["count"]))
        mappings += long_maps + short_maps
    return sorted(requests), mappings


def claim_for_node(pod: dict, requests: list[ResourceRequest], mapping: dict[str, str],
                   node_allocatable: dict[str, int]) -> tuple[dict | None, list[ResourceRequest]]:
    """The in-memory claim for the requests this node leaves to DRA (None if none), and
    the pod status's mappings of containers to its requests."""
    resources = {r.resource for r in requests
                 if node_allocatable.get(r.resource, 0) <= 0 and r.resource in mapping}
    if not resources:
        return None, []
    device_requests, mappings = requests_and_mappings(pod, resources)
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
            {"name": name, "exactly": {
                "deviceClassName": mapping[resource], "allocationMode": "ExactCount",
                "count": count}}
            for name, resource, count in device_requests]}},
    }
    return claim, mappings
