"""The "0/N nodes are available: ..." message of a pod that fits no node (FitError)."""

from __future__ import annotations

from collections import Counter

from draemu.scheduler.framework import Status

NO_NODE_AVAILABLE = "0/{} nodes are available"
NO_NODES = "no nodes available to schedule pods"


def fit_error_message(num_all_nodes: int, *, pre_filter: str = "",
                      node_statuses: dict[str, Status] | None = None,
                      absent: Status | None = None) -> str:
    """Upstream's format: the PreFilter message, or a sorted histogram of the Filter reasons
    ("1 Insufficient cpu, 2 node(s) didn't match Pod's node affinity/selector"). Nodes
    without a status of their own (`absent`) count with its reasons."""
    message = NO_NODE_AVAILABLE.format(num_all_nodes) + ":"
    if pre_filter:
        return f"{message} {pre_filter}."
    statuses = node_statuses or {}
    reasons: Counter[str] = Counter()
    for status in statuses.values():
        reasons.update(status.resolved())
    missing = num_all_nodes - len(statuses)
    if absent is not None and missing > 0:
        for reason in absent.resolved():
            reasons[reason] += missing
    histogram = sorted(f"{count} {reason}" for reason, count in reasons.items())
    if histogram:
        message += f" {', '.join(histogram)}."
    return message
