"""Check and compile a CEL AST into Python closures.

One pass over the AST does what cel-go's checker, cost estimator and planner do for
the DRA environment: it rejects undeclared names, unknown device fields and functions
(with cel-go's messages), infers a coarse static type (to insist on a bool result),
estimates the worst-case cost, and builds a closure per node from the run-time pieces
in `draemu.cel.interpreter`. Closures take an `Activation` (variables plus a shared cost
meter) and return CEL values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from draemu.cel import netlib  # noqa: F401  (registers the IP, CIDR, URL and format functions)
from draemu.cel.errors import CELCompileError, CELRuntimeError
from draemu.cel.interpreter import (
    BINARY_IMPL,
    COMPREHENSIONS,
    NUMERIC_OPS,
    REGEX_FUNCTIONS,
    Activation,
    Fn,
    index_value,
    iteration_range,
    optional_index_value,
    optional_select_field,
    regex_call,
    select_field,
)
from draemu.cel.library import FUNCTIONS, NAMESPACES, Function
from draemu.cel.syntax import (
    Call,
    Ident,
    Index,
    ListLit,
    Literal,
    MapLit,
    Node,
    Select,
    Uint,
    format_error,
)
from draemu.cel.values import (
    MISSING,
    CelType,
    OptionalValue,
    check_int,
    is_number,
    map_lookup,
    no_overload,
    type_name,
)

# Worst-case sizes the cost estimate assumes (Kubernetes' limits for devices).
MAX_ATTRIBUTES = 32          # attributes + capacities per device
MAX_LIST_SIZE = 64           # list attribute values / attribute value length
MAX_DOMAINS = 32


@dataclass(frozen=True)
class Env:
    allow_multiple_allocations: bool = True
    list_type_attributes: bool = True  # `includes` available
    # Names declared beside `device`: the Kubernetes environments' `self`, `object`, ...
    # (see draemu.cel.kubernetes); their values are dynamically typed.
    variables: frozenset[str] = frozenset()


@dataclass
class Compiled:
    fn: Fn
    type: str
    cost: int
    size: int | None = None  # element count, when known statically (list literals)


_DEVICE_FIELDS = {"driver": "string", "attributes": "domains", "capacity": "domains",
                  "allowMultipleAllocations": "bool"}

_LITERAL_TYPES = {bool: "bool", int: "int", Uint: "uint", float: "double", str: "string",
                  bytes: "bytes", type(None): "null"}

_TYPE_CONSTANTS = {"bool", "int", "uint", "double", "string", "bytes", "list", "map",
                   "null_type", "type"}


class Compiler:
    def __init__(self, source: str, env: Env) -> None:
        self.source = source
        self.env = env
        self.errors: list[str] = []
        self.scopes: list[set[str]] = [set()]

    def error(self, message: str, node: Node) -> Compiled:
        self.errors.append(format_error(self.source, message, node.pos))
        return Compiled(lambda a: None, "dyn", 0)

    def compile(self, node: Node) -> Compiled:
        result = self.visit(node)
        if self.errors:
            raise CELCompileError("compilation failed: " + "\n".join(self.errors))
        return result

    def visit(self, node: Node) -> Compiled:
        if isinstance(node, Literal):
            v = node.value
            return Compiled(lambda a: v, _LITERAL_TYPES.get(type(v), "dyn"), 0)
        if isinstance(node, Ident):
            return self.ident(node)
        if isinstance(node, Select):
            return self.select(node)
        if isinstance(node, Index):
            return self.index(node)
        if isinstance(node, ListLit):
            items = [self.visit(x) for x in node.items]
            fns = [c.fn for c in items]
            elem = {c.type for c in items}
            t = f"list({elem.pop()})" if len(elem) == 1 else "list(dyn)"
            return Compiled(lambda a: [f(a) for f in fns], t, 10 + sum(c.cost for c in items),
                            len(items))
        if isinstance(node, MapLit):
            entries = [(self.visit(k), self.visit(v)) for k, v in node.entries]
            pairs = [(k.fn, v.fn) for k, v in entries]

            def build_map(a: Activation) -> dict:
                out: dict = {}
                for kf, vf in pairs:
                    k = kf(a)
                    if isinstance(k, (float, list, dict)) or k is None:
                        raise CELRuntimeError(f"unsupported map key type: {type_name(k)}")
                    if map_lookup(out, k) is not MISSING:
                        raise CELRuntimeError(f"Failed with repeated key: {k}")
                    out[k] = vf(a)
                return out
            return Compiled(build_map, "map",
                            30 + sum(k.cost + v.cost for k, v in entries))
        assert isinstance(node, Call)
        return self.call(node)

    # --- names and selection --------------------------------------------------------------

    def ident(self, node: Ident) -> Compiled:
        name = node.name
        if any(name in scope for scope in self.scopes):
            return Compiled(lambda a: a[name], "dyn", 1)
        if name == "device" and not self.env.variables:
            return Compiled(lambda a: a["device"], "device", 1)
        if name in self.env.variables:
            return Compiled(lambda a: a[name], "dyn", 1)
        if name in _TYPE_CONSTANTS:
            t = CelType("null_type" if name == "null_type" else name)
            return Compiled(lambda a: t, "type", 0)
        return self.error(f"undeclared reference to '{name}' (in container '')", node)

    def select(self, node: Select) -> Compiled:
        operand = self.visit(node.operand)
        name = node.field
        if operand.type == "device":
            field_type = _DEVICE_FIELDS.get(name)
            if field_type is None or (name == "allowMultipleAllocations"
                                      and not self.env.allow_multiple_allocations):
                return self.error(f"undefined field '{name}'", node)
        elif operand.type not in ("dyn", "map", "domains", "optional") \
                and not operand.type.startswith("map"):
            return self.error(f"type '{operand.type}' does not support field selection", node)
        ofn = operand.fn
        if node.test_only:
            def has(a: Activation) -> bool:
                return select_field(ofn(a), name, presence=True)
            return Compiled(has, "bool", operand.cost + 1)
        if node.optional:
            def opt_select(a: Activation) -> OptionalValue:
                return optional_select_field(ofn(a), name)
            return Compiled(opt_select, "optional", operand.cost + 1)
        result = {"device": _DEVICE_FIELDS.get(name, "dyn"), "domains": "map"}.get(
            operand.type, "optional" if operand.type == "optional" else "dyn")

        def sel(a: Activation) -> Any:
            return select_field(ofn(a), name, presence=False)
        return Compiled(sel, result, operand.cost + 1)

    def index(self, node: Index) -> Compiled:
        operand, key = self.visit(node.operand), self.visit(node.key)
        if operand.type in ("bool", "int", "uint", "double", "string", "bytes", "null"):
            return self.error(f"found no matching overload for '_[_]' applied to "
                              f"'({operand.type}, {key.type})'", node)
        ofn, kfn = operand.fn, key.fn
        if node.optional:
            def opt_index(a: Activation) -> OptionalValue:
                return optional_index_value(ofn(a), kfn(a))
            return Compiled(opt_index, "optional", operand.cost + key.cost + 1)
        result = "map" if operand.type == "domains" else "dyn"

        def idx(a: Activation) -> Any:
            return index_value(ofn(a), kfn(a))
        return Compiled(idx, result, operand.cost + key.cost + 1)

    # --- calls ------------------------------------------------------------------------------

    def call(self, node: Call) -> Compiled:
        name, target = node.function, node.target
        if target is None:
            op = _OPERATORS.get(name)
            if op is not None:
                return op(self, node)
            if name == "has":
                return self.macro_has(node)
        elif isinstance(target, Ident) and target.name in NAMESPACES \
                and not any(target.name in s for s in self.scopes):
            qualified = f"{target.name}.{name}"
            if qualified == "cel.bind":
                return self.macro_bind(node)
            return self.function_call(qualified, None, node)
        else:
            macro = _MACROS.get(name)
            if macro is not None and len(node.args) in macro[0]:
                return macro[1](self, node)
        return self.function_call(name, target, node)

    def function_call(self, name: str, target: Node | None, node: Call) -> Compiled:
        fn = FUNCTIONS.get((name, target is not None))
        if fn is None or (fn.gate == "DRAListTypeAttributes"
                          and not self.env.list_type_attributes):
            return self.error(f"undeclared reference to '{name}' (in container '')", node)
        receiver = self.visit(target) if target is not None else None
        args = [self.visit(x) for x in node.args]
        if len(node.args) not in fn.arities or not _receiver_ok(fn, receiver):
            types = ", ".join(c.type for c in args)
            applied = f"{receiver.type}.({types})" if receiver else f"({types})"
            return self.error(f"found no matching overload for '{name}' applied to "
                              f"'{applied}'", node)
        impl = fn.impl
        fns = [c.fn for c in ([receiver] if receiver else []) + args]
        cost = fn.cost + sum(c.cost for c in args) + (receiver.cost if receiver else 0)
        result = _result_type(fn, receiver)
        if name in REGEX_FUNCTIONS:
            return Compiled(regex_call(impl, fns), result, cost)
        if len(fns) == 1:
            f0 = fns[0]
            return Compiled(lambda a: impl(f0(a)), result, cost)
        if len(fns) == 2:
            f0, f1 = fns
            return Compiled(lambda a: impl(f0(a), f1(a)), result, cost)
        return Compiled(lambda a: impl(*[f(a) for f in fns]), result, cost)

    def macro_has(self, node: Call) -> Compiled:
        if len(node.args) != 1 or not isinstance(node.args[0], Select):
            return self.error("invalid argument to has() macro", node)
        sel = node.args[0]
        return self.select(Select(sel.operand, sel.field, test_only=True, pos=sel.pos))

    def macro_bind(self, node: Call) -> Compiled:
        if len(node.args) != 3 or not isinstance(node.args[0], Ident):
            return self.error("cel.bind() variable name must be a simple identifier", node)
        var = node.args[0].name
        init = self.visit(node.args[1])
        self.scopes.append({var})
        body = self.visit(node.args[2])
        self.scopes.pop()
        ifn, bfn = init.fn, body.fn

        def bind(a: Activation) -> Any:
            inner = Activation(a)
            inner.meter = a.meter
            inner[var] = ifn(a)
            return bfn(inner)
        return Compiled(bind, body.type, init.cost + body.cost + 10)

    def comprehension(self, node: Call) -> Compiled:
        name = node.function
        assert node.target is not None
        two_vars = len(node.args) == 3 and name in _TWO_VAR or len(node.args) == 4
        var_nodes = node.args[:2] if two_vars else node.args[:1]
        if not all(isinstance(v, Ident) for v in var_nodes):
            return self.error(f"{name}() variable name must be a simple identifier", node)
        names = [v.name for v in var_nodes]  # type: ignore[attr-defined]
        rng = self.visit(node.target)
        if rng.type in ("bool", "int", "uint", "double", "string", "bytes", "null"):
            return self.error(f"expression of type '{rng.type}' cannot be the range of a "
                              "comprehension (must be list, map, or dynamic)", node.target)
        self.scopes.append(set(names))
        rest = [self.visit(x) for x in node.args[len(names):]]
        self.scopes.pop()
        per_item = sum(c.cost for c in rest) + 2
        size = _max_size(rng)
        cost = rng.cost + size * per_item
        kind = COMPREHENSIONS[name]
        rfn = rng.fn
        fns = [c.fn for c in rest]
        run = kind(names, fns, per_item)

        def loop(a: Activation) -> Any:
            return run(a, *iteration_range(rfn(a)))
        result = {"all": "bool", "exists": "bool", "exists_one": "bool",
                  "existsOne": "bool", "map": "list(dyn)", "filter": "list(dyn)",
                  "transformList": "list(dyn)", "transformMap": "map"}[name]
        return Compiled(loop, result, cost)

    # --- operators ------------------------------------------------------------------------

    def logical(self, node: Call) -> Compiled:
        left, right = (self.visit(x) for x in node.args)
        self._want_bool(node, left, right)
        lf, rf = left.fn, right.fn
        is_and = node.function == "_&&_"
        decisive = not is_and  # && is decided by false, || by true

        def logic(a: Activation) -> bool:
            try:
                lv = lf(a)
            except CELRuntimeError as e:
                rv = rf(a)
                if rv is decisive:
                    return decisive
                raise e from None
            if lv is decisive:
                return decisive
            if lv is not (not decisive):
                # A non-bool left operand is an error unless the right side decides.
                rv = rf(a)
                if rv is decisive:
                    return decisive
                raise no_overload(node.function, lv, rv)
            rv = rf(a)
            if not isinstance(rv, bool):
                raise no_overload(node.function, lv, rv)
            return rv
        return Compiled(logic, "bool", left.cost + right.cost)

    def _want_bool(self, node: Call, *operands: Compiled) -> None:
        for c in operands:
            if c.type not in ("bool", "dyn"):
                types = ", ".join(x.type for x in operands)
                self.error(f"found no matching overload for '{node.function}' applied to "
                           f"'({types})'", node)
                return

    def conditional(self, node: Call) -> Compiled:
        cond, yes, no = (self.visit(x) for x in node.args)
        self._want_bool(node, cond)
        cf, yf, nf = cond.fn, yes.fn, no.fn

        def ternary(a: Activation) -> Any:
            c = cf(a)
            if c is True:
                return yf(a)
            if c is False:
                return nf(a)
            raise no_overload("_?_:_", c)
        t = yes.type if yes.type == no.type else "dyn"
        return Compiled(ternary, t, cond.cost + max(yes.cost, no.cost))

    def unary(self, node: Call) -> Compiled:
        operand = self.visit(node.args[0])
        f = operand.fn
        if node.function == "!_":
            self._want_bool(node, operand)

            def negate(a: Activation) -> bool:
                v = f(a)
                if not isinstance(v, bool):
                    raise no_overload("!_", v)
                return not v
            return Compiled(negate, "bool", operand.cost + 1)

        def minus(a: Activation) -> Any:
            v = f(a)
            if isinstance(v, (bool, Uint)) or not is_number(v):
                raise no_overload("-_", v)
            return check_int(-v) if isinstance(v, int) else -v
        return Compiled(minus, operand.type, operand.cost + 1)

    def binary(self, node: Call) -> Compiled:
        left, right = (self.visit(x) for x in node.args)
        op = node.function
        impl = BINARY_IMPL[op]
        lf, rf = left.fn, right.fn
        if op in ("_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_", "@in"):
            result = "bool"
        elif left.type == right.type and left.type != "null":
            result = left.type
        else:
            result = "dyn"
        bad = _static_operand_error(op, left.type, right.type)
        if bad:
            return self.error(bad, node)
        return Compiled(lambda a: impl(lf(a), rf(a)), result,
                        left.cost + right.cost + _operator_cost(op, node, left, right))


def _operator_cost(op: str, node: Call, left: Compiled, right: Compiled) -> int:
    """As CEL's estimator: comparing strings costs a tenth of their length, membership in
    a list its size, everything else one unit."""
    if op == "@in" and right.type not in ("map", "domains"):
        return right.size if right.size is not None else MAX_LIST_SIZE
    if op in ("_==_", "_!=_") and "string" in (left.type, right.type):
        literals = [len(n.value) for n in node.args if isinstance(n, Literal)
                    and isinstance(n.value, str)]
        shortest = min(literals) if literals else MAX_LIST_SIZE
        return -(-shortest // 10)
    return 1


def _receiver_ok(fn: Function, receiver: Compiled | None) -> bool:
    """Whether the receiver's static type can be one the function takes."""
    if receiver is None or not fn.receivers or "dyn" in fn.receivers or receiver.type == "dyn":
        return True
    return receiver.type.split("(")[0] in fn.receivers


def _result_type(fn: Function, receiver: Compiled | None) -> str:
    if fn.name == "reverse" and receiver is not None:
        return receiver.type  # a reversed string or list keeps its type
    return fn.result


def _max_size(rng: Compiled) -> int:
    if rng.size is not None:
        return rng.size
    # Otherwise assume the largest collection a device can hold.
    return {"domains": MAX_DOMAINS, "map": MAX_ATTRIBUTES}.get(rng.type, MAX_LIST_SIZE)


def _static_operand_error(op: str, lt: str, rt: str) -> str | None:
    concrete = {"bool", "int", "uint", "double", "string", "bytes", "null"}
    if op in NUMERIC_OPS and lt in concrete and rt in concrete:
        ok = (lt == rt and lt in ("int", "uint", "double")) or (
            op == "_+_" and lt == rt and lt in ("string", "bytes"))
        if op == "_%_" and lt == "double":
            ok = False
        if not ok:
            return f"found no matching overload for '{op}' applied to '({lt}, {rt})'"
    if op in ("_<_", "_<=_", "_>_", "_>=_") and lt in concrete and rt in concrete:
        numeric = {"int", "uint", "double"}
        if not (lt == rt and lt != "null" or lt in numeric and rt in numeric):
            return f"found no matching overload for '{op}' applied to '({lt}, {rt})'"
    return None


# --- runtime helpers ----------------------------------------------------------------------


_TWO_VAR = {"all", "exists", "exists_one", "existsOne", "transformList", "transformMap"}
_MACROS: dict[str, tuple[tuple[int, ...], Callable[[Compiler, Call], Compiled]]] = {
    "all": ((2, 3), Compiler.comprehension), "exists": ((2, 3), Compiler.comprehension),
    "exists_one": ((2, 3), Compiler.comprehension), "existsOne": ((2, 3), Compiler.comprehension),
    "map": ((2, 3), Compiler.comprehension), "filter": ((2,), Compiler.comprehension),
    "transformList": ((3, 4), Compiler.comprehension),
    "transformMap": ((3, 4), Compiler.comprehension),
}


_OPERATORS: dict[str, Callable[[Compiler, Call], Compiled]] = {
    "_&&_": Compiler.logical, "_||_": Compiler.logical, "_?_:_": Compiler.conditional,
    "!_": Compiler.unary, "-_": Compiler.unary,
    **{op: Compiler.binary for op in BINARY_IMPL},
}
