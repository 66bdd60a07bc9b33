"""The scheduler configuration file: kube-scheduler's `KubeSchedulerConfiguration`
(kubescheduler.config.k8s.io/v1), the parts that decide placement.

    apiVersion: kubescheduler.config.k8s.io/v1
    kind: KubeSchedulerConfiguration
    percentageOfNodesToScore: 0          # 0 = adaptive (upstream's default)
    profiles:
    - schedulerName: default-scheduler
      plugins:
        multiPoint: {enabled: [{name: X, weight: 2}], disabled: [{name: Y}]}
        score: {disabled: [{name: NodeResourcesBalancedAllocation}]}
      pluginConfig:
      - name: NodeResourcesFit
        args: {scoringStrategy: {type: MostAllocated}}
      - name: DynamicResources
        args: {filterTimeout: 20s}

Plugin sets merge with the defaults as upstream's mergePluginSet: a disabled default
leaves, `*` disables every default, an enabled default is reconfigured in place (its
weight), other enabled plugins are appended. Per extension point sets (preFilter, filter,
postFilter, preScore, score, reserve, preBind, bind) disable a plugin at that point only.
Other fields of the file (leaderElection, clientConnection, extenders, ...) are accepted
and ignored. Errors are upstream's field paths and texts where draemu has the same rule.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

GROUP_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER = "default-scheduler"

# Upstream's default profile (v1.37, DynamicResources before DefaultPreemption), with
# weights. Names draemu does not implement are accepted and have no effect.
DEFAULT_PLUGINS: list[tuple[str, int]] = [
    ("SchedulingGates", 0), ("PrioritySort", 0), ("NodeUnschedulable", 0), ("NodeName", 0),
    ("TaintToleration", 3), ("NodeAffinity", 2), ("NodePorts", 0), ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0), ("NodeVolumeLimits", 0), ("VolumeBinding", 0),
    ("VolumeZone", 0), ("PodTopologySpread", 2), ("InterPodAffinity", 2),
    ("DynamicResources", 0), ("DefaultPreemption", 0), ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1), ("DefaultBinder", 0),
]
IMPLEMENTED = {"SchedulingGates", "NodeUnschedulable", "NodeName", "TaintToleration",
               "NodeAffinity", "NodePorts", "NodeResourcesFit", "PodTopologySpread",
               "InterPodAffinity", "DynamicResources", "DefaultPreemption",
               "NodeResourcesBalancedAllocation", "DefaultBinder"}
NOT_IMPLEMENTED = {"PrioritySort", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding",
                   "VolumeZone", "ImageLocality"}
KNOWN = IMPLEMENTED | NOT_IMPLEMENTED
POINTS = ("preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore", "score",
          "reserve", "permit", "preBind", "bind", "postBind")
STRATEGIES = ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")


class ConfigError(ValueError):
    pass


@dataclass
class Profile:
    scheduler_name: str
    plugins: list[tuple[str, int]]  # enabled, in order, with weights (0 = default)
    disabled: dict[str, set[str]] = field(default_factory=dict)  # point -> plugin names
    enabled: dict[str, set[str]] = field(default_factory=dict)  # point -> explicitly on
    args: dict[str, dict[str, Any]] = field(default_factory=dict)
    percentage_of_nodes_to_score: int | None = None


@dataclass
class SchedulerConfig:
    profiles: list[Profile]
    percentage_of_nodes_to_score: int = 0

    @classmethod
    def default(cls) -> SchedulerConfig:
        return cls([Profile(DEFAULT_SCHEDULER, list(DEFAULT_PLUGINS))])


def load(text: str) -> SchedulerConfig:
    try:
        obj = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"couldn't decode as KubeSchedulerConfiguration: {e}") from e
    if not isinstance(obj, dict):
        raise ConfigError("couldn't decode as KubeSchedulerConfiguration: not an object")
    return parse(obj)


def load_file(path: str) -> SchedulerConfig:
    try:
        with open(path, encoding="utf-8") as f:
            return load(f.read())
    except OSError as e:
        raise ConfigError(f"failed to read config file {path!r}: {e.strerror}") from e


def parse(obj: dict[str, Any]) -> SchedulerConfig:
    if obj.get("apiVersion") != GROUP_VERSION or obj.get("kind") != KIND:
        raise ConfigError(f'no kind "{obj.get("kind")}" is registered for version '
                          f'"{obj.get("apiVersion")}" (want {GROUP_VERSION} {KIND})')
    errors: list[str] = []
    percentage = _percentage(obj.get("percentageOfNodesToScore"),
                             "percentageOfNodesToScore", errors)
    raw_profiles = obj.get("profiles")
    if raw_profiles is None or raw_profiles == []:
        raw_profiles = [{}]
    if not isinstance(raw_profiles, list):
        raise ConfigError("profiles: Invalid value: must be a list")
    profiles: list[Profile] = []
    names: set[str] = set()
    for i, raw in enumerate(raw_profiles):
        path = f"profiles[{i}]"
        if not isinstance(raw, dict):
            errors.append(f"{path}: Invalid value: must be an object")
            continue
        name = raw.get("schedulerName", DEFAULT_SCHEDULER if len(raw_profiles) == 1 else None)
        if not name:
            errors.append(f"{path}.schedulerName: Required value")
            continue
        if name in names:
            errors.append(f'{path}.schedulerName: Duplicate value: "{name}"')
        names.add(name)
        profile = Profile(name, [], percentage_of_nodes_to_score=_percentage(
            raw.get("percentageOfNodesToScore"), f"{path}.percentageOfNodesToScore", errors))
        _plugins(profile, raw.get("plugins") or {}, f"{path}.plugins", errors)
        _plugin_config(profile, raw.get("pluginConfig") or [], f"{path}.pluginConfig", errors)
        profiles.append(profile)
    if errors:
        raise ConfigError("invalid KubeSchedulerConfiguration: " + "; ".join(errors))
    return SchedulerConfig(profiles, percentage or 0)


def _percentage(value: Any, path: str, errors: list[str]) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 100:
        errors.append(f"{path}: Invalid value: {json.dumps(value)}: not in valid range [0-100]")
        return None
    return value


def _names(entries: Any, path: str, errors: list[str], *, weights: bool = False
           ) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for j, entry in enumerate(entries or []):
        name = entry.get("name") if isinstance(entry, dict) else None
        if not name:
            errors.append(f"{path}[{j}].name: Required value")
            continue
        if name != "*" and name not in KNOWN:
            errors.append(f'{path}[{j}].name: Invalid value: "{name}": "{name}" does not '
                          "exist")
            continue
        weight = entry.get("weight") or 0
        if weights and (not isinstance(weight, int) or weight < 0):
            errors.append(f"{path}[{j}].weight: Invalid value: {json.dumps(weight)}: must "
                          "not be negative")
            weight = 0
        out.append((name, int(weight)))
    return out


def _plugins(profile: Profile, plugins: dict[str, Any], path: str, errors: list[str]) -> None:
    multi = plugins.get("multiPoint") or {}
    disabled = {n for n, _ in _names(multi.get("disabled"), f"{path}.multiPoint.disabled",
                                     errors)}
    enabled = _names(multi.get("enabled"), f"{path}.multiPoint.enabled", errors, weights=True)
    custom = {n: w for n, w in enabled}
    merged: list[tuple[str, int]] = []
    if "*" not in disabled:
        for name, weight in DEFAULT_PLUGINS:
            if name in disabled:
                continue
            merged.append((name, custom.pop(name, weight) or weight))
    merged += [(n, w) for n, w in enabled if n in custom]
    score_weights: dict[str, int] = {}
    for point in POINTS:
        spec = plugins.get(point) or {}
        point_disabled = {n for n, _ in _names(spec.get("disabled"),
                                               f"{path}.{point}.disabled", errors)}
        point_enabled = _names(spec.get("enabled"), f"{path}.{point}.enabled", errors,
                               weights=point == "score")
        if point_disabled:
            profile.disabled[point] = point_disabled
        for name, weight in point_enabled:
            if point == "score" and weight:
                score_weights[name] = weight
            if name not in {n for n, _ in merged}:
                merged.append((name, weight))
            profile.enabled.setdefault(point, set()).add(name)
    profile.plugins = [(n, score_weights.get(n, w)) for n, w in merged]


def _plugin_config(profile: Profile, entries: Any, path: str, errors: list[str]) -> None:
    if not isinstance(entries, list):
        errors.append(f"{path}: Invalid value: must be a list")
        return
    seen: set[str] = set()
    for j, entry in enumerate(entries):
        name = entry.get("name") if isinstance(entry, dict) else None
        p = f"{path}[{j}]"
        if not name:
            errors.append(f"{p}.name: Required value")
            continue
        if name in seen:
            errors.append(f'{p}.name: Duplicate value: "{name}"')
        seen.add(name)
        args = entry.get("args") or {}
        if not isinstance(args, dict):
            errors.append(f"{p}.args: Invalid value: must be an object")
            continue
        check = _ARG_CHECKS.get(name)
        if check is not None:
            check(args, f"{p}.args", errors)
        profile.args[name] = args


def _check_fit(args: dict, path: str, errors: list[str]) -> None:
    strategy = args.get("scoringStrategy") or {}
    kind = strategy.get("type", "LeastAllocated")
    if kind not in STRATEGIES:
        errors.append(f'{path}.scoringStrategy.type: Unsupported value: "{kind}": supported '
                      'values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"')
    for k, r in enumerate(strategy.get("resources") or []):
        r = r if isinstance(r, dict) else {}
        weight = r.get("weight", 1)
        if not isinstance(weight, int) or not 1 <= weight <= 100:
            errors.append(f"{path}.scoringStrategy.resources[{k}].weight: Invalid value: "
                          f"{json.dumps(weight)}: resource weight of {r.get('name')} "
                          "should be in the range [1, 100]")
    if kind == "RequestedToCapacityRatio":
        shape = ((strategy.get("requestedToCapacityRatio") or {}).get("shape")) or []
        if not shape:
            errors.append(f"{path}.scoringStrategy.requestedToCapacityRatio.shape: Required "
                          "value: at least one point must be specified")
        last = -1
        for k, point in enumerate(shape):
            u, s = point.get("utilization", 0), point.get("score", 0)
            if not 0 <= u <= 100:
                errors.append(f"{path}.scoringStrategy.requestedToCapacityRatio.shape[{k}]."
                              f"utilization: Invalid value: {u}: not in valid range [0-100]")
            elif u <= last:
                errors.append(f"{path}.scoringStrategy.requestedToCapacityRatio.shape[{k}]."
                              f"utilization: Invalid value: {u}: should be increasing")
            last = u
            if not 0 <= s <= 10:
                errors.append(f"{path}.scoringStrategy.requestedToCapacityRatio.shape[{k}]."
                              f"score: Invalid value: {s}: not in valid range [0-10]")


def _check_dra(args: dict, path: str, errors: list[str]) -> None:
    value = args.get("filterTimeout")
    if value is None:
        return
    try:
        seconds = parse_duration(value)
    except ValueError:
        errors.append(f'{path}.filterTimeout: Invalid value: "{value}": time: invalid '
                      f'duration "{value}"')
        return
    if seconds < 0:
        errors.append(f'{path}.filterTimeout: Invalid value: "{value}": must be zero or '
                      "positive duration")


def _check_affinity(args: dict, path: str, errors: list[str]) -> None:
    weight = args.get("hardPodAffinityWeight", 1)
    if not isinstance(weight, int) or not 0 <= weight <= 100:
        errors.append(f"{path}.hardPodAffinityWeight: Invalid value: {json.dumps(weight)}: "
                      "not in valid range [0-100]")


def _check_spread(args: dict, path: str, errors: list[str]) -> None:
    kind = args.get("defaultingType", "System")
    if kind not in ("System", "List"):
        errors.append(f'{path}.defaultingType: Unsupported value: "{kind}": supported values: '
                      '"System", "List"')
    if kind == "System" and args.get("defaultConstraints"):
        errors.append(f"{path}.defaultingType: Invalid value: \"System\": when providing "
                      "defaultConstraints, defaultingType should be List")
    for k, c in enumerate(args.get("defaultConstraints") or []):
        if c.get("labelSelector") is not None:
            errors.append(f"{path}.defaultConstraints[{k}].labelSelector: Forbidden: "
                          "constraint must not define a selector, as they deduced for each pod")
        if not isinstance(c.get("maxSkew"), int) or c.get("maxSkew") <= 0:
            errors.append(f"{path}.defaultConstraints[{k}].maxSkew: Invalid value: "
                          f"{json.dumps(c.get('maxSkew'))}: not in valid range (0, inf)")


_ARG_CHECKS = {"NodeResourcesFit": _check_fit, "DynamicResources": _check_dra,
               "InterPodAffinity": _check_affinity, "PodTopologySpread": _check_spread}

_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(value: Any) -> float:
    """A Go duration ("10s", "1m30s", "500ms", "0") in seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) / 1e9  # a number is nanoseconds, as metav1.Duration's JSON
    text = str(value).strip()
    sign = -1.0 if text.startswith("-") else 1.0
    text = text.lstrip("+-")
    if text == "0":
        return 0.0
    pos, total = 0, 0.0
    for m in _DURATION.finditer(text):
        if m.start() != pos:
            raise ValueError(value)
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(text) or not text:
        raise ValueError(value)
    return sign * total
