"""Functions of the DRA CEL environment: CEL's standard functions and the Kubernetes
libraries offered in device selectors (quantity, semver, strings, regex, lists, sets,
optional, math) plus DRA's `includes`.

Each function declares what the checker needs (receiver types, arities, result type)
and an implementation that checks its runtime argument types itself.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from draemu.cel.errors import CELRuntimeError
from draemu.cel.regex import RegexError, compile_pattern
from draemu.cel.syntax import Uint
from draemu.cel.values import (
    NONE,
    CelType,
    OptionalValue,
    QuantityValue,
    Semver,
    check_int,
    check_uint,
    compare,
    equal,
    is_number,
    no_overload,
    type_name,
)

# Most values a DRA list attribute holds (ResourceSliceMaxAttributeValuesPerDevice).
MAX_LIST_ATTRIBUTE_VALUES = 48


@dataclass(frozen=True)
class Function:
    name: str
    member: bool
    arities: tuple[int, ...]  # arguments besides the receiver
    result: str  # static result type; "dyn" when it depends on the arguments
    impl: Callable[..., Any]
    receivers: frozenset[str] = frozenset()  # static receiver types (member functions)
    cost: int = 1
    gate: str | None = None  # feature gate required for new expressions


FUNCTIONS: dict[tuple[str, bool], Function] = {}


def register(name: str, member: bool, arities: tuple[int, ...], result: str,
              receivers: tuple[str, ...] = (), cost: int = 1, gate: str | None = None
              ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        FUNCTIONS[(name, member)] = Function(name, member, arities, result, fn,
                                             frozenset(receivers), cost, gate)
        return fn
    return wrap


def want(name: str, value: object, *kinds: type) -> None:
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise no_overload(name, value)


# --- standard functions ---------------------------------------------------------------

@register("size", False, (1,), "int")
def size(v: object) -> int:
    if isinstance(v, (str, bytes, list, tuple, dict)):
        return len(v)
    raise no_overload("size", v)


FUNCTIONS[("size", True)] = Function("size", True, (0,), "int", size,
                                     frozenset({"string", "bytes", "list", "map"}))


@register("contains", True, (1,), "bool", ("string",))
def contains(s: str, sub: str) -> bool:
    want("contains", s, str)
    want("contains", sub, str)
    return sub in s


@register("startsWith", True, (1,), "bool", ("string",))
def starts_with(s: str, prefix: str) -> bool:
    want("startsWith", s, str)
    want("startsWith", prefix, str)
    return s.startswith(prefix)


@register("endsWith", True, (1,), "bool", ("string",))
def ends_with(s: str, suffix: str) -> bool:
    want("endsWith", s, str)
    want("endsWith", suffix, str)
    return s.endswith(suffix)


def _regex(pattern: str) -> Any:
    """RE2, as cel-go (linear time: no pattern can make a selector backtrack for ever)."""
    try:
        return compile_pattern(pattern)
    except RegexError as e:
        raise CELRuntimeError(str(e)) from None


@register("matches", True, (1,), "bool", ("string",), cost=2)
def matches(s: str, pattern: str) -> bool:
    want("matches", s, str)
    want("matches", pattern, str)
    return _regex(pattern).search(s) is not None


FUNCTIONS[("matches", False)] = Function("matches", False, (2,), "bool", matches, cost=2)


@register("int", False, (1,), "int")
def to_int(v: object) -> int:
    if isinstance(v, bool):
        raise no_overload("int", v)
    if isinstance(v, int):
        return check_int(int(v))
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            raise CELRuntimeError("double is out of range for int")
        return check_int(int(v))
    if isinstance(v, str):
        try:
            return check_int(int(v, 10))
        except ValueError:
            raise CELRuntimeError(f"cannot parse {v!r} as int") from None
    raise no_overload("int", v)


@register("uint", False, (1,), "uint")
def to_uint(v: object) -> Uint:
    if isinstance(v, bool):
        raise no_overload("uint", v)
    if isinstance(v, (int, float)):
        return check_uint(int(v))
    if isinstance(v, str):
        try:
            return check_uint(int(v, 10))
        except ValueError:
            raise CELRuntimeError(f"cannot parse {v!r} as uint") from None
    raise no_overload("uint", v)


@register("double", False, (1,), "double")
def to_double(v: object) -> float:
    if is_number(v):
        return float(v)  # type: ignore[arg-type]
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            raise CELRuntimeError(f"cannot parse {v!r} as double") from None
    raise no_overload("double", v)


@register("string", False, (1,), "string")
def to_string(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, str)):
        return str(v)
    if isinstance(v, float):
        return repr(v) if not v.is_integer() else str(int(v)) if abs(v) < 1e21 else repr(v)
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, QuantityValue):
        return v.text
    if isinstance(v, Semver):
        return v.text
    raise no_overload("string", v)


@register("bytes", False, (1,), "bytes")
def to_bytes(v: object) -> bytes:
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode()
    raise no_overload("bytes", v)


@register("bool", False, (1,), "bool")
def to_bool(v: object) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, str):
        if v in ("true", "True", "TRUE", "t", "1"):
            return True
        if v in ("false", "False", "FALSE", "f", "0"):
            return False
        raise CELRuntimeError(f"type conversion error from 'string' to 'bool': {v}")
    raise no_overload("bool", v)


@register("dyn", False, (1,), "dyn")
def to_dyn(v: object) -> object:
    return v


@register("type", False, (1,), "type")
def type_of(v: object) -> CelType:
    return CelType(type_name(v))


# --- Kubernetes quantity library ---------------------------------------------------------

@register("quantity", False, (1,), "quantity")
def quantity(s: str) -> QuantityValue:
    want("quantity", s, str)
    return QuantityValue.parse(s)


@register("isQuantity", False, (1,), "bool")
def is_quantity(s: str) -> bool:
    want("isQuantity", s, str)
    try:
        QuantityValue.parse(s)
    except CELRuntimeError:
        return False
    return True


def _ordered(name: str, a: object, b: object) -> int:
    if isinstance(a, QuantityValue) and isinstance(b, QuantityValue):
        return (a.value > b.value) - (a.value < b.value)
    if isinstance(a, Semver) and isinstance(b, Semver):
        return a.compare(b)
    raise no_overload(name, a, b)


_ORDERED = ("quantity", "semver")


@register("isGreaterThan", True, (1,), "bool", _ORDERED)
def is_greater_than(a: object, b: object) -> bool:
    return _ordered("isGreaterThan", a, b) > 0


@register("isLessThan", True, (1,), "bool", _ORDERED)
def is_less_than(a: object, b: object) -> bool:
    return _ordered("isLessThan", a, b) < 0


@register("compareTo", True, (1,), "int", _ORDERED)
def compare_to(a: object, b: object) -> int:
    return _ordered("compareTo", a, b)


def _quantity_operand(name: str, q: object, other: object) -> tuple[Fraction, Fraction]:
    if not isinstance(q, QuantityValue):
        raise no_overload(name, q, other)
    if isinstance(other, QuantityValue):
        return q.value, other.value
    if isinstance(other, int) and not isinstance(other, bool):
        return q.value, Fraction(other)
    raise no_overload(name, q, other)


@register("add", True, (1,), "quantity", ("quantity",))
def q_add(q: object, other: object) -> QuantityValue:
    a, b = _quantity_operand("add", q, other)
    return QuantityValue(a + b)


@register("sub", True, (1,), "quantity", ("quantity",))
def q_sub(q: object, other: object) -> QuantityValue:
    a, b = _quantity_operand("sub", q, other)
    return QuantityValue(a - b)


@register("asInteger", True, (0,), "int", ("quantity",))
def as_integer(q: object) -> int:
    want("asInteger", q, QuantityValue)
    v = q.value  # type: ignore[union-attr]
    if v.denominator != 1 or not -(2**63) <= v < 2**63:
        raise CELRuntimeError("cannot convert value to integer")
    return int(v)


@register("asApproximateFloat", True, (0,), "double", ("quantity",))
def as_float(q: object) -> float:
    want("asApproximateFloat", q, QuantityValue)
    return float(q.value)  # type: ignore[union-attr]


@register("sign", True, (0,), "int", ("quantity",))
def sign(q: object) -> int:
    want("sign", q, QuantityValue)
    v = q.value  # type: ignore[union-attr]
    return (v > 0) - (v < 0)


@register("isInteger", True, (0,), "bool", ("quantity",))
def is_integer(q: object) -> bool:
    want("isInteger", q, QuantityValue)
    v = q.value  # type: ignore[union-attr]
    return v.denominator == 1 and -(2**63) <= v < 2**63


# --- Kubernetes semver library -----------------------------------------------------------

@register("semver", False, (1, 2), "semver")
def semver(s: str, normalize: bool = False) -> Semver:
    want("semver", s, str)
    want("semver", normalize, bool)
    try:
        return Semver(s, normalize=normalize)
    except ValueError as e:
        raise CELRuntimeError(f"could not parse semver: {e}") from None


@register("isSemver", False, (1, 2), "bool")
def is_semver(s: str, normalize: bool = False) -> bool:
    want("isSemver", s, str)
    try:
        Semver(s, normalize=bool(normalize))
    except ValueError:
        return False
    return True


@register("major", True, (0,), "int", ("semver",))
def major(v: Semver) -> int:
    want("major", v, Semver)
    return v.major


@register("minor", True, (0,), "int", ("semver",))
def minor(v: Semver) -> int:
    want("minor", v, Semver)
    return v.minor


@register("patch", True, (0,), "int", ("semver",))
def patch(v: Semver) -> int:
    want("patch", v, Semver)
    return v.patch


# --- strings extension -------------------------------------------------------------------

@register("charAt", True, (1,), "string", ("string",))
def char_at(s: str, i: int) -> str:
    want("charAt", s, str)
    want("charAt", i, int)
    if not 0 <= i <= len(s):
        raise CELRuntimeError(f"index out of range: {i}")
    return s[i: i + 1]


@register("indexOf", True, (1, 2), "int", ("string", "list"))
def index_of(s: object, sub: object, start: int = 0) -> int:
    if isinstance(s, (list, tuple)):
        for i, v in enumerate(s):
            if equal(v, sub):
                return i
        return -1
    want("indexOf", s, str)
    want("indexOf", sub, str)
    if not 0 <= start <= len(s):  # type: ignore[arg-type]
        raise CELRuntimeError(f"index out of range: {start}")
    return s.find(sub, start)  # type: ignore[union-attr, arg-type]


@register("lastIndexOf", True, (1, 2), "int", ("string", "list"))
def last_index_of(s: object, sub: object, end: int | None = None) -> int:
    if isinstance(s, (list, tuple)):
        for i in range(len(s) - 1, -1, -1):
            if equal(s[i], sub):
                return i
        return -1
    want("lastIndexOf", s, str)
    want("lastIndexOf", sub, str)
    if end is None:
        return s.rfind(sub)  # type: ignore[union-attr, arg-type]
    if not 0 <= end < len(s):  # type: ignore[arg-type]
        raise CELRuntimeError(f"index out of range: {end}")
    return s.rfind(sub, 0, end + len(sub))  # type: ignore[union-attr, arg-type]


@register("lowerAscii", True, (0,), "string", ("string",))
def lower_ascii(s: str) -> str:
    want("lowerAscii", s, str)
    return "".join(c.lower() if c.isascii() else c for c in s)


@register("upperAscii", True, (0,), "string", ("string",))
def upper_ascii(s: str) -> str:
    want("upperAscii", s, str)
    return "".join(c.upper() if c.isascii() else c for c in s)


@register("replace", True, (2, 3), "string", ("string",))
def replace(s: str, old: str, new: str, n: int = -1) -> str:
    for v in (s, old, new):
        want("replace", v, str)
    return s.replace(old, new, n if n >= 0 else -1)


@register("split", True, (1, 2), "list", ("string",), cost=2)
def split(s: str, sep: str, n: int = -1) -> list[str]:
    want("split", s, str)
    want("split", sep, str)
    if n == 0:
        return []
    if sep == "":
        parts = list(s)
        return parts if n < 0 or n >= len(parts) else [*parts[: n - 1], "".join(parts[n - 1:])]
    return s.split(sep, n - 1 if n > 0 else -1)


@register("substring", True, (1, 2), "string", ("string",))
def substring(s: str, start: int, end: int | None = None) -> str:
    want("substring", s, str)
    end = len(s) if end is None else end
    if not 0 <= start <= end <= len(s):
        raise CELRuntimeError(f"index out of range: {start if start > len(s) else end}")
    return s[start:end]


@register("trim", True, (0,), "string", ("string",))
def trim(s: str) -> str:
    want("trim", s, str)
    return s.strip()


@register("join", True, (0, 1), "string", ("list",))
def join(items: list[str], sep: str = "") -> str:
    want("join", items, list, tuple)
    for v in items:
        want("join", v, str)
    return sep.join(items)


@register("reverse", True, (0,), "dyn", ("string", "list"))
def reverse(v: object) -> object:
    if isinstance(v, str):
        return v[::-1]
    want("reverse", v, list, tuple)
    return list(v)[::-1]  # type: ignore[call-overload]


@register("strings.quote", False, (1,), "string")
def quote(s: str) -> str:
    want("strings.quote", s, str)
    escaped = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


# --- Kubernetes regex library ------------------------------------------------------------

@register("find", True, (1,), "string", ("string",), cost=2)
def find(s: str, pattern: str) -> str:
    want("find", s, str)
    m = _regex(pattern).search(s)
    return m.group(0) if m else ""


@register("findAll", True, (1, 2), "list", ("string",), cost=2)
def find_all(s: str, pattern: str, limit: int = -1) -> list[str]:
    want("findAll", s, str)
    found = [m.group(0) for m in _regex(pattern).finditer(s)]
    return found if limit < 0 else found[:limit]


# --- Kubernetes lists library and ext lists ----------------------------------------------

def _list(name: str, v: object) -> list:
    if not isinstance(v, (list, tuple)):
        raise no_overload(name, v)
    return list(v)


@register("isSorted", True, (0,), "bool", ("list",))
def is_sorted(v: object) -> bool:
    items = _list("isSorted", v)
    return all(_order(a, b) <= 0 for a, b in itertools.pairwise(items))


def _order(a: object, b: object) -> int:
    if isinstance(a, (QuantityValue, Semver)):
        return _ordered("compare", a, b)
    return compare(a, b, "_<_")


@register("sum", True, (0,), "dyn", ("list",))
def list_sum(v: object) -> object:
    items = _list("sum", v)
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
    items = _list(name, v)
    if not items:
        raise CELRuntimeError(f"{name} called on empty list")
    best = items[0]
    for x in items[1:]:
        if _order(x, best) * sign_ > 0:
            best = x
    return best


@register("min", True, (0,), "dyn", ("list",))
def list_min(v: object) -> object:
    return _extreme("min", v, -1)


@register("max", True, (0,), "dyn", ("list",))
def list_max(v: object) -> object:
    return _extreme("max", v, 1)


@register("distinct", True, (0,), "list", ("list",))
def distinct(v: object) -> list:
    out: list = []
    for x in _list("distinct", v):
        if not any(equal(x, y) for y in out):
            out.append(x)
    return out


@register("flatten", True, (0, 1), "list", ("list",))
def flatten(v: object, depth: int = 1) -> list:
    if depth < 0:
        raise CELRuntimeError("level must be non-negative")
    out: list = []
    for x in _list("flatten", v):
        if isinstance(x, (list, tuple)) and depth > 0:
            out.extend(flatten(x, depth - 1))
        else:
            out.append(x)
    return out


@register("slice", True, (2,), "list", ("list",))
def list_slice(v: object, start: int, end: int) -> list:
    items = _list("slice", v)
    if not 0 <= start <= end <= len(items):
        raise CELRuntimeError(f"cannot slice({start}, {end}), invalid range")
    return items[start:end]


@register("sort", True, (0,), "list", ("list",))
def list_sort(v: object) -> list:
    return sorted(_list("sort", v), key=functools.cmp_to_key(_order))


@register("first", True, (0,), "optional", ("list",))
def first(v: object) -> OptionalValue:
    items = _list("first", v)
    return OptionalValue(True, items[0]) if items else NONE


@register("last", True, (0,), "optional", ("list",))
def last(v: object) -> OptionalValue:
    items = _list("last", v)
    return OptionalValue(True, items[-1]) if items else NONE


@register("lists.range", False, (1,), "list")
def list_range(n: int) -> list[int]:
    want("lists.range", n, int)
    return list(range(n))


@register("sets.contains", False, (2,), "bool")
def sets_contains(a: object, b: object) -> bool:
    return all(any(equal(x, y) for y in _list("sets.contains", a))
               for x in _list("sets.contains", b))


@register("sets.equivalent", False, (2,), "bool")
def sets_equivalent(a: object, b: object) -> bool:
    return sets_contains(a, b) and sets_contains(b, a)


@register("sets.intersects", False, (2,), "bool")
def sets_intersects(a: object, b: object) -> bool:
    return any(any(equal(x, y) for y in _list("sets.intersects", b))
               for x in _list("sets.intersects", a))


def _math_pick(name: str, args: tuple, sign_: int) -> object:
    items = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else args
    if not items:
        raise CELRuntimeError(f"{name}(list) argument must not be empty")
    for x in items:
        if not is_number(x):
            raise no_overload(name, x)
    best = items[0]
    for x in items[1:]:
        if (x > best if sign_ > 0 else x < best):
            best = x
    return best


@register("math.greatest", False, (1, 2, 3, 4, 5, 6), "dyn")
def math_greatest(*args: object) -> object:
    return _math_pick("math.greatest", args, 1)


@register("math.least", False, (1, 2, 3, 4, 5, 6), "dyn")
def math_least(*args: object) -> object:
    return _math_pick("math.least", args, -1)


# --- optional ----------------------------------------------------------------------------

@register("optional.of", False, (1,), "optional")
def optional_of(v: object) -> OptionalValue:
    return OptionalValue(True, v)


@register("optional.none", False, (0,), "optional")
def optional_none() -> OptionalValue:
    return NONE


@register("optional.ofNonZeroValue", False, (1,), "optional")
def optional_of_non_zero(v: object) -> OptionalValue:
    zero = v is None or v is False or (is_number(v) and v == 0) or (
        isinstance(v, (str, bytes, list, tuple, dict)) and len(v) == 0)
    return NONE if zero else OptionalValue(True, v)


def _optional(name: str, v: object) -> OptionalValue:
    if not isinstance(v, OptionalValue):
        raise no_overload(name, v)
    return v


@register("hasValue", True, (0,), "bool", ("optional",))
def has_value(v: object) -> bool:
    return _optional("hasValue", v).present


@register("value", True, (0,), "dyn", ("optional",))
def value(v: object) -> object:
    opt = _optional("value", v)
    if not opt.present:
        raise CELRuntimeError("optional.none() dereference")
    return opt.value


@register("orValue", True, (1,), "dyn", ("optional",))
def or_value(v: object, default: object) -> object:
    opt = _optional("orValue", v)
    return opt.value if opt.present else default


@register("or", True, (1,), "optional", ("optional",))
def optional_or(v: object, other: object) -> object:
    opt = _optional("or", v)
    return opt if opt.present else _optional("or", other)


# --- DRA ---------------------------------------------------------------------------------

@register("includes", True, (1,), "bool", ("dyn",), cost=MAX_LIST_ATTRIBUTE_VALUES,
           gate="DRAListTypeAttributes")
def includes(v: object, x: object) -> bool:
    if isinstance(v, (list, tuple)):
        if len(v) > MAX_LIST_ATTRIBUTE_VALUES:
            raise CELRuntimeError("'includes' function cannot be applied to lists longer "
                                  f"than {MAX_LIST_ATTRIBUTE_VALUES} values")
        return any(equal(e, x) for e in v)
    return equal(v, x)


# Names that are namespaces of global functions, so `optional.none()` is a call and not
# a field selection on a variable.
NAMESPACES = frozenset(name.split(".")[0] for name, _ in FUNCTIONS if "." in name) | {"cel"}
