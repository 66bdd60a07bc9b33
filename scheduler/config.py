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
from dataclasses import dataclass, field
from typing import Any

import yaml

from draemu.api import yamlload
from draemu.scheduler.pluginargs import parse_duration
from draemu.scheduler.plugins.registry import IN_TREE, Registry

__all__ = ["DEFAULT_PLUGINS", "ConfigError", "Profile", "SchedulerConfig", "load",
           "load_file", "parse", "parse_duration"]

GROUP_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER = "default-scheduler"

POINTS = ("preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore", "score",
          "reserve", "permit", "preBind", "bind", "postBind")
# Upstream's default profile (v1.37, DynamicResources before DefaultPreemption), with
# weights, from the registry. Names draemu does not implement are accepted, to no effect.
DEFAULT_PLUGINS: list[tuple[str, int]] = IN_TREE.default_plugins()


class ConfigError(ValueError):
    pass


@dataclass
class Profile:
    scheduler_name: str
    plugins: list[tuple[str, int]]  # enabled, in order, with weights (0 = default)
    disabled: dict[str, set[str]] = field(default_factory=dict)  # point -> plugin names
    enabled: dict[str, set[str]] = field(default_factory=dict)  # point -> explicitly on
    # Plugin name -> its args (its registry entry's args type), as pluginConfig sets them.
    args: dict[str, Any] = field(default_factory=dict)
    percentage_of_nodes_to_score: int | None = None


@dataclass
class SchedulerConfig:
    profiles: list[Profile]
    percentage_of_nodes_to_score: int = 0

    @classmethod
    def default(cls, registry: Registry = IN_TREE) -> SchedulerConfig:
        return cls([Profile(DEFAULT_SCHEDULER, registry.default_plugins())])


def load(text: str, registry: Registry = IN_TREE) -> SchedulerConfig:
    """The configuration in YAML or JSON; plugin names and args are checked against
    `registry`."""
    try:
        obj = yamlload.load_file_text(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"couldn't decode as KubeSchedulerConfiguration: {e}") from e
    if not isinstance(obj, dict):
        raise ConfigError("couldn't decode as KubeSchedulerConfiguration: not an object")
    return parse(obj, registry)


def load_file(path: str, registry: Registry = IN_TREE) -> SchedulerConfig:
    try:
        with open(path, encoding="utf-8") as f:
            return load(f.read(), registry)
    except OSError as e:
        raise ConfigError(f"failed to read config file {path!r}: {e.strerror}") from e


def parse(obj: dict[str, Any], registry: Registry = IN_TREE) -> SchedulerConfig:
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
        _plugins(profile, raw.get("plugins") or {}, f"{path}.plugins", errors, registry)
        _plugin_config(profile, raw.get("pluginConfig") or [], f"{path}.pluginConfig", errors,
                       registry)
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


def _names(entries: Any, path: str, errors: list[str], registry: Registry, *,
           weights: bool = False) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for j, entry in enumerate(entries or []):
        name = entry.get("name") if isinstance(entry, dict) else None
        if not name:
            errors.append(f"{path}[{j}].name: Required value")
            continue
        if name != "*" and name not in registry:
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


def _plugins(profile: Profile, plugins: dict[str, Any], path: str, errors: list[str],
             registry: Registry) -> None:
    multi = plugins.get("multiPoint") or {}
    disabled = {n for n, _ in _names(multi.get("disabled"), f"{path}.multiPoint.disabled",
                                     errors, registry)}
    enabled = _names(multi.get("enabled"), f"{path}.multiPoint.enabled", errors, registry,
                     weights=True)
    custom = {n: w for n, w in enabled}
    merged: list[tuple[str, int]] = []
    if "*" not in disabled:
        for name, weight in registry.default_plugins():
            if name in disabled:
                continue
            merged.append((name, custom.pop(name, weight) or weight))
    merged += [(n, w) for n, w in enabled if n in custom]
    score_weights: dict[str, int] = {}
    for point in POINTS:
        spec = plugins.get(point) or {}
        point_disabled = {n for n, _ in _names(spec.get("disabled"),
                                               f"{path}.{point}.disabled", errors, registry)}
        point_enabled = _names(spec.get("enabled"), f"{path}.{point}.enabled", errors,
                               registry, weights=point == "score")
        if point_disabled:
            profile.disabled[point] = point_disabled
        for name, weight in point_enabled:
            if point == "score" and weight:
                score_weights[name] = weight
            if name not in {n for n, _ in merged}:
                merged.append((name, weight))
            profile.enabled.setdefault(point, set()).add(name)
    profile.plugins = [(n, score_weights.get(n, w)) for n, w in merged]


def _plugin_config(profile: Profile, entries: Any, path: str, errors: list[str],
                   registry: Registry) -> None:
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
        entry = registry.get(name)
        if entry is not None and entry.args is not None:
            profile.args[name] = entry.args.parse(args, f"{p}.args", errors)
