"""flowcontrol.apiserver.k8s.io/v1 PriorityLevelConfiguration: a share of the server's
concurrency and what happens to requests beyond it (queue or reject). Upstream's
defaults (pkg/apis/flowcontrol/v1/defaults.go) and validation; the mandatory levels'
specs are fixed (`exempt` may change only `spec.exempt`)."""

from __future__ import annotations

import math
from typing import Any

from draemu.api.errors import FieldError, Path, forbidden, invalid, not_supported, required
from draemu.api.types import Obj
from draemu.apiserver.registry.flowcontrol.bootstrapconfig import (
    EXEMPT,
    MANDATORY_LEVEL_SPECS,
    spec_equalish,
)
from draemu.apiserver.registry.flowcontrol.flowschema import validate_status
from draemu.apiserver.registry.generic import AGE_COLUMN, NAME, GenericStrategy, Printed
from draemu.apiserver.registry.strategy import Column, Context

MAX_QUEUES = 10_000_000
MAX_HASH_BITS = 60
DEFAULT_SHARES = 30
_QUEUING_DEFAULTS = {"handSize": 8, "queues": 64, "queueLengthLimit": 50}
_TYPES = ["Exempt", "Limited"]
_RESPONSES = ["Queue", "Reject"]
# Only v1beta3 clients may carry it; the stored object never does.
PRESERVE_ZERO_SHARES = "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares"


def required_entropy_bits(deck: int, hand: int) -> int:
    """Upstream's shufflesharding.RequiredEntropyBits."""
    return math.ceil(math.log2(deck) * hand)


def _limited_cell(field: str) -> Any:
    def cell(obj: Obj) -> Any:
        limited = (obj.get("spec") or {}).get("limited")
        if not isinstance(limited, dict):
            return "<none>"
        if field == "nominalConcurrencyShares":
            return limited.get(field, 0)
        queuing = (limited.get("limitResponse") or {}).get("queuing")
        return queuing.get(field, 0) if isinstance(queuing, dict) else "<none>"
    return cell


class PriorityLevelConfigurationStrategy(GenericStrategy):
    group = "flowcontrol.apiserver.k8s.io"
    kind = "PriorityLevelConfiguration"
    resource = "prioritylevelconfigurations"
    singular = "prioritylevelconfiguration"
    namespaced = False
    versions = ("v1",)
    storage_version = "v1"
    subresources = frozenset({"status"})
    printer = (
        NAME,
        Printed(Column("Type", description="`type` indicates whether this priority level is "
                       "subject to limitation on request execution."),
                lambda o: (o.get("spec") or {}).get("type", "")),
        Printed(Column("NominalConcurrencyShares", description="`nominalConcurrencyShares` "
                       "(NCS) contributes to the computation of the NominalConcurrencyLimit "
                       "(NominalCL) of this level."), _limited_cell("nominalConcurrencyShares")),
        Printed(Column("Queues", description="`queues` is the number of queues for this "
                       "priority level."), _limited_cell("queues")),
        Printed(Column("HandSize", description="`handSize` is a small positive number that "
                       "configures the shuffle sharding of requests into queues."),
                _limited_cell("handSize")),
        Printed(Column("QueueLengthLimit", description="`queueLengthLimit` is the maximum "
                       "number of requests allowed to be waiting in a given queue of this "
                       "priority level at a time."), _limited_cell("queueLengthLimit")),
        AGE_COLUMN,
    )

    def default(self, obj: Obj, version: str) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        exempt = spec.get("exempt")
        if isinstance(exempt, dict):
            exempt.setdefault("nominalConcurrencyShares", 0)
            exempt.setdefault("lendablePercent", 0)
        limited = spec.get("limited")
        if isinstance(limited, dict):
            if limited.get("nominalConcurrencyShares") is None:
                limited["nominalConcurrencyShares"] = DEFAULT_SHARES
            if limited.get("lendablePercent") is None:
                limited["lendablePercent"] = 0
            queuing = (limited.get("limitResponse") or {}).get("queuing")
            if isinstance(queuing, dict):
                for key, value in _QUEUING_DEFAULTS.items():
                    if not queuing.get(key):
                        queuing[key] = value

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        meta = obj.get("metadata") or {}
        name = meta.get("name", "")
        errs: list[FieldError] = []
        if PRESERVE_ZERO_SHARES in (meta.get("annotations") or {}):
            errs.append(forbidden(Path("metadata").child("annotations"),
                                  f"annotation '{PRESERVE_ZERO_SHARES}' is forbidden"))
        spec = obj.get("spec") or {}
        path = Path("spec")
        errs += validate_spec(name, spec, path)
        mandatory = MANDATORY_LEVEL_SPECS.get(name)
        if mandatory is not None:
            if name == EXEMPT:
                if not spec_equalish({k: v for k, v in mandatory.items() if k != "exempt"},
                                     {k: v for k, v in spec.items() if k != "exempt"}):
                    errs.append(invalid(path, spec, f"spec of '{name}' except the "
                                        "'spec.exempt' field must equal the fixed value"))
            elif not spec_equalish(mandatory, spec):
                errs.append(invalid(path, spec, f"spec of '{name}' must equal the fixed value"))
        return errs + validate_status(obj.get("status") or {}, Path("status"))

    def validate_status_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        return validate_status(new.get("status") or {}, Path("status"))


def validate_spec(name: str, spec: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    kind = spec.get("type") or ""
    if (name == EXEMPT) != (kind == "Exempt"):
        errs.append(invalid(path.child("type"), kind,
                            "must be 'Exempt' if and only if `name` is 'exempt'"))
    limited, exempt = spec.get("limited"), spec.get("exempt")
    if kind == "Exempt":
        if limited is not None:
            errs.append(forbidden(path.child("limited"), "must be nil if the type is not Limited"))
        if isinstance(exempt, dict):
            at = path.child("exempt")
            shares = exempt.get("nominalConcurrencyShares")
            if shares is not None and shares < 0:
                errs.append(invalid(at.child("nominalConcurrencyShares"), shares,
                                    "must be a non-negative integer"))
            errs += _percent(exempt.get("lendablePercent"), at.child("lendablePercent"))
    elif kind == "Limited":
        if exempt is not None:
            errs.append(forbidden(path.child("exempt"), "must be nil if the type is Limited"))
        if not isinstance(limited, dict):
            errs.append(required(path.child("limited"), "must not be empty when type is Limited"))
        else:
            errs += _limited(limited, path.child("limited"))
    elif not kind:
        errs.append(required(path.child("type")))
    else:
        errs.append(not_supported(path.child("type"), kind, _TYPES))
    return errs


def _percent(value: Any, path: Path) -> list[FieldError]:
    if value is not None and not 0 <= value <= 100:
        return [invalid(path, value, "must be between 0 and 100, inclusive")]
    return []


def _limited(limited: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    shares = limited.get("nominalConcurrencyShares") or 0
    if shares < 0:
        errs.append(invalid(path.child("nominalConcurrencyShares"), shares,
                            "must be a non-negative integer"))
    errs += _limit_response(limited.get("limitResponse") or {}, path.child("limitResponse"))
    errs += _percent(limited.get("lendablePercent"), path.child("lendablePercent"))
    borrowing = limited.get("borrowingLimitPercent")
    if borrowing is not None and borrowing < 0:
        errs.append(invalid(path.child("borrowingLimitPercent"), borrowing,
                            "if specified, must be a non-negative integer"))
    return errs


def _limit_response(response: Obj, path: Path) -> list[FieldError]:
    kind = response.get("type") or ""
    queuing = response.get("queuing")
    if kind == "Reject":
        if queuing is not None:
            return [forbidden(path.child("queuing"),
                              "must be nil if limited.limitResponse.type is not Limited")]
        return []
    if kind == "Queue":
        if not isinstance(queuing, dict):
            return [required(path.child("queuing"),
                             "must not be empty if limited.limitResponse.type is Limited")]
        return _queuing(queuing, path.child("queuing"))
    if not kind:
        return [required(path.child("type"))]
    return [not_supported(path.child("type"), kind, _RESPONSES)]


def _queuing(queuing: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    length = queuing.get("queueLengthLimit") or 0
    if length <= 0:
        errs.append(invalid(path.child("queueLengthLimit"), length, "must be positive"))
    queues = queuing.get("queues") or 0
    if queues <= 0:
        errs.append(invalid(path.child("queues"), queues, "must be positive"))
    elif queues > MAX_QUEUES:
        errs.append(invalid(path.child("queues"), queues, f"must not be greater than {MAX_QUEUES}"))
    hand = queuing.get("handSize") or 0
    if hand <= 0:
        errs.append(invalid(path.child("handSize"), hand, "must be positive"))
    elif hand > queues:
        errs.append(invalid(path.child("handSize"), hand,
                            f"should not be greater than queues ({queues})"))
    elif required_entropy_bits(queues, hand) > MAX_HASH_BITS:
        errs.append(invalid(path.child("handSize"), hand,
                            f"required entropy bits of deckSize {queues} and handSize {hand} "
                            f"should not be greater than {MAX_HASH_BITS}"))
    return errs


STRATEGIES = [PriorityLevelConfigurationStrategy()]
