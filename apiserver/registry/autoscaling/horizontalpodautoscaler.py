"""autoscaling/v2 (storage) and v1 HorizontalPodAutoscaler (+status). Stored and
validated; its status is the horizontal-pod-autoscaler controller's (which needs a metrics
API draemu lacks).

v1 shows the CPU utilization target as `targetCPUUtilizationPercentage`; what v1 cannot
hold (other metrics, behavior, conditions, current metrics) travels in upstream's
`autoscaling.alpha.kubernetes.io/*` annotations so that a v1 round trip loses nothing.
Unlike upstream, those annotations hold the v2 JSON shapes, not v1's legacy ones."""

from __future__ import annotations

import json
from typing import Any

from draemu.api.errors import FieldError, Path, invalid, not_supported, required
from draemu.apiserver.registry.generic import AGE_COLUMN, NAME, GenericStrategy, Printed, get_path
from draemu.apiserver.registry.strategy import Column, Context, Obj
from draemu.apiserver.wire.jsoncopy import clone

METRIC_TYPES = ["ContainerResource", "External", "Object", "Pods", "Resource"]
_SOURCE_FIELD = {"ContainerResource": "containerResource", "External": "external",
                 "Object": "object", "Pods": "pods", "Resource": "resource"}
_SELECT_POLICIES = ["Disabled", "Max", "Min"]
METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS_ANNOTATION = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR_ANNOTATION = "autoscaling.alpha.kubernetes.io/behavior"
_ROUND_TRIP = (METRICS_ANNOTATION, CURRENT_METRICS_ANNOTATION, CONDITIONS_ANNOTATION,
               BEHAVIOR_ANNOTATION)
_POLICY_TYPES = ["Percent", "Pods"]


def _current(statuses: list[Obj], i: int, kind: str) -> Obj:
    if i < len(statuses):
        return (statuses[i].get(_SOURCE_FIELD.get(kind, "")) or {}).get("current") or {}
    return {}


def _metric_cell(spec: Obj, statuses: list[Obj], i: int) -> str:
    kind = spec.get("type") or ""
    source = spec.get(_SOURCE_FIELD.get(kind, "")) or {}
    target = source.get("target") or {}
    current = _current(statuses, i, kind)
    if kind in ("External", "Object"):
        if target.get("averageValue") is not None:
            return f"{current.get('averageValue', '<unknown>')}/{target['averageValue']} (avg)"
        return f"{current.get('value', '<unknown>')}/{target.get('value', '')}"
    if kind == "Pods":
        return f"{current.get('averageValue', '<unknown>')}/{target.get('averageValue', '')}"
    if kind in ("Resource", "ContainerResource"):
        name = source.get("name", "")
        if kind == "ContainerResource":
            name = f"{name} ({source.get('container', '')})"
        if target.get("averageValue") is not None:
            return f"{name}: {current.get('averageValue', '<unknown>')}/{target['averageValue']}"
        used = current.get("averageUtilization")
        wanted = target.get("averageUtilization")
        return (f"{name}: {'<unknown>' if used is None else f'{used}%'}/"
                f"{'<auto>' if wanted is None else f'{wanted}%'}")
    return "<unknown metric type>"


def _targets_cell(obj: Obj) -> str:
    specs = get_path(obj, "spec.metrics") or []
    if not specs:
        return "<none>"
    statuses = get_path(obj, "status.currentMetrics") or []
    cells = [_metric_cell(s, statuses, i) for i, s in enumerate(specs)]
    text = ", ".join(cells[:2])
    return f"{text} + {len(cells) - 2} more..." if len(cells) > 2 else text


def _reference(obj: Obj) -> str:
    ref = get_path(obj, "spec.scaleTargetRef") or {}
    return f"{ref.get('kind', '')}/{ref.get('name', '')}"


def _min_pods(obj: Obj) -> Any:
    value = get_path(obj, "spec.minReplicas")
    return "<unset>" if value is None else str(value)


class HorizontalPodAutoscalerStrategy(GenericStrategy):
    group = "autoscaling"
    kind = "HorizontalPodAutoscaler"
    resource = "horizontalpodautoscalers"
    singular = "horizontalpodautoscaler"
    short_names = ("hpa",)
    categories = ("all",)
    versions = ("v2", "v1")
    storage_version = "v2"
    subresources = frozenset({"status"})
    printer = (
        NAME,
        Printed(Column("Reference", description="the target resource to scale"), _reference),
        Printed(Column("Targets", description="the metrics and their targets"), _targets_cell),
        Printed(Column("MinPods", description="the lower limit for the number of replicas"),
                _min_pods),
        Printed(Column("MaxPods", description="the upper limit for the number of replicas"),
                lambda o: get_path(o, "spec.maxReplicas") or 0),
        Printed(Column("Replicas", description="current number of replicas"),
                lambda o: get_path(o, "status.currentReplicas") or 0),
        AGE_COLUMN,
    )

    def default(self, obj: Obj, version: str) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        spec.setdefault("minReplicas", 1)
        if version == "v1":
            return
        if not spec.get("metrics"):
            spec["metrics"] = [{"type": "Resource", "resource": {
                "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
        behavior = spec.get("behavior")
        if isinstance(behavior, dict):
            for name, window, policies in (
                    ("scaleUp", 0, [{"type": "Pods", "value": 4, "periodSeconds": 15},
                                    {"type": "Percent", "value": 100, "periodSeconds": 15}]),
                    ("scaleDown", 300, [{"type": "Percent", "value": 100,
                                         "periodSeconds": 15}])):
                rules = behavior.setdefault(name, {})
                rules.setdefault("stabilizationWindowSeconds", window)
                rules.setdefault("selectPolicy", "Max")
                rules.setdefault("policies", policies)

    def prepare_for_create(self, obj: Obj, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        obj["status"] = {"currentReplicas": 0, "desiredReplicas": 0}

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        spec = obj.get("spec") or {}
        path = Path("spec")
        errs: list[FieldError] = []
        ref = spec.get("scaleTargetRef") or {}
        ref_path = path.child("scaleTargetRef")
        for name in ("kind", "name"):
            if not ref.get(name):
                errs.append(required(ref_path.child(name)))
            elif "/" in ref[name] or ref[name] in (".", ".."):
                errs.append(invalid(ref_path.child(name), ref[name], "may not contain '/'"))
        low = spec.get("minReplicas")
        if low is not None and low < 1:
            errs.append(invalid(path.child("minReplicas"), low,
                                "must be greater than or equal to 1"))
        high = spec.get("maxReplicas") or 0
        if high < 1:
            errs.append(invalid(path.child("maxReplicas"), high, "must be greater than 0"))
        if low is not None and high < low:
            errs.append(invalid(path.child("maxReplicas"), high,
                                "must be greater than or equal to `minReplicas`"))
        for i, metric in enumerate(spec.get("metrics") or []):
            p = path.child("metrics").index(i)
            kind = metric.get("type")
            if not kind:
                errs.append(required(p.child("type")))
            elif kind not in METRIC_TYPES:
                errs.append(not_supported(p.child("type"), kind, METRIC_TYPES))
            elif metric.get(_SOURCE_FIELD[kind]) is None:
                errs.append(required(p.child(_SOURCE_FIELD[kind]), "must populate information "
                                     f"for the given metric source (type {kind})"))
        for name in ("scaleUp", "scaleDown"):
            rules = (spec.get("behavior") or {}).get(name)
            if not isinstance(rules, dict):
                continue
            p = path.child("behavior", name)
            select = rules.get("selectPolicy")
            if select is not None and select not in _SELECT_POLICIES:
                errs.append(not_supported(p.child("selectPolicy"), select, _SELECT_POLICIES))
            for j, policy in enumerate(rules.get("policies") or []):
                q = p.child("policies").index(j)
                if policy.get("type") not in _POLICY_TYPES:
                    errs.append(not_supported(q.child("type"), policy.get("type"),
                                              _POLICY_TYPES))
                if (policy.get("value") or 0) <= 0:
                    errs.append(invalid(q.child("value"), policy.get("value") or 0,
                                        "must be greater than zero"))
                seconds = policy.get("periodSeconds") or 0
                if not 0 < seconds <= 1800:
                    errs.append(invalid(q.child("periodSeconds"), seconds,
                                        "must be greater than zero and less than or equal to "
                                        "1800"))
        return errs


    def to_storage(self, obj: Obj, version: str) -> Obj:
        return v1_to_v2(obj) if version == "v1" else obj

    def from_storage(self, obj: Obj, version: str) -> Obj:
        return v2_to_v1(obj) if version == "v1" else obj


def _is_cpu_utilization(metric: Obj, part: str) -> bool:
    resource = metric.get("resource") or {}
    return (metric.get("type") == "Resource" and resource.get("name") == "cpu"
            and (resource.get(part) or {}).get("averageUtilization") is not None)


def v2_to_v1(obj: Obj) -> Obj:
    out = clone(obj)
    out["apiVersion"] = "autoscaling/v1"
    spec, status = out.get("spec") or {}, out.get("status") or {}
    meta = out.setdefault("metadata", {})
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items()
                   if k not in _ROUND_TRIP}
    metrics = spec.pop("metrics", None) or []
    cpu = next((m for m in metrics if _is_cpu_utilization(m, "target")), None)
    if cpu is not None:
        spec["targetCPUUtilizationPercentage"] = cpu["resource"]["target"]["averageUtilization"]
    others = [m for m in metrics if m is not cpu]
    if others:
        annotations[METRICS_ANNOTATION] = json.dumps(others, separators=(",", ":"))
    behavior = spec.pop("behavior", None)
    if behavior is not None:
        annotations[BEHAVIOR_ANNOTATION] = json.dumps(behavior, separators=(",", ":"))
    current = status.pop("currentMetrics", None) or []
    used = next((m for m in current if _is_cpu_utilization(m, "current")), None)
    if used is not None:
        status["currentCPUUtilizationPercentage"] = \
            used["resource"]["current"]["averageUtilization"]
    if current:
        annotations[CURRENT_METRICS_ANNOTATION] = json.dumps(current, separators=(",", ":"))
    conditions = status.pop("conditions", None)
    if conditions:
        annotations[CONDITIONS_ANNOTATION] = json.dumps(conditions, separators=(",", ":"))
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    return out


def _decoded(annotations: dict[str, str], key: str) -> Any:
    try:
        return json.loads(annotations[key]) if key in annotations else None
    except ValueError:
        return None


def v1_to_v2(obj: Obj) -> Obj:
    out = clone(obj)
    out["apiVersion"] = "autoscaling/v2"
    spec = out.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    status = out.get("status") if isinstance(out.get("status"), dict) else None
    meta = out.setdefault("metadata", {})
    annotations = dict(meta.get("annotations") or {})
    metrics: list[Obj] = []
    target = spec.pop("targetCPUUtilizationPercentage", None)
    if target is not None:
        metrics.append({"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": target}}})
    others = _decoded(annotations, METRICS_ANNOTATION)
    if isinstance(others, list):
        metrics += [m for m in others if isinstance(m, dict)]
    if metrics:
        spec["metrics"] = metrics
    behavior = _decoded(annotations, BEHAVIOR_ANNOTATION)
    if isinstance(behavior, dict):
        spec["behavior"] = behavior
    if status is not None:
        used = status.pop("currentCPUUtilizationPercentage", None)
        current = _decoded(annotations, CURRENT_METRICS_ANNOTATION)
        if isinstance(current, list):
            status["currentMetrics"] = current
        elif used is not None:
            status["currentMetrics"] = [{"type": "Resource", "resource": {
                "name": "cpu", "current": {"averageUtilization": used}}}]
        conditions = _decoded(annotations, CONDITIONS_ANNOTATION)
        if isinstance(conditions, list):
            status["conditions"] = conditions
    remaining = {k: v for k, v in annotations.items() if k not in _ROUND_TRIP}
    if remaining:
        meta["annotations"] = remaining
    else:
        meta.pop("annotations", None)
    return out


STRATEGIES = [HorizontalPodAutoscalerStrategy()]
