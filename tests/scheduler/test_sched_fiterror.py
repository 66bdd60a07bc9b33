"""The FailedScheduling summary: "0/N nodes are available: ..." as upstream formats it."""

from __future__ import annotations

import pytest

from draemu.scheduler.fiterror import fit_error_message
from draemu.scheduler.framework import Status

pytestmark = pytest.mark.unit


def test_histogram_is_counted_and_sorted():
    statuses = {
        "a": Status.unschedulable("node(s) didn't match Pod's node affinity/selector"),
        "b": Status.unschedulable("Insufficient cpu", "Insufficient memory"),
        "c": Status.unschedulable("node(s) didn't match Pod's node affinity/selector"),
    }
    assert fit_error_message(3, node_statuses=statuses) == (
        "0/3 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, "
        "2 node(s) didn't match Pod's node affinity/selector.")


def test_prefilter_message_replaces_the_histogram():
    assert fit_error_message(5, pre_filter='resourceclaim "c" not found') == \
        '0/5 nodes are available: resourceclaim "c" not found.'


def test_nodes_excluded_by_prefilter_count_with_the_absent_reason():
    statuses = {"a": Status.unschedulable("Insufficient cpu")}
    absent = Status.unschedulable("node(s) didn't satisfy plugin(s) [NodeAffinity]")
    assert fit_error_message(3, node_statuses=statuses, absent=absent) == (
        "0/3 nodes are available: 1 Insufficient cpu, "
        "2 node(s) didn't satisfy plugin(s) [NodeAffinity].")
