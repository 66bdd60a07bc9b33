"""Label selectors (metav1.LabelSelector) evaluated against label maps."""

from __future__ import annotations

from typing import Any


def matches(selector: dict[str, Any] | None, labels: dict[str, str] | None) -> bool:
    """Whether `labels` satisfy `selector`. An empty selector matches everything, a
    missing one (None) nothing — as the workload controllers treat them."""
    if selector is None:
        return False
    labels = labels or {}
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True
