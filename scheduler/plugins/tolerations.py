"""core/v1 taint and toleration matching (shared by TaintToleration and NodeUnschedulable)."""

from __future__ import annotations


def tolerates(toleration: dict, taint: dict) -> bool:
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def tolerated(tolerations: list[dict], taint: dict) -> bool:
    return any(tolerates(t, taint) for t in tolerations)
