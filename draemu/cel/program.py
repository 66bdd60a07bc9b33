"""Compiling expressions (cached) and evaluating them against devices."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from draemu.cel.cache import CompileCache
from draemu.cel.compiler import Compiler, Env
from draemu.cel.cost import Meter
from draemu.cel.decltypes import DeclSizes, device_type
from draemu.cel.device import CelDevice
from draemu.cel.errors import CELCompileError, CELIssue, CELRuntimeError
from draemu.cel.interpreter import Activation
from draemu.cel.regex import RegexError, compile_pattern
from draemu.cel.syntax import (
    Call,
    Literal,
    Node,
    ast_depth,
    children,
    deep_recursion,
    format_error,
    parse,
)
from draemu.cel.values import Semver, type_name
from draemu.features import FeatureGates

# resource.k8s.io limits on selector expressions: CELSelectorExpressionMaxCost bounds both
# the estimated cost at validation and the actual cost of one evaluation.
MAX_EXPRESSION_LENGTH = 10 * 1024
MAX_COST = 1_000_000

# The functions that run a regular expression (patterns checked at validation when
# constant).
REGEX_FUNCTIONS = frozenset({"matches", "find", "findAll"})

NO_SUCH_KEY_HINT = (". consider using CEL optional chaining (.? followed by orValue()) or "
                    "guarding the check with has() for optional fields")


class Program:
    """A compiled selector. `evaluate` returns the bool verdict for one device."""

    __slots__ = ("_fn", "cost", "deep", "expression")

    def __init__(self, expression: str, fn: Any, cost: int, deep: bool = False) -> None:
        self.expression = expression
        self._fn = fn
        self.cost = cost  # worst-case estimate (cel-go's EstimateCost max)
        self.deep = deep  # nests deeper than Python's default recursion limit allows for

    def evaluate(self, device: dict[str, Any] | CelDevice, meter: Meter | None = None
                 ) -> bool:
        """`device` is the v1 device dict plus `driver` (and `pool`, for messages), or a
        prebuilt `CelDevice` (faster when one device meets many expressions). `meter`
        (default: MAX_COST, no deadline) counts the actual cost; past its limit or its
        deadline the evaluation stops with CELRuntimeError."""
        result = self._run(device, meter)
        if not isinstance(result, bool):
            raise CELRuntimeError(
                f"CEL result of type {type_name(result).split('(')[0]} could not be "
                "converted to bool")
        return result

    def _run(self, device: dict[str, Any] | CelDevice, meter: Meter | None) -> Any:
        """The raw result. The caller names the device (upstream's `selector #0 on device
        d/p/n: CEL runtime error: ...`), so the message does not."""
        view = device if isinstance(device, CelDevice) else CelDevice(device)
        if view.error is not None:
            raise view.error
        act = Activation(device=view.value)
        act.meter = meter if meter is not None else Meter(MAX_COST)
        try:
            if self.deep:
                with deep_recursion():
                    result = self._fn(act)
            else:
                result = self._fn(act)
            act.meter.check()
            return result
        except CELRuntimeError as e:
            if e.key is not None and not e.message.endswith(NO_SUCH_KEY_HINT):
                raise CELRuntimeError(f"{e.message}{NO_SUCH_KEY_HINT}", key=e.key) from None
            raise
        except RecursionError:
            raise CELRuntimeError("expression too deeply nested") from None


class DerivedProgram(Program):
    """A compiled derived attribute (`derivedAttributes[].expression`): `evaluate` returns
    the device attribute it yields (`{"string": "numa-0"}`, `{"ints": [0, 1]}`, ...)."""

    __slots__ = ()

    def evaluate(self, device: dict[str, Any] | CelDevice,  # type: ignore[override]
                 meter: Meter | None = None) -> dict[str, Any]:
        return _to_attribute(self._run(device, meter))


_ATTRIBUTE_KINDS: tuple[tuple[type, str], ...] = ((bool, "bool"), (int, "int"), (str, "string"),
                                                  (Semver, "version"))


def _to_attribute(value: Any) -> dict[str, Any]:
    """Upstream's valToDeviceAttribute."""
    for kind, name in _ATTRIBUTE_KINDS:
        if isinstance(value, kind) and not (kind is int and isinstance(value, bool)):
            return {name: value.text if isinstance(value, Semver) else value}
    if isinstance(value, list):
        if not value:
            return {"strings": []}
        for kind, name in _ATTRIBUTE_KINDS:
            if isinstance(value[0], kind) and not (kind is int and isinstance(value[0], bool)):
                for i, item in enumerate(value):
                    if not isinstance(item, kind) or (kind is int and isinstance(item, bool)):
                        raise CELRuntimeError(f"expected list element at index {i} to be "
                                              f"{name}, got {type_name(item)}")
                return {name + "s": [v.text if isinstance(v, Semver) else v for v in value]}
        raise CELRuntimeError(f"unsupported list element type {type_name(value[0])}")
    raise CELRuntimeError(f"unsupported result type {type_name(value)}")


_DERIVED_SCALARS = ("bool", "int", "string", "semver", "dyn", "any")


def _derived_type_ok(result_type: str, lists: bool) -> bool:
    if result_type in _DERIVED_SCALARS:
        return True
    if lists and result_type == "list":
        return True
    if lists and result_type.startswith("list(") and result_type.endswith(")"):
        return result_type[5:-1] in _DERIVED_SCALARS
    return False


def _env(gates: FeatureGates | None, stored: bool) -> Env:
    if stored:
        return _device_env(True, True)
    gates = gates or FeatureGates()
    return _device_env(gates.enabled("DRAConsumableCapacity"),
                       gates.enabled("DRAListTypeAttributes"))


@cache
def _device_env(multiple_allocations: bool, list_type_attributes: bool) -> Env:
    """The environment of selectors: `device` declared as upstream declares it, so the
    estimate knows the bounds of its strings, maps and attribute values."""
    device, attribute = device_type(list_type_attributes=list_type_attributes,
                                    multiple_allocations=multiple_allocations)
    return Env(allow_multiple_allocations=multiple_allocations,
               list_type_attributes=list_type_attributes,
               declarations=(("device", device),),
               sizes=DeclSizes(roots={"device": device}, any_field=attribute))


_CACHE: CompileCache[Any] = CompileCache()


def compile_expression(expression: str, *, gates: FeatureGates | None = None,
                       stored: bool = True) -> Program:
    """Compile (cached per expression and environment); raises CELCompileError.

    `stored=True` is the environment the allocator uses: everything the release knows,
    whatever the gates. `stored=False` is the one for new API objects, where gated
    fields and functions exist only with their gate on.
    """
    env = _env(gates, stored)
    return _CACHE.get((expression, env), lambda: _compile(expression, env))


def _compile(expression: str, env: Env, derived: bool | None = None
             ) -> Program | CELCompileError:
    """`derived`: a derived attribute's expression (True: lists allowed as results)."""
    try:
        tree = parse(expression)
        _check_patterns(expression, tree)
    except CELCompileError as e:
        return CELCompileError(f"compilation failed: {e.detail}")
    try:
        with deep_recursion():
            compiled = Compiler(expression, env).compile(tree)
    except CELCompileError as e:
        return e
    except RecursionError:
        return CELCompileError("compilation failed: ERROR: <input>:-1:0: max recursion "
                               "depth exceeded")
    if derived is not None:
        if not _derived_type_ok(compiled.type, derived):
            detail = ("must evaluate to a primitive scalar (string, integer, boolean, semver) "
                      "or a list of these scalars, not " if derived else
                      "must evaluate to a primitive scalar (string, integer, boolean, semver), "
                      "not ")
            return CELCompileError(detail + compiled.type, result_type=True)
        return DerivedProgram(expression, compiled.fn, compiled.cost[1], _deep(tree))
    if compiled.type not in ("bool", "dyn"):
        return CELCompileError(
            f"must evaluate to bool or the unknown type, not {compiled.type}",
            result_type=True)
    return Program(expression, compiled.fn, compiled.cost[1], _deep(tree))


def _deep(tree: Node) -> bool:
    return ast_depth(tree) > 60


def _check_patterns(expression: str, tree: Node) -> None:
    """Constant patterns of matches/find/findAll compile now, so a bad one is a
    validation error (upstream's regexp syntax message) rather than a runtime one."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, Call) and node.function in REGEX_FUNCTIONS and node.args:
            pattern = node.args[0] if node.target is not None else node.args[-1]
            if node.target is None and len(node.args) < 2:
                pattern = None
            if isinstance(pattern, Literal) and isinstance(pattern.value, str):
                try:
                    compile_pattern(pattern.value)
                except RegexError as e:
                    raise CELCompileError(format_error(expression, str(e), pattern.pos)) \
                        from None
        stack.extend(children(node))


def compile_derived(expression: str, *, gates: FeatureGates | None = None,
                    stored: bool = True) -> DerivedProgram:
    """A derived attribute's expression (cached); raises CELCompileError. The result must
    be a scalar an attribute can hold, or (with list-type attributes, or stored) a list."""
    env = _env(gates, stored)
    program = _CACHE.get(("derived\x00" + expression, env), lambda: _compile(
        expression, env, derived=stored or env.list_type_attributes))
    assert isinstance(program, DerivedProgram)
    return program


def check_derived(expression: str, *, gates: FeatureGates | None = None,
                  stored: bool = False) -> list[CELIssue]:
    """What API validation reports for a derived attribute's expression."""
    return _issues(expression, lambda: compile_derived(expression, gates=gates, stored=stored))


def check_expression(expression: str, *, gates: FeatureGates | None = None,
                     stored: bool = False) -> list[CELIssue]:
    """What API validation reports for a selector expression (empty list: valid)."""
    return _issues(expression,
                   lambda: compile_expression(expression, gates=gates, stored=stored))


def _issues(expression: str, compile_: Callable[[], Program]) -> list[CELIssue]:
    if len(expression.encode()) > MAX_EXPRESSION_LENGTH:
        return [CELIssue("TooLong", f"may not be more than {MAX_EXPRESSION_LENGTH} bytes")]
    try:
        program = compile_()
    except CELCompileError as e:
        return [CELIssue("Invalid", e.detail)]
    if program.cost > MAX_COST:
        return [CELIssue("Forbidden", "too complex, exceeds cost limit")]
    return []
