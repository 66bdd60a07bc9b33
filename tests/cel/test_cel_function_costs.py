"""A CEL function declares what a call costs where it is registered (issue 29: one place
to add a CEL function): the Kubernetes library's cost and estimate by name."""

from __future__ import annotations

import pytest

from draemu.cel import cost, estimatecalls
from draemu.cel.library import FUNCTIONS
from draemu.cel.library.registry import register

pytestmark = pytest.mark.unit


def test_every_declared_cost_has_its_estimate_and_names_a_function():
    names = {name for name, _member in FUNCTIONS}
    assert set(cost.KUBERNETES_COSTS) == set(estimatecalls.KUBERNETES_ESTIMATES)
    assert set(cost.KUBERNETES_COSTS) <= names


def test_a_cost_without_its_estimate_is_refused():
    with pytest.raises(ValueError, match="declare both cost and estimate"):
        register("test.halfDeclared", False, (1,), "int", cost=1)


def test_one_name_declared_twice_differently_is_refused():
    with pytest.raises(ValueError, match="declared already, differently"):
        register("lowerAscii", True, (0,), "string", ("bytes",), cost=5,
                 estimate=estimatecalls.fixed_rule(5))


def test_the_declared_rules_are_the_ones_charged():
    assert cost.call_cost("lowerAscii", None, ["x" * 100]) == 10
    assert cost.call_cost("check", None, [None, "get"]) == 350_000
    assert cost.call_cost("isGreaterThan", None, [None, None]) == 1
