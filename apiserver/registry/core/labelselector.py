"""meta/v1 LabelSelector: validation with upstream's messages, and matching labels."""

from __future__ import annotations

from draemu.api.errors import FieldError, Path, forbidden, invalid, required
from draemu.api.labels import is_empty, matches
from draemu.api.types import Obj
from draemu.apiserver.registry.core.common import label_value, qualified_name
from draemu.apiserver.registry.meta import validate_labels

__all__ = ["convertible", "is_empty", "matches", "validate_label_selector"]


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
