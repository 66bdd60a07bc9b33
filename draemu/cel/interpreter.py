"""What compiled CEL closures do at run time: the activation (variables and a shared
cost meter), field selection and indexing with cel-go's errors, comprehensions,
operators, and the runtime cost charged for regular expressions. `draemu.cel.compiler`
checks an AST and builds closures from these."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from draemu.cel import netlib  # noqa: F401  (registers the IP, CIDR, URL and format functions)
from draemu.cel.cost import Meter
from draemu.cel.errors import Cancelled, CELRuntimeError
from draemu.cel.syntax import (
    Uint,
)
from draemu.cel.values import (
    GO_TYPE_NAMES,
    MISSING,
    NONE,
    OptionalValue,
    check_int,
    check_uint,
    compare,
    equal,
    is_number,
    map_lookup,
    no_overload,
    type_name,
)

Fn = Callable[["Activation"], Any]


class Activation(dict):
    """Variables of one evaluation; `meter` is its cost meter, shared with the nested
    activations of comprehensions and bindings."""

    __slots__ = ("meter",)

    meter: Meter


class EmptyDomains(dict):
    """`device.attributes` / `device.capacity`: an unknown domain reads as an empty map."""

    __slots__ = ()


EMPTY: dict = {}


NUMERIC_OPS = {"_+_", "_-_", "_*_", "_/_", "_%_"}


def select_field(v: Any, name: str, *, presence: bool) -> Any:
    if isinstance(v, dict):
        found = v.get(name, MISSING)
        if presence:
            return found is not MISSING
        if found is MISSING:
            if isinstance(v, EmptyDomains):
                return EMPTY
            raise CELRuntimeError(f"no such key: {name}", key=name)
        return found
    if isinstance(v, OptionalValue):
        if presence:
            return v.present and select_field(v.value, name, presence=True)
        if not v.present:
            return NONE
        return OptionalValue(True, select_field(v.value, name, presence=False))
    raise CELRuntimeError(f"type '{type_name(v)}' does not support field selection")


def optional_select_field(v: Any, name: str) -> OptionalValue:
    if isinstance(v, OptionalValue):
        if not v.present:
            return NONE
        v = v.value
    if isinstance(v, dict):
        found = v.get(name, MISSING)
        if found is MISSING:
            return OptionalValue(True, EMPTY) if isinstance(v, EmptyDomains) else NONE
        return OptionalValue(True, found)
    raise CELRuntimeError(f"type '{type_name(v)}' does not support field selection")


def index_value(v: Any, key: Any) -> Any:
    if isinstance(v, dict):
        found = map_lookup(v, key)
        if found is MISSING:
            if isinstance(v, EmptyDomains):
                return EMPTY
            raise CELRuntimeError(f"no such key: {key}", key=str(key))
        return found
    if isinstance(v, (list, tuple)):
        if isinstance(key, float) and key.is_integer():
            key = int(key)
        if isinstance(key, bool) or not isinstance(key, int):
            raise no_overload("_[_]", v, key)
        if not 0 <= key < len(v):
            raise CELRuntimeError(f"index out of bounds: {key}")
        return v[key]
    if isinstance(v, OptionalValue):
        if not v.present:
            return NONE
        return OptionalValue(True, index_value(v.value, key))
    raise no_overload("_[_]", v, key)


def optional_index_value(v: Any, key: Any) -> OptionalValue:
    if isinstance(v, OptionalValue):
        if not v.present:
            return NONE
        v = v.value
    if isinstance(v, dict):
        found = map_lookup(v, key)
        if found is MISSING:
            return OptionalValue(True, EMPTY) if isinstance(v, EmptyDomains) else NONE
        return OptionalValue(True, found)
    if isinstance(v, (list, tuple)) and isinstance(key, int) and not isinstance(key, bool):
        return OptionalValue(True, v[key]) if 0 <= key < len(v) else NONE
    raise no_overload("_[?_]", v, key)


def iteration_range(v: Any) -> tuple[Iterator[tuple[Any, Any]], bool]:
    """(key or index, value) pairs, lazily (a comprehension stopped by the cost limit
    never walks the rest), and whether the range is a list."""
    if isinstance(v, (list, tuple)):
        return enumerate(v), True
    if isinstance(v, dict):
        return iter(list(v.items())), False
    name = type_name(v)
    raise CELRuntimeError(f"got '{GO_TYPE_NAMES.get(name, name)}', expected iterable type")


def loop_activation(a: Activation) -> Activation:
    inner = Activation(a)
    inner.meter = a.meter
    return inner


class BindActivation(Activation):
    """`cel.bind(v, init, body)`: `v` is evaluated when the body first reads it (cel-go's
    lazily initialised accumulator), so an unused binding costs nothing and cannot fail."""

    __slots__ = ("init", "outer", "var")

    def __missing__(self, key: str) -> Any:
        if key != self.var:
            raise KeyError(key)
        value = self.init(self.outer)
        self[key] = value
        return value


def bind(inner: Activation, names: list[str], key: Any, value: Any, is_list: bool) -> None:
    # One variable: the list element or the map key. Two: index/key and element/value.
    if len(names) == 1:
        inner[names[0]] = value if is_list else key
    else:
        inner[names[0]], inner[names[1]] = key, value


# What cel-go charges per iteration of a quantifier's fold, besides the predicate: the
# condition (`@not_strictly_false(@result)`: 2; `exists` negates the accumulator: 3) and
# the accumulator's read in the step (1). exists_one's condition is the literal true.
_CONDITION = {"all": 2, "exists": 3, "exists_one": 0}


def quantifier(kind: str) -> Callable[[list[str], list[Fn], bool], Callable]:
    condition = _CONDITION[kind]
    per_item = condition + (kind != "exists_one")

    def make(names: list[str], fns: list[Fn], const: bool) -> Callable:
        pred = fns[0]

        def run(a: Activation, items: Iterator[tuple[Any, Any]], is_list: bool) -> Any:
            meter = a.meter
            deadline = meter.deadline
            inner = loop_activation(a)
            error: CELRuntimeError | None = None
            hits = 0
            decided: bool | None = None
            for key, value in items:
                if deadline is not None:
                    meter.tick()
                if decided is not None:
                    meter.steps(condition)  # the condition that ends the fold
                    break
                meter.cost += per_item
                if meter.cost > meter.limit:
                    meter.cost -= per_item
                    meter.steps(per_item)
                bind(inner, names, key, value, is_list)
                try:
                    r = pred(inner)
                except Cancelled:
                    raise
                except CELRuntimeError as e:
                    error = error or e
                    continue
                if r is True:
                    if kind == "exists":
                        decided = True
                    elif kind == "exists_one":
                        meter.steps(2)  # @result + 1
                        hits += 1
                elif r is False:
                    if kind == "all":
                        decided = False
                else:
                    error = error or no_overload(kind, r)
            meter.steps(2 if kind == "exists_one" else 1)  # the result
            if decided is not None:
                return decided
            if error is not None:
                raise error
            if kind == "all":
                return True
            if kind == "exists":
                return False
            return hits == 1
        return run
    return make


def mapper(kind: str) -> Callable[[list[str], list[Fn], bool], Callable]:
    """map, filter, transformList, transformMap. `const`: the transform is a constant,
    so the one-element list each step appends is too (cel-go builds it once)."""
    def make(names: list[str], fns: list[Fn], const: bool) -> Callable:
        # The step: `@result + [t]` (1 + 10 + 1, the list free when constant), filter's
        # `@result + [x]` (13), transformMap's `cel.@mapInsert(@result, k, t)` (3).
        step = 3 if kind == "transformMap" else 13 if kind == "filter" else \
            2 if const else 12
        guarded = kind == "filter" or len(fns) == 2

        def run(a: Activation, items: Iterator[tuple[Any, Any]], is_list: bool) -> Any:
            meter = a.meter
            inner = loop_activation(a)
            out_list: list = []
            out_map: dict = {}
            deadline = meter.deadline
            for key, value in items:
                if deadline is not None:
                    meter.tick()
                bind(inner, names, key, value, is_list)
                if guarded:
                    keep = fns[0](inner)
                    if not isinstance(keep, bool):
                        raise no_overload(kind, keep)
                    if not keep:
                        continue
                meter.charge(step)
                if kind == "filter":
                    out_list.append(inner[names[-1]] if len(names) == 2 else inner[names[0]])
                    continue
                result = fns[-1](inner)
                if kind == "transformMap":
                    out_map[key] = result
                else:
                    out_list.append(result)
            meter.charge(1)  # the result
            return out_map if kind == "transformMap" else out_list
        return run
    return make


COMPREHENSIONS: dict[str, Callable] = {
    "all": quantifier("all"), "exists": quantifier("exists"),
    "exists_one": quantifier("exists_one"), "existsOne": quantifier("exists_one"),
    "map": mapper("map"), "filter": mapper("filter"),
    "transformList": mapper("transformList"), "transformMap": mapper("transformMap"),
}


def arith(op: str) -> Callable[[Any, Any], Any]:
    def run(x: Any, y: Any) -> Any:
        if is_number(x) and is_number(y) and type(x) is type(y):
            if isinstance(x, float):
                if op == "_%_":
                    raise no_overload(op, x, y)
                if op == "_/_":
                    if y == 0:
                        return float("inf") if x > 0 else float("-inf") if x < 0 else \
                            float("nan")
                    return x / y
                return {"_+_": x + y, "_-_": x - y, "_*_": x * y}[op]
            if op in ("_/_", "_%_"):
                if y == 0:
                    raise CELRuntimeError("division by zero" if op == "_/_"
                                          else "modulus by zero")
                q = abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)
                r = x - q * y
                v = q if op == "_/_" else r
            else:
                v = {"_+_": x + y, "_-_": x - y, "_*_": x * y}[op]
            return check_uint(v) if isinstance(x, Uint) else check_int(v)
        if op == "_+_":
            if isinstance(x, str) and isinstance(y, str):
                return x + y
            if isinstance(x, bytes) and isinstance(y, bytes):
                return x + y
            if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
                return [*x, *y]
        raise no_overload(op, x, y)
    return run


def relation(op: str) -> Callable[[Any, Any], bool]:
    test = {"_<_": lambda c: c < 0, "_<=_": lambda c: c <= 0,
            "_>_": lambda c: c > 0, "_>=_": lambda c: c >= 0}[op]

    def run(x: Any, y: Any) -> bool:
        return test(compare(x, y, op))
    return run


def membership(x: Any, container: Any) -> bool:
    if isinstance(container, (list, tuple)):
        if type(x) is str or type(x) is bytes:
            return x in container  # a string equals only that string, in Python as in CEL
        return any(equal(x, e) for e in container)
    if isinstance(container, dict):
        return map_lookup(container, x) is not MISSING
    raise no_overload("@in", x, container)


BINARY_IMPL: dict[str, Callable[[Any, Any], Any]] = {
    "_==_": equal, "_!=_": lambda x, y: not equal(x, y), "@in": membership,
    **{op: arith(op) for op in NUMERIC_OPS},
    **{op: relation(op) for op in ("_<_", "_<=_", "_>_", "_>=_")},
}
