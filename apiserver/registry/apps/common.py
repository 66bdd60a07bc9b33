"""What Deployments and ReplicaSets share: the template-for-replicas rules and the
status counters. (/scale is served by the apiserver's subresource handlers.)"""

from __future__ import annotations

import re
from typing import Any

from draemu.api.errors import FieldError, Path, invalid, not_supported, required
from draemu.api.names import regex_error
from draemu.api.types import Obj
from draemu.apiserver.registry.core.common import nonnegative
from draemu.apiserver.registry.core.labelselector import (
    convertible,
    is_empty,
    matches,
    validate_label_selector,
)
from draemu.apiserver.registry.core.podtemplate import validate_pod_template

STATUS_EXCEEDS_REPLICAS = "cannot be greater than status.replicas"
_PERCENT = re.compile(r"^[0-9]+%$")


def validate_int_or_percent(value: Any, path: Path) -> list[FieldError]:
    if isinstance(value, str):
        if not _PERCENT.match(value):
            return [invalid(path, value, regex_error(
                "a valid percent string must be a numeric string followed by an ending '%'",
                "[0-9]+%", "1%", "93%"))]
        return []
    if isinstance(value, int):
        return nonnegative(value, path)
    return [invalid(path, value, "must be an integer or percentage (e.g '5%')")]


def int_or_percent_value(value: Any) -> int:
    if isinstance(value, str) and _PERCENT.match(value):
        return int(value[:-1])
    return value if isinstance(value, int) else 0


def validate_selector_and_template(spec: Obj, path: Path, kind: str) -> list[FieldError]:
    """`kind` words the empty-selector message ("deployment", "replicaset")."""
    errs: list[FieldError] = []
    selector = spec.get("selector")
    if selector is None:
        errs.append(required(path.child("selector")))
    else:
        errs += validate_label_selector(selector, path.child("selector"))
        if is_empty(selector):
            errs.append(invalid(path.child("selector"), selector,
                                f"empty selector is invalid for {kind}"))
    if not convertible(selector):
        errs.append(invalid(path.child("selector"), selector, "invalid label selector"))
        selector = None  # then no template label check, as upstream
    errs += validate_template_for_replicas(spec.get("template"), selector, path.child("template"))
    return errs


def validate_template_for_replicas(template: Obj | None, selector: Obj | None,
                                   path: Path) -> list[FieldError]:
    if template is None:
        return [required(path)]
    errs: list[FieldError] = []
    labels = (template.get("metadata") or {}).get("labels") or {}
    if not is_empty(selector) and not matches(selector, labels):
        errs.append(invalid(path.child("metadata", "labels"), labels,
                            "`selector` does not match template `labels`"))
    errs += validate_pod_template(template, path)
    spec = template.get("spec") or {}
    restart_policy = spec.get("restartPolicy") or ""
    if restart_policy != "Always":
        errs.append(not_supported(path.child("spec", "restartPolicy"), restart_policy,
                                  ["Always"]))
    if spec.get("activeDeadlineSeconds") is not None:
        errs.append(invalid(path.child("spec", "activeDeadlineSeconds"),
                            spec["activeDeadlineSeconds"],
                            "activeDeadlineSeconds in ReplicaSet is not Supported"))
    return errs


def validate_counters(status: Obj, names: tuple[str, ...], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for name in names:
        errs += nonnegative(status.get(name), path.child(name))
    return errs


def validate_replica_counts(status: Obj, bounded: tuple[str, ...],
                            path: Path) -> list[FieldError]:
    """Counters that may not exceed status.replicas, and available <= ready."""
    replicas = status.get("replicas") or 0
    errs = [invalid(path.child(name), status.get(name) or 0, STATUS_EXCEEDS_REPLICAS)
            for name in bounded if (status.get(name) or 0) > replicas]
    if (status.get("availableReplicas") or 0) > (status.get("readyReplicas") or 0):
        errs.append(invalid(path.child("availableReplicas"), status.get("availableReplicas"),
                            "cannot be greater than readyReplicas"))
    return errs
