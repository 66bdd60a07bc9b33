"""The framework runner: extension point order, skipping, and failing plugins."""

from __future__ import annotations

import pytest
from sched_helpers import node, pod

from draemu.scheduler.framework import (
    BindPlugin,
    Code,
    CycleState,
    FilterPlugin,
    Framework,
    PostFilterPlugin,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
    Status,
)
from draemu.scheduler.nodeinfo import NodeInfo

pytestmark = pytest.mark.unit


class Narrowing(PreFilterPlugin):
    name = "Narrowing"

    def events(self):
        return []

    def pre_filter(self, state, p):
        return Status(), PreFilterResult({"a", "b"})


class Skipping(PreFilterPlugin, FilterPlugin):
    name = "Skipping"

    def events(self):
        return []

    def pre_filter(self, state, p):
        return Status(Code.SKIP), None

    def filter(self, state, p, n):
        raise AssertionError("filter of a skipped plugin must not run")


class TimingOut(PreBindPlugin):
    name = "TimingOut"

    def events(self):
        return []

    async def pre_bind(self, state, p, node_name):
        raise TimeoutError("apiserver too slow")


def test_prefilter_restrictions_intersect_and_name_their_plugins():
    class Other(Narrowing):
        name = "Other"

        def pre_filter(self, state, p):
            return Status(), PreFilterResult({"b", "c"})

    state = CycleState()
    status, result = Framework([Narrowing(), Other()]).run_pre_filter(state, pod("p"))
    assert status.ok and result.node_names == {"b"}
    assert state.restricted_by == {"Narrowing", "Other"}


def test_plugin_skipped_in_prefilter_is_not_filtered():
    fw = Framework([Skipping()])
    state = CycleState()
    fw.run_pre_filter(state, pod("p"))
    assert fw.run_filter(state, pod("p"), NodeInfo(node("n"))).ok


async def test_exception_in_prebind_becomes_an_error_status_of_the_plugin():
    status = await Framework([TimingOut()]).run_pre_bind(CycleState(), pod("p"), "n")
    assert status.code == Code.ERROR
    assert status.plugin == "TimingOut"
    assert status.message == "TimeoutError: apiserver too slow"


class Verdict(PostFilterPlugin):
    """A PostFilter plugin answering a fixed status."""

    def __init__(self, name: str, status: Status) -> None:
        self.name = name
        self._status = status

    def events(self):
        return []

    async def post_filter(self, state, p, statuses):
        return Status(self._status.code, list(self._status.reasons))


async def test_postfilter_joins_the_reasons_of_plugins_that_could_not_help():
    fw = Framework([Verdict("A", Status.unschedulable("a")), Verdict("S", Status(Code.SKIP)),
                    Verdict("B", Status.unschedulable("b"))])
    status = await fw.run_post_filter(CycleState(), pod("p"), {})
    assert (status.code, status.message, status.plugin) == (Code.UNSCHEDULABLE, "a, b", "A")


async def test_postfilter_stops_at_an_unresolvable_verdict():
    fw = Framework([Verdict("A", Status.unschedulable("a", resolvable=False)),
                    Verdict("B", Status.unschedulable("b"))])
    status = await fw.run_post_filter(CycleState(), pod("p"), {})
    assert (status.code, status.message, status.plugin) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "a", "A")


def test_deferred_reason_is_computed_once_and_only_when_asked_for():
    calls = []

    def explain() -> str:
        calls.append(1)
        return "cannot allocate all claims: no device left"

    status = Status(Code.UNSCHEDULABLE, ["cannot allocate all claims"], detail=explain)
    assert calls == []
    assert status.message == status.message == "cannot allocate all claims: no device left"
    assert calls == [1]


async def test_successful_bind_leaves_the_shared_success_status_untouched():
    from draemu.scheduler.framework import SUCCESS

    class Binder(BindPlugin):
        name = "Binder"

        def events(self):
            return []

        async def bind(self, state, p, node_name):
            return SUCCESS

    status = await Framework([Binder()]).run_bind(CycleState(), pod("p"), "n")
    assert status.ok and SUCCESS.plugin == ""


class ByName(ScorePlugin):
    """Scores a node by the last digit of its name."""

    name = "ByName"
    weight = 2

    def events(self):
        return []

    def score(self, state, p, n):
        return int(n.name[-1])


class NeverScores(PreScorePlugin):
    name = "NeverScores"

    def events(self):
        return []

    def pre_score(self, state, p, feasible):
        return True  # skip

    def score(self, state, p, n):
        raise AssertionError("a plugin that skipped must not score")


def test_score_breakdown_gives_each_plugins_weighted_share_and_leaves_out_skipped_ones():
    class Flat(ByName):
        name = "Flat"
        weight = 1

        def score(self, state, p, n):
            return 10

    fw = Framework([ByName(), Flat(), NeverScores()])
    nodes = [NodeInfo(node("n1")), NodeInfo(node("n3"))]
    breakdown: dict[str, dict[str, int]] = {}
    totals = fw.run_score(CycleState(), pod("p"), nodes, breakdown)
    assert breakdown == {"ByName": {"n1": 2, "n3": 6}, "Flat": {"n1": 10, "n3": 10}}
    assert totals == {"n1": 12, "n3": 16}
