"""Validation of ResourcePoolStatusRequest (v1alpha3 only, gate DRAResourcePoolStatus)."""

from __future__ import annotations

from typing import Any

from draemu.api.errors import Path, forbidden, invalid, required, too_long, too_many
from draemu.features import FeatureGates

from . import fields as f
from .fields import Errors, lst, obj
from .rules import ONE_SLASH_NAMES, applies

LIMIT_MIN, LIMIT_MAX = 1, 1000
POOLS_MAX = 1000
CONDITIONS_MAX = 10
PARTITION_SUMMARIES_MAX = 32
SHAREABLE_CAPACITY_MAX = 32
VALIDATION_ERROR_MAX = 256


def request_spec(spec: dict[str, Any], gates: FeatureGates) -> Errors:
    path = Path("spec")
    errs = f.driver_name(spec.get("driver", "") or "", path.child("driver"))
    if spec.get("poolName") is not None:
        errs += f.pool_name(spec["poolName"], path.child("poolName"))
    limit = spec.get("limit")
    if limit is not None and not LIMIT_MIN <= limit <= LIMIT_MAX:
        errs.append(invalid(path.child("limit"), limit,
                            f"must be between {LIMIT_MIN} and {LIMIT_MAX}, inclusive"))
    attribute = spec.get("defaultPartitionTypeAttribute")
    if attribute is not None:
        apath = path.child("defaultPartitionTypeAttribute")
        if not gates.enabled("DRAPartitionableDevicesType"):
            errs.append(forbidden(apath, "disabled by feature gate DRAPartitionableDevicesType"))
        else:
            errs += f.fully_qualified_name(attribute, apath,
                                           applies(gates, ONE_SLASH_NAMES))
    return errs


def request_status(status: dict[str, Any]) -> Errors:
    path = Path("status")
    errs: Errors = []
    if status.get("poolCount") is None:
        errs.append(required(path.child("poolCount")))
    else:
        errs += _non_negative(status["poolCount"], path.child("poolCount"))
    errs += f.bounded_list(lst(status.get("pools")), POOLS_MAX, path.child("pools"), _pool)
    conditions = lst(status.get("conditions"))
    if len(conditions) > CONDITIONS_MAX:
        errs.append(too_many(path.child("conditions"), len(conditions), CONDITIONS_MAX))
    return errs + f.conditions(conditions, path.child("conditions"))


def _non_negative(value: Any, path: Path) -> Errors:
    if isinstance(value, int) and value < 0:
        return [invalid(path, value, "must be greater than or equal to 0")]
    return []


def _pool(pool: Any, path: Path) -> Errors:
    pool = obj(pool)
    errs = f.driver_name(pool.get("driver", "") or "", path.child("driver"))
    errs += f.pool_name(pool.get("poolName", "") or "", path.child("poolName"))
    errs += _non_negative(pool.get("generation", 0), path.child("generation"))
    count = pool.get("resourceSliceCount")
    if isinstance(count, int) and count < 1:
        errs.append(invalid(path.child("resourceSliceCount"), count,
                            "must be greater than or equal to 1"))
    for name in ("totalDevices", "allocatedDevices", "availableDevices", "unavailableDevices"):
        errs += _non_negative(pool.get(name), path.child(name))
    if pool.get("nodeName") is not None:
        errs += f.dns_subdomain(pool["nodeName"], path.child("nodeName"))
    if len((pool.get("validationError") or "").encode()) > VALIDATION_ERROR_MAX:
        errs.append(too_long(path.child("validationError"), VALIDATION_ERROR_MAX))
    summaries = lst(pool.get("partitionSummary"))
    errs += f.bounded_set(summaries, PARTITION_SUMMARIES_MAX, path.child("partitionSummary"),
                          _partition_summary,
                          lambda s: f"{obj(s).get('attribute')}/{obj(s).get('type')}")
    shareable = pool.get("shareableSummary")
    if isinstance(shareable, dict):
        capacity = lst(shareable.get("capacity"))
        if len(capacity) > SHAREABLE_CAPACITY_MAX:
            errs.append(too_many(path.child("shareableSummary", "capacity"), len(capacity),
                                 SHAREABLE_CAPACITY_MAX))
    return errs


def _partition_summary(summary: Any, path: Path) -> Errors:
    summary = obj(summary)
    errs: Errors = []
    for name in ("attribute", "type"):
        if not summary.get(name):
            errs.append(required(path.child(name)))
    for name in ("total", "allocatable"):
        errs += _non_negative(summary.get(name, 0), path.child(name))
    return errs
