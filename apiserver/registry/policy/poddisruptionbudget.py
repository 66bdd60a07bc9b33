"""policy/v1 PodDisruptionBudget (+status): how many of a set of pods may be down at once.
Its status (disruptionsAllowed, ...) is written by the disruption controller."""

from __future__ import annotations

from typing import Any

from draemu.api.errors import FieldError, Path, invalid, not_supported
from draemu.apiserver.registry.apps.common import int_or_percent_value, validate_int_or_percent
from draemu.apiserver.registry.core.common import nonnegative
from draemu.apiserver.registry.core.labelselector import validate_label_selector
from draemu.apiserver.registry.generic import AGE_COLUMN, NAME, GenericStrategy, Printed
from draemu.apiserver.registry.strategy import Column, Context, Obj

EVICTION_POLICIES = ["AlwaysAllow", "IfHealthyBudget"]


def _int_or_string(value: Any) -> str:
    return "N/A" if value is None else str(value)


def _positive_int_or_percent(value: Any, path: Path) -> list[FieldError]:
    errs = validate_int_or_percent(value, path)
    if not errs and isinstance(value, str) and int_or_percent_value(value) > 100:
        errs.append(invalid(path, value, "must not be greater than 100%"))
    return errs


class PodDisruptionBudgetStrategy(GenericStrategy):
    group = "policy"
    kind = "PodDisruptionBudget"
    resource = "poddisruptionbudgets"
    singular = "poddisruptionbudget"
    short_names = ("pdb",)
    versions = ("v1",)
    storage_version = "v1"
    subresources = frozenset({"status"})
    printer = (
        NAME,
        Printed(Column("Min Available", description="The minimum number of pods that must "
                       "be available simultaneously.  This can be either an integer or a "
                       "string specifying a percentage, e.g. \"28%\"."),
                lambda o: _int_or_string((o.get("spec") or {}).get("minAvailable"))),
        Printed(Column("Max Unavailable", description="The maximum number of pods that may "
                       "be unavailable simultaneously.  This can be either an integer or a "
                       "string specifying a percentage, e.g. \"28%\"."),
                lambda o: _int_or_string((o.get("spec") or {}).get("maxUnavailable"))),
        Printed(Column("Allowed Disruptions", type="integer", description="Calculated number "
                       "of pods that may be disrupted at this time."),
                lambda o: (o.get("status") or {}).get("disruptionsAllowed") or 0),
        AGE_COLUMN,
    )

    def prepare_for_create(self, obj: Obj, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        obj["status"] = {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0,
                         "expectedPods": 0}

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        spec = obj.get("spec") or {}
        path = Path("spec")
        errs: list[FieldError] = []
        if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
            errs.append(invalid(path, spec, "minAvailable and maxUnavailable cannot be both "
                                "set"))
        for name in ("minAvailable", "maxUnavailable"):
            if spec.get(name) is not None:
                errs += _positive_int_or_percent(spec[name], path.child(name))
        errs += validate_label_selector(spec.get("selector"), path.child("selector"))
        policy = spec.get("unhealthyPodEvictionPolicy")
        if policy is not None and policy not in EVICTION_POLICIES:
            errs.append(not_supported(path.child("unhealthyPodEvictionPolicy"), policy,
                                      EVICTION_POLICIES))
        return errs

    def validate_status_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        status = new.get("status") or {}
        path = Path("status")
        errs: list[FieldError] = []
        for name in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"):
            errs += nonnegative(status.get(name), path.child(name))
        return errs


STRATEGIES = [PodDisruptionBudgetStrategy()]
