"""What the cost estimator charges for a call, before its arguments' own costs: cel-go's
extension estimators by overload (sets, lists), Kubernetes' EstimateCallCost by function
name (k8s.io/apiserver/pkg/cel/library/cost.go), and cel-go's own rules for standard
overloads (checker/cost.go); anything else costs 1."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from draemu.cel.cost import (
    LIST_CREATE_BASE_COST,
    MAX_NAME_FORMAT_REGEX_SIZE,
    REGEX_STRING_LENGTH_COST_FACTOR,
    STRING_TRAVERSAL_COST_FACTOR,
    UINT64_MAX,
)
from draemu.cel.decltypes import DeclType
from draemu.cel.sizes import ONE, Range, add, by_factor, fixed, multiply, union
from draemu.cel.syntax import Literal, Node, Uint


@dataclass
class Operand:
    """What a call estimate sees of a receiver or argument (cel-go's AstNode)."""

    node: Node
    type: DeclType
    path: tuple[str, ...]
    size: Range | None  # computed from the expression, when it tells


@dataclass
class CallEstimate:
    cost: Range
    size: Range | None = None  # of the result, when a rule knows it


class Sizes(Protocol):
    def size(self, op: Operand) -> Range:
        """Kubernetes' sizeEstimate: computed, else from the declared bounds, else
        unknown."""

    def element(self, op: Operand) -> Operand | None:
        """Kubernetes' listElementNode: a list's items, as an operand."""


Rule = Callable[[Sizes, "Operand | None", list[Operand]], "CallEstimate | None"]

STRING_FACTOR = STRING_TRAVERSAL_COST_FACTOR
_CALL = ONE


def _uint_literal(op: Operand, default: int) -> int:
    """cel-go's nodeAsUintValue."""
    node = op.node
    if isinstance(node, Literal) and isinstance(node.value, int) and \
            not isinstance(node.value, (bool, Uint)):
        return max(node.value, 0)
    return default


# --- cel-go's extensions, by overload ---------------------------------------------------


def _sets(factor: float) -> Rule:
    def rule(s: Sizes, target: Operand | None, args: list[Operand]) -> CallEstimate | None:
        if len(args) != 2:
            return None
        product = multiply(s.size(args[0]), s.size(args[1]))
        return CallEstimate(add(by_factor(product, factor), _CALL))
    return rule


def _allocating(factor: float, size: Range) -> CallEstimate:
    cost = add(add(by_factor(size, factor), _CALL), fixed(LIST_CREATE_BASE_COST))
    return CallEstimate(cost, size)


def _slice(s: Sizes, target: Operand | None, args: list[Operand]) -> CallEstimate | None:
    if target is None or len(args) != 2:
        return None
    size = s.size(target)
    start = _uint_literal(args[0], 0)
    end = _uint_literal(args[1], size[1])
    return _allocating(1, fixed((end - start) % 2**64))


def _range(s: Sizes, target: Operand | None, args: list[Operand]) -> CallEstimate | None:
    if target is not None or len(args) != 1:
        return None
    return _allocating(1, fixed(_uint_literal(args[0], UINT64_MAX)))


def _reverse(s: Sizes, target: Operand | None, args: list[Operand]) -> CallEstimate | None:
    if target is None or args:
        return None
    return _allocating(1, s.size(target))


def _flatten(s: Sizes, target: Operand | None, args: list[Operand]) -> CallEstimate | None:
    if target is None or len(args) > 1:
        return None
    depth = _uint_literal(args[0], UINT64_MAX) if args else 1
    return _allocating(float(depth), s.size(target))


def _distinct(s: Sizes, target: Operand | None, args: list[Operand]) -> CallEstimate | None:
    if target is None or args:
        return None
    size = s.size(target)
    return _allocating(2.0, multiply(size, size))


def _sort(element: str) -> Rule:
    factor = 2.0 + (STRING_FACTOR if element in ("string", "bytes") else 0.0)

    def rule(s: Sizes, target: Operand | None, args: list[Operand]) -> CallEstimate | None:
        if target is None or args:
            return None
        size = s.size(target)
        return _allocating(factor, multiply(size, size))
    return rule


COMPARABLE = ("bool", "int", "uint", "double", "string", "bytes", "duration", "timestamp")

OVERLOAD_ESTIMATORS: dict[str, Rule] = {
    "list_sets_contains_list": _sets(1), "list_sets_intersects_list": _sets(1),
    "list_sets_equivalent_list": _sets(2),
    "list_slice": _slice, "list_flatten": _flatten, "lists_range": _range,
    "list_reverse": _reverse, "list_distinct": _distinct,
    **{f"list_{t}_sort": _sort(t) for t in COMPARABLE},
}


# --- Kubernetes' library, by function name ----------------------------------------------


def fixed_rule(n: int) -> Rule:
    return lambda s, target, args: CallEstimate(fixed(n))


def traversal_rule(function: str) -> Rule:
    def rule(s: Sizes, target: Operand | None, args: list[Operand]) -> CallEstimate | None:
        if target is None:
            return None
        element = s.element(target)
        if element is not None:
            per: Range = ONE
            if element.type.kind in ("string", "bytes"):
                per = add(per, by_factor(s.size(element), STRING_FACTOR))
            return CallEstimate(multiply(s.size(target), per))
        if function == "includes":
            return CallEstimate(multiply(s.size(target), ONE))
        return CallEstimate(by_factor(s.size(target), STRING_FACTOR))
    return rule


def global_scan(s: Sizes, target: Operand | None, args: list[Operand]) -> CallEstimate | None:
    if len(args) != 1:
        return None
    size = s.size(args[0])
    return CallEstimate(by_factor(size, STRING_FACTOR), size)


def member_scan(s: Sizes, target: Operand | None, args: list[Operand]) -> CallEstimate | None:
    if target is None:
        return None
    size = s.size(target)
    return CallEstimate(by_factor(size, STRING_FACTOR), size)


def replace_rule(s: Sizes, target: Operand | None, args: list[Operand]) -> CallEstimate | None:
    if target is None or len(args) < 2:
        return None
    size, old, new = s.size(target), s.size(args[0]), s.size(args[1])
    if old[0] == 0:
        count_max, kept_max = (size[1] + 1 if size[1] < UINT64_MAX else size[1]), size[1]
    elif new[1] <= old[0]:
        count_max, kept_max = 0, size[1]
    else:
        count_max, kept_max = -(-size[1] // old[0]), 0
    if old[1] == 0:
        count_min, kept_min = (size[0] + 1 if size[0] < UINT64_MAX else size[0]), size[0]
    elif old[1] <= new[0]:
        count_min, kept_min = 0, size[0]
    else:
        count_min, kept_min = -(-size[0] // old[1]), 0
    result = add(multiply((count_min, count_max), new), (kept_min, kept_max))
    return CallEstimate(by_factor(size, 2 * STRING_FACTOR), result)


def split_rule(s: Sizes, target: Operand | None, args: list[Operand]) -> CallEstimate | None:
    if target is None:
        return None
    size = s.size(target)
    most = size[1]
    if len(args) > 1:
        limit = args[1].node
        if isinstance(limit, Literal) and isinstance(limit.value, int) and \
                not isinstance(limit.value, bool):
            most = limit.value % 2**64
    return CallEstimate(by_factor(size, 2 * STRING_FACTOR), (0, most))


def join_rule(s: Sizes, target: Operand | None, args: list[Operand]) -> CallEstimate | None:
    if target is None:
        return None
    count = s.size(target)
    size: Range = (0, 0)
    element = s.element(target)
    if element is not None:
        size = multiply(count, s.size(element))
    if args:
        separators = (max(count[0] - 1, 0), max(count[1] - 1, 0))
        size = add(size, multiply(s.size(args[0]), separators))
    return CallEstimate(by_factor(size, STRING_FACTOR), size)


def find_rule(s: Sizes, target: Operand | None, args: list[Operand]) -> CallEstimate | None:
    if target is None or not args:
        return None
    size = s.size(target)
    string_cost = by_factor(add(size, ONE), STRING_FACTOR)
    regex_cost = by_factor(s.size(args[0]), REGEX_STRING_LENGTH_COST_FACTOR)
    return CallEstimate(multiply(string_cost, regex_cost), (0, size[1]))


def ip_rule(s: Sizes, target: Operand | None, args: list[Operand]) -> CallEstimate | None:
    if target is not None:  # cidr.ip(): a field access
        return CallEstimate(ONE)
    if not args:
        return None
    return CallEstimate(by_factor(s.size(args[0]), STRING_FACTOR))


def arg_scan(factor: float) -> Rule:
    def rule(s: Sizes, target: Operand | None, args: list[Operand]) -> CallEstimate | None:
        if not args:
            return None
        return CallEstimate(by_factor(s.size(args[0]), factor))
    return rule


_IP_BYTES: Range = (4, 16)


def contains_ip_rule(s: Sizes, target: Operand | None, args: list[Operand]) -> CallEstimate | None:
    if not args:
        return None
    cost = by_factor(add(_IP_BYTES, _IP_BYTES), STRING_FACTOR)
    if args[0].type.kind in ("string", "dyn"):
        cost = add(cost, by_factor(s.size(args[0]), STRING_FACTOR))
    return CallEstimate(cost)


def contains_cidr_rule(s: Sizes, target: Operand | None,
                       args: list[Operand]) -> CallEstimate | None:
    if not args:
        return None
    cost = by_factor(add(_IP_BYTES, _IP_BYTES), STRING_FACTOR)
    cost = add(add(cost, by_factor(_IP_BYTES, STRING_FACTOR)), ONE)
    if args[0].type.kind in ("string", "dyn"):
        cost = add(cost, by_factor(s.size(args[0]), STRING_FACTOR))
    return CallEstimate(cost)


def validate_rule(s: Sizes, target: Operand | None, args: list[Operand]) -> CallEstimate | None:
    if not args:
        return None
    scan = by_factor(s.size(args[0]), STRING_FACTOR)
    return CallEstimate(by_factor(scan, MAX_NAME_FORMAT_REGEX_SIZE
                                  * REGEX_STRING_LENGTH_COST_FACTOR))


# Kubernetes' EstimateCallCost by function name, as each function declares it where it is
# registered (`register(..., estimate=...)` in draemu/cel/library/).
KUBERNETES_ESTIMATES: dict[str, Rule] = {}

# Equality of these types costs 1 (Kubernetes' rule for its own types).
UNIT_EQUALITY = frozenset({"quantity", "semver", "ip", "cidr", "authorizer", "pathCheck",
                           "groupCheck", "resourceCheck", "decision"})


def kubernetes_estimate(s: Sizes, function: str, target: Operand | None,
                        args: list[Operand]) -> CallEstimate | None:
    if function == "_==_" and len(args) == 2 and args[0].type.kind == args[1].type.kind:
        kind = args[0].type.kind
        if kind in UNIT_EQUALITY:
            return CallEstimate(ONE)
        if kind == "format":
            return CallEstimate(by_factor((1, 64), STRING_FACTOR))
        if kind == "url":
            return CallEstimate(by_factor((1, 1), STRING_FACTOR))
    rule = KUBERNETES_ESTIMATES.get(function)
    return rule(s, target, args) if rule is not None else None


# --- cel-go's standard overloads ---------------------------------------------------------


def standard_estimate(s: Sizes, overload: str, target: Operand | None,
                      args: list[Operand]) -> CallEstimate | None:
    """cel-go's functionCost for the overloads it prices itself (logical operators and
    the conditional are the walker's); None: one unit."""
    if overload == "string_format" and target is not None:
        return CallEstimate(by_factor(s.size(target), STRING_FACTOR))
    if overload in ("string_to_bytes", "bytes_to_string", "strings_quote") and len(args) == 1:
        size = s.size(args[0])
        result = {"string_to_bytes": (size[0], min(size[1] * 4, UINT64_MAX)),
                  "bytes_to_string": (size[0] // 4, size[1]),
                  "strings_quote": (size[0] + 2, min(size[1] * 2 + 2, UINT64_MAX))}[overload]
        return CallEstimate(by_factor(size, STRING_FACTOR), result)
    if overload in ("starts_with_string", "ends_with_string") and len(args) == 1:
        return CallEstimate(by_factor(s.size(args[0]), STRING_FACTOR))
    if overload == "in_list" and len(args) == 2:
        return CallEstimate(by_factor(s.size(args[1]), 1))
    if overload in ("matches", "matches_string"):
        pair = (target, args[0]) if target is not None and len(args) == 1 else \
            (args[0], args[1]) if target is None and len(args) == 2 else None
        if pair is None:
            return None
        string_cost = by_factor(add(s.size(pair[0]), ONE), STRING_FACTOR)
        regex_cost = by_factor(s.size(pair[1]), REGEX_STRING_LENGTH_COST_FACTOR)
        return CallEstimate(multiply(string_cost, regex_cost))
    if overload == "contains_string" and target is not None and len(args) == 1:
        return CallEstimate(multiply(by_factor(s.size(target), STRING_FACTOR),
                                     by_factor(s.size(args[0]), STRING_FACTOR)))
    if overload in ("add_string", "add_bytes", "add_list") and len(args) == 2:
        size = add(s.size(args[0]), s.size(args[1]))
        if overload == "add_list":
            return CallEstimate(ONE, size)
        return CallEstimate(by_factor(size, STRING_FACTOR), size)
    if overload in ("compare_string", "compare_bytes", "equals", "not_equals") and \
            len(args) == 2:
        smallest = min(s.size(args[0])[1], s.size(args[1])[1])
        return CallEstimate(by_factor((1 if smallest > 0 else 0, smallest), STRING_FACTOR))
    return None


def union_estimates(a: CallEstimate | None, b: CallEstimate) -> CallEstimate:
    if a is None:
        return b
    size = b.size if a.size is None else a.size if b.size is None else union(a.size, b.size)
    return CallEstimate(union(a.cost, b.cost), size)
