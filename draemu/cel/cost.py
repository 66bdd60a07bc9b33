"""CEL's cost model at run time: what cel-go's cost tracker and Kubernetes' library cost
functions (k8s.io/apiserver/pkg/cel/library/cost.go) charge for each step of an
evaluation, and the `Meter` that stops an evaluation the moment the limit is passed.

cel-go charges a step after it ran; draemu charges a function call from its arguments
before it runs (the same number), so a call that would pass the limit never starts: the
verdict is upstream's, the time to it is not the call's. Comprehensions are charged per
iteration; the deadline (cel-go's interrupt check on the request's context) is looked at
every DEADLINE_CHECK_EVERY iterations and calls.

Figures are upstream's: the limits in k8s.io/apiserver/pkg/apis/cel/config.go, the base
costs in cel-go's common/cost.go.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from draemu.cel.errors import CostLimitExceeded, Interrupted

# cel-go's common/cost.go.
SELECT_AND_IDENT_COST = 1
CONST_COST = 0
LIST_CREATE_BASE_COST = 10
MAP_CREATE_BASE_COST = 30
STRUCT_CREATE_BASE_COST = 40
STRUCT_CREATE_BASE_COST = 40
STRING_TRAVERSAL_COST_FACTOR = 0.1
REGEX_STRING_LENGTH_COST_FACTOR = 0.25

# k8s.io/apiserver/pkg/apis/cel/config.go.
PER_CALL_LIMIT = 1_000_000
RUNTIME_CEL_COST_BUDGET = 10_000_000
RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS = 2_500_000
CHECK_FREQUENCY = 100
MAX_REQUEST_SIZE_BYTES = 3 * 1024 * 1024

# k8s.io/apiserver/pkg/cel/limits.go: the regular expression size the estimate assumes for
# a named format's `validate`.
MAX_NAME_FORMAT_REGEX_SIZE = 128

UINT64_MAX = 2**64 - 1


# How many charges and iterations pass between two looks at the clock (cel-go looks
# every 100 iterations; a Python iteration takes longer, a clock read is not free).
DEADLINE_CHECK_EVERY = 32


class Meter:
    """The cost of one evaluation so far, its limit and its deadline (a
    `time.monotonic()` value, or None), shared by the nested activations of
    comprehensions and bindings."""

    __slots__ = ("cost", "deadline", "limit", "ticks")

    def __init__(self, limit: int | None = PER_CALL_LIMIT, deadline: float | None = None
                 ) -> None:
        self.cost = 0
        self.limit = UINT64_MAX if limit is None else limit
        self.deadline = deadline
        self.ticks = 0

    def charge(self, cost: int) -> None:
        self.cost += cost
        if self.cost > self.limit:
            raise CostLimitExceeded()
        if self.deadline is not None:
            self.tick()

    def over(self) -> None:
        """Raise for a cost already added past the limit (the closures of variables and
        fields add their unit inline, the hottest path of an evaluation)."""
        raise CostLimitExceeded()

    def steps(self, n: int) -> None:
        """`n` steps of one unit each (cel-go checks the limit after every step, so the
        cost it reports when stopping is the limit plus one)."""
        self.cost += n
        if self.cost > self.limit:
            self.cost = max(self.limit + 1, self.cost - n + 1)
            raise CostLimitExceeded()

    def check(self) -> None:
        """Raise when the limit is passed."""
        if self.cost > self.limit:
            raise CostLimitExceeded()

    def tick(self) -> None:
        """A comprehension iteration or a call: every DEADLINE_CHECK_EVERY of them, a look
        at the deadline."""
        self.ticks += 1
        if self.ticks >= DEADLINE_CHECK_EVERY:
            self.ticks = 0
            if self.deadline is not None and time.monotonic() > self.deadline:
                raise Interrupted()


def ceil_factor(size: int, factor: float) -> int:
    """cel-go's `uint64(math.Ceil(float64(size) * factor))`."""
    return math.ceil(size * factor)


_SCALAR_TYPES = frozenset({int, bool, float, type(None)})


def actual_size(value: Any) -> int:
    """cel-go's actualSize: the size of strings (code points), bytes, lists and maps, the
    size of an optional's value, 1 for everything else."""
    if type(value) in _SCALAR_TYPES:
        return 1
    if isinstance(value, (str, bytes, list, tuple, dict)):
        return len(value)
    if getattr(value, "present", None) is True:
        return actual_size(value.value)
    return 1


def sizer_size(value: Any) -> int:
    """Kubernetes' actualSize: the size of a sizer, 1 for everything else (optionals
    included)."""
    if isinstance(value, (str, bytes, list, tuple, dict)):
        return len(value)
    return 1


def traversal_cost(value: Any) -> int:
    """Kubernetes' traversalCost: a string's tenth (truncated), the sum over lists and
    maps, 1 for a scalar."""
    if isinstance(value, (str, bytes)):
        return int(len(value) * STRING_TRAVERSAL_COST_FACTOR)
    if isinstance(value, (list, tuple)):
        return sum(traversal_cost(v) for v in value)
    if isinstance(value, dict):
        return sum(traversal_cost(k) + traversal_cost(v) for k, v in value.items())
    return 1


CallCost = Callable[[Sequence[Any]], int]


def strings_traversal(args: Sequence[Any]) -> int:
    return ceil_factor(sizer_size(args[0]), STRING_TRAVERSAL_COST_FACTOR)


def strings_construct(args: Sequence[Any]) -> int:
    return ceil_factor(sizer_size(args[0]), 2 * STRING_TRAVERSAL_COST_FACTOR)


def join_cost(args: Sequence[Any]) -> int:
    # The cost is the result's size; computed from the arguments so the join never
    # starts when it would pass the limit.
    items = args[0]
    if not isinstance(items, (list, tuple)):
        return 0
    sep = args[1] if len(args) > 1 and isinstance(args[1], str) else ""
    size = sum(len(v) if isinstance(v, str) else 1 for v in items)
    size += len(sep) * max(len(items) - 1, 0)
    return ceil_factor(size, 2 * STRING_TRAVERSAL_COST_FACTOR)


def regex_cost(args: Sequence[Any]) -> int:
    string_cost = ceil_factor(1 + sizer_size(args[0]), STRING_TRAVERSAL_COST_FACTOR)
    return string_cost * ceil_factor(sizer_size(args[1]), REGEX_STRING_LENGTH_COST_FACTOR)


def traversal_first(args: Sequence[Any]) -> int:
    return traversal_cost(args[0]) if args else 0


def contains_ip_cost(args: Sequence[Any]) -> int:
    cidr = sizer_size(args[0])
    cost = ceil_factor(2 * cidr, STRING_TRAVERSAL_COST_FACTOR)
    if isinstance(args[1], str):
        cost += ceil_factor(len(args[1]), STRING_TRAVERSAL_COST_FACTOR)
    return cost


def contains_cidr_cost(args: Sequence[Any]) -> int:
    cidr = sizer_size(args[0])
    cost = ceil_factor(2 * cidr, STRING_TRAVERSAL_COST_FACTOR)
    cost += ceil_factor(cidr, STRING_TRAVERSAL_COST_FACTOR) + 1
    if isinstance(args[1], str):
        cost += ceil_factor(len(args[1]), STRING_TRAVERSAL_COST_FACTOR)
    return cost


def ip_cost(args: Sequence[Any]) -> int:
    if not isinstance(args[0], str):  # cidr.ip(): a field access
        return 1
    return strings_traversal(args)


def validate_cost(args: Sequence[Any]) -> int:
    regex_size = getattr(args[0], "max_regex_size", None)
    if regex_size is None:
        return 1
    string_cost = ceil_factor(1 + sizer_size(args[1]), STRING_TRAVERSAL_COST_FACTOR)
    return string_cost * ceil_factor(regex_size, REGEX_STRING_LENGTH_COST_FACTOR)


def fixed_cost(cost: int) -> CallCost:
    return lambda args: cost


# Kubernetes' CallCost by function name (member functions get the receiver first), as
# each function declares it where it is registered (`register(..., cost=...)` in
# draemu/cel/library/): filled when the libraries are imported.
KUBERNETES_COSTS: dict[str, CallCost | int] = {}

# cel-go plans these as interpretables of their own, not calls: they cost nothing.
FREE_FUNCTIONS = frozenset({"orValue", "or"})


def _sets(factor: int) -> CallCost:
    return lambda args: 1 + actual_size(args[0]) * actual_size(args[1]) * factor


def _allocating(size: int, factor: float = 1.0) -> int:
    return int(size * factor) + 1 + LIST_CREATE_BASE_COST


def _slice(args: Sequence[Any]) -> int:
    start, end = args[1], args[2]
    if isinstance(start, int) and isinstance(end, int) and 0 <= start <= end:
        return _allocating(end - start)
    return _allocating(0)


def _flatten(args: Sequence[Any]) -> int:
    depth = args[1] if len(args) > 1 and isinstance(args[1], int) else 1
    return _allocating(actual_size(args[0]), float(depth))


def _self_compare(items: Any) -> int:
    size = actual_size(items)
    factor = 2.0
    if size and isinstance(items, (list, tuple)) and isinstance(items[0], (str, bytes)):
        factor += STRING_TRAVERSAL_COST_FACTOR
    return _allocating(size * size, factor)


def _range(args: Sequence[Any]) -> int:
    n = args[0]
    return _allocating(n if isinstance(n, int) and n > 0 else 0)


# cel-go's extension libraries' cost trackers, by overload (they take precedence).
OVERLOAD_TRACKERS: dict[str, CallCost] = {
    "list_sets_contains_list": _sets(1),
    "list_sets_intersects_list": _sets(1),
    "list_sets_equivalent_list": _sets(2),
    "list_slice": _slice,
    "list_flatten": _flatten,
    "lists_range": _range,
    "list_reverse": lambda args: _allocating(actual_size(args[0])),
    "list_distinct": lambda args: _self_compare(args[0]),
    **{f"list_{t}_sort": lambda args: _self_compare(args[0]) for t in (
        "bool", "int", "uint", "double", "string", "bytes", "duration", "timestamp")},
}


def _string_scan(args: Sequence[Any]) -> int:
    return ceil_factor(actual_size(args[0]), STRING_TRAVERSAL_COST_FACTOR)


def _min_size(args: Sequence[Any]) -> int:
    return ceil_factor(min(actual_size(args[0]), actual_size(args[1])),
                       STRING_TRAVERSAL_COST_FACTOR)


def _concat(args: Sequence[Any]) -> int:
    return ceil_factor(actual_size(args[0]) + actual_size(args[1]),
                       STRING_TRAVERSAL_COST_FACTOR)


def _matches(args: Sequence[Any]) -> int:
    string_cost = ceil_factor(1 + actual_size(args[0]), STRING_TRAVERSAL_COST_FACTOR)
    return string_cost * ceil_factor(actual_size(args[1]), REGEX_STRING_LENGTH_COST_FACTOR)


def _contains(args: Sequence[Any]) -> int:
    return _string_scan(args) * ceil_factor(actual_size(args[1]),
                                            STRING_TRAVERSAL_COST_FACTOR)


# cel-go's own costs of standard overloads (CostTracker.costCall); others cost 1.
STANDARD: dict[str, CallCost] = {
    "starts_with_string": lambda args: ceil_factor(actual_size(args[1]),
                                                   STRING_TRAVERSAL_COST_FACTOR),
    "ends_with_string": lambda args: ceil_factor(actual_size(args[1]),
                                                 STRING_TRAVERSAL_COST_FACTOR),
    "string_to_bytes": _string_scan, "bytes_to_string": _string_scan,
    "strings_quote": _string_scan, "string_format": _string_scan,
    "in_list": lambda args: actual_size(args[1]),
    "compare_string": _min_size, "compare_bytes": _min_size,
    "equals": _min_size, "not_equals": _min_size,
    "add_string": _concat, "add_bytes": _concat,
    "matches": _matches, "matches_string": _matches, "contains_string": _contains,
}

# Kubernetes' equality of its own types costs 1.
_UNIT_EQUALITY_TYPES = frozenset({"QuantityValue", "IPValue", "CIDRValue", "URLValue",
                                  "Semver", "Format"})


def _equality(overload: str) -> CallCost:
    standard = STANDARD[overload]

    def cost(args: Sequence[Any]) -> int:
        if type(args[0]).__name__ in _UNIT_EQUALITY_TYPES:
            return 1
        return standard(args)
    return cost


def call_rule(function: str, overload: str | None) -> CallCost | int:
    """What a call costs, from its arguments (the receiver first), as cel-go's cost
    tracker decides it: the overload's tracker, else Kubernetes' rule for the function,
    else cel-go's rule for the overload, else 1. `overload` None: the checker could not
    tell the overload from the static types (`+` of two dynamically typed values), and
    cel-go charges such a call 1. An int is a fixed cost."""
    if function in FREE_FUNCTIONS:
        return 0
    if overload is not None:
        tracker = OVERLOAD_TRACKERS.get(overload)
        if tracker is not None:
            return tracker
    rule = KUBERNETES_COSTS.get(function)
    if rule is not None:
        return rule
    if function == "_==_" and overload == "equals":
        return _equality(overload)
    if overload is not None:
        standard = STANDARD.get(overload)
        if standard is not None:
            return standard
    return 1


def call_cost(function: str, overload: str | None, args: Sequence[Any]) -> int:
    rule = call_rule(function, overload)
    return rule if isinstance(rule, int) else rule(args)
