"""Device taints and the tolerations of a request (DRADeviceTaints)."""

from __future__ import annotations

from typing import Any

BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


def tolerates(toleration: dict[str, Any], taint: dict[str, Any]) -> bool:
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    operator = toleration.get("operator") or "Equal"
    if key and key != taint.get("key"):
        return False
    if operator == "Exists":
        return True
    if operator == "Equal":
        return bool(key) and (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def untolerated(taints: list[dict[str, Any]], tolerations: list[dict[str, Any]]
                ) -> dict[str, Any] | None:
    """The first taint that blocks allocation and no toleration tolerates."""
    for taint in taints:
        if taint.get("effect") in BLOCKING_EFFECTS and not any(
                tolerates(t, taint) for t in tolerations):
            return taint
    return None


def describe(taint: dict[str, Any]) -> str:
    value = taint.get("value")
    return f"{taint.get('key', '')}{'=' + value if value else ''}:{taint.get('effect', '')}"
