"""meta/v1 LabelSelector: validation with upstream's messages, and matching labels."""

from __future__ import annotations

from typing import Any

from draemu.api.errors import FieldError, Path, forbidden, invalid, required
from draemu.apiserver.registry.core.common import label_value, qualified_name
from draemu.apiserver.registry.meta import validate_labels

Obj = dict[str, Any]


def validate_label_selector(selector: Obj | None, path: Path) -> list[FieldError]:
    if selector is None:
        return []
    errs = validate_labels(selector.get("matchLabels"), path.child("matchLabels"))
    for i, req in enumerate(selector.get("matchExpressions") or []):
        p = path.child("matchExpressions").index(i)
        operator, values = req.get("operator") or "", req.get("values") or []
        if operator in ("In", "NotIn"):
            if not values:
                errs.append(required(p.child("values"),
                                     "must be specified when `operator` is 'In' or 'NotIn'"))
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                errs.append(forbidden(p.child("values"), "may not be specified when `operator` "
                                      "is 'Exists' or 'DoesNotExist'"))
        else:
            errs.append(invalid(p.child("operator"), operator, "not a valid selector operator"))
        errs += qualified_name(req.get("key") or "", p.child("key"))
        for j, value in enumerate(values):
            errs += label_value(value, p.child("values").index(j))
    return errs


def convertible(selector: Obj | None) -> bool:
    """Whether the selector converts to a labels.Selector (LabelSelectorAsSelector):
    a malformed one gives "invalid label selector" and matches nothing."""
    return selector is None or not validate_label_selector(selector, Path("selector"))


def is_empty(selector: Obj | None) -> bool:
    return not selector or not (selector.get("matchLabels") or selector.get("matchExpressions"))


def matches(selector: Obj | None, labels: dict[str, str] | None) -> bool:
    """Whether `labels` satisfy the selector; an empty selector matches everything."""
    labels = labels or {}
    if not selector:
        return True
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for req in selector.get("matchExpressions") or []:
        key, operator, values = req.get("key"), req.get("operator"), req.get("values") or []
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True
