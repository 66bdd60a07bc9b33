"""Shared helpers of the core strategy tests: a request context, a created object as
the apiserver would hand it over, and error rendering."""

from __future__ import annotations

import copy

from draemu.api.errors import FieldError
from draemu.api.types import Obj
from draemu.apiserver.registry.strategy import Context, Strategy
from draemu.features import FeatureGates


def ctx() -> Context:
    return Context(gates=FeatureGates())


def created(strategy: Strategy, obj: Obj, version: str = "v1") -> Obj:
    """`obj` after decoding defaults and prepare_for_create, with the system fields the
    apiserver fills in first."""
    out = copy.deepcopy(obj)
    meta = out.setdefault("metadata", {})
    meta.setdefault("uid", "0b6f1d4e-4a0c-4d5e-9a51-0c7cbbd1a001")
    meta.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
    meta.setdefault("resourceVersion", "7")
    strategy.default(out, version)
    strategy.prepare_for_create(out, ctx())
    return out


def rendered(errors: list[FieldError]) -> list[str]:
    return [str(e) for e in errors]


def field_messages(errors: list[FieldError]) -> list[tuple[str, str]]:
    return [(e.field, e.body()) for e in errors]
