"""CEL environments of the Kubernetes API beside DRA's: CRD validation rules
(`x-kubernetes-validations`: `self`, `oldSelf`) and admission policies (`object`,
`oldObject`, `request`, `params`, `namespaceObject`, `variables`, `authorizer`-free).

The same compiler and libraries as device selectors (strings, lists, sets, regex, URL,
IP/CIDR, quantity, semver, optionals, math); what differs is the declared variables,
whose values are decoded JSON (dynamically typed), and that a result need not be a
bool (`messageExpression` is a string).

    program = compile_kubernetes("self.replicas <= self.max", ("self", "oldSelf"))
    program.evaluate({"self": {...}}) -> value          # CELRuntimeError
"""

from __future__ import annotations

from typing import Any

from draemu.cel.cache import CompileCache
from draemu.cel.compiler import Compiler, Env
from draemu.cel.errors import CELCompileError, CELRuntimeError
from draemu.cel.interpreter import Activation
from draemu.cel.program import MAX_COST
from draemu.cel.syntax import parse
from draemu.cel.values import type_name

# Kubernetes' per-expression runtime cost limit (celconfig.PerCallLimit).
PER_CALL_LIMIT = MAX_COST


class KubernetesProgram:
    __slots__ = ("_fn", "cost", "expression", "result_type")

    def __init__(self, expression: str, fn: Any, cost: int, result_type: str) -> None:
        self.expression = expression
        self._fn = fn
        self.cost = cost
        self.result_type = result_type

    def evaluate(self, variables: dict[str, Any], budget: int = PER_CALL_LIMIT) -> Any:
        act = Activation(variables)
        act.meter = [budget]
        try:
            return self._fn(act)
        except RecursionError:
            raise CELRuntimeError("expression too deeply nested") from None

    def evaluate_bool(self, variables: dict[str, Any]) -> bool:
        result = self.evaluate(variables)
        if not isinstance(result, bool):
            raise CELRuntimeError(f"expected bool, got {type_name(result)}")
        return result


_CACHE: CompileCache[KubernetesProgram] = CompileCache()


def compile_kubernetes(expression: str, variables: tuple[str, ...] | frozenset[str],
                       want: str | None = None) -> KubernetesProgram:
    """Compile (cached) an expression over `variables`; `want` ("bool", "string") is the
    static result type the caller needs (dyn passes). Raises CELCompileError."""
    names = frozenset(variables)
    hit = _CACHE.get((expression, names), lambda: _compile(expression, names))
    if want is not None and hit.result_type not in (want, "dyn"):
        raise CELCompileError(f"must evaluate to {want}", result_type=True)
    return hit


def _compile(expression: str, names: frozenset[str]) -> KubernetesProgram | CELCompileError:
    try:
        tree = parse(expression)
    except CELCompileError as e:
        return CELCompileError(f"compilation failed: {e.detail}")
    try:
        compiled = Compiler(expression, Env(variables=names)).compile(tree)
    except CELCompileError as e:
        return e
    except RecursionError:
        return CELCompileError("compilation failed: expression nesting too deep")
    return KubernetesProgram(expression, compiled.fn, compiled.cost, compiled.type)
