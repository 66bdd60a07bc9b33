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
from draemu.cel.cost import PER_CALL_LIMIT, Meter
from draemu.cel.decltypes import DeclSizes, DeclType
from draemu.cel.errors import CELCompileError, CELRuntimeError
from draemu.cel.interpreter import Activation
from draemu.cel.syntax import parse
from draemu.cel.values import type_name


class KubernetesProgram:
    __slots__ = ("_fn", "cost", "expression", "result_type")

    def __init__(self, expression: str, fn: Any, cost: int, result_type: str) -> None:
        self.expression = expression
        self._fn = fn
        self.cost = cost
        self.result_type = result_type

    def evaluate(self, variables: dict[str, Any], meter: Meter | None = None) -> Any:
        """The result; `meter` (default: PER_CALL_LIMIT, no deadline) counts the actual
        cost, and past its limit or deadline the evaluation stops with
        CELRuntimeError."""
        act = Activation(variables)
        act.meter = meter if meter is not None else Meter(PER_CALL_LIMIT)
        try:
            result = self._fn(act)
        except RecursionError:
            raise CELRuntimeError("expression too deeply nested") from None
        act.meter.check()
        return result

    def evaluate_bool(self, variables: dict[str, Any], meter: Meter | None = None) -> bool:
        result = self.evaluate(variables, meter)
        if not isinstance(result, bool):
            raise CELRuntimeError(f"expected bool, got {type_name(result)}")
        return result


class RuleTypes:
    """What the estimate knows of a CRD rule's variables: `self` (and `oldSelf`) has the
    type of its schema node, with the bounds Kubernetes derives from maxLength, maxItems
    and maxProperties. Compare by identity: build one per schema node and keep it, so
    its rules' programs stay cached."""

    __slots__ = ("sizes", "types")

    def __init__(self, root: DeclType) -> None:
        self.types = (("self", root), ("oldSelf", root))
        self.sizes = DeclSizes(root)


_CACHE: CompileCache[KubernetesProgram] = CompileCache()


def compile_kubernetes(expression: str, variables: tuple[str, ...] | frozenset[str],
                       want: str | None = None, *, types: RuleTypes | None = None,
                       patch_types: bool = False) -> KubernetesProgram:
    """Compile (cached) an expression over `variables`; `want` ("bool", "string",
    "Object", "list(JSONPatch)") is the static result type the caller needs (dyn
    passes). `types`: the declared types the cost estimate assumes (default: every
    variable dynamic, its size unknown). `patch_types`: the mutating admission
    policies' environment (`Object{...}`, `JSONPatch{...}`, `jsonpatch.escapeKey`).
    Raises CELCompileError."""
    names = frozenset(variables)
    hit = _CACHE.get((expression, names, types, patch_types),
                     lambda: _compile(expression, names, types, patch_types))
    if want is not None and hit.result_type not in (want, "dyn"):
        raise CELCompileError(f"must evaluate to {want}", result_type=True,
                              got=hit.result_type)
    return hit


def _compile(expression: str, names: frozenset[str], types: RuleTypes | None,
             patch_types: bool) -> KubernetesProgram | CELCompileError:
    try:
        tree = parse(expression)
    except CELCompileError as e:
        return CELCompileError(f"compilation failed: {e.detail}")
    env = Env(variables=names, patch_types=patch_types) if types is None else \
        Env(variables=names, declarations=types.types, sizes=types.sizes,
            escaped_fields=True, patch_types=patch_types)
    try:
        compiled = Compiler(expression, env).compile(tree)
    except CELCompileError as e:
        return e
    except RecursionError:
        return CELCompileError("compilation failed: expression nesting too deep")
    return KubernetesProgram(expression, compiled.fn, compiled.cost[1], compiled.type)
