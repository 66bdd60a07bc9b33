"""The plugins' `pluginConfig` args (upstream's types_pluginargs.go with their defaults and
validation_pluginargs.go's rules and messages), typed: `parse(raw, path, errors)` appends
every error it finds (upstream's field paths and texts) and returns the args with the
defaults filled in; `Args()` are the defaults of a plugin the configuration leaves alone.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Protocol, Self

STRATEGIES = ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")
FILTER_TIMEOUT = 10.0  # kube-scheduler's default DRA filterTimeout (seconds)

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


class PluginArgs(Protocol):
    """What a plugin's args type offers the configuration (a dataclass whose fields all
    have defaults)."""

    @classmethod
    def parse(cls, raw: dict[str, Any], path: str, errors: list[str]) -> Self: ...


def _weighted(entries: Any, path: str, errors: list[str]) -> list[tuple[str, int]] | None:
    """`[{name, weight}]` (weight 1 when unset); None when there are none."""
    if not entries:
        return None
    out = []
    for k, entry in enumerate(entries if isinstance(entries, list) else []):
        entry = entry if isinstance(entry, dict) else {}
        weight = entry.get("weight") or 1
        if not isinstance(weight, int) or isinstance(weight, bool):
            errors.append(f"{path}[{k}].weight: Invalid value: {json.dumps(weight)}: "
                          "must be an integer")
            continue
        out.append((str(entry.get("name", "")), weight))
    return out


@dataclass(frozen=True)
class NodeResourcesFitArgs:
    scoring_type: str = "LeastAllocated"
    resources: list[tuple[str, int]] | None = None  # None: cpu and memory, weight 1
    shape: list[tuple[int, int]] | None = None  # RequestedToCapacityRatio's points

    @classmethod
    def parse(cls, raw: dict[str, Any], path: str, errors: list[str]) -> Self:
        strategy = raw.get("scoringStrategy") or {}
        strategy = strategy if isinstance(strategy, dict) else {}
        kind = strategy.get("type", "LeastAllocated")
        if kind not in STRATEGIES:
            errors.append(f'{path}.scoringStrategy.type: Unsupported value: "{kind}": '
                          'supported values: "LeastAllocated", "MostAllocated", '
                          '"RequestedToCapacityRatio"')
        for k, r in enumerate(strategy.get("resources") or []):
            r = r if isinstance(r, dict) else {}
            weight = r.get("weight", 1)
            if not isinstance(weight, int) or not 1 <= weight <= 100:
                errors.append(f"{path}.scoringStrategy.resources[{k}].weight: Invalid value: "
                              f"{json.dumps(weight)}: resource weight of {r.get('name')} "
                              "should be in the range [1, 100]")
        points = None
        if kind == "RequestedToCapacityRatio":
            ratio = strategy.get("requestedToCapacityRatio") or {}
            points = _shape(ratio.get("shape") if isinstance(ratio, dict) else None,
                            f"{path}.scoringStrategy.requestedToCapacityRatio.shape", errors)
        return cls(kind if kind in STRATEGIES else "LeastAllocated",
                   _weighted(strategy.get("resources"), f"{path}.scoringStrategy.resources",
                             []), points or None)


def _shape(shape: Any, path: str, errors: list[str]) -> list[tuple[int, int]]:
    """RequestedToCapacityRatio's (utilization, score) points."""
    if not shape:
        errors.append(f"{path}: Required value: at least one point must be specified")
    points: list[tuple[int, int]] = []
    last = -1
    for k, point in enumerate(shape if isinstance(shape, list) else []):
        point = point if isinstance(point, dict) else {}
        u, s = point.get("utilization", 0), point.get("score", 0)
        if not isinstance(u, int) or not 0 <= u <= 100:
            errors.append(f"{path}[{k}].utilization: Invalid value: {u}: not in valid range "
                          "[0-100]")
        elif u <= last:
            errors.append(f"{path}[{k}].utilization: Invalid value: {u}: should be increasing")
        if isinstance(u, int):
            last = u
        if not isinstance(s, int) or not 0 <= s <= 10:
            errors.append(f"{path}[{k}].score: Invalid value: {s}: not in valid range [0-10]")
        if isinstance(u, int) and isinstance(s, int):
            points.append((u, s))
    return points


@dataclass(frozen=True)
class NodeResourcesBalancedAllocationArgs:
    resources: list[tuple[str, int]] | None = None  # None: cpu and memory

    @classmethod
    def parse(cls, raw: dict[str, Any], path: str, errors: list[str]) -> Self:
        return cls(_weighted(raw.get("resources"), f"{path}.resources", errors))


@dataclass(frozen=True)
class InterPodAffinityArgs:
    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False

    @classmethod
    def parse(cls, raw: dict[str, Any], path: str, errors: list[str]) -> Self:
        weight = raw.get("hardPodAffinityWeight", 1)
        if not isinstance(weight, int) or isinstance(weight, bool) or not 0 <= weight <= 100:
            errors.append(f"{path}.hardPodAffinityWeight: Invalid value: "
                          f"{json.dumps(weight)}: not in valid range [0-100]")
            weight = 1
        return cls(weight, bool(raw.get("ignorePreferredTermsOfExistingPods")))


@dataclass(frozen=True)
class PodTopologySpreadArgs:
    # None: the system defaults (defaultingType System); else the List's constraints.
    default_constraints: list[dict] | None = None

    @classmethod
    def parse(cls, raw: dict[str, Any], path: str, errors: list[str]) -> Self:
        kind = raw.get("defaultingType", "System")
        if kind not in ("System", "List"):
            errors.append(f'{path}.defaultingType: Unsupported value: "{kind}": supported '
                          'values: "System", "List"')
        constraints = raw.get("defaultConstraints") or []
        if kind == "System" and constraints:
            errors.append(f"{path}.defaultingType: Invalid value: \"System\": when providing "
                          "defaultConstraints, defaultingType should be List")
        for k, c in enumerate(constraints if isinstance(constraints, list) else []):
            c = c if isinstance(c, dict) else {}
            if c.get("labelSelector") is not None:
                errors.append(f"{path}.defaultConstraints[{k}].labelSelector: Forbidden: "
                              "constraint must not define a selector, as they deduced for "
                              "each pod")
            skew = c.get("maxSkew")
            if not isinstance(skew, int) or isinstance(skew, bool) or skew <= 0:
                errors.append(f"{path}.defaultConstraints[{k}].maxSkew: Invalid value: "
                              f"{json.dumps(skew)}: not in valid range (0, inf)")
        return cls(list(constraints) if kind == "List" else None)


@dataclass(frozen=True)
class DynamicResourcesArgs:
    # Seconds the allocator may spend on one node (gate DRASchedulerFilterTimeout);
    # 0 disables the limit.
    filter_timeout: float = FILTER_TIMEOUT

    @classmethod
    def parse(cls, raw: dict[str, Any], path: str, errors: list[str]) -> Self:
        value = raw.get("filterTimeout")
        if value is None:
            return cls()
        try:
            seconds = parse_duration(value)
        except ValueError:
            errors.append(f'{path}.filterTimeout: Invalid value: "{value}": time: invalid '
                          f'duration "{value}"')
            return cls()
        if seconds < 0:
            errors.append(f'{path}.filterTimeout: Invalid value: "{value}": must be zero or '
                          "positive duration")
            return cls()
        return cls(seconds)
