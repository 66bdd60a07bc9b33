"""The worst-case cost of an expression before it runs: cel-go's checker cost estimator
(checker/cost.go) with Kubernetes' and the extensions' call estimates
(`draemu.cel.estimatecalls`), over the declared types and size bounds of the
environment's variables (`draemu.cel.decltypes`).

It walks draemu's AST, which keeps macros unexpanded, and charges each macro what cel-go
charges its expansion (`all` is a fold whose condition is `@not_strictly_false(@result)`
and whose step is `@result && predicate`, ...). Along the way it infers the static type
of every node and the overload the checker would pick for each call; the compiler
charges the same overloads at run time (a call whose overload only the runtime can tell,
as `+` of two dynamic values, costs cel-go 1).

    est = Estimator({"device": device}, sizes)
    low, high = est.estimate(tree)
    est.overloads[id(call)]   # "in_list", "add_string", ..., None when ambiguous
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from draemu.cel.cost import (
    LIST_CREATE_BASE_COST,
    MAP_CREATE_BASE_COST,
    STRUCT_CREATE_BASE_COST,
    UINT64_MAX,
)
from draemu.cel.decltypes import (
    BOOL,
    BYTES,
    DOUBLE,
    DYN,
    INT,
    NULL,
    SCALARS,
    SELECTABLE,
    STRING,
    TYPE,
    UINT,
    DeclType,
    list_of,
    map_of,
    opaque,
    optional_of,
)
from draemu.cel.estimatecalls import (
    COMPARABLE,
    OVERLOAD_ESTIMATORS,
    CallEstimate,
    Operand,
    kubernetes_estimate,
    standard_estimate,
    union_estimates,
)
from draemu.cel.library import FUNCTIONS, NAMESPACES
from draemu.cel.sizes import ONE, UNKNOWN, ZERO, Entry, Range, add, fixed, multiply, union
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
)

SizeEstimator = Callable[[tuple[str, ...]], "Range | None"]

TYPE_NAMES = frozenset({"bool", "int", "uint", "double", "string", "bytes", "list", "map",
                        "null_type", "type"})
ACCUMULATOR = "@result"
# Macros (receiver-style) and their argument counts.
MACROS = {"all": (2, 3), "exists": (2, 3), "exists_one": (2, 3), "existsOne": (2, 3),
          "map": (2, 3), "filter": (2,), "transformList": (3, 4), "transformMap": (3, 4)}
TWO_VARIABLE = frozenset({"all", "exists", "exists_one", "existsOne", "transformList",
                          "transformMap"})


@dataclass
class Local:
    path: tuple[str, ...]
    size: Range | None
    entry: Entry | None
    type: DeclType


class Estimator:
    """`estimate(tree)` -> (min, max). Afterwards `types[id(node)]` is every node's static
    type and `overloads[id(call)]` the overload of every call (None: ambiguous)."""

    def __init__(self, variables: Mapping[str, DeclType],
                 sizes: SizeEstimator | None = None) -> None:
        self.variables = variables
        self.size_estimator = sizes
        self.types: dict[int, DeclType] = {}
        self.overloads: dict[int, str | None] = {}
        self._paths: dict[int, tuple[str, ...]] = {}
        self._sizes: dict[int, Range] = {}
        self._entries: dict[int, Entry] = {}
        self._locals: dict[str, list[Local]] = {}

    def estimate(self, tree: Node) -> Range:
        return self.cost(tree)

    # --- what the estimator knows of a node --------------------------------------------

    def type_of(self, node: Node) -> DeclType:
        return self.types.get(id(node), DYN)

    def _local(self, name: str) -> Local | None:
        stack = self._locals.get(name)
        return stack[-1] if stack else None

    def path_of(self, node: Node) -> tuple[str, ...]:
        if isinstance(node, Ident):
            local = self._local(node.name)
            if local is not None:
                return local.path
        return self._paths.get(id(node), ())

    def size_of(self, node: Node) -> Range | None:
        """cel-go's computeSize: computed, literal, declared bound, scalar, local."""
        known = self._sizes.get(id(node))
        if known is not None:
            return known
        literal = _literal_size(node)
        if literal is not None:
            return literal
        path = self.path_of(node)
        if self.size_estimator is not None and path:
            estimated = self.size_estimator(path)
            if estimated is not None:
                self._sizes[id(node)] = estimated
                return estimated
        t = self.type_of(node)
        if t.kind in SCALARS or (t.kind == "optional" and t.elem is not None
                                 and t.elem.kind in SCALARS):
            return ONE
        if isinstance(node, Ident):
            local = self._local(node.name)
            if local is not None and local.size is not None:
                return local.size
        return None

    def size_or_unknown(self, node: Node) -> Range:
        size = self.size_of(node)
        return size if size is not None else UNKNOWN

    def entry_of(self, node: Node) -> Entry | None:
        known = self._entries.get(id(node))
        if known is not None:
            return known
        if isinstance(node, Ident):
            local = self._local(node.name)
            if local is not None:
                return local.entry
        return None

    def operand(self, node: Node) -> Operand:
        path = self.path_of(node)
        if path and path[0] == ACCUMULATOR:
            path = ()
        return Operand(node, self.type_of(node), path, self.size_of(node))

    # The `Sizes` protocol of the call estimates.
    def size(self, op: Operand) -> Range:
        if op.size is not None:
            return op.size
        if self.size_estimator is not None and op.path:
            estimated = self.size_estimator(op.path)
            if estimated is not None:
                return estimated
        return UNKNOWN

    def element(self, op: Operand) -> Operand | None:
        t = op.type
        if t.kind == "list" and t.elem is not None:
            inner = t.elem
        elif t.kind == "map" and t.key is not None:
            inner = t.key
        else:
            return None
        path = (*op.path, "@items") if op.path else ()
        return Operand(op.node, inner, path, None)

    # --- nodes ----------------------------------------------------------------------------

    def cost(self, node: Node) -> Range:
        if isinstance(node, Literal):
            self.types[id(node)] = _literal_type(node.value)
            return ZERO
        if isinstance(node, Ident):
            return self._ident(node)
        if isinstance(node, Select):
            return self._select(node)
        if isinstance(node, Index):
            return self._index(node)
        if isinstance(node, ListLit):
            return self._list(node)
        if isinstance(node, MapLit):
            return self._map(node)
        if isinstance(node, StructLit):
            return self._struct(node)
        assert isinstance(node, Call)
        return self._call(node)

    def _ident(self, node: Ident) -> Range:
        local = self._local(node.name)
        if local is not None:
            self.types[id(node)] = local.type
            return ONE
        self._paths[id(node)] = (node.name,)
        declared = self.variables.get(node.name)
        if declared is None and node.name in TYPE_NAMES:
            self.types[id(node)] = TYPE
            return ZERO
        self.types[id(node)] = declared or DYN
        return ONE

    def _select(self, node: Select) -> Range:
        operand_cost = self.cost(node.operand)
        target = self.type_of(node.operand)
        field = _field_type(target, node.field)
        if node.test_only:
            # Kubernetes' environments do not charge presence tests.
            self.types[id(node)] = BOOL
            return operand_cost
        if node.optional:
            # `a.?b` is the call `_?._(a, "b")`: one unit, no path.
            self.types[id(node)] = optional_of(field)
            return add(operand_cost, ONE)
        self.types[id(node)] = field
        self._paths[id(node)] = (*self.path_of(node.operand), node.field)
        return add(operand_cost, ONE) if target.kind in SELECTABLE else operand_cost

    def _index(self, node: Index) -> Range:
        total = add(self.cost(node.operand), self.cost(node.key))
        target = self.type_of(node.operand)
        if node.optional:
            self.types[id(node)] = optional_of(target.elem or DYN)
            return add(total, ONE)
        self.types[id(node)] = target.elem if target.kind in ("list", "map") and \
            target.elem is not None else DYN
        entry = self.entry_of(node.operand)
        # A dynamic operand may be either; cel-go tracks the map's path last.
        suffix = "@items" if target.kind == "list" else "@values"
        self._paths[id(node)] = (*self.path_of(node.operand), suffix)
        size = entry.value if entry is not None else self.size_of(node)
        if size is not None:
            self._sizes[id(node)] = size
        return add(total, ONE)

    def _list(self, node: ListLit) -> Range:
        total = ZERO
        item = (UINT64_MAX, 0) if node.items else ZERO
        for x in node.items:
            total = add(total, self.cost(x))
            item = union(item, self.size_or_unknown(x))
        self._entries[id(node)] = Entry("list", ONE, item)
        self.types[id(node)] = list_of(_join([self.type_of(x) for x in node.items]))
        return add(total, fixed(LIST_CREATE_BASE_COST))

    def _map(self, node: MapLit) -> Range:
        total = ZERO
        key = value = (UINT64_MAX, 0) if node.entries else ZERO
        for k, v in node.entries:
            total = add(add(total, self.cost(k)), self.cost(v))
            key = union(key, self.size_or_unknown(k))
            value = union(value, self.size_or_unknown(v))
        self._entries[id(node)] = Entry("map", key, value)
        self.types[id(node)] = map_of(_join([self.type_of(k) for k, _ in node.entries]),
                                      _join([self.type_of(v) for _, v in node.entries]))
        return add(total, fixed(MAP_CREATE_BASE_COST))

    def _struct(self, node: StructLit) -> Range:
        """A message construction: its fields and cel-go's struct creation cost."""
        total = ZERO
        for _, value in node.fields:
            total = add(total, self.cost(value))
        self.types[id(node)] = DYN
        return add(total, fixed(STRUCT_CREATE_BASE_COST))

    # --- calls ----------------------------------------------------------------------------

    def _call(self, node: Call) -> Range:
        name, target = node.function, node.target
        if target is None:
            special = {"_&&_": self._logical, "_||_": self._logical,
                       "_?_:_": self._conditional, "has": self._has, "dyn": self._dyn}
            handler = special.get(name)
            if handler is not None and (name != "dyn" or len(node.args) == 1):
                return handler(node)
        elif isinstance(target, Ident) and target.name in NAMESPACES and \
                self._local(target.name) is None and target.name not in self.variables:
            qualified = f"{target.name}.{name}"
            if qualified == "cel.bind" and len(node.args) == 3:
                return self._bind(node)
            return self._function(node, qualified, None)
        elif name in MACROS and len(node.args) in MACROS[name] and \
                all(isinstance(a, Ident) for a in node.args[:_variables(node)]):
            return self._comprehension(node)
        return self._function(node, name, target)

    def _function(self, node: Call, name: str, target: Node | None) -> Range:
        arg_costs = [self.cost(a) for a in node.args]
        args = [self.operand(a) for a in node.args]
        total = ZERO
        receiver = None
        if target is not None:
            total = self.cost(target)
            receiver = self.operand(target)
        candidates = overloads(name, receiver, args)
        self.types[id(node)] = result_type(name, receiver, args)
        self.overloads[id(node)] = candidates[0] if len(candidates) == 1 else None
        arg_sum = ZERO
        for c in arg_costs:
            arg_sum = add(arg_sum, c)
        found: CallEstimate | None = None
        for overload in candidates:
            est = self._overload_cost(name, overload, receiver, args)
            found = union_estimates(found, CallEstimate(add(est.cost, arg_sum), est.size))
        assert found is not None
        size = found.size if found.size is not None else self.size_of(node)
        if size is not None:
            self._sizes[id(node)] = size
        if name == "_+_" and len(node.args) == 2:
            left, right = (self.entry_of(a) for a in node.args)
            joined = left.union(right) if left is not None else None
            if joined is not None:
                self._entries[id(node)] = joined
        return add(total, found.cost)

    def _overload_cost(self, name: str, overload: str, receiver: Operand | None,
                       args: list[Operand]) -> CallEstimate:
        rule = OVERLOAD_ESTIMATORS.get(overload)
        if rule is not None:
            est = rule(self, receiver, args)
            if est is not None:
                return est
        est = kubernetes_estimate(self, name, receiver, args)
        if est is not None:
            return est
        est = standard_estimate(self, overload, receiver, args)
        return est if est is not None else CallEstimate(ONE)

    def _logical(self, node: Call) -> Range:
        left, right = (self.cost(a) for a in node.args)
        self.types[id(node)] = BOOL
        return (left[0], add(left, right)[1])

    def _conditional(self, node: Call) -> Range:
        cond, yes, no = node.args
        total = add(self.cost(cond), union(self.cost(yes), self.cost(no)))
        self.types[id(node)] = _join([self.type_of(yes), self.type_of(no)])
        self._sizes[id(node)] = union(self.size_or_unknown(yes), self.size_or_unknown(no))
        left = self.entry_of(yes)
        joined = left.union(self.entry_of(no)) if left is not None else None
        if joined is not None:
            self._entries[id(node)] = joined
        return total

    def _has(self, node: Call) -> Range:
        self.types[id(node)] = BOOL
        arg = node.args[0] if node.args else None
        if isinstance(arg, Select):
            return self.cost(arg.operand)
        return sum_costs([self.cost(a) for a in node.args])

    def _dyn(self, node: Call) -> Range:
        arg = node.args[0]
        cost = self.cost(arg)
        self.types[id(node)] = DYN
        size = self.size_of(arg)
        if size is not None:
            self._sizes[id(node)] = size
        entry = self.entry_of(arg)
        if entry is not None:
            self._entries[id(node)] = entry
        return add(cost, ONE)

    def _bind(self, node: Call) -> Range:
        var, init, body = node.args
        # A bind is a fold over an empty list literal whose accumulator is the variable.
        total = add(fixed(LIST_CREATE_BASE_COST), self.cost(init))
        assert isinstance(var, Ident)
        self._locals.setdefault(var.name, []).append(Local(
            self.path_of(init), self.size_of(init), self.entry_of(init), self.type_of(init)))
        total = add(total, self.cost(body))
        self._locals[var.name].pop()
        self.types[id(node)] = self.type_of(body)
        size = self.size_of(body)
        if size is not None:
            self._sizes[id(node)] = size
        entry = self.entry_of(body)
        if entry is not None:
            self._entries[id(node)] = entry
        return total

    # --- comprehensions -------------------------------------------------------------------

    def _comprehension(self, node: Call) -> Range:
        assert node.target is not None
        name = node.function
        count = _variables(node)
        names = [a.name for a in node.args[:count]]  # type: ignore[attr-defined]
        rest = node.args[count:]
        rng = node.target
        total = self.cost(rng)
        rng_type = self.type_of(rng)
        list_init = name in ("map", "filter", "transformList")
        map_init = name == "transformMap"
        init_cost = LIST_CREATE_BASE_COST if list_init else \
            MAP_CREATE_BASE_COST if map_init else 0
        total = add(total, fixed(init_cost))
        accu_entry = Entry("list", ONE, ZERO) if list_init else \
            Entry("map", ZERO, ZERO) if map_init else None
        accu_type = list_of(DYN) if list_init else map_of(DYN, DYN) if map_init else \
            INT if name in ("exists_one", "existsOne") else BOOL
        self._push(ACCUMULATOR, Local((ACCUMULATOR,), ZERO if accu_entry else ONE,
                                      accu_entry, accu_type))
        self._push_iteration(names, rng, rng_type)
        step, element = self._step(name, rest, names)
        for n in names:
            self._locals[n].pop()
        result = fixed(2) if name in ("exists_one", "existsOne") else ONE
        self._locals[ACCUMULATOR].pop()
        total = add(total, result)
        count_range = self.size_or_unknown(rng)
        total = add(total, multiply(count_range, step))
        self._comprehension_result(node, name, rng_type, names, element, count_range)
        return total

    def _push(self, name: str, local: Local) -> None:
        self._locals.setdefault(name, []).append(local)

    def _push_iteration(self, names: list[str], rng: Node, rng_type: DeclType) -> None:
        entry = self.entry_of(rng)
        container = entry.container if entry is not None else rng_type.kind
        base = self.path_of(rng)
        is_list = container == "list"
        elem = rng_type.elem if rng_type.kind in ("list", "map") and rng_type.elem else DYN
        key = rng_type.key if rng_type.kind == "map" and rng_type.key else DYN
        if len(names) == 1:
            size = (entry.value if is_list else entry.key) if entry is not None else None
            self._push(names[0], Local((*base, "@items" if is_list else "@keys"), size, None,
                                       elem if is_list else key))
            return
        self._push(names[0], Local((*base, "@indices" if is_list else "@keys"),
                                   entry.key if entry is not None else None, None,
                                   INT if is_list else key))
        self._push(names[1], Local((*base, "@items" if is_list else "@values"),
                                   entry.value if entry is not None else None, None, elem))

    def _step(self, name: str, rest: list[Node], names: list[str]) -> tuple[Range, Range]:
        """The cost of one iteration (condition and step) and the size of an element
        the fold appends (for the result's entries)."""
        costs = [self.cost(x) for x in rest]
        last = rest[-1]
        if name == "all":
            return add(fixed(2), (1, add(ONE, costs[0])[1])), ZERO
        if name == "exists":
            return add(fixed(3), (1, add(ONE, costs[0])[1])), ZERO
        if name in ("exists_one", "existsOne"):
            return add(costs[0], (1, 2)), ZERO
        element = self.size_or_unknown(last)
        if name == "filter":
            # p ? @result + [x] : @result
            element = self.size_or_unknown(Ident(names[0]))
            return add(costs[0], (1, 13)), element
        if name == "transformMap":
            # cel.@mapInsert(@result, k, t), under the filter when there is one
            insert = add(fixed(3), costs[-1])
            if len(rest) == 2:
                return add(costs[0], union(insert, ONE)), element
            return insert, element
        append = add(fixed(12), costs[-1])  # @result + [t]
        if len(rest) == 2:
            return add(costs[0], union(append, ONE)), element
        return append, element

    def _comprehension_result(self, node: Call, name: str, rng_type: DeclType,
                              names: list[str], element: Range, count: Range) -> None:
        if name in ("all", "exists", "exists_one", "existsOne"):
            self.types[id(node)] = BOOL
            self._sizes[id(node)] = ONE
            return
        self._sizes[id(node)] = count
        last = self.type_of(node.args[-1])
        if name == "filter":
            elem = rng_type.elem if rng_type.kind == "list" and rng_type.elem else \
                rng_type.key if rng_type.kind == "map" and rng_type.key else DYN
            self.types[id(node)] = list_of(elem)
            self._entries[id(node)] = Entry("list", ONE, union(ZERO, element))
        elif name == "transformMap":
            key = INT if rng_type.kind == "list" else rng_type.key or DYN
            self.types[id(node)] = map_of(key, last)
        else:
            self.types[id(node)] = list_of(last)
            self._entries[id(node)] = Entry("list", ONE, union(ZERO, element))


def sum_costs(costs: list[Range]) -> Range:
    total = ZERO
    for c in costs:
        total = add(total, c)
    return total


def _variables(node: Call) -> int:
    """How many iteration variables a macro call declares."""
    if node.function in ("transformList", "transformMap"):
        return 2
    if node.function in TWO_VARIABLE and len(node.args) == 3:
        return 2
    return 1


def _literal_size(node: Node) -> Range | None:
    if isinstance(node, Literal):
        v = node.value
        if isinstance(v, (str, bytes)):
            return fixed(len(v))
        if v is None or isinstance(v, (bool, int, float)):
            return ONE
        return None
    if isinstance(node, ListLit):
        return fixed(len(node.items))
    if isinstance(node, MapLit):
        return fixed(len(node.entries))
    return None


def _literal_type(v: object) -> DeclType:
    if isinstance(v, bool):
        return BOOL
    if isinstance(v, Uint):
        return UINT
    if isinstance(v, int):
        return INT
    if isinstance(v, float):
        return DOUBLE
    if isinstance(v, str):
        return STRING
    if isinstance(v, bytes):
        return BYTES
    if v is None:
        return NULL
    return DYN


def _field_type(target: DeclType, name: str) -> DeclType:
    if target.kind == "object":
        return target.fields.get(name, DYN)
    if target.kind == "map" and target.elem is not None:
        return target.elem
    return DYN


def _join(types: list[DeclType]) -> DeclType:
    """The common type of literal elements or conditional branches; dyn when they
    differ."""
    if not types:
        return DYN
    first = types[0]
    return first if all(t.same(first) for t in types[1:]) else DYN


# --- overloads and result types ----------------------------------------------------------

_DYNAMIC = frozenset({"dyn", "any"})
_ARITHMETIC = frozenset({"_-_", "_*_", "_/_", "_%_"})
_RELATIONS = frozenset({"_<_", "_<=_", "_>_", "_>=_"})


def _fits(t: DeclType, kind: str) -> bool:
    return t.kind == kind or t.kind in _DYNAMIC


def overloads(name: str, receiver: Operand | None, args: list[Operand]) -> list[str]:
    """The overloads the checker would consider, as far as costs tell them apart."""
    if name in ("_==_", "_!=_"):
        return ["equals" if name == "_==_" else "not_equals"]
    if name in _RELATIONS and len(args) == 2:
        return _binary_candidates(args, ("string", "bytes"), "compare")
    if name == "_+_" and len(args) == 2:
        return _binary_candidates(args, ("string", "bytes", "list"), "add")
    if name == "@in" and len(args) == 2:
        kind = args[1].type.kind
        return ["in_list"] if kind == "list" else ["in_map"] if kind == "map" else \
            ["in_list", "in_map"]
    if name in ("string", "bytes") and receiver is None and len(args) == 1:
        source = "bytes" if name == "string" else "string"
        special = f"{source}_to_{name}"
        kind = args[0].type.kind
        return [special] if kind == source else ["other"] if kind not in _DYNAMIC else \
            [special, "other"]
    return [_member_overload(name, receiver, args)]


def _binary_candidates(args: list[Operand], kinds: tuple[str, ...], prefix: str) -> list[str]:
    left, right = args[0].type, args[1].type
    found = [f"{prefix}_{k}" for k in kinds if _fits(left, k) and _fits(right, k)]
    if left.kind not in kinds and right.kind not in kinds:
        found.append(f"{prefix}_other")
    return found or [f"{prefix}_other"]


_FIXED_OVERLOADS = {
    "startsWith": "starts_with_string", "endsWith": "ends_with_string",
    "contains": "contains_string", "strings.quote": "strings_quote",
    "sets.contains": "list_sets_contains_list", "sets.intersects": "list_sets_intersects_list",
    "sets.equivalent": "list_sets_equivalent_list", "slice": "list_slice",
    "flatten": "list_flatten", "lists.range": "lists_range", "distinct": "list_distinct",
}


def _member_overload(name: str, receiver: Operand | None, args: list[Operand]) -> str:
    if name == "matches":
        return "matches_string" if receiver is not None else "matches"
    if name == "format" and receiver is not None:
        return "string_format"
    if name == "reverse" and receiver is not None:
        return "string_reverse" if receiver.type.kind == "string" else "list_reverse"
    if name == "sort" and receiver is not None:
        elem = receiver.type.elem if receiver.type.kind == "list" else None
        if elem is not None and elem.kind in COMPARABLE:
            return f"list_{elem.kind}_sort"
        return "list_sort"
    return _FIXED_OVERLOADS.get(name, name)


def overload_for_runtime(candidates: list[str]) -> str | None:
    return candidates[0] if len(candidates) == 1 else None


_RESULTS: dict[str, DeclType] = {
    "bool": BOOL, "int": INT, "uint": UINT, "double": DOUBLE, "string": STRING,
    "bytes": BYTES, "type": TYPE, "null": NULL,
}


def result_type(name: str, receiver: Operand | None, args: list[Operand]) -> DeclType:
    """The checker's result type of a call, as far as costs need it."""
    if name in ("_==_", "_!=_", "@in", "!_") or name in _RELATIONS:
        return BOOL
    if name in _ARITHMETIC or name == "-_" or name == "_+_":
        return _arithmetic_type(name, args)
    if name == "size":
        return INT
    if name in ("split", "findAll"):
        return list_of(STRING)
    if name == "lists.range":
        return list_of(INT)
    if receiver is not None:
        special = _receiver_result(name, receiver.type)
        if special is not None:
            return special
    fn = FUNCTIONS.get((name, receiver is not None))
    if fn is None:
        return DYN
    if fn.result in _RESULTS:
        return _RESULTS[fn.result]
    if fn.result == "list":
        return list_of(DYN)
    if fn.result == "map":
        return map_of(DYN, DYN)
    if fn.result == "optional":
        return optional_of(DYN)
    if fn.result == "dyn":
        return DYN
    return opaque(fn.result)


def _receiver_result(name: str, t: DeclType) -> DeclType | None:
    elem = t.elem if t.kind in ("list", "optional") and t.elem is not None else DYN
    if name in ("min", "max", "sum"):
        return elem
    if name in ("sort", "distinct", "slice", "reverse") and t.kind in ("list", "string"):
        return t
    if name in ("first", "last"):
        return optional_of(elem)
    if name in ("orValue", "value") and t.kind == "optional":
        return elem
    return None


def _arithmetic_type(name: str, args: list[Operand]) -> DeclType:
    if not args:
        return DYN
    first = args[0].type
    if name == "-_":
        return first if first.kind in ("int", "double") else DYN
    if len(args) == 2 and first.kind == args[1].type.kind and first.kind not in _DYNAMIC:
        if first.kind == "list":
            return list_of(_join([first.elem or DYN, args[1].type.elem or DYN]))
        return first
    return DYN
