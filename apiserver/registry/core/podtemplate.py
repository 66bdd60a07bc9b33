"""Validation of a pod template (`spec.template` of Deployments, ReplicaSets and Jobs),
as upstream's ValidatePodTemplateSpec does it, and the core/v1 PodTemplate kind."""

from __future__ import annotations

from draemu.api.errors import FieldError, Path, forbidden
from draemu.api.types import Obj
from draemu.apiserver.registry.core.common import container_cells
from draemu.apiserver.registry.core.podspec_defaults import default_pod_template
from draemu.apiserver.registry.core.podspec_validation import (
    Options,
    obsolete_claim_source_errors,
    validate_pod_spec,
)
from draemu.apiserver.registry.core.service import format_labels
from draemu.apiserver.registry.generic import NAME, GenericStrategy, Printed, get_path
from draemu.apiserver.registry.meta import validate_annotations, validate_labels
from draemu.apiserver.registry.strategy import Column, Context


def validate_pod_template(template: Obj, path: Path) -> list[FieldError]:
    meta = template.get("metadata") or {}
    spec = template.get("spec") or {}
    # Upstream reports template labels at `<path>.labels`, without `.metadata`.
    errs = validate_labels(meta.get("labels"), path.child("labels"))
    errs += validate_annotations(meta.get("annotations"), path.child("annotations"))
    errs += validate_pod_spec(spec, path.child("spec"), Options(is_pod=False))
    if spec.get("ephemeralContainers"):
        errs.append(forbidden(path.child("spec", "ephemeralContainers"),
                              "ephemeral containers not allowed in pod template"))
    return errs


def obsolete_template_field_errors(obj: Obj) -> list[FieldError]:
    """Obsolete pod-spec fields in `spec.template` (see Strategy.obsolete_field_errors)."""
    # Runs before the body's types are checked: any part may be of the wrong type.
    spec = obj.get("spec")
    template = spec.get("template") if isinstance(spec, dict) else None
    if not isinstance(template, dict):
        return []
    return obsolete_claim_source_errors(template.get("spec"),
                                        Path("spec").child("template", "spec"))


def _template_containers(obj: Obj) -> list[Obj]:
    return get_path(obj, "template.spec.containers") or []


class PodTemplateStrategy(GenericStrategy):
    """core/v1 PodTemplate: a named pod template, validated as ValidatePodTemplate does
    (its metadata, then `template` as a pod template spec); generation starts at 1 and
    grows with each change of the template."""

    kind = "PodTemplate"
    resource = "podtemplates"
    singular = "podtemplate"
    versions = ("v1",)
    storage_version = "v1"
    printer = (
        NAME,
        Printed(Column("Containers", description="Names of each container in the "
                       "template."), lambda o: container_cells(_template_containers(o))[0]),
        Printed(Column("Images", description="Images referenced by each container in the "
                       "template."), lambda o: container_cells(_template_containers(o))[1]),
        Printed(Column("Pod Labels", description="The labels for the pod template."),
                lambda o: format_labels(get_path(o, "template.metadata.labels"))),
    )

    def default(self, obj: Obj, version: str) -> None:
        template = obj.get("template")
        if template is None:
            obj["template"] = template = {}
        default_pod_template(template, self.kind, version)

    def obsolete_field_errors(self, obj: Obj, version: str) -> list[FieldError]:
        template = obj.get("template")
        if not isinstance(template, dict):
            return []
        return obsolete_claim_source_errors(template.get("spec"),
                                            Path("template").child("spec"))

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        template = obj.get("template")
        return validate_pod_template(template if isinstance(template, dict) else {},
                                     Path("template"))


STRATEGIES = [PodTemplateStrategy()]
