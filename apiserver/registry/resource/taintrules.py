"""Validation of DeviceTaintRule (v1 shape)."""

from __future__ import annotations

from typing import Any

from draemu.api.errors import Path, too_many

from . import fields as f
from .fields import Errors, lst, obj
from .taints import taint

STATUS_CONDITIONS_MAX = 8


def taint_rule_spec(spec: dict[str, Any], old: dict[str, Any] | None) -> Errors:
    path = Path("spec")
    errs: Errors = []
    selector = spec.get("deviceSelector")
    if isinstance(selector, dict):
        spath = path.child("deviceSelector")
        if selector.get("driver") is not None:
            errs += f.driver_name(selector["driver"], spath.child("driver"))
        if selector.get("pool") is not None:
            errs += f.pool_name(selector["pool"], spath.child("pool"))
        if selector.get("device") is not None:
            errs += f.dns_label(selector["device"], spath.child("device"))
    old_taint = obj(old.get("taint")) if old is not None else None
    return errs + taint(obj(spec.get("taint")), old_taint, path.child("taint"))


def taint_rule_status(status: dict[str, Any]) -> Errors:
    path = Path("status").child("conditions")
    conditions = lst(status.get("conditions"))
    errs = f.conditions(conditions, path)
    if len(conditions) > STATUS_CONDITIONS_MAX:
        errs.append(too_many(path, len(conditions), STATUS_CONDITIONS_MAX))
    return errs
