"""The LimitRanger admission plugin, as the pod and claim strategies apply it: a new
pod's containers get the default requests and limits of the namespace's LimitRanges
(recorded in the `kubernetes.io/limit-ranger` annotation), then pods and
PersistentVolumeClaims are held to their min, max and maxLimitRequestRatio, refused with
upstream's 403 and messages. Run before the object's own validation (upstream runs the
checks after it), so an invalid object that also breaks a limit gets the 403."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from draemu.api.errors import StatusError
from draemu.api.quantity import Quantity, QuantityError
from draemu.api.quota import pod_resources
from draemu.api.types import Obj
from draemu.apiserver.registry.strategy import Context

ANNOTATION = "kubernetes.io/limit-ranger"
Values = dict[str, Any]  # resource name -> quantity (string or parsed)


def limit_ranges(ctx: Context, namespace: str) -> list[Obj]:
    if ctx.listing is None:
        return []
    return [r for r in ctx.listing("limitranges", "", namespace)
            if (r.get("metadata") or {}).get("namespace") == namespace]


def _text(value: Any) -> str:
    if isinstance(value, Fraction):
        return Quantity(value).canonical()
    try:
        return Quantity.parse(value).canonical()
    except (QuantityError, TypeError):
        return str(value)


def _value(value: Any) -> Fraction:
    if isinstance(value, Fraction):
        return value
    try:
        return Quantity.parse(value).value
    except (QuantityError, TypeError):
        return Fraction(0)


def default_resources(pod: Obj, ranges: list[Obj]) -> None:
    """mergePodResourceRequirements: the Container items' default and defaultRequest."""
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    for lr in ranges:
        for item in (lr.get("spec") or {}).get("limits") or []:
            if item.get("type") == "Container":
                requests.update(item.get("defaultRequest") or {})
                limits.update(item.get("default") or {})
    if not requests and not limits:
        return
    spec = pod.get("spec") or {}
    notes: list[str] = []
    for field, word in (("containers", "container"), ("initContainers", "init container")):
        for container in spec.get(field) or []:
            resources = container.setdefault("resources", {})
            set_requests, set_limits = [], []
            for name, value in limits.items():
                if name not in (resources.get("limits") or {}):
                    resources.setdefault("limits", {})[name] = value
                    set_limits.append(name)
            for name, value in requests.items():
                if name not in (resources.get("requests") or {}):
                    resources.setdefault("requests", {})[name] = value
                    set_requests.append(name)
            if set_requests:
                notes.append(f"{', '.join(sorted(set_requests))} request for {word} "
                             f"{container.get('name', '')}")
            if set_limits:
                notes.append(f"{', '.join(sorted(set_limits))} limit for {word} "
                             f"{container.get('name', '')}")
    if notes:
        pod.setdefault("metadata", {}).setdefault("annotations", {})[ANNOTATION] = \
            "LimitRanger plugin set: " + "; ".join(notes)


def _min(kind: str, name: str, enforced: Any, requests: Values,
         limits: Values) -> str | None:
    floor = _value(enforced)
    if name not in requests:
        return f"minimum {name} usage per {kind} is {_text(enforced)}.  No request is specified"
    if _value(requests[name]) < floor:
        return (f"minimum {name} usage per {kind} is {_text(enforced)}, but request is "
                f"{_text(requests[name])}")
    if name in limits and _value(limits[name]) < floor:
        return (f"minimum {name} usage per {kind} is {_text(enforced)}, but limit is "
                f"{_text(limits[name])}")
    return None


def _max(kind: str, name: str, enforced: Any, requests: Values,
         limits: Values) -> str | None:
    ceiling = _value(enforced)
    if name not in limits:
        return f"maximum {name} usage per {kind} is {_text(enforced)}.  No limit is specified"
    if _value(limits[name]) > ceiling:
        return (f"maximum {name} usage per {kind} is {_text(enforced)}, but limit is "
                f"{_text(limits[name])}")
    if name in requests and _value(requests[name]) > ceiling:
        return (f"maximum {name} usage per {kind} is {_text(enforced)}, but request is "
                f"{_text(requests[name])}")
    return None


def _max_request(kind: str, name: str, enforced: Any, requests: Values) -> str | None:
    if name not in requests:
        return f"maximum {name} usage per {kind} is {_text(enforced)}.  No request is specified"
    if _value(requests[name]) > _value(enforced):
        return (f"maximum {name} usage per {kind} is {_text(enforced)}, but request is "
                f"{_text(requests[name])}")
    return None


def _ratio(kind: str, name: str, enforced: Any, requests: Values,
           limits: Values) -> str | None:
    request, limit = _value(requests.get(name, 0)), _value(limits.get(name, 0))
    if request == 0:
        return (f"{name} max limit to request ratio per {kind} is {_text(enforced)}, but no "
                "request is specified or request is 0")
    if limit == 0:
        return (f"{name} max limit to request ratio per {kind} is {_text(enforced)}, but no "
                "limit is specified or limit is 0")
    observed = limit / request
    if observed > _value(enforced):
        return (f"{name} max limit to request ratio per {kind} is {_text(enforced)}, but "
                f"provided ratio is {float(observed):f}")
    return None


def _checks(item: Obj, kind: str, requests: Values, limits: Values) -> list[str]:
    found: list[str | None] = []
    found += [_min(kind, k, v, requests, limits) for k, v in (item.get("min") or {}).items()]
    found += [_max(kind, k, v, requests, limits) for k, v in (item.get("max") or {}).items()]
    found += [_ratio(kind, k, v, requests, limits)
              for k, v in (item.get("maxLimitRequestRatio") or {}).items()]
    return [f for f in found if f]


def pod_violations(pod: Obj, ranges: list[Obj]) -> list[str]:
    spec = pod.get("spec") or {}
    errors: list[str] = []
    for lr in ranges:
        for item in (lr.get("spec") or {}).get("limits") or []:
            if item.get("type") == "Container":
                for container in [*(spec.get("containers") or []),
                                  *(spec.get("initContainers") or [])]:
                    resources = container.get("resources") or {}
                    errors += _checks(item, "Container", resources.get("requests") or {},
                                      resources.get("limits") or {})
            elif item.get("type") == "Pod":
                errors += _checks(item, "Pod", dict(pod_resources(spec, "requests")),
                                  dict(pod_resources(spec, "limits")))
    return errors


def claim_violations(claim: Obj, ranges: list[Obj]) -> list[str]:
    requests = ((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}
    errors: list[str | None] = []
    for lr in ranges:
        for item in (lr.get("spec") or {}).get("limits") or []:
            if item.get("type") != "PersistentVolumeClaim":
                continue
            errors += [_min("PersistentVolumeClaim", k, v, requests, {})
                       for k, v in (item.get("min") or {}).items()]
            errors += [_max_request("PersistentVolumeClaim", k, v, requests)
                       for k, v in (item.get("max") or {}).items()]
    return [e for e in errors if e]


def refuse(resource: str, obj: Obj, errors: list[str]) -> None:
    """admission.NewForbidden with upstream's aggregate of the errors."""
    if not errors:
        return
    name = (obj.get("metadata") or {}).get("name") or ""
    text = errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]"
    raise StatusError(403, "Forbidden", f'{resource} "{name}" is forbidden: {text}',
                      {"name": name, "kind": resource})
