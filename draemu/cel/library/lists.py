"""Kubernetes' lists library and cel-go's lists extension."""

from __future__ import annotations

import functools
import itertools
from fractions import Fraction

from draemu.cel import cost as costs
from draemu.cel import estimatecalls as estimates
from draemu.cel.errors import CELRuntimeError
from draemu.cel.library.quantity import ordered
from draemu.cel.library.registry import register, want
from draemu.cel.values import (
    NONE,
    OptionalValue,
    QuantityValue,
    Semver,
    check_int,
    compare,
    equal,
    is_number,
    no_overload,
)


def as_list(name: str, v: object) -> list:
    if not isinstance(v, (list, tuple)):
        raise no_overload(name, v)
    return list(v)


@register("isSorted", True, (0,), "bool", ("list",),
          cost=costs.traversal_first, estimate=estimates.traversal_rule("isSorted"))
def is_sorted(v: object) -> bool:
    items = as_list("isSorted", v)
    return all(_order(a, b) <= 0 for a, b in itertools.pairwise(items))


def _order(a: object, b: object) -> int:
    if isinstance(a, (QuantityValue, Semver)):
        return ordered("compare", a, b)
    return compare(a, b, "_<_")


@register("sum", True, (0,), "dyn", ("list",),
          cost=costs.traversal_first, estimate=estimates.traversal_rule("sum"))
def list_sum(v: object) -> object:
    items = as_list("sum", v)
    if not items:
        return 0
    if all(isinstance(x, QuantityValue) for x in items):
        return QuantityValue(sum((x.value for x in items), Fraction(0)))
    for x in items:
        if not is_number(x):
            raise no_overload("sum", x)
    total = sum(items)
    return check_int(total) if isinstance(total, int) else total


def _extreme(name: str, v: object, sign_: int) -> object:
    items = as_list(name, v)
    if not items:
        raise CELRuntimeError(f"{name} called on empty list")
    best = items[0]
    for x in items[1:]:
        if _order(x, best) * sign_ > 0:
            best = x
    return best


@register("min", True, (0,), "dyn", ("list",),
          cost=costs.traversal_first, estimate=estimates.traversal_rule("min"))
def list_min(v: object) -> object:
    return _extreme("min", v, -1)


@register("max", True, (0,), "dyn", ("list",),
          cost=costs.traversal_first, estimate=estimates.traversal_rule("max"))
def list_max(v: object) -> object:
    return _extreme("max", v, 1)


@register("distinct", True, (0,), "list", ("list",))
def distinct(v: object) -> list:
    out: list = []
    for x in as_list("distinct", v):
        if not any(equal(x, y) for y in out):
            out.append(x)
    return out


@register("flatten", True, (0, 1), "list", ("list",))
def flatten(v: object, depth: int = 1) -> list:
    if depth < 0:
        raise CELRuntimeError("level must be non-negative")
    out: list = []
    for x in as_list("flatten", v):
        if isinstance(x, (list, tuple)) and depth > 0:
            out.extend(flatten(x, depth - 1))
        else:
            out.append(x)
    return out


@register("slice", True, (2,), "list", ("list",))
def list_slice(v: object, start: int, end: int) -> list:
    items = as_list("slice", v)
    if not 0 <= start <= end <= len(items):
        raise CELRuntimeError(f"cannot slice({start}, {end}), invalid range")
    return items[start:end]


@register("sort", True, (0,), "list", ("list",))
def list_sort(v: object) -> list:
    return sorted(as_list("sort", v), key=functools.cmp_to_key(_order))


@register("first", True, (0,), "optional", ("list",))
def first(v: object) -> OptionalValue:
    items = as_list("first", v)
    return OptionalValue(True, items[0]) if items else NONE


@register("last", True, (0,), "optional", ("list",))
def last(v: object) -> OptionalValue:
    items = as_list("last", v)
    return OptionalValue(True, items[-1]) if items else NONE


@register("lists.range", False, (1,), "list")
def list_range(n: int) -> list[int]:
    want("lists.range", n, int)
    return list(range(n))
