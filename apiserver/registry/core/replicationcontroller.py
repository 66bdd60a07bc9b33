"""core/v1 ReplicationController (+status, +scale): the predecessor of ReplicaSet, with
a map selector that defaults to the template's labels."""

from __future__ import annotations

from draemu.api.errors import FieldError, Path, required
from draemu.apiserver.registry.apps.common import (
    validate_counters,
    validate_replica_counts,
    validate_template_for_replicas,
)
from draemu.apiserver.registry.core.common import container_cells, nonnegative
from draemu.apiserver.registry.core.podspec_defaults import default_pod_template
from draemu.apiserver.registry.core.podtemplate import obsolete_template_field_errors
from draemu.apiserver.registry.core.service import format_labels
from draemu.apiserver.registry.generic import AGE_COLUMN, NAME, GenericStrategy, Printed, get_path
from draemu.apiserver.registry.meta import validate_labels
from draemu.apiserver.registry.strategy import Column, Context, Obj


def _containers(obj: Obj) -> list[Obj]:
    return get_path(obj, "spec.template.spec.containers") or []


class ReplicationControllerStrategy(GenericStrategy):
    kind = "ReplicationController"
    resource = "replicationcontrollers"
    singular = "replicationcontroller"
    short_names = ("rc",)
    categories = ("all",)
    versions = ("v1",)
    storage_version = "v1"
    subresources = frozenset({"status", "scale"})
    status_meta_reset = ()
    field_selectors = {"status.replicas": lambda o: get_path(o, "status.replicas") or 0}
    printer = (
        NAME,
        Printed(Column("Desired", type="integer", description="Replicas is the number of "
                       "desired replicas."), lambda o: get_path(o, "spec.replicas") or 0),
        Printed(Column("Current", type="integer", description="Replicas is the most recently "
                       "observed number of replicas."),
                lambda o: get_path(o, "status.replicas") or 0),
        Printed(Column("Ready", type="integer", description="The number of ready replicas "
                       "for this replication controller."),
                lambda o: get_path(o, "status.readyReplicas") or 0),
        AGE_COLUMN,
        Printed(Column("Containers", priority=1, description="Names of each container in the "
                       "template."), lambda o: container_cells(_containers(o))[0]),
        Printed(Column("Images", priority=1, description="Images referenced by each container "
                       "in the template."), lambda o: container_cells(_containers(o))[1]),
        Printed(Column("Selector", priority=1, description="Selector is a label query over "
                       "pods that should match the Replicas count."),
                lambda o: format_labels(get_path(o, "spec.selector"))),
    )

    def default(self, obj: Obj, version: str) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            obj["spec"] = spec = {}
        template = spec.get("template")
        labels = get_path(template or {}, "metadata.labels") if isinstance(template,
                                                                          dict) else None
        if labels:
            if not spec.get("selector"):
                spec["selector"] = dict(labels)
            meta = obj.setdefault("metadata", {})
            if not meta.get("labels"):
                meta["labels"] = dict(labels)
        spec.setdefault("replicas", 1)
        spec.setdefault("minReadySeconds", 0)
        default_pod_template(template, self.kind, version)

    def obsolete_field_errors(self, obj: Obj, version: str) -> list[FieldError]:
        return obsolete_template_field_errors(obj)

    def prepare_for_create(self, obj: Obj, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        obj["status"] = {"replicas": 0}

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        spec = obj.get("spec") or {}
        path = Path("spec")
        errs = nonnegative(spec.get("replicas"), path.child("replicas"))
        errs += nonnegative(spec.get("minReadySeconds"), path.child("minReadySeconds"))
        selector = spec.get("selector") or {}
        if not selector:
            errs.append(required(path.child("selector")))
        else:
            errs += validate_labels(selector, path.child("selector"))
        template = spec.get("template")
        if template is None:
            errs.append(required(path.child("template")))
        else:
            errs += validate_template_for_replicas(template, {"matchLabels": selector},
                                                   path.child("template"))
        return errs

    def validate_status_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        status = new.get("status") or {}
        path = Path("status")
        errs = validate_counters(status, ("replicas", "fullyLabeledReplicas", "readyReplicas",
                                          "availableReplicas", "observedGeneration"), path)
        return errs + validate_replica_counts(
            status, ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"), path)



STRATEGIES = [ReplicationControllerStrategy()]
