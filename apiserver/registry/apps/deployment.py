"""apps/v1 Deployment (+status, +scale)."""

from __future__ import annotations

from typing import Any

from draemu.api.errors import FieldError, Path, forbidden, invalid, not_supported, required
from draemu.api.types import Obj
from draemu.apiserver.registry.apps.common import (
    int_or_percent_value,
    validate_counters,
    validate_int_or_percent,
    validate_replica_counts,
    validate_selector_and_template,
)
from draemu.apiserver.registry.apps.replicaset import TEMPLATE_COLUMNS, template_cells
from draemu.apiserver.registry.core.common import immutable, nonnegative
from draemu.apiserver.registry.core.podspec_defaults import default_pod_template
from draemu.apiserver.registry.core.podtemplate import obsolete_template_field_errors
from draemu.apiserver.registry.strategy import (
    AGE,
    AGE_COLUMN,
    NAME_COLUMN,
    Column,
    Context,
    Strategy,
)

STRATEGY_TYPES = ["Recreate", "RollingUpdate"]


def _validate_strategy(strategy: Obj, path: Path) -> list[FieldError]:
    kind = strategy.get("type") or ""
    rolling = strategy.get("rollingUpdate")
    if kind == "Recreate":
        if rolling is not None:
            return [forbidden(path.child("rollingUpdate"),
                              "may not be specified when strategy `type` is 'Recreate'")]
        return []
    if kind != "RollingUpdate":
        return [not_supported(path, strategy, STRATEGY_TYPES)]
    p = path.child("rollingUpdate")
    if rolling is None:
        return [required(p, "this should be defaulted and never be nil")]
    unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
    errs = validate_int_or_percent(unavailable, p.child("maxUnavailable"))
    errs += validate_int_or_percent(surge, p.child("maxSurge"))
    if int_or_percent_value(unavailable) == 0 and int_or_percent_value(surge) == 0:
        errs.append(invalid(p.child("maxUnavailable"), unavailable,
                            "may not be 0 when `maxSurge` is 0"))
    if isinstance(unavailable, str) and int_or_percent_value(unavailable) > 100:
        errs.append(invalid(p.child("maxUnavailable"), unavailable,
                            "must not be greater than 100%"))
    return errs


class DeploymentStrategy(Strategy):
    group = "apps"
    kind = "Deployment"
    resource = "deployments"
    singular = "deployment"
    short_names = ("deploy",)
    categories = ("all",)
    versions = ("v1",)
    storage_version = "v1"
    subresources = frozenset({"status", "scale"})
    status_meta_reset = ("labels",)  # as upstream's deployment status strategy

    def default(self, obj: Obj, version: str) -> None:
        spec = obj.setdefault("spec", {})
        spec.setdefault("replicas", 1)
        strategy = spec.setdefault("strategy", {})
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.setdefault("rollingUpdate", {})
            rolling.setdefault("maxUnavailable", "25%")
            rolling.setdefault("maxSurge", "25%")
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
        default_pod_template(spec.get("template"), self.kind, version)

    def obsolete_field_errors(self, obj: Obj, version: str) -> list[FieldError]:
        return obsolete_template_field_errors(obj)

    def prepare_for_create(self, obj: Obj, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        obj["status"] = {}

    def validate(self, obj: Obj, ctx: Context) -> list[FieldError]:
        spec = obj.get("spec") or {}
        path = Path("spec")
        errs = nonnegative(spec.get("replicas"), path.child("replicas"))
        errs += validate_selector_and_template(spec, path, "deployment")
        errs += _validate_strategy(spec.get("strategy") or {}, path.child("strategy"))
        min_ready = spec.get("minReadySeconds") or 0
        errs += nonnegative(min_ready, path.child("minReadySeconds"))
        errs += nonnegative(spec.get("revisionHistoryLimit"), path.child("revisionHistoryLimit"))
        deadline = spec.get("progressDeadlineSeconds")
        if deadline is not None:
            errs += nonnegative(deadline, path.child("progressDeadlineSeconds"))
            if deadline <= min_ready:
                errs.append(invalid(path.child("progressDeadlineSeconds"), deadline,
                                    "must be greater than minReadySeconds"))
        return errs

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        return self.validate(new, ctx) + immutable(
            (new.get("spec") or {}).get("selector"), (old.get("spec") or {}).get("selector"),
            Path("spec").child("selector"))

    def validate_status_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        status = new.get("status") or {}
        path = Path("status")
        errs = validate_counters(status, ("observedGeneration", "replicas", "updatedReplicas",
                                          "readyReplicas", "availableReplicas",
                                          "unavailableReplicas", "terminatingReplicas",
                                          "collisionCount"), path)
        return errs + validate_replica_counts(
            status, ("updatedReplicas", "readyReplicas", "availableReplicas"), path)

    def table_columns(self) -> list[Column]:
        return [NAME_COLUMN,
                Column("Ready", description="Number of the pod with ready state"),
                Column("Up-to-date", description="Total number of non-terminated pods "
                       "targeted by this deployment that have the desired template spec."),
                Column("Available", description="Total number of available non-terminating "
                       "pods (ready for at least minReadySeconds) targeted by this deployment."),
                AGE_COLUMN,
                *TEMPLATE_COLUMNS]

    def table_row(self, obj: Obj) -> list[Any]:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        ready = f"{status.get('readyReplicas') or 0}/{spec.get('replicas') or 0}"
        return [(obj.get("metadata") or {}).get("name", ""), ready,
                status.get("updatedReplicas") or 0, status.get("availableReplicas") or 0, AGE,
                *template_cells(obj)]


STRATEGIES = [DeploymentStrategy()]
