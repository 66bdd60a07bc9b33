"""Helpers of the strategy tests of the newer kinds: an object as the apiserver hands it
to a strategy (defaulted, prepared for create) and its validation messages."""

from __future__ import annotations

import copy

from draemu.api.errors import FieldError
from draemu.api.types import Obj
from draemu.apiserver.registry.strategy import Context, Strategy
from draemu.features import FeatureGates


def ctx(objects: dict[str, list[Obj]] | None = None) -> Context:
    """A context whose lookups and listings see `objects` (resource -> objects)."""
    found = objects or {}

    def lookup(resource: str, group: str, namespace: str, name: str) -> Obj | None:
        return next((o for o in found.get(resource, [])
                     if o["metadata"]["name"] == name), None)

    def listing(resource: str, group: str, namespace: str) -> list[Obj]:
        return list(found.get(resource, []))

    return Context(gates=FeatureGates(), lookup=lookup, listing=listing, user="alice",
                   groups=("dev", "system:authenticated"))


def created(strategy: Strategy, obj: Obj, context: Context | None = None) -> Obj:
    out = copy.deepcopy(obj)
    meta = out.setdefault("metadata", {})
    meta.setdefault("uid", "6f1d4e0b-4a0c-4d5e-9a51-0c7cbbd1a001")
    meta.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
    strategy.default(out, strategy.storage_version)
    strategy.prepare_for_create(out, context or ctx())
    return out


def updated(strategy: Strategy, new: Obj, old: Obj, context: Context | None = None) -> Obj:
    out = copy.deepcopy(new)
    strategy.default(out, strategy.storage_version)
    strategy.prepare_for_update(out, old, context or ctx())
    return out


def messages(errors: list[FieldError]) -> list[str]:
    return [str(e) for e in errors]
