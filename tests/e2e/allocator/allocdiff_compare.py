"""draemu's decision on a case, upstream's and draemu's put in one comparable shape, and
what differs.

Compared: the status (Allocated; Unsatisfiable: no solution; NodeError: the node is
unsuitable, e.g. invalid pools; Error: fatal for the scheduling attempt), and for an
allocation, per claim and in order: each result's request, driver, pool, device, admin
access, tolerations, binding conditions, whether it is a share and its consumed
capacity; the configuration; the node selector. Share IDs are random on both sides: only
their presence counts. Where upstream's choice of devices is not a function of the input
(its stable tier visits pools in Go map order), only the status is compared.
"""

from __future__ import annotations

from typing import Any

from draemu.apiserver.registry.resource.strategies import (
    DeviceClassStrategy,
    ResourceClaimStrategy,
    ResourceSliceStrategy,
)
from draemu.apiserver.registry.strategy import Context
from draemu.features import FeatureGates
from draemu.scheduler.dra import Allocator, Inventory

STRATEGIES = {"DeviceClass": DeviceClassStrategy(), "ResourceSlice": ResourceSliceStrategy(),
              "ResourceClaim": ResourceClaimStrategy()}


def all_on(version: str) -> FeatureGates:
    """Every allocator gate the release has, on: objects written while they were."""
    from allocdiff_gen import ALLOCATOR_GATES

    from draemu.features import known

    table = known(version)
    overrides = {name: True for name in ALLOCATOR_GATES
                 if name in table and table[name].stage and not table[name].locked}
    overrides["NodeDeclaredFeatures"] = True
    return FeatureGates(overrides, version)


def invalid(case: dict[str, Any]) -> list[str]:
    """What an apiserver of the release (every DRA gate on) would refuse in the case."""
    ctx = Context(gates=all_on(case["version"]))
    problems = []
    for group in ("classes", "slices", "claims", "allocated"):
        for o in case[group]:
            errors = STRATEGIES[o["kind"]].validate(o, ctx)
            problems += [f"{o['kind']} {o['metadata']['name']}: {e}" for e in errors]
    return problems


def draemu_decide(case: dict[str, Any]) -> dict[str, Any]:
    gates = FeatureGates(case.get("overrides") or {}, case["version"])
    inv = Inventory(gates)
    for c in case["classes"]:
        inv.set_class(c)
    for s in case["slices"]:
        inv.set_slice(s)
    for c in case["allocated"]:
        inv.set_claim(c)
    outcome = Allocator(inv).allocate(case["node"], case["claims"])
    if outcome.results is not None:
        return {"status": "Allocated", "results": outcome.results}
    if outcome.error is None:
        return {"status": "Unsatisfiable"}
    return {"status": "NodeError" if outcome.unsatisfiable else "Error",
            "error": outcome.error}


def normal_result(allocation: dict[str, Any]) -> dict[str, Any]:
    devices = allocation.get("devices") or {}
    results = []
    for r in devices.get("results") or []:
        n: dict[str, Any] = {k: r[k] for k in ("request", "driver", "pool", "device")}
        for k in ("adminAccess", "tolerations", "bindingConditions",
                  "bindingFailureConditions"):
            if r.get(k):
                n[k] = r[k]
        if r.get("shareID"):
            n["share"] = True
        if r.get("consumedCapacity"):
            # As written (Go writes a quantity in its canonical form, in its format).
            n["consumedCapacity"] = dict(r["consumedCapacity"])
        results.append(n)
    out: dict[str, Any] = {"results": results}
    if devices.get("config"):
        out["config"] = devices["config"]
    if allocation.get("nodeSelector"):
        out["nodeSelector"] = allocation["nodeSelector"]
    return out


def normal(decision: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"status": decision["status"]}
    if decision["status"] == "Allocated":
        out["results"] = [normal_result(r) for r in decision["results"]]
    elif decision.get("error"):
        out["error"] = decision["error"]
    return out


def pools(case: dict[str, Any]) -> int:
    return len({(s["spec"]["driver"], s["spec"]["pool"]["name"]) for s in case["slices"]
                if s["spec"].get("devices")})


def deterministic(case: dict[str, Any], upstream: dict[str, Any]) -> bool:
    """Whether upstream's devices (and error text) are a function of the input."""
    if upstream.get("variants"):
        return False
    return not (upstream.get("tier") == "stable" and pools(case) > 1)


def differences(case: dict[str, Any], upstream: dict[str, Any],
                mine: dict[str, Any]) -> list[str]:
    """What differs (empty: the same decision)."""
    theirs, ours = normal(upstream), normal(mine)
    if theirs["status"] != ours["status"]:
        return [f"status: upstream {theirs['status']} ({theirs.get('error', '')}), "
                f"draemu {ours['status']} ({ours.get('error', '')})"]
    if not deterministic(case, upstream):
        return []
    out = []
    if theirs["status"] == "Allocated":
        for i, (a, b) in enumerate(zip(theirs["results"], ours["results"], strict=True)):
            for key in sorted(set(a) | set(b)):
                if a.get(key) != b.get(key):
                    out.append(f"claim {i} {key}: upstream {a.get(key)}, draemu {b.get(key)}")
    return out


def message_differs(upstream: dict[str, Any], mine: dict[str, Any]) -> bool:
    return upstream["status"] in ("Error", "NodeError") and \
        upstream.get("error") != mine.get("error")
