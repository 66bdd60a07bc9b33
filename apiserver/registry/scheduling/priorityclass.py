"""scheduling.k8s.io/v1 PriorityClass: cluster-wide pod priorities, the two system
classes (created at start-up by the apiserver's bootstrap) and at most one globalDefault.

Pods resolve `priorityClassName` into `spec.priority` at creation (the Priority admission
plugin's work, done by the pod strategy with `resolve_priority`)."""

from __future__ import annotations

from typing import Any

from draemu.api.errors import FieldError, Path, StatusError, forbidden, invalid, not_supported
from draemu.apiserver.registry.core.common import FIELD_IMMUTABLE
from draemu.apiserver.registry.generic import AGE_COLUMN, NAME, GenericStrategy, Printed
from draemu.apiserver.registry.strategy import Column, Context, Obj

GROUP = "scheduling.k8s.io"
SYSTEM_PREFIX = "system-"
# The classes kube-apiserver creates at start-up (pkg/apis/scheduling/v1 helpers).
SYSTEM_PRIORITY_CLASSES = [
    {"name": "system-node-critical", "value": 2000001000,
     "description": "Used for system critical pods that must not be moved from their current "
                    "node."},
    {"name": "system-cluster-critical", "value": 2000000000,
     "description": "Used for system critical pods that must run in the cluster, but can be "
                    "moved to another node if necessary."},
]
HIGHEST_USER_DEFINABLE_PRIORITY = 1000000000
PREEMPTION_POLICIES = ["Never", "PreemptLowerPriority"]


def _known_system_class(name: str, value: Any, global_default: bool) -> str:
    """Why `name` may not be a system class ("" when it is one of them, as declared)."""
    for known in SYSTEM_PRIORITY_CLASSES:
        if known["name"] == name:
            if known["value"] != value:
                return f"value of {name} PriorityClass must be {known['value']}"
            if global_default:
                return f"globalDefault of {name} PriorityClass must be false"
            return ""
    return f"{name} is not a known system priority class"


def default_priority_class(classes: list[Obj]) -> Obj | None:
    """The globalDefault class; the lowest value if a race made several (as upstream)."""
    found = [c for c in classes if c.get("globalDefault")]
    return min(found, key=lambda c: c.get("value") or 0) if found else None


class PriorityClassStrategy(GenericStrategy):
    group = GROUP
    kind = "PriorityClass"
    resource = "priorityclasses"
    singular = "priorityclass"
    short_names = ("pc",)
    namespaced = False
    versions = ("v1",)
    storage_version = "v1"
    has_generation = False
    defaults = {"preemptionPolicy": "PreemptLowerPriority"}
    printer = (
        NAME,
        Printed(Column("Value", type="integer", description="value represents the integer "
                       "value of this priority class."), lambda o: o.get("value") or 0),
        Printed(Column("Global-Default", type="boolean", description="globalDefault "
                       "specifies whether this PriorityClass should be considered as the "
                       "default priority for pods that do not have any priority class."),
                lambda o: bool(o.get("globalDefault"))),
        AGE_COLUMN,
        Printed(Column("PreemptionPolicy", priority=1, description="preemptionPolicy is the "
                       "Policy for preempting pods with lower priority."),
                lambda o: o.get("preemptionPolicy") or ""),
    )

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        errs: list[FieldError] = []
        name = (obj.get("metadata") or {}).get("name") or ""
        value = obj.get("value") or 0
        if name.startswith(SYSTEM_PREFIX):
            why = _known_system_class(name, value, bool(obj.get("globalDefault")))
            if why:
                errs.append(forbidden(Path("metadata").child("name"), "priority class names "
                                      f"with '{SYSTEM_PREFIX}' prefix are reserved for system "
                                      f"use only. error: {why}"))
        elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
            errs.append(forbidden(Path("value"), "maximum allowed value of a user defined "
                                  f"priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"))
        policy = obj.get("preemptionPolicy")
        if policy is not None and policy not in PREEMPTION_POLICIES:
            errs.append(not_supported(Path("preemptionPolicy"), policy, PREEMPTION_POLICIES))
        return errs

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        # Upstream's update validation is only these two rules (no create rules again).
        errs: list[FieldError] = []
        if new.get("value") != old.get("value"):
            errs.append(forbidden(Path("value"), "may not be changed in an update."))
        if new.get("preemptionPolicy") != old.get("preemptionPolicy"):
            errs.append(invalid(Path("preemptionPolicy"), new.get("preemptionPolicy"),
                                FIELD_IMMUTABLE))
        return errs

    def prepare_for_create(self, obj: Obj, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        self._one_default(obj, ctx, creating=True)

    def prepare_for_update(self, new: Obj, old: Obj, ctx: Context) -> None:
        super().prepare_for_update(new, old, ctx)
        self._one_default(new, ctx, creating=False)

    def _one_default(self, obj: Obj, ctx: Context, creating: bool) -> None:
        """The Priority admission plugin: only one class may be the global default."""
        if not obj.get("globalDefault") or ctx.listing is None:
            return
        current = default_priority_class(ctx.listing(self.resource, GROUP, ""))
        name = (obj.get("metadata") or {}).get("name") or ""
        if current is not None and (creating or current["metadata"]["name"] != name):
            raise StatusError(403, "Forbidden", f'priorityclasses.{GROUP} "{name}" is '
                              f'forbidden: PriorityClass {current["metadata"]["name"]} is '
                              "already marked as default. Only one default can exist",
                              {"name": name, "group": GROUP, "kind": self.resource})


def resolve_priority(pod: Obj, ctx: Context) -> None:
    """The Priority admission plugin on pod creation: priorityClassName (or the global
    default class) -> spec.priority and spec.preemptionPolicy, with upstream's refusals."""
    spec = pod.setdefault("spec", {})
    name = (pod.get("metadata") or {}).get("name") or ""
    wanted = spec.get("priorityClassName") or ""
    policy: str | None = "PreemptLowerPriority"
    if not wanted:
        found = default_priority_class(ctx.listing("priorityclasses", GROUP, "")) \
            if ctx.listing is not None else None
        if found is not None:
            spec["priorityClassName"] = found["metadata"]["name"]
            value, policy = found.get("value") or 0, found.get("preemptionPolicy")
        else:
            value = 0
    else:
        found = ctx.lookup("priorityclasses", GROUP, "", wanted) if ctx.lookup else None
        if found is None:
            known = {c["name"]: c["value"] for c in SYSTEM_PRIORITY_CLASSES}
            if ctx.lookup is not None or wanted not in known:
                raise _pod_forbidden(name, f"no PriorityClass with name {wanted} was found")
            value = known[wanted]
        else:
            value, policy = found.get("value") or 0, found.get("preemptionPolicy")
    given = spec.get("priority")
    if given is not None and given != value:
        raise _pod_forbidden(name, f"the integer value of priority ({given}) must not be "
                             "provided in pod spec; priority admission controller computed "
                             f"{value} from the given PriorityClass name")
    spec["priority"] = value
    if policy is not None:
        given_policy = spec.get("preemptionPolicy")
        if given_policy is not None and given_policy != policy:
            raise _pod_forbidden(name, f"the string value of PreemptionPolicy ({given_policy}) "
                                 "must not be provided in pod spec; priority admission "
                                 f"controller computed {policy} from the given PriorityClass "
                                 "name")
        spec["preemptionPolicy"] = policy


def _pod_forbidden(name: str, why: str) -> StatusError:
    return StatusError(403, "Forbidden", f'pods "{name}" is forbidden: {why}',
                       {"name": name, "kind": "pods"})


STRATEGIES = [PriorityClassStrategy()]
