"""apps/v1 ReplicaSet (+status, +scale)."""

from __future__ import annotations

from typing import Any

from draemu.api.errors import FieldError, Path
from draemu.api.types import Obj
from draemu.apiserver.registry.apps.common import (
    validate_counters,
    validate_replica_counts,
    validate_selector_and_template,
)
from draemu.apiserver.registry.core.common import (
    container_cells,
    immutable,
    label_selector_string,
    nonnegative,
)
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

TEMPLATE_COLUMNS = [
    Column("Containers", priority=1, description="Names of each container in the template."),
    Column("Images", priority=1, description="Images referenced by each container in the "
           "template."),
    Column("Selector", priority=1, description="Label selector for pods. Existing ReplicaSets "
           "whose pods are selected by this will be the ones affected by this deployment."),
]


def template_cells(obj: Obj) -> list[Any]:
    spec = obj.get("spec") or {}
    names, images = container_cells(((spec.get("template") or {}).get("spec") or {})
                                    .get("containers") or [])
    return [names, images, label_selector_string(spec.get("selector"))]


class ReplicaSetStrategy(Strategy):
    group = "apps"
    kind = "ReplicaSet"
    resource = "replicasets"
    singular = "replicaset"
    short_names = ("rs",)
    categories = ("all",)
    versions = ("v1",)
    storage_version = "v1"
    subresources = frozenset({"status", "scale"})
    status_meta_reset = ()  # upstream resets only the spec

    def default(self, obj: Obj, version: str) -> None:
        spec = obj.setdefault("spec", {})
        spec.setdefault("replicas", 1)
        default_pod_template(spec.get("template"), self.kind, version)

    def obsolete_field_errors(self, obj: Obj, version: str) -> list[FieldError]:
        return obsolete_template_field_errors(obj)

    def prepare_for_create(self, obj: Obj, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        obj["status"] = {"replicas": 0}

    def validate(self, obj: Obj, ctx: Context) -> list[FieldError]:
        spec = obj.get("spec") or {}
        path = Path("spec")
        errs = nonnegative(spec.get("replicas"), path.child("replicas"))
        errs += nonnegative(spec.get("minReadySeconds"), path.child("minReadySeconds"))
        return errs + validate_selector_and_template(spec, path, "deployment")

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        return self.validate(new, ctx) + immutable(
            (new.get("spec") or {}).get("selector"), (old.get("spec") or {}).get("selector"),
            Path("spec").child("selector"))

    def validate_status_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        status = new.get("status") or {}
        path = Path("status")
        errs = validate_counters(status, ("replicas", "fullyLabeledReplicas", "readyReplicas",
                                          "availableReplicas", "observedGeneration",
                                          "terminatingReplicas"), path)
        return errs + validate_replica_counts(
            status, ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"), path)

    def selectable_fields(self, obj: Obj) -> dict[str, str]:
        return {"status.replicas": str((obj.get("status") or {}).get("replicas") or 0)}

    def table_columns(self) -> list[Column]:
        return [NAME_COLUMN,
                Column("Desired", type="integer", description="Replicas is the number of "
                       "desired pods."),
                Column("Current", type="integer", description="Replicas is the most recently "
                       "observed number of replicas."),
                Column("Ready", type="integer", description="The number of ready replicas for "
                       "this replica set."),
                AGE_COLUMN, *TEMPLATE_COLUMNS]

    def table_row(self, obj: Obj) -> list[Any]:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        return [(obj.get("metadata") or {}).get("name", ""), spec.get("replicas") or 0,
                status.get("replicas") or 0, status.get("readyReplicas") or 0, AGE,
                *template_cells(obj)]


STRATEGIES = [ReplicaSetStrategy()]
