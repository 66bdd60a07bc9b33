"""scheduling.k8s.io CompositePodGroup (v1alpha3 from 1.37, v1beta1 from 1.38; gate
CompositePodGroup): a runtime instance of a Workload's compositePodGroupTemplate, the parent
of PodGroups (and of other CompositePodGroups) that are scheduled together. Namespaced, with
/status (conditions). Its rules are those of its declarative validation tags (kubernetes
v1.38.0-beta.0's k8s.io/api/scheduling/v1beta1), with upstream's messages: most of the
spec is immutable, a gang policy cannot be set or cleared, its minGroupCount can change."""

from __future__ import annotations

from draemu.api.errors import FieldError, Path, invalid, not_supported, required, too_many
from draemu.api.names import is_qualified_name
from draemu.api.types import Obj
from draemu.apiserver.registry.resource.fields import conditions
from draemu.apiserver.registry.strategy import Context, Strategy

from .podgroup import GROUP, VERSIONS
from .podgroupfields import (
    MAX_TOPOLOGY,
    PREEMPTION_POLICIES,
    immutable_fields,
    long_name,
    lst,
    obj,
    short_name,
    union,
)

RELEASES: dict[str, tuple[str, str | None]] = {"v1beta1": ("1.38", None),
                                               "v1alpha3": ("1.37", None)}
_IMMUTABLE = ("parentCompositePodGroupName", "workloadRef", "schedulingConstraints",
              "disruptionMode", "priorityClassName", "priority", "preemptionPolicy")
NON_GANG_ALL = 'cannot have "all" disruption mode when scheduling policy is other than "gang"'


def _policy(policy: Obj, path: Path) -> list[FieldError]:
    errs = union(policy, ("basic", "gang"), path)
    gang = policy.get("gang")
    if isinstance(gang, dict):
        count = gang.get("minGroupCount")
        if count is None:
            errs.append(required(path.child("gang", "minGroupCount")))
        elif isinstance(count, int) and count < 1:
            errs.append(invalid(path.child("gang", "minGroupCount"), count,
                                "must be greater than or equal to 1"))
    return errs


def _workload_ref(ref: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for key, check in (("workloadName", long_name), ("templateName", short_name)):
        value = ref.get(key) or ""
        errs += [required(path.child(key))] if not value else check(value, path.child(key))
    return errs


def _constraints(constraints: Obj, path: Path) -> list[FieldError]:
    topology, tpath = lst(constraints.get("topology")), path.child("topology")
    if len(topology) > MAX_TOPOLOGY:
        return [too_many(tpath, len(topology), MAX_TOPOLOGY)]
    errs: list[FieldError] = []
    for i, t in enumerate(topology):
        key, kpath = obj(t).get("key") or "", tpath.index(i).child("key")
        errs += [required(kpath)] if not key else [
            invalid(kpath, key, m) for m in is_qualified_name(key)]
    return errs


def spec_errors(spec: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    if isinstance(spec.get("parentCompositePodGroupName"), str):
        errs += long_name(spec["parentCompositePodGroupName"],
                          path.child("parentCompositePodGroupName"))
    if spec.get("workloadRef") is None:
        errs.append(required(path.child("workloadRef")))
    else:
        errs += _workload_ref(obj(spec["workloadRef"]), path.child("workloadRef"))
    policy = obj(spec.get("schedulingPolicy"))
    errs += _policy(policy, path.child("schedulingPolicy"))
    if spec.get("schedulingConstraints") is not None:
        errs += _constraints(obj(spec["schedulingConstraints"]),
                             path.child("schedulingConstraints"))
    mode = spec.get("disruptionMode")
    if mode is not None:
        errs += union(obj(mode), ("single", "all"), path.child("disruptionMode"))
        if obj(mode).get("all") is not None and policy.get("gang") is None:
            errs.append(invalid(path.child("disruptionMode"), None, NON_GANG_ALL))
    if spec.get("priorityClassName"):
        errs += long_name(spec["priorityClassName"], path.child("priorityClassName"))
    policy_name = spec.get("preemptionPolicy")
    if policy_name is not None and policy_name not in PREEMPTION_POLICIES:
        errs.append(not_supported(path.child("preemptionPolicy"), policy_name,
                                  list(PREEMPTION_POLICIES)))
    return errs


class CompositePodGroupStrategy(Strategy):
    group = GROUP
    kind = "CompositePodGroup"
    resource = "compositepodgroups"
    singular = "compositepodgroup"
    versions = VERSIONS
    storage_version = "v1beta1"
    version_releases = RELEASES
    feature_gate = "CompositePodGroup"
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
        """v1beta1 and v1alpha3 have the same CompositePodGroup fields."""
        if "apiVersion" in o:
            o["apiVersion"] = f"{GROUP}/{version}"
        return o

    def validate(self, o: Obj, ctx: Context) -> list[FieldError]:
        return spec_errors(obj(o.get("spec")), Path("spec"))

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
        status = obj(new.get("status"))
        return conditions(lst(status.get("conditions")), Path("status").child("conditions"))


STRATEGIES = [CompositePodGroupStrategy()]
