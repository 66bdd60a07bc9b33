"""What a PodGroup and a Workload's podGroupTemplates share (scheduling.k8s.io v1beta1 and
v1alpha3 of Kubernetes 1.37): the rules of their declarative validation tags, with
upstream's messages, and the fields behind feature gates.

Fields behind a disabled gate are dropped unless the old object has them, as upstream's
strategies do: `schedulingConstraints` (TopologyAwareWorkloadScheduling), `resourceClaims`
(DRAWorkloadResourceClaims), `preemptionPolicy` (PodGroupPreemptionPolicy) and a
PodGroup's `parentCompositePodGroupName` (CompositePodGroup).
"""

from __future__ import annotations

from typing import Any

from draemu.api.errors import (
    FieldError,
    Path,
    duplicate,
    invalid,
    not_supported,
    required,
    too_many,
)
from draemu.api.names import is_dns1123_label, is_dns1123_subdomain, is_qualified_name
from draemu.api.types import Obj
from draemu.features import FeatureGates

Errors = list[FieldError]

MAX_RESOURCE_CLAIMS = 4
MAX_TOPOLOGY = 1
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")


def obj(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def lst(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def short_name(value: str, path: Path) -> Errors:
    return [invalid(path, value, m) for m in is_dns1123_label(value)]


def long_name(value: str, path: Path) -> Errors:
    return [invalid(path, value, m) for m in is_dns1123_subdomain(value)]


def path_segment_name(value: str, path: Path) -> Errors:
    """k8s-path-segment-name (upstream's IsPathSegmentName)."""
    found = []
    if value in (".", ".."):
        found.append(f"may not be '{value}'")
    for bad in ("/", "%"):
        if bad in value:
            found.append(f"may not contain '{bad}'")
    return [invalid(path, value, m) for m in found]


def union(holder: Obj, members: tuple[str, ...], path: Path) -> Errors:
    """`+k8s:unionMember` fields: exactly one set (upstream's Union)."""
    names = ", ".join(f"`{m}`" for m in members)
    chosen = [m for m in members if holder.get(m) is not None and holder.get(m) != []]
    if not chosen:
        return [invalid(path, "", f"must specify one of: {names}")]
    if len(chosen) > 1:
        return [invalid(path, "{" + ", ".join(chosen) + "}",
                        f"must specify exactly one of: {names}")]
    return []


def named_list(items: list[Any], max_items: int, path: Path, check: Any) -> Errors:
    """`listType=map` keyed by name with `maxItems`: TooMany short-circuits, duplicates
    are Duplicate at the later entry."""
    if len(items) > max_items:
        return [too_many(path, len(items), max_items)]
    errs: Errors = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        item = obj(item)
        errs += check(item, path.index(i))
        name = item.get("name", "")
        if name in seen:
            errs.append(duplicate(path.index(i), {"name": name}))
        seen.add(name)
    return errs


def scheduling_policy(policy: Obj, path: Path) -> Errors:
    errs = union(policy, ("basic", "gang"), path)
    gang = policy.get("gang")
    if isinstance(gang, dict):
        count = gang.get("minCount")
        if count is None:
            errs.append(required(path.child("gang", "minCount")))
        elif isinstance(count, int) and count < 1:
            errs.append(invalid(path.child("gang", "minCount"), count,
                                "must be greater than or equal to 1"))
    return errs


def resource_claim(claim: Obj, path: Path) -> Errors:
    name = claim.get("name") or ""
    errs = [required(path.child("name"))] if not name else short_name(name, path.child("name"))
    errs += union(claim, ("resourceClaimName", "resourceClaimTemplateName"), path)
    for key in ("resourceClaimName", "resourceClaimTemplateName"):
        if isinstance(claim.get(key), str):
            errs += long_name(claim[key], path.child(key))
    return errs


def pod_group_fields(spec: Obj, path: Path) -> Errors:
    """The members PodGroupSpec and PodGroupTemplate have in common."""
    errs = scheduling_policy(obj(spec.get("schedulingPolicy")), path.child("schedulingPolicy"))
    constraints = spec.get("schedulingConstraints")
    if constraints is not None:
        topology = lst(obj(constraints).get("topology"))
        tpath = path.child("schedulingConstraints", "topology")
        if len(topology) > MAX_TOPOLOGY:
            errs.append(too_many(tpath, len(topology), MAX_TOPOLOGY))
        for i, t in enumerate(topology):
            key = obj(t).get("key") or ""
            kpath = tpath.index(i).child("key")
            errs += [required(kpath)] if not key else [
                invalid(kpath, key, m) for m in is_qualified_name(key)]
    errs += named_list(lst(spec.get("resourceClaims")), MAX_RESOURCE_CLAIMS,
                       path.child("resourceClaims"), resource_claim)
    if spec.get("disruptionMode") is not None:
        errs += union(obj(spec["disruptionMode"]), ("single", "all"), path.child("disruptionMode"))
    if spec.get("priorityClassName"):
        errs += long_name(spec["priorityClassName"], path.child("priorityClassName"))
    priority = spec.get("priority")
    if isinstance(priority, int) and priority > HIGHEST_USER_DEFINABLE_PRIORITY:
        errs.append(invalid(path.child("priority"), priority,
                            f"must be less than or equal to {HIGHEST_USER_DEFINABLE_PRIORITY}"))
    if spec.get("preemptionPolicy") is not None:
        if spec["preemptionPolicy"] not in PREEMPTION_POLICIES:
            errs.append(not_supported(path.child("preemptionPolicy"), spec["preemptionPolicy"],
                                      list(PREEMPTION_POLICIES)))
    return errs


def immutable_fields(new: Obj, old: Obj, path: Path, names: tuple[str, ...]) -> Errors:
    """`+k8s:immutable`: "field is immutable" at each changed field."""
    return [invalid(path.child(n), None, "field is immutable")
            for n in names if new.get(n) != old.get(n)]


GATED = (("schedulingConstraints", "TopologyAwareWorkloadScheduling"),
         ("resourceClaims", "DRAWorkloadResourceClaims"),
         ("preemptionPolicy", "PodGroupPreemptionPolicy"),
         ("parentCompositePodGroupName", "CompositePodGroup"))


def drop_gated(new: Obj | None, old: Obj | None, gates: FeatureGates) -> None:
    if new is None:
        return
    for name, gate in GATED:
        if not gates.enabled(gate) and not (old is not None and old.get(name)):
            new.pop(name, None)
