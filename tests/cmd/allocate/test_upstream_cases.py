"""Upstream's allocator scenarios (transcribed into cases/upstream-*.yaml) through
`draemu allocate`'s code path: manifests → conversion and validation → allocator."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from draemu.cmd.explain import offline
from draemu.features import FeatureGates
from draemu.scheduler.dra.features import Features

pytestmark = pytest.mark.unit

CASES = sorted((Path(__file__).parent / "cases").glob("upstream-*.yaml"))

# Upstream's allocator feature flags; a case turns on exactly the ones it lists.
_FLAGS = {"AdminAccess": "admin_access", "PrioritizedList": "prioritized_list",
          "PartitionableDevices": "partitionable_devices", "DeviceTaints": "device_taints",
          "DeviceBindingAndStatus": "binding_conditions",
          "ConsumableCapacity": "consumable_capacity", "ListTypeAttributes": "list_type_attributes",
          "DerivedAttributes": "derived_attributes", "CompatibilityGroups": "compatibility_groups",
          "OptionalNodeOperations": "optional_node_operations"}


def features_of(names: list[str]) -> Features:
    flags = {field: False for field in _FLAGS.values()}
    flags["device_taint_rules"] = False
    for name in names:
        flags[_FLAGS[name]] = True
    return Features(**flags)


def _normal_selector(selector: dict[str, Any] | None) -> Any:
    if selector is None:
        return None
    terms = []
    for term in selector.get("nodeSelectorTerms") or []:
        terms.append({k: sorted((r["key"], r["operator"], tuple(sorted(r.get("values") or [])))
                                for r in term.get(k) or [])
                      for k in ("matchExpressions", "matchFields")})
    return sorted(terms, key=repr)


def _normal_result(r: dict[str, Any]) -> tuple:
    share = r.get("shareID")
    if share is not None:
        uuid.UUID(share)  # a real UUID, whatever its value
    return (r["request"], r["driver"], r["pool"], r["device"], bool(r.get("adminAccess")),
            repr(r.get("tolerations")), repr(r.get("bindingConditions")),
            repr(r.get("bindingFailureConditions")), share is not None,
            repr(sorted((r.get("consumedCapacity") or {}).items())),
            repr(r.get("skipNodeOperations")))


def normal(allocation: dict[str, Any]) -> dict[str, Any]:
    devices = allocation.get("devices") or {}
    return {"results": sorted(_normal_result(r) for r in devices.get("results") or []),
            "config": devices.get("config"),
            "nodeSelector": _normal_selector(allocation.get("nodeSelector"))}


@pytest.mark.parametrize("path", CASES, ids=[p.stem.removeprefix("upstream-") for p in CASES])
def test_upstream_scenario(path: Path) -> None:
    spec = yaml.safe_load(path.read_text())
    outcome, claims, _ = offline.run(spec["input"]["items"], spec["node"], {}, FeatureGates(),
                                     validate=False, features=features_of(spec["features"]))
    report = offline.report(outcome, claims)
    expect = spec["expect"]
    assert report["outcome"] == expect["outcome"], report.get("error") or report["explanation"]
    if expect["outcome"] == "Error":
        assert expect["error"] in report["error"]
    elif expect["outcome"] == "Allocated":
        got = [normal(c["allocation"]) for c in report["claims"]]
        assert got == [normal(a) for a in expect["allocations"]]
