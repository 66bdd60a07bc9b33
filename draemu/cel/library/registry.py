"""The registry of CEL functions: what the checker needs of each (receiver types, arities,
result type, feature gate) and its implementation. Each library module registers its
functions with `@register`; what a call costs is `draemu.cel.cost`'s, by function and
overload, as in cel-go and Kubernetes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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


def register(name: str, member: bool, arities: tuple[int, ...], result: str,
              receivers: tuple[str, ...] = (), gate: str | None = None
              ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        FUNCTIONS[(name, member)] = Function(name, member, arities, result, fn,
                                             frozenset(receivers), gate)
        return fn
    return wrap


def want(name: str, value: object, *kinds: type) -> None:
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise no_overload(name, value)
