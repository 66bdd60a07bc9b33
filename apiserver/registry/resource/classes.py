"""Validation of DeviceClass (v1 shape)."""

from __future__ import annotations

from typing import Any

from draemu.api.errors import Path, invalid
from draemu.features import FeatureGates

from . import fields as f
from .claims import CONFIG_MAX, device_configuration
from .deviceselectors import selector_list
from .fields import Errors, lst, obj


def class_spec(spec: dict[str, Any], old: dict[str, Any] | None, gates: FeatureGates) -> Errors:
    """`old` is the previous spec on update: unchanged config is treated as stored, so
    parameters stored before a limit existed stay valid."""
    path = Path("spec")
    unchanged = old is not None and lst(old.get("selectors")) == lst(spec.get("selectors"))
    errs = selector_list(lst(spec.get("selectors")), path.child("selectors"), gates, unchanged)
    stored = old is not None and lst(old.get("config")) == lst(spec.get("config"))
    errs += f.bounded_list(lst(spec.get("config")), CONFIG_MAX, path.child("config"),
                           lambda c, p: device_configuration(obj(c), p, stored))
    name = spec.get("extendedResourceName")
    if name is not None and not f.extended_resource_name(name):
        errs.append(invalid(path.child("extendedResourceName"), name,
                            "must be a valid extended resource name"))
    return errs
