"""DeviceTaint (slices, DeviceTaintRules) and DeviceToleration (requests, results)."""

from __future__ import annotations

from typing import Any

from draemu.api.errors import Path, invalid, not_supported, required

from . import fields as f
from .fields import Errors

TAINT_EFFECTS = ["NoExecute", "NoSchedule", "None"]
TOLERATION_OPERATORS = ["Equal", "Exists"]


def taint(value: dict[str, Any], old: dict[str, Any] | None, path: Path) -> Errors:
    """The effect is checked only when new or changed, so unknown stored effects survive."""
    errs = f.label_name(value.get("key", "") or "", path.child("key"))
    if value.get("value"):
        errs += f.label_value(value["value"], path.child("value"))
    effect = value.get("effect", "") or ""
    if old is None or (old.get("effect") or "") != effect:
        if not effect:
            errs.append(required(path.child("effect")))
        elif effect not in TAINT_EFFECTS:
            errs.append(not_supported(path.child("effect"), effect, TAINT_EFFECTS))
    return errs


def toleration(value: dict[str, Any], path: Path) -> Errors:
    errs: Errors = []
    if value.get("key"):
        errs += f.label_name(value["key"], path.child("key"))
    operator = value.get("operator", "") or ""
    tvalue = value.get("value", "") or ""
    if operator == "Exists":
        if tvalue:
            errs.append(invalid(path.child("value"), tvalue,
                                "must be empty for operator `Exists`"))
    elif operator == "Equal":
        errs += f.label_value(tvalue, path.child("value"))
    elif not operator:
        errs.append(required(path.child("operator")))
    else:
        errs.append(not_supported(path.child("operator"), operator, TOLERATION_OPERATORS))
    effect = value.get("effect", "") or ""
    if effect and effect not in TAINT_EFFECTS:
        errs.append(not_supported(path.child("effect"), effect, TAINT_EFFECTS))
    return errs
