"""Device taints and the tolerations of a request (DRADeviceTaints)."""

from __future__ import annotations

from typing import Any

from draemu.api.meta import toleration_matches

BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


def untolerated(taints: list[dict[str, Any]], tolerations: list[dict[str, Any]]
                ) -> dict[str, Any] | None:
    """The first taint that blocks allocation and no toleration tolerates."""
    for taint in taints:
        if taint.get("effect") in BLOCKING_EFFECTS and not any(
                toleration_matches(t, taint) for t in tolerations):
            return taint
    return None


def describe(taint: dict[str, Any]) -> str:
    value = taint.get("value")
    return f"{taint.get('key', '')}{'=' + value if value else ''}:{taint.get('effect', '')}"
