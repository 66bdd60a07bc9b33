"""scheduling.k8s.io Workload (v1beta1, v1alpha3; gate GenericWorkload): the pod groups a
workload's pods form, as podGroupTemplates (or, with the alpha CompositePodGroup gate,
compositePodGroupTemplates nesting them), each with its scheduling policy, constraints,
disruption mode, priority and — under DRAWorkloadResourceClaims — the ResourceClaims its
PodGroups share. Templates cannot be added or removed after creation and most of their
fields are immutable."""

from __future__ import annotations

from draemu.api.errors import FieldError, Path, duplicate, forbidden, invalid, required
from draemu.api.types import Obj
from draemu.apiserver.registry.strategy import Context, Strategy
from draemu.features import FeatureGates

from .podgroup import GROUP, RELEASES, VERSIONS
from .podgroupfields import (
    drop_gated,
    immutable_fields,
    long_name,
    lst,
    named_list,
    obj,
    path_segment_name,
    pod_group_fields,
    short_name,
    union,
)

MAX_TEMPLATES = 8
MAX_TEMPLATE_DEPTH = 4
_TEMPLATE_IMMUTABLE = ("schedulingConstraints", "resourceClaims", "disruptionMode",
                       "priorityClassName", "priority", "preemptionPolicy")
_COMPOSITE_IMMUTABLE = ("schedulingConstraints", "disruptionMode", "priorityClassName",
                        "priority", "preemptionPolicy")


def _template(t: Obj, path: Path) -> list[FieldError]:
    name = t.get("name") or ""
    errs = [required(path.child("name"))] if not name else short_name(name, path.child("name"))
    return errs + pod_group_fields(t, path)


def _composite(t: Obj, path: Path) -> list[FieldError]:
    name = t.get("name") or ""
    errs = [required(path.child("name"))] if not name else short_name(name, path.child("name"))
    policy, ppath = obj(t.get("schedulingPolicy")), path.child("schedulingPolicy")
    errs += union(policy, ("basic", "gang"), ppath)
    gang = policy.get("gang")
    if isinstance(gang, dict):
        count = gang.get("minGroupCount")
        if count is None:
            errs.append(required(ppath.child("gang", "minGroupCount")))
        elif isinstance(count, int) and count < 1:
            errs.append(invalid(ppath.child("gang", "minGroupCount"), count,
                                "must be greater than or equal to 1"))
    if t.get("disruptionMode") is not None:
        errs += union(obj(t["disruptionMode"]), ("single", "all"), path.child("disruptionMode"))
    if t.get("priorityClassName"):
        errs += long_name(t["priorityClassName"], path.child("priorityClassName"))
    errs += named_list(lst(t.get("podGroupTemplates")), MAX_TEMPLATES,
                       path.child("podGroupTemplates"), _template)
    errs += named_list(lst(t.get("compositePodGroupTemplates")), MAX_TEMPLATES,
                       path.child("compositePodGroupTemplates"), _composite)
    if not lst(t.get("podGroupTemplates")) and not lst(t.get("compositePodGroupTemplates")):
        errs.append(invalid(path, name, "must have at least one child PodGroupTemplate or "
                            "CompositePodGroupTemplate"))
    return errs


def _depth(t: Obj, depth: int) -> bool:
    if depth == MAX_TEMPLATE_DEPTH:
        return False
    return all(_depth(obj(c), depth + 1) for c in lst(t.get("compositePodGroupTemplates")))


def _names_unique(spec: Obj, path: Path) -> list[FieldError]:
    """Template names are unique across the whole tree (upstream's
    validateWorkloadTemplateNamesUniqueness; duplicates within one list are the list's)."""
    names = {obj(t).get("name") for t in lst(spec.get("podGroupTemplates"))}
    errs: list[FieldError] = []

    def composite_list(templates: list[object], p: Path) -> None:
        mine: set[object] = set()
        for i, child in enumerate(templates):
            name = obj(child).get("name")
            if name in names:
                errs.append(duplicate(p.child("compositePodGroupTemplates").index(i)
                                      .child("name"), name))
            mine.add(name)
        names.update(mine)
        for i, child in enumerate(templates):
            cpath = p.child("compositePodGroupTemplates").index(i)
            own: set[object] = set()
            for j, grand in enumerate(lst(obj(child).get("podGroupTemplates"))):
                gname = obj(grand).get("name")
                if gname in names:
                    errs.append(duplicate(cpath.child("podGroupTemplates").index(j)
                                          .child("name"), gname))
                own.add(gname)
            names.update(own)
            composite_list(lst(obj(child).get("compositePodGroupTemplates")), cpath)

    composite_list(lst(spec.get("compositePodGroupTemplates")), path)
    return errs


def _priorities(spec: Obj, path: Path) -> list[FieldError]:
    """Every template of the tree shares priorityClassName and priority."""
    seen: list[tuple[object, object]] = []

    def same(t: Obj) -> bool:
        key = (t.get("priorityClassName") or "", t.get("priority"))
        if not seen:
            seen.append(key)
        return seen[0] == key

    for t in lst(spec.get("podGroupTemplates")):
        if not same(obj(t)):
            return [invalid(path, None, "detected multiple priority configurations")]

    def composite(t: Obj) -> bool:
        return same(t) and all(composite(obj(c)) for c in lst(
            t.get("compositePodGroupTemplates"))) and all(
            same(obj(c)) for c in lst(t.get("podGroupTemplates")))

    for t in lst(spec.get("compositePodGroupTemplates")):
        if not composite(obj(t)):
            return [invalid(path, None, "all priority and priorityClassName values must be "
                            "identical, detected multiple values")]
    return []


def _templates_update(new: list[object], old: list[object], path: Path, names: tuple[str, ...],
                      composite: bool) -> list[FieldError]:
    """`+k8s:update=NoAddItem,NoRemoveItem` and the templates' immutable fields."""
    errs: list[FieldError] = []
    old_by_name = {obj(t).get("name"): obj(t) for t in old}
    new_names = {obj(t).get("name") for t in new}
    for i, t in enumerate(new):
        before = old_by_name.get(obj(t).get("name"))
        if before is None:
            errs.append(forbidden(path.index(i), "item may not be added"))
            continue
        tpath = path.index(i)
        errs += immutable_fields(obj(t), before, tpath, names)
        policy, old_policy = obj(obj(t).get("schedulingPolicy")), obj(before.get(
            "schedulingPolicy"))
        if not composite:
            errs += immutable_fields(policy, old_policy, tpath.child("schedulingPolicy"),
                                     ("basic",))
            if (policy.get("gang") is None) != (old_policy.get("gang") is None):
                errs.append(invalid(tpath.child("schedulingPolicy", "gang"), None,
                                    "field cannot be set once created" if old_policy.get(
                                        "gang") is None else "field cannot be cleared once set"))
        else:
            errs += _templates_update(lst(obj(t).get("podGroupTemplates")),
                                      lst(before.get("podGroupTemplates")),
                                      tpath.child("podGroupTemplates"), _TEMPLATE_IMMUTABLE,
                                      False)
            errs += _templates_update(lst(obj(t).get("compositePodGroupTemplates")),
                                      lst(before.get("compositePodGroupTemplates")),
                                      tpath.child("compositePodGroupTemplates"),
                                      _COMPOSITE_IMMUTABLE, True)
    if any(name not in new_names for name in old_by_name):
        errs.append(forbidden(path, "item may not be removed"))
    return errs


def _drop(spec: Obj | None, old: Obj | None, gates: FeatureGates) -> None:
    if spec is None:
        return
    if not gates.enabled("CompositePodGroup") and not obj(old).get(
            "compositePodGroupTemplates"):
        spec.pop("compositePodGroupTemplates", None)
    old_templates = {obj(t).get("name"): obj(t) for t in lst(obj(old).get("podGroupTemplates"))}
    for t in lst(spec.get("podGroupTemplates")):
        if isinstance(t, dict):
            drop_gated(t, old_templates.get(t.get("name")), gates)
    for t in lst(spec.get("compositePodGroupTemplates")):
        if isinstance(t, dict):
            _drop(t, None, gates)


class WorkloadStrategy(Strategy):
    group = GROUP
    kind = "Workload"
    resource = "workloads"
    singular = "workload"
    versions = VERSIONS
    storage_version = "v1beta1"
    version_releases = RELEASES
    feature_gate = "GenericWorkload"
    has_generation = False

    def to_storage(self, o: Obj, version: str) -> Obj:
        if "apiVersion" in o:
            o["apiVersion"] = f"{GROUP}/{self.storage_version}"
        return o

    def from_storage(self, o: Obj, version: str) -> Obj:
        out = dict(o)
        if "apiVersion" in out:
            out["apiVersion"] = f"{GROUP}/{version}"
        return out

    def prepare_for_create(self, o: Obj, ctx: Context) -> None:
        _drop(o.get("spec"), None, ctx.gates)

    def prepare_for_update(self, new: Obj, old: Obj, ctx: Context) -> None:
        _drop(new.get("spec"), obj(old.get("spec")), ctx.gates)

    def validate(self, o: Obj, ctx: Context) -> list[FieldError]:
        spec, path = obj(o.get("spec")), Path("spec")
        errs: list[FieldError] = []
        ref = spec.get("controllerRef")
        if ref is not None:
            ref, rpath = obj(ref), path.child("controllerRef")
            if ref.get("apiGroup"):
                errs += long_name(ref["apiGroup"], rpath.child("apiGroup"))
            for key in ("kind", "name"):
                value = ref.get(key) or ""
                errs += [required(rpath.child(key))] if not value else path_segment_name(
                    value, rpath.child(key))
        errs += union(spec, ("podGroupTemplates", "compositePodGroupTemplates"), path)
        errs += named_list(lst(spec.get("podGroupTemplates")), MAX_TEMPLATES,
                           path.child("podGroupTemplates"), _template)
        composites = lst(spec.get("compositePodGroupTemplates"))
        errs += named_list(composites, MAX_TEMPLATES, path.child("compositePodGroupTemplates"),
                           _composite)
        errs += _names_unique(spec, path)
        for i, t in enumerate(composites):
            if not _depth(obj(t), 1):
                errs.append(invalid(path.child("compositePodGroupTemplates").index(i), None,
                                    f"maximum template hierarchy depth is {MAX_TEMPLATE_DEPTH}"))
        return errs + _priorities(spec, path)

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        spec, old_spec, path = obj(new.get("spec")), obj(old.get("spec")), Path("spec")
        errs = immutable_fields(spec, old_spec, path, ("controllerRef",))
        errs += _templates_update(lst(spec.get("podGroupTemplates")),
                                  lst(old_spec.get("podGroupTemplates")),
                                  path.child("podGroupTemplates"), _TEMPLATE_IMMUTABLE, False)
        errs += _templates_update(lst(spec.get("compositePodGroupTemplates")),
                                  lst(old_spec.get("compositePodGroupTemplates")),
                                  path.child("compositePodGroupTemplates"),
                                  _COMPOSITE_IMMUTABLE, True)
        return errs + self.validate(new, ctx)


STRATEGIES = [WorkloadStrategy()]
