"""Check and compile a CEL AST into Python closures.

`draemu.cel.estimate` first estimates the worst-case cost, as cel-go's checker does, and
tells the static type of every node and the overload of every call. Then one pass over
the AST does what cel-go's checker and planner do: it rejects undeclared names, unknown
device fields and functions (with cel-go's messages), infers a coarse static type (to
insist on a bool result), and builds a closure per node from the run-time pieces in
`draemu.cel.interpreter`. Closures take an `Activation` (variables plus a shared cost
`Meter`), return CEL values, and charge what cel-go's cost tracker charges for the same
step (`draemu.cel.cost`): 1 per variable, field and index, a call's function cost,
10 for a list built at run time, the folds of macros; constants cost nothing, and lists
and maps of constants are built once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from draemu.cel import netlib  # noqa: F401  (registers the IP, CIDR, URL and format functions)
from draemu.cel.cost import (
    LIST_CREATE_BASE_COST,
    MAP_CREATE_BASE_COST,
    STRUCT_CREATE_BASE_COST,
    CallCost,
    Meter,
    call_rule,
)
from draemu.cel.decltypes import DeclType, unescape
from draemu.cel.errors import Cancelled, CELCompileError, CELRuntimeError
from draemu.cel.estimate import Estimator, SizeEstimator
from draemu.cel.interpreter import (
    BINARY_IMPL,
    COMPREHENSIONS,
    NUMERIC_OPS,
    Activation,
    BindActivation,
    Fn,
    index_value,
    iteration_range,
    optional_index_value,
    optional_select_field,
    select_field,
)
from draemu.cel.library import FUNCTIONS, NAMESPACES, Function
from draemu.cel.library.registry import PATCH_TYPES
from draemu.cel.syntax import (
    Call,
    Ident,
    Index,
    ListLit,
    Literal,
    MapLit,
    Node,
    Select,
    StructLit,
    Uint,
    format_error,
)
from draemu.cel.values import (
    MISSING,
    CelType,
    OptionalValue,
    StructValue,
    check_int,
    is_number,
    map_lookup,
    no_overload,
    type_name,
)


@dataclass(frozen=True)
class Env:
    allow_multiple_allocations: bool = True
    list_type_attributes: bool = True  # `includes` available
    # Names declared beside `device`: the Kubernetes environments' `self`, `object`, ...
    # (see draemu.cel.kubernetes); their values are dynamically typed.
    variables: frozenset[str] = frozenset()
    # What the cost estimator knows of the variables: their declared types (a name
    # missing here is dynamic) and the size bounds of what they hold.
    declarations: tuple[tuple[str, DeclType], ...] = ()
    sizes: SizeEstimator | None = None
    # Fields name escaped properties (CRD rules: `self.__namespace__` is "namespace").
    escaped_fields: bool = False
    # The mutating admission policies' types: `Object`, `Object.<field>...` (dynamic
    # objects built by message construction), `JSONPatch`, and `jsonpatch.escapeKey`.
    patch_types: bool = False


@dataclass
class Compiled:
    fn: Fn
    type: str
    # A variable followed by fields and indexes (cel-go's attribute): a further field
    # costs 1, a field of anything else 2 (a relative attribute and its qualifier).
    attribute: bool = False
    const: bool = False  # a constant, `value`, evaluated at compile time
    value: Any = None


@dataclass
class Result:
    fn: Fn
    type: str
    cost: tuple[int, int]  # the estimate (min, max)


# The mutating admission policies' message types (Env.patch_types).
OBJECT = "Object"
JSON_PATCH = "JSONPatch"
_JSON_PATCH_FIELDS = ("op", "path", "from", "value")

_DEVICE_FIELDS = {"driver": "string", "attributes": "domains", "capacity": "domains",
                  "allowMultipleAllocations": "bool"}

_LITERAL_TYPES = {bool: "bool", int: "int", Uint: "uint", float: "double", str: "string",
                  bytes: "bytes", type(None): "null"}

_TYPE_CONSTANTS = {"bool", "int", "uint", "double", "string", "bytes", "list", "map",
                   "null_type", "type"}

# cel-go's type conversions, evaluated once when their argument is a constant.
_CONVERSIONS = frozenset({"bool", "bytes", "double", "duration", "dyn", "int", "string",
                          "timestamp", "type", "uint"})


def _constant_activation() -> Activation:
    a = Activation()
    a.meter = Meter(None)
    return a


_CONSTANT_ACTIVATION = _constant_activation()


class Compiler:
    def __init__(self, source: str, env: Env) -> None:
        self.source = source
        self.env = env
        self.errors: list[str] = []
        self.scopes: list[set[str]] = [set()]
        self.estimator = Estimator(dict(env.declarations), env.sizes)

    def error(self, message: str, node: Node) -> Compiled:
        self.errors.append(format_error(self.source, message, node.pos))
        return Compiled(lambda a: None, "dyn")

    def compile(self, node: Node) -> Result:
        cost = self.estimator.estimate(node)
        result = self.visit(node)
        if self.errors:
            raise CELCompileError("compilation failed: " + "\n".join(self.errors))
        return Result(result.fn, result.type, cost)

    def visit(self, node: Node) -> Compiled:
        if isinstance(node, Literal):
            v = node.value
            return _constant(v, _LITERAL_TYPES.get(type(v), "dyn"))
        if isinstance(node, Ident):
            return self.ident(node)
        if isinstance(node, Select):
            return self.select(node)
        if isinstance(node, Index):
            return self.index(node)
        if isinstance(node, ListLit):
            return self.list_literal(node)
        if isinstance(node, MapLit):
            return self.map_literal(node)
        if isinstance(node, StructLit):
            return self.struct_literal(node)
        assert isinstance(node, Call)
        return self.call(node)

    def list_literal(self, node: ListLit) -> Compiled:
        items = [self.visit(x) for x in node.items]
        elem = {c.type for c in items}
        t = f"list({elem.pop()})" if len(elem) == 1 else "list(dyn)"
        if all(c.const for c in items):
            # cel-go's planner builds a list of constants once.
            return _constant([c.value for c in items], t)
        fns = [c.fn for c in items]

        def build_list(a: Activation) -> list:
            out = [f(a) for f in fns]
            a.meter.charge(LIST_CREATE_BASE_COST)
            return out
        return Compiled(build_list, t)

    def map_literal(self, node: MapLit) -> Compiled:
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
        if all(k.const and v.const for k, v in entries):
            try:
                return _constant(build_map(_CONSTANT_ACTIVATION), "map")
            except CELRuntimeError:
                pass

        def build(a: Activation) -> dict:
            out = build_map(a)
            a.meter.charge(MAP_CREATE_BASE_COST)
            return out
        return Compiled(build, "map")

    def struct_literal(self, node: StructLit) -> Compiled:
        """`Object.spec{replicas: 3}` or `JSONPatch{op: "add", path: "/a", value: 1}`:
        the only message types of Kubernetes' environments, and only the mutating
        policies' (their `Object` types are dynamic: any field name)."""
        name = node.type_name
        if not self.env.patch_types or not (name in (OBJECT, JSON_PATCH)
                                            or name.startswith(OBJECT + ".")):
            return self.error(f"undeclared reference to '{name}' (in container '')", node)
        names = [field for field, _ in node.fields]
        values = [self.visit(value) for _, value in node.fields]
        for field, value in zip(names, values, strict=True):
            if name != JSON_PATCH:
                continue
            if field not in _JSON_PATCH_FIELDS:
                return self.error(f"undefined field '{field}'", node)
            if field != "value" and value.type not in ("string", "dyn"):
                return self.error(f"expected type of field '{field}' is 'string' but "
                                  f"provided type is '{value.type}'", node)
        fns = [v.fn for v in values]

        def build(a: Activation) -> StructValue:
            fields = {}
            for field, fn in zip(names, fns, strict=True):
                fields[field] = fn(a)
            a.meter.charge(STRUCT_CREATE_BASE_COST)
            if name == JSON_PATCH:
                for field in ("op", "path", "from"):
                    if field in fields and not isinstance(fields[field], str):
                        raise CELRuntimeError(f"unexpected type {type_name(fields[field])} "
                                              f"for JSONPatchType '{field}' field")
            return StructValue(name, fields)
        return Compiled(build, name)

    # --- names and selection --------------------------------------------------------------

    def ident(self, node: Ident) -> Compiled:
        name = node.name
        if any(name in scope for scope in self.scopes):
            return Compiled(_variable(name), "dyn", attribute=True)
        if name == "device" and not self.env.variables:
            return Compiled(_variable("device"), "device", attribute=True)
        if name in self.env.variables:
            return Compiled(_variable(name), "dyn", attribute=True)
        if name in _TYPE_CONSTANTS:
            return _constant(CelType("null_type" if name == "null_type" else name), "type")
        return self.error(f"undeclared reference to '{name}' (in container '')", node)

    def select(self, node: Select) -> Compiled:
        operand = self.visit(node.operand)
        name = unescape(node.field) if self.env.escaped_fields else node.field
        if operand.type == "device":
            field_type = _DEVICE_FIELDS.get(name)
            if field_type is None or (name == "allowMultipleAllocations"
                                      and not self.env.allow_multiple_allocations):
                return self.error(f"undefined field '{name}'", node)
        elif operand.type not in ("dyn", "map", "domains", "optional", JSON_PATCH) \
                and not operand.type.startswith(("map", OBJECT)):
            return self.error(f"type '{operand.type}' does not support field selection", node)
        ofn = operand.fn
        if node.test_only:
            # has() costs its operand only (Kubernetes does not charge presence tests).
            def has(a: Activation) -> bool:
                return select_field(ofn(a), name, presence=True)
            return Compiled(has, "bool")
        cost = 1 if operand.attribute else 2
        if node.optional:
            def opt_select(a: Activation) -> OptionalValue:
                found = optional_select_field(ofn(a), name)
                if found.present:
                    a.meter.charge(cost)
                return found
            return Compiled(opt_select, "optional", attribute=True)
        result = {"device": _DEVICE_FIELDS.get(name, "dyn"), "domains": "map"}.get(
            operand.type, "optional" if operand.type == "optional" else "dyn")

        def sel(a: Activation) -> Any:
            v = ofn(a)
            m = a.meter
            m.cost += cost
            if m.cost > m.limit:
                m.over()
            return select_field(v, name, presence=False)
        return Compiled(sel, result, attribute=True)

    def index(self, node: Index) -> Compiled:
        operand, key = self.visit(node.operand), self.visit(node.key)
        if operand.type in ("bool", "int", "uint", "double", "string", "bytes", "null"):
            return self.error(f"found no matching overload for '_[_]' applied to "
                              f"'({operand.type}, {key.type})'", node)
        ofn, kfn = operand.fn, key.fn
        # A relative attribute costs 1; so does the index, unless the key is a variable's
        # field, whose own reads stand for it.
        cost = (0 if operand.attribute else 1) + (0 if _rooted_attribute(node.key) else 1)
        if node.optional:
            def opt_index(a: Activation) -> OptionalValue:
                v, k = ofn(a), kfn(a)
                a.meter.charge(cost)
                return optional_index_value(v, k)
            return Compiled(opt_index, "optional", attribute=True)
        result = "map" if operand.type == "domains" else "dyn"

        def idx(a: Activation) -> Any:
            v, k = ofn(a), kfn(a)
            m = a.meter
            m.cost += cost
            if m.cost > m.limit:
                m.over()
            return index_value(v, k)
        return Compiled(idx, result, attribute=True)

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
                          and not self.env.list_type_attributes) or (
                fn.gate == PATCH_TYPES and not self.env.patch_types):
            return self.error(f"undeclared reference to '{name}' (in container '')", node)
        receiver = self.visit(target) if target is not None else None
        args = [self.visit(x) for x in node.args]
        if len(node.args) not in fn.arities or not _receiver_ok(fn, receiver):
            types = ", ".join(c.type for c in args)
            applied = f"{receiver.type}.({types})" if receiver else f"({types})"
            return self.error(f"found no matching overload for '{name}' applied to "
                              f"'{applied}'", node)
        impl = fn.impl
        operands = ([receiver] if receiver else []) + args
        result = _result_type(fn, receiver)
        if name in _CONVERSIONS and all(c.const for c in operands):
            # cel-go's planner converts constants once.
            try:
                return _constant(impl(*[c.value for c in operands]), result)
            except CELRuntimeError:
                pass
        return Compiled(_call(impl, [c.fn for c in operands],
                              call_rule(name, self._overload(node, name))), result)

    def _overload(self, node: Node, default: str) -> str | None:
        return self.estimator.overloads.get(id(node), default)

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
            inner = BindActivation(a)
            inner.pop(var, None)
            inner.meter, inner.var, inner.init, inner.outer = a.meter, var, ifn, a
            return bfn(inner)
        return Compiled(bind, body.type)

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
        const = name in ("map", "transformList") and rest[-1].const
        run = COMPREHENSIONS[name](names, [c.fn for c in rest], const)
        rfn = rng.fn

        def loop(a: Activation) -> Any:
            items, is_list = iteration_range(rfn(a))
            return run(a, items, is_list)
        result = {"all": "bool", "exists": "bool", "exists_one": "bool",
                  "existsOne": "bool", "map": "list(dyn)", "filter": "list(dyn)",
                  "transformList": "list(dyn)", "transformMap": "map"}[name]
        return Compiled(loop, result)

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
            except Cancelled:
                raise
            except CELRuntimeError as e:
                # cel-go evaluates the right side too, and when neither decides, the left
                # side's error is the one it reports.
                try:
                    rv = rf(a)
                except CELRuntimeError:
                    raise e from None
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
        return Compiled(logic, "bool")

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
        cf = cond.fn
        # A branch that is a variable's field is resolved without reading the variable as
        # a step of its own: cel-go charges it one unit less.
        yf, nf = (_branch(c.fn) if _rooted_attribute(n) else c.fn
                  for c, n in ((yes, node.args[1]), (no, node.args[2])))

        def ternary(a: Activation) -> Any:
            c = cf(a)
            if c is True:
                return yf(a)
            if c is False:
                return nf(a)
            raise no_overload("_?_:_", c)
        t = yes.type if yes.type == no.type else "dyn"
        return Compiled(ternary, t)

    def unary(self, node: Call) -> Compiled:
        operand = self.visit(node.args[0])
        f = operand.fn
        if node.function == "!_":
            self._want_bool(node, operand)

            def negate(a: Activation) -> bool:
                v = f(a)
                a.meter.charge(1)
                if not isinstance(v, bool):
                    raise no_overload("!_", v)
                return not v
            return Compiled(negate, "bool")

        def minus(a: Activation) -> Any:
            v = f(a)
            a.meter.charge(1)
            if isinstance(v, (bool, Uint)) or not is_number(v):
                raise no_overload("-_", v)
            return check_int(-v) if isinstance(v, int) else -v
        return Compiled(minus, operand.type)

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
        if op == "@in" and right.const and _primitive_set(right.value):
            # cel-go tests membership in a list of constants as a set lookup, free.
            members = right.value
            return Compiled(lambda a: impl(lf(a), members), result)
        rule = call_rule(op, self._overload(node, op))
        if isinstance(rule, int):
            def fixed_cost(a: Activation) -> Any:
                x, y = lf(a), rf(a)
                a.meter.charge(rule)  # type: ignore[arg-type]
                return impl(x, y)
            return Compiled(fixed_cost, result)

        def sized_cost(a: Activation) -> Any:
            x, y = lf(a), rf(a)
            a.meter.charge(rule((x, y)))  # type: ignore[operator]
            return impl(x, y)
        return Compiled(sized_cost, result)


def _variable(name: str) -> Fn:
    def read(a: Activation) -> Any:
        m = a.meter
        m.cost += 1
        if m.cost > m.limit:
            m.over()
        return a[name]
    return read


def _constant(value: Any, t: str) -> Compiled:
    return Compiled(lambda a: value, t, const=True, value=value)


def _call(impl: Callable[..., Any], fns: list[Fn], rule: CallCost | int) -> Fn:
    """A function call charged from its arguments before it runs."""
    if len(fns) == 1:
        f0 = fns[0]
        if isinstance(rule, int):
            def call1_fixed(a: Activation) -> Any:
                x = f0(a)
                a.meter.charge(rule)  # type: ignore[arg-type]
                return impl(x)
            return call1_fixed

        def call1(a: Activation) -> Any:
            x = f0(a)
            a.meter.charge(rule((x,)))  # type: ignore[operator]
            return impl(x)
        return call1

    def call(a: Activation) -> Any:
        args = [f(a) for f in fns]
        a.meter.charge(rule if isinstance(rule, int) else rule(args))
        return impl(*args)
    return call


def _branch(fn: Fn) -> Fn:
    def branch(a: Activation) -> Any:
        value = fn(a)
        a.meter.cost -= 1
        return value
    return branch


def _rooted_attribute(node: Node) -> bool:
    while isinstance(node, (Select, Index)) and not getattr(node, "optional", False):
        node = node.operand
    return isinstance(node, Ident) and node.name not in _TYPE_CONSTANTS


def _primitive_set(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(v, (bool, int, float, str)) for v in value)


def _receiver_ok(fn: Function, receiver: Compiled | None) -> bool:
    """Whether the receiver's static type can be one the function takes."""
    if receiver is None or not fn.receivers or "dyn" in fn.receivers or receiver.type == "dyn":
        return True
    return receiver.type.split("(")[0] in fn.receivers


def _result_type(fn: Function, receiver: Compiled | None) -> str:
    if fn.name == "reverse" and receiver is not None:
        return receiver.type  # a reversed string or list keeps its type
    return fn.result


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
