"""core/v1 NodeSelector validation, shared by pods' node affinity and the resource.k8s.io
kinds (ResourceSlice and device node selectors, a claim's allocation): upstream's
ValidateNodeSelector, ValidateNodeSelectorTerm, ValidateNodeSelectorRequirement and
ValidateNodeFieldSelectorRequirement, with their messages."""

from __future__ import annotations

from typing import Any

from draemu.api.errors import FieldError, Path, forbidden, invalid, required
from draemu.api.types import Obj
from draemu.apiserver.registry.core.common import dns_subdomain, label_value, qualified_name


def _obj(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _lst(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def validate_node_selector(selector: Obj, path: Path, *, label_values: bool = True
                           ) -> list[FieldError]:
    """A required NodeSelector: at least one term. `label_values` checks the values of
    `matchExpressions` as label values (off only for a pod whose stored required affinity
    already had invalid ones, upstream's AllowInvalidLabelValueInRequiredNodeAffinity)."""
    terms_path = path.child("nodeSelectorTerms")
    terms = _lst(selector.get("nodeSelectorTerms"))
    if not terms:
        return [required(terms_path, "must have at least one node selector term")]
    errs: list[FieldError] = []
    for i, term in enumerate(terms):
        errs += validate_node_selector_term(_obj(term), terms_path.index(i),
                                            label_values=label_values)
    return errs


def validate_node_selector_term(term: Obj, path: Path, *, label_values: bool = True
                                ) -> list[FieldError]:
    errs: list[FieldError] = []
    for j, req in enumerate(_lst(term.get("matchExpressions"))):
        errs += validate_node_selector_requirement(
            _obj(req), path.child("matchExpressions").index(j), label_values=label_values)
    for j, req in enumerate(_lst(term.get("matchFields"))):
        errs += validate_node_field_selector_requirement(_obj(req),
                                                         path.child("matchFields").index(j))
    return errs


def validate_node_selector_requirement(req: Obj, path: Path, *, label_values: bool = True
                                       ) -> list[FieldError]:
    errs: list[FieldError] = []
    operator, values = req.get("operator") or "", _lst(req.get("values"))
    if operator in ("In", "NotIn"):
        if not values:
            errs.append(required(path.child("values"),
                                 "must be specified when `operator` is 'In' or 'NotIn'"))
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            errs.append(forbidden(path.child("values"), "may not be specified when `operator` "
                                  "is 'Exists' or 'DoesNotExist'"))
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(required(path.child("values"), "must be specified single value when "
                                 "`operator` is 'Lt' or 'Gt'"))
    else:
        errs.append(invalid(path.child("operator"), operator, "not a valid selector operator"))
    errs += qualified_name(req.get("key") or "", path.child("key"))
    if label_values:
        for i, value in enumerate(values):
            errs += label_value(str(value), path.child("values").index(i))
    return errs


def validate_node_field_selector_requirement(req: Obj, path: Path) -> list[FieldError]:
    """`matchFields`: only `metadata.name`, In or NotIn one node name."""
    errs: list[FieldError] = []
    operator, values = req.get("operator") or "", _lst(req.get("values"))
    if operator in ("In", "NotIn"):
        if len(values) != 1:
            errs.append(required(path.child("values"), "must be only one value when `operator` "
                                 "is 'In' or 'NotIn' for node field selector"))
    else:
        errs.append(invalid(path.child("operator"), operator, "not a valid selector operator"))
    if req.get("key") != "metadata.name":
        errs.append(invalid(path.child("key"), req.get("key") or "",
                            "not a valid field selector key"))
    else:
        for i, value in enumerate(values):
            errs += dns_subdomain(str(value), path.child("values").index(i))
    return errs


def has_invalid_label_values(selector: Obj | None) -> bool:
    """Whether a stored required selector already holds values that are no label values
    (then an update may keep them, as upstream allows)."""
    for term in _lst(_obj(selector).get("nodeSelectorTerms")):
        for req in _lst(_obj(term).get("matchExpressions")):
            for i, value in enumerate(_lst(_obj(req).get("values"))):
                if label_value(str(value), Path("values").index(i)):
                    return True
    return False
