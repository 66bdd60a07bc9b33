"""The registry of CEL functions: what the checker needs of each (receiver types, arities,
result type, feature gate), its implementation and what a call costs. Each library
module registers its functions with `@register`. A Kubernetes library function declares
its cost there (`cost=`, at run time, and `estimate=`, the checker's worst case, as
k8s.io/apiserver's cost.go gives them by function name); everything else costs what
cel-go charges for its overload (`draemu.cel.cost`, `draemu.cel.estimatecalls`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from draemu.cel import cost as costs
from draemu.cel import estimatecalls as estimates
from draemu.cel.values import (
    no_overload,
)


@dataclass(frozen=True)
class Function:
    name: str
    member: bool
    arities: tuple[int, ...]  # arguments besides the receiver
    result: str  # static result type; "dyn" when it depends on the arguments
    impl: Callable[..., Any]
    receivers: frozenset[str] = frozenset()  # static receiver types (member functions)
    gate: str | None = None  # feature gate required for new expressions


FUNCTIONS: dict[tuple[str, bool], Function] = {}
# The gate of functions only the mutating admission policies' environment has
# (`draemu.cel.compiler.Env.patch_types`).
PATCH_TYPES = "patch-types"


def register(name: str, member: bool, arities: tuple[int, ...], result: str,
              receivers: tuple[str, ...] = (), gate: str | None = None, *,
              cost: costs.CallCost | int | None = None,
              estimate: estimates.Rule | None = None
              ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a function's implementation; `cost` and `estimate` are its Kubernetes
    cost rules by name (both or neither; a name declared twice must say the same)."""
    if (cost is None) != (estimate is None):
        raise ValueError(f"CEL function {name}: declare both cost and estimate, or neither")
    if cost is not None and estimate is not None:
        _declare(costs.KUBERNETES_COSTS, name, cost)
        _declare(estimates.KUBERNETES_ESTIMATES, name, estimate)

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        FUNCTIONS[(name, member)] = Function(name, member, arities, result, fn,
                                             frozenset(receivers), gate)
        return fn
    return wrap


def _declare(table: dict[str, Any], name: str, rule: Any) -> None:
    known = table.setdefault(name, rule)
    if known is not rule and not (isinstance(rule, int) and known == rule):
        raise ValueError(f"CEL function {name}: its cost is declared already, differently")


def want(name: str, value: object, *kinds: type) -> None:
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise no_overload(name, value)
