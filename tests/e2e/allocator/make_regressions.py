"""Writes tests/e2e/allocator/regressions/*.json: each divergence the differential test
found between draemu's allocator and upstream's, as a small case (reduced by hand from
the generated one) with a note and upstream's answer, asked of allocoracle.

Run (after tests/e2e/go/build.sh): .venv/bin/python tests/e2e/allocator/make_regressions.py
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from allocdiff_compare import deterministic, draemu_decide, invalid, normal
from allocdiff_gen import node, resolved
from allocdiff_oracle import GO_CACHE, Oracle

from draemu.features import FeatureGates

HERE = Path(__file__).parent
GPU, NIC = "gpu.example.com", "nic.example.com"
STABLE = {"DRAConsumableCapacity": False, "DRADeviceBindingConditions": False}


def api(kind: str, name: str, spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": kind,
            "metadata": {"name": name, **meta}, "spec": spec}


def device_class(name: str, driver: str | None = None) -> dict[str, Any]:
    spec = {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]} \
        if driver else {}
    return api("DeviceClass", name, spec)


def slice_(name: str, driver: str, pool: str, devices: list[dict[str, Any]] | None = None,
           count: int = 1, generation: int = 1, counters: list[dict[str, Any]] | None = None,
           **selection: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"driver": driver, "pool": {"name": pool, "generation": generation,
                                                       "resourceSliceCount": count}}
    spec.update(selection or {"nodeName": "node-a"})
    if counters is not None:
        spec["sharedCounters"] = counters
    else:
        spec["devices"] = devices or []
    return api("ResourceSlice", name, spec)


def exact(cls: str, count: int | None = 1, **extra: Any) -> dict[str, Any]:
    r: dict[str, Any] = {"deviceClassName": cls,
                         "allocationMode": "ExactCount" if count else "All", **extra}
    if count:
        r["count"] = count
    return r


def claim(name: str, requests: list[dict[str, Any]], **devices: Any) -> dict[str, Any]:
    return api("ResourceClaim", name, {"devices": {"requests": requests, **devices}},
               namespace="default", uid=f"uid-{name}")


def allocated(name: str, results: list[dict[str, Any]]) -> dict[str, Any]:
    c = claim(name, [{"name": r["request"], "exactly": exact("any")} for r in results])
    c["status"] = {"allocation": {"devices": {"results": results}}}
    return c


def attrs(**values: Any) -> dict[str, Any]:
    kinds = {bool: "bool", int: "int", str: "string"}
    return {k: {kinds[type(v)]: v} for k, v in values.items()}


def case(note: str, *, claims: list[dict[str, Any]], slices: list[dict[str, Any]],
         classes: list[dict[str, Any]] | None = None, taken: list[dict[str, Any]] = (),
         overrides: dict[str, bool] | None = None) -> dict[str, Any]:
    overrides = overrides or {}
    return {"note": note, "case": {
        "version": "1.37", "overrides": overrides,
        "gates": resolved(FeatureGates(overrides)),
        "classes": classes or [device_class("gpu", GPU), device_class("nic", NIC),
                               device_class("any")],
        "slices": slices, "allocated": list(taken), "claims": claims, "node": node()}}


def cores(value: str, policy: dict[str, Any]) -> dict[str, Any]:
    return {"name": "d0", "allowMultipleAllocations": True,
            "capacity": {"cores": {"value": value, "requestPolicy": policy}}}


def share_request(cores_wanted: str) -> list[dict[str, Any]]:
    return [claim("claim-0", [{"name": "r", "exactly": exact(
        "any", capacity={"requests": {"cores": cores_wanted}})}])]


RANGE = {"default": "100m", "validRange": {"min": "100m", "step": "250m"}}

CASES: dict[str, dict[str, Any]] = {
    "stable-tier-ignores-capacity-requests": case(
        "With every beta DRA gate off upstream runs its stable allocator, which does not "
        "know capacity requests and allocates as if there were none; only the incubating "
        "and experimental ones refuse them while DRAConsumableCapacity is off.",
        overrides=STABLE, slices=[slice_("s", GPU, "p", [{"name": "d0"}])],
        claims=[claim("claim-0", [{"name": "r", "exactly": exact(
            "gpu", capacity={"requests": {"memory": "1Gi"}})}])]),
    "stable-tier-has-no-distinct-attribute": case(
        "The stable allocator has no distinctAttribute constraint: it is an empty "
        "constraint to it (an error for the scheduling attempt).",
        overrides=STABLE, slices=[slice_("s", GPU, "p", [{"name": "d0"}])],
        claims=[claim("claim-0", [{"name": "r", "exactly": exact("gpu")}],
                      constraints=[{"distinctAttribute": f"{GPU}/model"}])]),
    "stable-tier-sees-counter-slices-of-other-nodes": case(
        "The stable allocator takes every slice with shared counters into its pools, "
        "whatever node it targets, so an incomplete pool whose only slice here is another "
        "node's counter slice still makes an All request fail.",
        overrides=STABLE, slices=[
            slice_("a", GPU, "p", [{"name": "d0"}]),
            slice_("n-1", NIC, "q", count=3, nodeName="node-b",
                   counters=[{"name": "cs", "counters": {"slots": {"value": "1"}}}])],
        claims=[claim("claim-0", [{"name": "r", "exactly": exact("any", None)}])]),
    "selector-error-on-a-device-the-search-could-skip": case(
        "Two devices are needed and the last device is the second candidate: draemu's search "
        "never tried it as the first, but upstream does, and its selector fails there.",
        slices=[slice_("s", NIC, "p", [{"name": "d0", "attributes": attrs(index=1)},
                                       {"name": "d1"}])],
        claims=[claim("claim-0", [{"name": "r", "exactly": exact("nic", 2, selectors=[
            {"cel": {"expression": f'device.attributes["{NIC}"].index > 1'}}])}])]),
    "selector-error-behind-a-hopeless-request": case(
        "The second request cannot be met, but upstream only learns that by searching, and "
        "while backtracking it evaluates the first request's second subrequest, whose "
        "selector fails: an error, not unsatisfiable.",
        slices=[slice_("s", NIC, "p", [{"name": "d0", "attributes": attrs(index=1)},
                                       {"name": "d1"}])],
        claims=[claim("claim-0", [
            {"name": "r0", "firstAvailable": [
                {"name": "s0", **exact("nic")},
                {"name": "s1", **exact("nic", selectors=[
                    {"cel": {"expression": f'device.attributes["{NIC}"].index > 1'}}])}]},
            {"name": "r1", "exactly": exact("gpu")}])]),
    "requests-fail-in-order": case(
        "An All request whose pool is incomplete fails before a later request's missing "
        "class does: upstream prepares requests one after the other.",
        slices=[slice_("s", GPU, "p", [{"name": "d0"}], count=2)],
        claims=[claim("claim-0", [{"name": "r0", "exactly": exact("gpu", None)},
                                  {"name": "r1", "exactly": exact("missing")}])]),
    "subrequest-named-alone-in-all-errors": case(
        "Upstream names a subrequest by its own name when its All request fails.",
        slices=[slice_("s", GPU, "p", [{"name": "d0"}], count=2)],
        claims=[claim("claim-0", [{"name": "r0", "firstAvailable": [
            {"name": "s0", **exact("gpu", None)}]}])]),
    "cel-or-reports-the-left-error": case(
        "When both sides of || fail, cel-go reports the left side's error.",
        slices=[slice_("s", NIC, "p", [{"name": "d0"}])],
        claims=[claim("claim-0", [{"name": "r", "exactly": exact("nic", selectors=[
            {"cel": {"expression": f'device.attributes["{NIC}"].index > 1 || '
                                   f'device.attributes["{NIC}"].model == "t4"'}}])}])]),
    "all-counts-devices-whose-capacity-is-taken": case(
        "An All request counts a device whose capacity would fit when free, even while "
        "shares consume it; taking it then fails, so the request fails (v0.37.2).",
        slices=[slice_("s", GPU, "p", [
            {"name": f"d{i}", "allowMultipleAllocations": True,
             "capacity": {"memory": {"value": "8Gi"}}} for i in range(2)])],
        taken=[allocated("old", [{"request": "r", "driver": GPU, "pool": "p", "device": "d0",
                                  "shareID": "00000000-0000-4000-8000-000000000001",
                                  "consumedCapacity": {"memory": "8Gi"}}])],
        claims=[claim("claim-0", [{"name": "r", "exactly": exact(
            "gpu", None, capacity={"requests": {"memory": "1Gi"}})}])]),
    "all-request-checks-constraints-before-capacity": case(
        "A device of an All request is checked against the claim's constraints before its "
        "capacity: the share the first request took leaves no memory, but the "
        "distinctAttribute clash is found first, which is an error for an All request.",
        slices=[slice_("s", GPU, "p", [{"name": "d0", "allowMultipleAllocations": True,
                                        "attributes": attrs(model="h100"),
                                        "capacity": {"memory": {"value": "8Gi"}}}])],
        claims=[claim("claim-0", [{"name": "r0", "exactly": exact("gpu")},
                                  {"name": "r1", "exactly": exact("gpu", None)}],
                      constraints=[{"distinctAttribute": f"{GPU}/model"}])]),
    "incomplete-pool-with-binding-conditions-keeps-its-place": case(
        "Only complete, valid pools with binding conditions go last: an incomplete one "
        "stays in name order, so an All request reports it first.",
        slices=[slice_("a", GPU, "a", [{"name": "d0", "bindingConditions": ["ok"],
                                        "bindingFailureConditions": ["bad"]}], count=2),
                slice_("b", GPU, "b", [{"name": "d0"}], count=2)],
        claims=[claim("claim-0", [{"name": "r", "exactly": exact("gpu", None)}])]),
    "invalid-pool-with-binding-conditions-keeps-its-place": case(
        "An invalid pool is described without its slices upstream, so it does not go last "
        "for its binding conditions: an All request reports it before a later pool.",
        slices=[slice_("a", GPU, "a", [{"name": "d0", "bindingConditions": ["ok"],
                                        "bindingFailureConditions": ["bad"]},
                                       {"name": "d1", "consumesCounters": [
                                           {"counterSet": "none",
                                            "counters": {"c": {"value": "1"}}}]}]),
                slice_("b", GPU, "b", [{"name": "d0"}], count=2)],
        claims=[claim("claim-0", [{"name": "r", "exactly": exact("gpu", None)}])]),
    "overdrawn-counter-refuses-every-consumer": case(
        "Allocated devices overdraw counter slots (-1 left): upstream then refuses any "
        "device of the pool that consumes counters, even one that needs only memory.",
        slices=[slice_("d", GPU, "p", [
            {"name": "d0", "consumesCounters": [{"counterSet": "cs", "counters": {
                "slots": {"value": "2"}}}]},
            {"name": "d1", "consumesCounters": [{"counterSet": "cs", "counters": {
                "memory": {"value": "1Gi"}}}]}], count=2),
            slice_("e", GPU, "p", count=2, counters=[{"name": "cs", "counters": {
                "slots": {"value": "1"}, "memory": {"value": "4Gi"}}}])],
        taken=[allocated("old", [{"request": "r", "driver": GPU, "pool": "p",
                                  "device": "d0"}])],
        claims=[claim("claim-0", [{"name": "r", "exactly": exact("gpu")}])]),
    "capacity-step-in-whole-units-without-fractional-gate": case(
        "Without DRAFractionalCapacityRange a range's step rounds in whole units: 500m "
        "with min 100m and step 250m consumes 1 core, not 600m.",
        slices=[slice_("s", GPU, "p", [cores("8", RANGE)])], claims=share_request("500m")),
    "capacity-step-in-milli-units-with-fractional-gate": case(
        "With DRAFractionalCapacityRange the same request consumes 600m.",
        overrides={"DRAFractionalCapacityRange": True},
        slices=[slice_("s", GPU, "p", [cores("8", RANGE)])], claims=share_request("500m")),
    "capacity-request-not-in-milli-units": case(
        "In milli-unit arithmetic a request of 1000500u (1.0005) cannot be represented: an error.",
        overrides={"DRAFractionalCapacityRange": True},
        slices=[slice_("s", GPU, "p", [cores("8", RANGE)])], claims=share_request("1000500u")),
    "consumed-capacity-keeps-the-request-format": case(
        "A share consumes what was asked (no policy) and upstream writes it as it was "
        "asked: 5G stays decimal on a capacity of 16Gi.",
        slices=[slice_("s", GPU, "p", [{"name": "d0", "allowMultipleAllocations": True,
                                        "capacity": {"memory": {"value": "16Gi"}}}])],
        claims=[claim("claim-0", [{"name": "r", "exactly": exact(
            "any", capacity={"requests": {"memory": "5G"}})}])]),
    "claim-limit-is-checked-per-request": case(
        "The claim's limit of 32 devices is checked request by request, with upstream's "
        "message.",
        slices=[slice_("s", GPU, "p", [{"name": "d0"}])],
        claims=[claim("claim-0", [{"name": "r0", "exactly": exact("gpu", 20)},
                                  {"name": "r1", "exactly": exact("gpu", 13)}])]),
}


def main() -> None:
    oracle = Oracle(Path(os.environ.get("ALLOCORACLE") or GO_CACHE / "bin" / "allocoracle"))
    out = HERE / "regressions"
    out.mkdir(exist_ok=True)
    for name, entry in CASES.items():
        c = entry["case"]
        problems = invalid(c)
        if problems:
            raise SystemExit(f"{name}: not a valid input: {problems}")
        answer = oracle.decide(c, runs=3)
        if not deterministic(c, answer):
            raise SystemExit(f"{name}: upstream's answer is not deterministic: {answer}")
        entry["upstream"] = normal(answer)
        mine = normal(draemu_decide(c))
        same = "same" if mine == entry["upstream"] else "DIFFERENT"
        print(f"{name}: {answer.get('tier')} {answer['status']} {answer.get('error', '')} "
              f"(draemu: {same})")
        (out / f"{name}.json").write_text(json.dumps(entry, indent=1) + "\n")
    oracle.close()


if __name__ == "__main__":
    main()
