"""Property tests: random inventories, claims and gates; every allocation the allocator
returns must respect selectors, exclusivity, capacities, counters, constraints, taints
and counts — and it must find one whenever one plainly exists."""

from __future__ import annotations

from collections import Counter, defaultdict
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draemu.api.quantity import Quantity
from draemu.cel import compile_expression
from draemu.scheduler.dra import Allocator, Inventory
from draemu.scheduler.dra.features import Features

pytestmark = [pytest.mark.slow, pytest.mark.unit]

NODE = {"metadata": {"name": "n1", "labels": {"zone": "z1"}}}
DRIVERS = ("d1.example.com", "d2.example.com")
MODELS = ("a", "b", "c")
TAINT = {"key": "broken", "value": "yes", "effect": "NoSchedule"}
TOLERATION = {"key": "broken", "operator": "Exists"}
COUNTER_SET = "cs"


@st.composite
def devices(draw: st.DrawFn, multi_ok: bool) -> list[dict[str, Any]]:
    out = []
    for i in range(draw(st.integers(0, 4))):
        d: dict[str, Any] = {
            "name": f"dev-{i}",
            "attributes": {"numa": {"int": draw(st.integers(0, 2))},
                           "model": {"string": draw(st.sampled_from(MODELS))}},
            "capacity": {"memory": {"value": str(draw(st.integers(1, 4)))}},
        }
        if multi_ok and draw(st.booleans()):
            d["allowMultipleAllocations"] = True
        if draw(st.integers(0, 4)) == 0:
            d["taints"] = [TAINT]
        if draw(st.booleans()):
            d["consumesCounters"] = [{"counterSet": COUNTER_SET, "counters": {
                "units": {"value": str(draw(st.integers(1, 3)))}}}]
        out.append(d)
    return out


@st.composite
def slices(draw: st.DrawFn) -> list[dict[str, Any]]:
    out = []
    for driver in DRIVERS:
        for p in range(draw(st.integers(0, 2))):
            pool = f"pool-{p}"
            devs = draw(devices(multi_ok=True))
            with_counters = any("consumesCounters" in d for d in devs)
            count = 2 if with_counters else 1
            out.append({"metadata": {"name": f"{driver}-{pool}"}, "spec": {
                "driver": driver, "nodeName": "n1",
                "pool": {"name": pool, "generation": 1, "resourceSliceCount": count},
                "devices": devs}})
            if with_counters:
                out.append({"metadata": {"name": f"{driver}-{pool}-counters"}, "spec": {
                    "driver": driver, "nodeName": "n1",
                    "pool": {"name": pool, "generation": 1, "resourceSliceCount": count},
                    "sharedCounters": [{"name": COUNTER_SET, "counters": {
                        "units": {"value": str(draw(st.integers(1, 5)))}}}]}})
    return out


@st.composite
def exact(draw: st.DrawFn, simple: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {"deviceClassName": draw(st.sampled_from(DRIVERS)),
                            "count": draw(st.integers(1, 2))}
    if draw(st.booleans()):
        model = draw(st.sampled_from(MODELS))
        spec["selectors"] = [{"cel": {"expression":
                                      f'device.attributes["{spec["deviceClassName"]}"]'
                                      f'.model == "{model}"'}}]
    if not simple:
        if draw(st.integers(0, 3)) == 0:
            spec["tolerations"] = [TOLERATION]
        if draw(st.integers(0, 3)) == 0:
            spec["capacity"] = {"requests": {"memory": str(draw(st.integers(1, 2)))}}
        if draw(st.integers(0, 6)) == 0:
            spec["adminAccess"] = True
    return spec


@st.composite
def claims(draw: st.DrawFn, simple: bool = False) -> list[dict[str, Any]]:
    out = []
    for c in range(draw(st.integers(1, 3))):
        requests = []
        for r in range(draw(st.integers(1, 2))):
            if not simple and draw(st.integers(0, 3)) == 0:
                requests.append({"name": f"r{r}", "firstAvailable": [
                    {"name": f"s{s}", **draw(exact(simple))} for s in range(2)]})
            else:
                requests.append({"name": f"r{r}", "exactly": draw(exact(simple))})
        constraints = []
        if not simple and draw(st.booleans()):
            kind = draw(st.sampled_from(["matchAttribute", "distinctAttribute"]))
            constraints.append({kind: f"{draw(st.sampled_from(DRIVERS))}/numa"})
        out.append({"metadata": {"name": f"c{c}", "namespace": "ns"},
                    "spec": {"devices": {"requests": requests, "constraints": constraints}}})
    return out


def inventory(features: Features, slice_objs: list[dict[str, Any]],
              allocated: list[tuple[str, str, str]]) -> Inventory:
    inv = Inventory()
    inv.features = features
    for driver in DRIVERS:
        inv.set_class({"metadata": {"name": driver}, "spec": {"selectors": [
            {"cel": {"expression": f'device.driver == "{driver}"'}}]}})
    for s in slice_objs:
        inv.set_slice(s)
    if allocated:
        inv.set_claim({"metadata": {"name": "old", "namespace": "ns"}, "status": {
            "allocation": {"devices": {"results": [
                {"request": "r", "driver": d, "pool": p, "device": n}
                for d, p, n in allocated]}}}})
    return inv


def _devices_by_id(slice_objs: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict]:
    return {(s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"]): d
            for s in slice_objs for d in s["spec"].get("devices") or []}


def _spec_of(claim: dict[str, Any], request: str) -> dict[str, Any]:
    name, _, sub = request.partition("/")
    for r in claim["spec"]["devices"]["requests"]:
        if r["name"] == name:
            if sub:
                return next(s for s in r["firstAvailable"] if s["name"] == sub)
            return r["exactly"]
    raise AssertionError(f"result for unknown request {request}")


def _q(v: Any) -> Fraction:
    return Quantity.parse(str(v)).value


def check_invariants(features: Features, slice_objs: list[dict[str, Any]],
                     allocated: list[tuple[str, str, str]], claim_objs: list[dict[str, Any]],
                     results: list[dict[str, Any]]) -> None:
    by_id = _devices_by_id(slice_objs)
    exclusive = Counter(allocated)
    consumed: dict[tuple, Fraction] = defaultdict(Fraction)
    counted: set[tuple] = set(allocated)
    for claim, allocation in zip(claim_objs, results, strict=True):
        per_request: Counter[str] = Counter()
        chosen_numa: list[tuple[str, int]] = []
        for r in allocation["devices"]["results"]:
            device_id = (r["driver"], r["pool"], r["device"])
            device = by_id[device_id]
            spec = _spec_of(claim, r["request"])
            per_request[r["request"]] += 1
            view = {**device, "driver": r["driver"]}
            for sel in spec.get("selectors") or []:
                assert compile_expression(sel["cel"]["expression"]).evaluate(view)
            assert r["driver"] == spec["deviceClassName"]  # the class selects the driver
            multi = features.consumable_capacity and device.get("allowMultipleAllocations")
            if r.get("adminAccess"):
                assert spec.get("adminAccess")
            elif r.get("shareID"):
                assert multi
                for name, amount in (r.get("consumedCapacity") or {}).items():
                    consumed[(device_id, name)] += _q(amount)
            else:
                exclusive[device_id] += 1
            if features.device_taints and device.get("taints"):
                assert spec.get("tolerations"), f"{device_id} is tainted"
            if not r.get("adminAccess"):
                counted.add(device_id)
            chosen_numa.append((r["request"], device["attributes"]["numa"]["int"]))
        for request, n in per_request.items():
            assert n == _spec_of(claim, request)["count"]
        for constraint in claim["spec"]["devices"]["constraints"]:
            driver = next(iter(constraint.values())).split("/")[0]
            values = [v for (req, v), r in zip(chosen_numa, allocation["devices"]["results"],
                                               strict=True) if r["driver"] == driver]
            if "matchAttribute" in constraint:
                assert len(set(values)) <= 1
            elif "distinctAttribute" in constraint:
                assert len(set(values)) == len(values)
    for device_id, n in exclusive.items():
        assert n == 1, f"{device_id} allocated {n} times"
    for (device_id, name), amount in consumed.items():
        assert amount <= _q(by_id[device_id]["capacity"][name]["value"])
        assert device_id not in exclusive
    if features.partitionable_devices:
        for s in slice_objs:
            pool_id = (s["spec"]["driver"], s["spec"]["pool"]["name"])
            for cs in s["spec"].get("sharedCounters") or []:
                def units(ids: set[tuple]) -> Fraction:
                    return sum((_q(c["counters"]["units"]["value"]) for d in ids
                                if d[:2] == pool_id  # noqa: B023
                                for c in by_id[d].get("consumesCounters") or []), Fraction(0))
                new = units(counted - set(allocated))
                # Earlier allocations may already exceed the set; then nothing new may draw.
                assert new == 0 or units(counted) <= _q(cs["counters"]["units"]["value"])


FEATURES = st.builds(Features, admin_access=st.booleans(), prioritized_list=st.just(True),
                     partitionable_devices=st.booleans(), device_taints=st.booleans(),
                     consumable_capacity=st.booleans(), list_type_attributes=st.booleans())


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(features=FEATURES, slice_objs=slices(), claim_objs=claims(), data=st.data())
def test_every_allocation_respects_the_rules(features: Features, slice_objs: list,
                                             claim_objs: list, data: st.DataObject) -> None:
    ids = sorted(_devices_by_id(slice_objs))
    allocated = data.draw(st.lists(st.sampled_from(ids), unique=True, max_size=2)) if ids else []
    inv = inventory(features, slice_objs, allocated)
    outcome = Allocator(inv).allocate(NODE, claim_objs)
    report = outcome.explanation
    assert report.text().startswith(("✅", "❌"))
    if outcome.results is None:
        assert outcome.unsatisfiable or outcome.error
        assert outcome.summary
        return
    for request in report.requests:
        assert all(any(d.device == c and d.reason == "chosen" for d in request.devices)
                   for c in request.chosen)
    check_invariants(features, slice_objs, allocated, claim_objs, outcome.results)
    again = Allocator(inv).allocate(NODE, claim_objs)
    strip = [[{k: v for k, v in r.items() if k != "shareID"} for r in a["devices"]["results"]]
             for a in outcome.results]
    assert strip == [[{k: v for k, v in r.items() if k != "shareID"}
                      for r in a["devices"]["results"]] for a in again.results or []]


def _matching_exists(slots: list[set[tuple]]) -> bool:
    """Can every slot get its own device? (augmenting paths)"""
    owner: dict[tuple, int] = {}

    def place(i: int, seen: set[tuple]) -> bool:
        for d in slots[i]:
            if d in seen:
                continue
            seen.add(d)
            if d not in owner or place(owner[d], seen):
                owner[d] = i
                return True
        return False

    return all(place(i, set()) for i in range(len(slots)))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(slice_objs=slices(), claim_objs=claims(simple=True))
def test_finds_an_allocation_whenever_one_exists(slice_objs: list, claim_objs: list) -> None:
    # Plain exclusive devices, no counters, taints or constraints: a bipartite matching.
    for s in slice_objs:
        for d in s["spec"].get("devices") or []:
            for key in ("allowMultipleAllocations", "taints", "consumesCounters"):
                d.pop(key, None)
    features = Features(partitionable_devices=False)
    inv = inventory(features, slice_objs, [])
    by_id = _devices_by_id(slice_objs)
    slots = []
    for claim in claim_objs:
        for r in claim["spec"]["devices"]["requests"]:
            spec = r["exactly"]
            fits = {d for d, dev in by_id.items() if d[0] == spec["deviceClassName"] and all(
                compile_expression(s["cel"]["expression"]).evaluate({**dev, "driver": d[0]})
                for s in spec.get("selectors") or [])}
            slots += [fits] * spec["count"]
    outcome = Allocator(inv).allocate(NODE, claim_objs)
    assert (outcome.results is not None) == _matching_exists(slots), outcome.summary
