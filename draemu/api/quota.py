"""What one object counts against a ResourceQuota (upstream's pkg/quota/v1/evaluator):
shared by the resource quota controller (status.used) and quota admission.

Keys, as upstream names them: object counts `count/<resource>[.<group>]` for any kind,
and the legacy `pods`, `services`, `configmaps`, `secrets`, `persistentvolumeclaims`,
`replicationcontrollers`, `resourcequotas`; a pod's `cpu`/`memory`/`ephemeral-storage`
(= `requests.*`), `limits.*`, `requests.hugepages-*` and `requests.<extended resource>`
while it is not terminal; `services.loadbalancers`, `services.nodeports`; a claim's
`requests.storage` and `<class>.storageclass.storage.k8s.io/{requests.storage,
persistentvolumeclaims}`; a ResourceClaim's `<class>.deviceclass.resource.k8s.io/devices`
(the devices it may be allocated: its count, or 32 for allocationMode All, the largest
of the firstAvailable alternatives).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from draemu.api.quantity import QuantityError, parse_quantity
from draemu.api.types import Obj

Usage = dict[str, Fraction]
LEGACY_COUNTS = {("pods", ""): "pods", ("services", ""): "services",
                 ("configmaps", ""): "configmaps", ("secrets", ""): "secrets",
                 ("persistentvolumeclaims", ""): "persistentvolumeclaims",
                 ("replicationcontrollers", ""): "replicationcontrollers",
                 ("resourcequotas", ""): "resourcequotas"}
DEVICES_PER_CLASS = ".deviceclass.resource.k8s.io/devices"
ALLOCATION_RESULTS_MAX = 32
_COMPUTE = ("cpu", "memory", "ephemeral-storage")
_NATIVE = ("kubernetes.io/", "requests.", "limits.")


def count_key(resource: str, group: str) -> str:
    return f"count/{resource}.{group}" if group else f"count/{resource}"


def _q(value: Any) -> Fraction:
    try:
        return parse_quantity(value)
    except (QuantityError, TypeError):
        return Fraction(0)


def _add(usage: Usage, key: str, value: Fraction) -> None:
    usage[key] = usage.get(key, Fraction(0)) + value


def _sum(containers: list[Obj], field: str) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    for c in containers:
        for name, value in ((c.get("resources") or {}).get(field) or {}).items():
            out[name] = out.get(name, Fraction(0)) + _q(value)
    return out


def pod_resources(spec: Obj, field: str) -> dict[str, Fraction]:
    """The pod's effective requests or limits (upstream's PodRequests/PodLimits): the
    larger of the containers' sum (with restartable init containers) and each init
    container in turn, plus the pod overhead; pod-level resources when given."""
    pod_level = (spec.get("resources") or {}).get(field)
    if pod_level:
        total = {k: _q(v) for k, v in pod_level.items()}
    else:
        containers = list(spec.get("containers") or [])
        sidecars = [c for c in spec.get("initContainers") or []
                    if c.get("restartPolicy") == "Always"]
        total = _sum(containers + sidecars, field)
        running_sidecars: list[Obj] = []
        for c in spec.get("initContainers") or []:
            if c.get("restartPolicy") == "Always":
                running_sidecars.append(c)
                continue
            for name, value in _sum([c, *running_sidecars], field).items():
                if value > total.get(name, Fraction(0)):
                    total[name] = value
    for name, value in (spec.get("overhead") or {}).items():
        if name in total or field == "requests":
            total[name] = total.get(name, Fraction(0)) + _q(value)
    return total


def pod_counts_for_compute(pod: Obj) -> bool:
    """Terminal pods no longer count against compute quota (QuotaV1Pod)."""
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def _pod_usage(pod: Obj) -> Usage:
    usage: Usage = {}
    if not pod_counts_for_compute(pod):
        return usage
    spec = pod.get("spec") or {}
    usage["pods"] = Fraction(1)
    requests, limits = pod_resources(spec, "requests"), pod_resources(spec, "limits")
    for name, value in requests.items():
        if name in _COMPUTE:
            usage[name] = value
            usage[f"requests.{name}"] = value
        elif name.startswith("hugepages-") or not name.startswith(_NATIVE) and "/" in name:
            usage[f"requests.{name}"] = value
            if name.startswith("hugepages-"):
                usage[name] = value
    for name, value in limits.items():
        if name in _COMPUTE:
            usage[f"limits.{name}"] = value
    return usage


def _service_usage(svc: Obj) -> Usage:
    spec = svc.get("spec") or {}
    usage: Usage = {}
    kind = spec.get("type", "ClusterIP")
    if kind == "LoadBalancer":
        usage["services.loadbalancers"] = Fraction(1)
    if kind in ("NodePort", "LoadBalancer"):
        usage["services.nodeports"] = Fraction(len(spec.get("ports") or []))
    return usage


def _claim_usage(pvc: Obj) -> Usage:
    spec = pvc.get("spec") or {}
    storage = _q(((spec.get("resources") or {}).get("requests") or {}).get("storage", 0))
    usage: Usage = {"requests.storage": storage}
    sc = spec.get("storageClassName")
    if sc:
        usage[f"{sc}.storageclass.storage.k8s.io/requests.storage"] = storage
        usage[f"{sc}.storageclass.storage.k8s.io/persistentvolumeclaims"] = Fraction(1)
    return usage


def _devices(request: Obj) -> int:
    mode = request.get("allocationMode", "ExactCount")
    if mode == "All":
        return ALLOCATION_RESULTS_MAX
    return int(request.get("count", 1))


def _resource_claim_usage(claim: Obj) -> Usage:
    usage: Usage = {}
    for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
        if request.get("firstAvailable"):
            most: dict[str, int] = {}
            for sub in request["firstAvailable"]:
                key = f"{sub.get('deviceClassName', '')}{DEVICES_PER_CLASS}"
                most[key] = max(most.get(key, 0), _devices(sub))
            for key, n in most.items():
                _add(usage, key, Fraction(n))
        elif request.get("exactly"):
            exactly = request["exactly"]
            _add(usage, f"{exactly.get('deviceClassName', '')}{DEVICES_PER_CLASS}",
                 Fraction(_devices(exactly)))
    return usage


def usage(resource: str, group: str, obj: Obj) -> Usage:
    """Everything `obj` (of `resource` in `group`) counts against quota."""
    out: Usage = {count_key(resource, group): Fraction(1)}
    legacy = LEGACY_COUNTS.get((resource, group))
    if legacy and legacy != "pods":
        out[legacy] = Fraction(1)
    if (resource, group) == ("pods", ""):
        out.update(_pod_usage(obj))
    elif (resource, group) == ("services", ""):
        out.update(_service_usage(obj))
    elif (resource, group) == ("persistentvolumeclaims", ""):
        out.update(_claim_usage(obj))
    elif (resource, group) == ("resourceclaims", "resource.k8s.io"):
        out.update(_resource_claim_usage(obj))
    return out


# Scopes ----------------------------------------------------------------------------------

def _best_effort(pod: Obj) -> bool:
    spec = pod.get("spec") or {}
    return not any((c.get("resources") or {}).get("requests") or
                   (c.get("resources") or {}).get("limits")
                   for c in [*(spec.get("containers") or []),
                             *(spec.get("initContainers") or [])])


def _scope_matches(scope: str, operator: str, values: list[str], pod: Obj) -> bool:
    spec = pod.get("spec") or {}
    if scope == "Terminating":
        return spec.get("activeDeadlineSeconds") is not None
    if scope == "NotTerminating":
        return spec.get("activeDeadlineSeconds") is None
    if scope == "BestEffort":
        return _best_effort(pod)
    if scope == "NotBestEffort":
        return not _best_effort(pod)
    if scope == "PriorityClass":
        name = spec.get("priorityClassName")
        if operator == "Exists":
            return bool(name)
        if operator == "DoesNotExist":
            return not name
        if operator == "In":
            return name in values
        if operator == "NotIn":
            return name not in values
    if scope == "CrossNamespacePodAffinity":
        return False
    return False


def quota_selects(quota: Obj, resource: str, group: str, obj: Obj) -> bool:
    """Whether a quota's scopes (spec.scopes and spec.scopeSelector) select the object.
    Scopes describe pods: a scoped quota tracks pods only (and of them the ones its
    every scope matches)."""
    spec = quota.get("spec") or {}
    requirements = [(s, "Exists", []) for s in spec.get("scopes") or []]
    requirements += [(r.get("scopeName", ""), r.get("operator", ""), r.get("values") or [])
                     for r in (spec.get("scopeSelector") or {}).get("matchExpressions") or []]
    if not requirements:
        return True
    if (resource, group) != ("pods", ""):
        return False
    return all(_scope_matches(s, op, vals, obj) for s, op, vals in requirements)


def tracked(quota: Obj, resource: str, group: str, obj: Obj) -> Usage:
    """The object's usage of the keys the quota limits (empty if not selected)."""
    if not quota_selects(quota, resource, group, obj):
        return {}
    hard = (quota.get("spec") or {}).get("hard") or {}
    return {k: v for k, v in usage(resource, group, obj).items() if k in hard}
