"""Validation of a pod template (`spec.template` of Deployments, ReplicaSets and Jobs),
as upstream's ValidatePodTemplateSpec does it."""

from __future__ import annotations

from draemu.api.errors import FieldError, Path, forbidden
from draemu.api.types import Obj
from draemu.apiserver.registry.core.podspec_validation import (
    Options,
    obsolete_claim_source_errors,
    validate_pod_spec,
)
from draemu.apiserver.registry.meta import validate_annotations, validate_labels


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
