"""meta/v1 LabelSelector matching (`matchLabels` and `matchExpressions`)."""

from __future__ import annotations

from draemu.api.types import Obj


def is_empty(selector: Obj | None) -> bool:
    return not selector or not (selector.get("matchLabels") or selector.get("matchExpressions"))


def matches(selector: Obj | None, labels: dict[str, str] | None) -> bool:
    """Whether `labels` satisfy the selector; an empty selector matches everything.
    (Callers for whom a missing selector selects nothing check for None first.)"""
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
