"""Kubernetes' quantity library (quantity(), isQuantity(), arithmetic and comparisons;
the comparisons also serve the semver library)."""

from __future__ import annotations

from fractions import Fraction

from draemu.cel import cost as costs
from draemu.cel import estimatecalls as estimates
from draemu.cel.errors import CELRuntimeError
from draemu.cel.library.registry import register, want
from draemu.cel.values import (
    QuantityValue,
    Semver,
    no_overload,
)


@register("quantity", False, (1,), "quantity",
          cost=costs.strings_traversal, estimate=estimates.arg_scan(estimates.STRING_FACTOR))
def quantity(s: str) -> QuantityValue:
    want("quantity", s, str)
    return QuantityValue.parse(s)


@register("isQuantity", False, (1,), "bool",
          cost=costs.strings_traversal, estimate=estimates.arg_scan(estimates.STRING_FACTOR))
def is_quantity(s: str) -> bool:
    want("isQuantity", s, str)
    try:
        QuantityValue.parse(s)
    except CELRuntimeError:
        return False
    return True


def ordered(name: str, a: object, b: object) -> int:
    if isinstance(a, QuantityValue) and isinstance(b, QuantityValue):
        return (a.value > b.value) - (a.value < b.value)
    if isinstance(a, Semver) and isinstance(b, Semver):
        return a.compare(b)
    raise no_overload(name, a, b)


_ORDERED = ("quantity", "semver")


@register("isGreaterThan", True, (1,), "bool", _ORDERED, cost=1, estimate=estimates.fixed_rule(1))
def is_greater_than(a: object, b: object) -> bool:
    return ordered("isGreaterThan", a, b) > 0


@register("isLessThan", True, (1,), "bool", _ORDERED, cost=1, estimate=estimates.fixed_rule(1))
def is_less_than(a: object, b: object) -> bool:
    return ordered("isLessThan", a, b) < 0


@register("compareTo", True, (1,), "int", _ORDERED, cost=1, estimate=estimates.fixed_rule(1))
def compare_to(a: object, b: object) -> int:
    return ordered("compareTo", a, b)


def _quantity_operand(name: str, q: object, other: object) -> tuple[Fraction, Fraction]:
    if not isinstance(q, QuantityValue):
        raise no_overload(name, q, other)
    if isinstance(other, QuantityValue):
        return q.value, other.value
    if isinstance(other, int) and not isinstance(other, bool):
        return q.value, Fraction(other)
    raise no_overload(name, q, other)


@register("add", True, (1,), "quantity", ("quantity",), cost=1, estimate=estimates.fixed_rule(1))
def q_add(q: object, other: object) -> QuantityValue:
    a, b = _quantity_operand("add", q, other)
    return QuantityValue(a + b)


@register("sub", True, (1,), "quantity", ("quantity",), cost=1, estimate=estimates.fixed_rule(1))
def q_sub(q: object, other: object) -> QuantityValue:
    a, b = _quantity_operand("sub", q, other)
    return QuantityValue(a - b)


@register("asInteger", True, (0,), "int", ("quantity",), cost=1, estimate=estimates.fixed_rule(1))
def as_integer(q: object) -> int:
    want("asInteger", q, QuantityValue)
    v = q.value  # type: ignore[union-attr]
    if v.denominator != 1 or not -(2**63) <= v < 2**63:
        raise CELRuntimeError("cannot convert value to integer")
    return int(v)


@register("asApproximateFloat", True, (0,), "double", ("quantity",),
          cost=1, estimate=estimates.fixed_rule(1))
def as_float(q: object) -> float:
    want("asApproximateFloat", q, QuantityValue)
    return float(q.value)  # type: ignore[union-attr]


@register("sign", True, (0,), "int", ("quantity",), cost=1, estimate=estimates.fixed_rule(1))
def sign(q: object) -> int:
    want("sign", q, QuantityValue)
    v = q.value  # type: ignore[union-attr]
    return (v > 0) - (v < 0)


@register("isInteger", True, (0,), "bool", ("quantity",), cost=1, estimate=estimates.fixed_rule(1))
def is_integer(q: object) -> bool:
    want("isInteger", q, QuantityValue)
    v = q.value  # type: ignore[union-attr]
    return v.denominator == 1 and -(2**63) <= v < 2**63
