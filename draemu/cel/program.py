"""Compiling expressions (cached) and evaluating them against devices."""

from __future__ import annotations

from collections import OrderedDict
from threading import Lock
from typing import Any

from draemu.cel.compiler import Activation, Compiler, Env
from draemu.cel.device import CelDevice
from draemu.cel.errors import CELCompileError, CELIssue, CELRuntimeError
from draemu.cel.syntax import parse
from draemu.features import FeatureGates

# resource.k8s.io limits on selector expressions.
MAX_EXPRESSION_LENGTH = 10 * 1024
MAX_COST = 1_000_000

NO_SUCH_KEY_HINT = (". consider using CEL optional chaining (.? followed by orValue()) or "
                    "guarding the check with has() for optional fields")


class Program:
    """A compiled selector. `evaluate` returns the bool verdict for one device."""

    __slots__ = ("_fn", "cost", "expression")

    def __init__(self, expression: str, fn: Any, cost: int) -> None:
        self.expression = expression
        self._fn = fn
        self.cost = cost  # worst-case estimate

    def evaluate(self, device: dict[str, Any] | CelDevice) -> bool:
        """`device` is the v1 device dict plus `driver` (and `pool`, for messages), or a
        prebuilt `CelDevice` (faster when one device meets many expressions)."""
        view = device if isinstance(device, CelDevice) else CelDevice(device)
        if view.error is not None:
            raise view.error
        act = Activation(device=view.value)
        act.meter = [MAX_COST]
        try:
            result = self._fn(act)
        except CELRuntimeError as e:
            if e.key is not None and not e.message.endswith(NO_SUCH_KEY_HINT):
                where = f" (device {view.name})" if view.name else ""
                raise CELRuntimeError(f"{e.message}{where}{NO_SUCH_KEY_HINT}",
                                      key=e.key) from None
            raise
        except RecursionError:
            raise CELRuntimeError("expression too deeply nested") from None
        if not isinstance(result, bool):
            from draemu.cel.values import type_name

            raise CELRuntimeError(
                f"CEL result of type {type_name(result).split('(')[0]} could not be "
                "converted to bool")
        return result


def _env(gates: FeatureGates | None, stored: bool) -> Env:
    if stored:
        return Env()
    gates = gates or FeatureGates()
    return Env(allow_multiple_allocations=gates.enabled("DRAConsumableCapacity"),
               list_type_attributes=gates.enabled("DRAListTypeAttributes"))


_CACHE: OrderedDict[tuple[str, Env], Program | CELCompileError] = OrderedDict()
_CACHE_SIZE = 4096
_lock = Lock()


def compile_expression(expression: str, *, gates: FeatureGates | None = None,
                       stored: bool = True) -> Program:
    """Compile (cached per expression and environment); raises CELCompileError.

    `stored=True` is the environment the allocator uses: everything the release knows,
    whatever the gates. `stored=False` is the one for new API objects, where gated
    fields and functions exist only with their gate on.
    """
    env = _env(gates, stored)
    key = (expression, env)
    with _lock:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
    if hit is None:
        hit = _compile(expression, env)
        with _lock:
            _CACHE[key] = hit
            if len(_CACHE) > _CACHE_SIZE:
                _CACHE.popitem(last=False)
    if isinstance(hit, CELCompileError):
        # A fresh exception each time: re-raising the cached one would grow its traceback.
        raise CELCompileError(hit.detail, result_type=hit.result_type)
    return hit


def _compile(expression: str, env: Env) -> Program | CELCompileError:
    try:
        tree = parse(expression)
    except CELCompileError as e:
        return CELCompileError(f"compilation failed: {e.detail}")
    try:
        compiled = Compiler(expression, env).compile(tree)
    except CELCompileError as e:
        return e
    except RecursionError:
        return CELCompileError("compilation failed: expression nesting too deep")
    if compiled.type not in ("bool", "dyn"):
        return CELCompileError(
            f"must evaluate to bool or the unknown type, not {compiled.type}",
            result_type=True)
    return Program(expression, compiled.fn, compiled.cost)


def check_expression(expression: str, *, gates: FeatureGates | None = None,
                     stored: bool = False) -> list[CELIssue]:
    """What API validation reports for a selector expression (empty list: valid)."""
    if len(expression.encode()) > MAX_EXPRESSION_LENGTH:
        return [CELIssue("TooLong", f"may not be more than {MAX_EXPRESSION_LENGTH} bytes")]
    try:
        program = compile_expression(expression, gates=gates, stored=stored)
    except CELCompileError as e:
        return [CELIssue("Invalid", e.detail)]
    if program.cost > MAX_COST:
        return [CELIssue("Forbidden", "too complex, exceeds cost limit")]
    return []
