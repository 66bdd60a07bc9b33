"""scheduling.k8s.io PodGroup (v1beta1, v1alpha3; gate GenericWorkload): a group of pods
scheduled together, made from a Workload's podGroupTemplate or on its own. Namespaced,
with /status (conditions, and the claims made for the group under
DRAWorkloadResourceClaims). The spec cannot change after creation except
`schedulingPolicy.gang` members other than setting or clearing it."""

from __future__ import annotations

from draemu.api.errors import FieldError, Path, invalid, required
from draemu.api.types import Obj
from draemu.apiserver.registry.resource.fields import conditions
from draemu.apiserver.registry.strategy import Context, Strategy

from .podgroupfields import (
    MAX_RESOURCE_CLAIMS,
    drop_gated,
    immutable_fields,
    long_name,
    lst,
    named_list,
    obj,
    pod_group_fields,
    short_name,
)

GROUP = "scheduling.k8s.io"
VERSIONS = ("v1beta1", "v1alpha3")
# v1alpha3 from 1.35 (GenericWorkload alpha), v1beta1 from 1.37.
RELEASES: dict[str, tuple[str, str | None]] = {"v1beta1": ("1.37", None),
                                               "v1alpha3": ("1.35", None)}
_IMMUTABLE = ("workloadRef", "schedulingConstraints", "resourceClaims", "disruptionMode",
              "priorityClassName", "priority", "preemptionPolicy",
              "parentCompositePodGroupName")


class PodGroupStrategy(Strategy):
    group = GROUP
    kind = "PodGroup"
    resource = "podgroups"
    singular = "podgroup"
    versions = VERSIONS
    storage_version = "v1beta1"
    version_releases = RELEASES
    feature_gate = "GenericWorkload"
    subresources = frozenset({"status"})
    has_generation = False

    def default(self, o: Obj, version: str) -> None:
        spec = o.get("spec")
        if isinstance(spec, dict) and spec.get("disruptionMode") is None:
            spec["disruptionMode"] = {"single": {}}

    def to_storage(self, o: Obj, version: str) -> Obj:
        return self._retag(o, self.storage_version)

    def from_storage(self, o: Obj, version: str) -> Obj:
        return self._retag(dict(o), version)

    def _retag(self, o: Obj, version: str) -> Obj:
        """v1beta1 and v1alpha3 have the same PodGroup fields."""
        if "apiVersion" in o:
            o["apiVersion"] = f"{GROUP}/{version}"
        return o

    def prepare_for_create(self, o: Obj, ctx: Context) -> None:
        super().prepare_for_create(o, ctx)
        drop_gated(o.get("spec"), None, ctx.gates)

    def prepare_for_update(self, new: Obj, old: Obj, ctx: Context) -> None:
        super().prepare_for_update(new, old, ctx)
        drop_gated(new.get("spec"), obj(old.get("spec")), ctx.gates)

    def validate(self, o: Obj, ctx: Context) -> list[FieldError]:
        spec, path = obj(o.get("spec")), Path("spec")
        errs = pod_group_fields(spec, path)
        ref = spec.get("workloadRef")
        if ref is not None:
            ref, rpath = obj(ref), path.child("workloadRef")
            for key, check in (("workloadName", long_name), ("templateName", short_name)):
                value = ref.get(key) or ""
                errs += [required(rpath.child(key))] if not value else check(
                    value, rpath.child(key))
        parent = spec.get("parentCompositePodGroupName")
        if isinstance(parent, str):
            errs += long_name(parent, path.child("parentCompositePodGroupName"))
            if ref is None:
                errs.append(required(path.child("workloadRef"),
                                     "must be set when parentCompositePodGroupName is set"))
        return errs

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        spec, old_spec, path = obj(new.get("spec")), obj(old.get("spec")), Path("spec")
        errs = immutable_fields(spec, old_spec, path, _IMMUTABLE)
        policy, old_policy = obj(spec.get("schedulingPolicy")), obj(old_spec.get(
            "schedulingPolicy"))
        ppath = path.child("schedulingPolicy")
        errs += immutable_fields(policy, old_policy, ppath, ("basic",))
        if (policy.get("gang") is None) != (old_policy.get("gang") is None):
            errs.append(invalid(ppath.child("gang"), None,
                                "field cannot be set once created" if old_policy.get("gang")
                                is None else "field cannot be cleared once set"))
        return errs + self.validate(new, ctx)

    def validate_status_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        status, path = obj(new.get("status")), Path("status")
        errs = conditions(lst(status.get("conditions")), path.child("conditions"))
        claims = {obj(c).get("name") for c in lst(obj(new.get("spec")).get("resourceClaims"))}

        def claim_status(entry: Obj, p: Path) -> list[FieldError]:
            found: list[FieldError] = []
            if entry.get("name") not in claims:
                found.append(invalid(p.child("name"), entry.get("name", ""),
                                     "must match the name of an entry in `spec.resourceClaims`"))
            if isinstance(entry.get("resourceClaimName"), str):
                found += long_name(entry["resourceClaimName"], p.child("resourceClaimName"))
            return found

        return errs + named_list(lst(status.get("resourceClaimStatuses")), MAX_RESOURCE_CLAIMS,
                                 path.child("resourceClaimStatuses"), claim_status)


STRATEGIES = [PodGroupStrategy()]
