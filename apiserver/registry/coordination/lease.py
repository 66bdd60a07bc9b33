"""coordination.k8s.io/v1 Lease: node heartbeats and leader election."""

from __future__ import annotations

from typing import Any

from draemu.api.errors import FieldError, Path, forbidden, invalid, not_supported
from draemu.api.types import Obj
from draemu.apiserver.registry.core.common import IS_NEGATIVE, qualified_name
from draemu.apiserver.registry.strategy import (
    AGE,
    AGE_COLUMN,
    NAME_COLUMN,
    Column,
    Context,
    Strategy,
)

LEASE_STRATEGIES = ["OldestEmulationVersion"]


class LeaseStrategy(Strategy):
    group = "coordination.k8s.io"
    kind = "Lease"
    resource = "leases"
    singular = "lease"
    versions = ("v1",)
    storage_version = "v1"
    has_generation = False

    def validate(self, obj: Obj, ctx: Context) -> list[FieldError]:
        spec = obj.get("spec") or {}
        path = Path("spec")
        errs: list[FieldError] = []
        duration = spec.get("leaseDurationSeconds")
        if duration is not None and duration <= 0:
            errs.append(invalid(path.child("leaseDurationSeconds"), duration,
                                "must be greater than 0"))
        transitions = spec.get("leaseTransitions")
        if transitions is not None and transitions < 0:
            errs.append(invalid(path.child("leaseTransitions"), transitions, IS_NEGATIVE))
        strategy = spec.get("strategy")
        if strategy and "/" in strategy:
            # Anything but the built-in strategies is a custom, prefixed name.
            errs += qualified_name(strategy, path.child("strategy"))
        elif strategy and strategy not in LEASE_STRATEGIES:
            errs.append(not_supported(path.child("strategy"), strategy, LEASE_STRATEGIES))
        if spec.get("preferredHolder") and not strategy:
            errs.append(forbidden(path.child("preferredHolder"),
                                  "may only be specified if `strategy` is defined"))
        return errs

    def table_columns(self) -> list[Column]:
        return [NAME_COLUMN,
                Column("Holder", description="holderIdentity contains the identity of the "
                       "holder of a current lease."),
                AGE_COLUMN]

    def table_row(self, obj: Obj) -> list[Any]:
        return [(obj.get("metadata") or {}).get("name", ""),
                (obj.get("spec") or {}).get("holderIdentity") or "", AGE]


STRATEGIES = [LeaseStrategy()]
