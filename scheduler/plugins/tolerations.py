"""core/v1 taint and toleration matching (shared by TaintToleration and NodeUnschedulable)."""

from __future__ import annotations

from draemu.api.meta import toleration_matches


def tolerated(tolerations: list[dict], taint: dict) -> bool:
    return any(toleration_matches(t, taint) for t in tolerations)
