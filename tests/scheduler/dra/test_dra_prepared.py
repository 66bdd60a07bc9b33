"""One Allocator for many nodes (as the scheduler uses it: one per scheduling cycle): the
claims are prepared once and shared by every node's search, and nodes whose devices are
all in use are answered without a search. Both must give exactly the answers of a fresh
allocator running the whole search, for every node, in any order."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draemu.features import FeatureGates
from draemu.scheduler.dra import Allocator, Inventory
from draemu.scheduler.dra.allocator import _Search
from draemu.scheduler.dra.features import Features

pytestmark = pytest.mark.unit

DRIVER = "gpu.example.com"
NODES = [{"metadata": {"name": f"n{i}", "labels": {"zone": f"z{i % 2}"}}} for i in range(3)]
GPU_CLASS = {"metadata": {"name": "gpu"}, "spec": {"selectors": [
    {"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}


def node_slice(node: str, devices: list[dict[str, Any]]) -> dict[str, Any]:
    return {"metadata": {"name": f"{node}-slice"}, "spec": {
        "driver": DRIVER, "nodeName": node,
        "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
        "devices": devices}}


def claim(name: str, *requests: dict[str, Any], constraints: list | None = None
          ) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": {"devices": devices}}


def exactly(name: str, **spec: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": "gpu", **spec}}


def allocated(name: str, node: str, *devices: str) -> dict[str, Any]:
    obj = claim(name, exactly("r"))
    obj["status"] = {"allocation": {"devices": {"results": [
        {"request": "r", "driver": DRIVER, "pool": node, "device": d} for d in devices]}}}
    return obj


def answer(outcome: Any) -> tuple:
    """Everything an outcome says, share IDs (fresh each time) left out."""
    results = [[{k: v for k, v in r.items() if k != "shareID"}
                for r in a["devices"]["results"]] for a in outcome.results or []]
    return (outcome.status, outcome.unsatisfiable, outcome.error, outcome.timed_out, results,
            outcome.summary, outcome.explanation.to_dict())


def no_shortcut(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Allocator, "_hopeless", lambda self, node, claims: None)
    monkeypatch.setattr(_Search, "first_request_hopeless", lambda self: False)


@pytest.fixture
def inv() -> Inventory:
    inventory = Inventory(FeatureGates())
    inventory.set_class(GPU_CLASS)
    return inventory


def test_first_available_choice_on_one_node_does_not_carry_to_the_next(inv: Inventory
                                                                        ) -> None:
    inv.set_slice(node_slice("n0", [{"name": "small", "attributes": {"big": {"bool": False}}}]))
    inv.set_slice(node_slice("n1", [{"name": "large", "attributes": {"big": {"bool": True}}}]))
    pod = [claim("c", {"name": "r", "firstAvailable": [
        {"name": "big", "deviceClassName": "gpu",
         "selectors": [{"cel": {"expression": f'device.attributes["{DRIVER}"].big'}}]},
        {"name": "any", "deviceClassName": "gpu"}]})]
    allocator = Allocator(inv)
    on_n1 = allocator.allocate(NODES[1], pod)
    on_n0 = allocator.allocate(NODES[0], pod)
    assert on_n1.results[0]["devices"]["results"][0]["request"] == "r/big"
    assert on_n0.results[0]["devices"]["results"][0]["request"] == "r/any"
    # Explanations are computed later, after other nodes' searches: still their own.
    assert on_n1.explanation.requests[0].request == "r/big"
    assert on_n0.explanation.requests[0].request == "r/any"


def test_constraint_state_of_one_node_does_not_carry_to_the_next(inv: Inventory) -> None:
    for node, numas in (("n0", (0, 1)), ("n1", (1, 1))):
        inv.set_slice(node_slice(node, [{"name": f"gpu-{i}", "attributes": {
            "numa": {"int": numa}}} for i, numa in enumerate(numas)]))
    pod = [claim("c", exactly("a"), exactly("b"),
                 constraints=[{"matchAttribute": f"{DRIVER}/numa"}])]
    allocator = Allocator(inv)
    assert allocator.allocate(NODES[0], pod).unsatisfiable
    assert allocator.allocate(NODES[1], pod).allocated
    assert allocator.allocate(NODES[0], pod).unsatisfiable


def test_all_mode_devices_are_each_nodes_own(inv: Inventory) -> None:
    inv.set_slice(node_slice("n0", [{"name": "gpu-0"}]))
    inv.set_slice(node_slice("n1", [{"name": "gpu-0"}, {"name": "gpu-1"}]))
    pod = [claim("c", exactly("r", allocationMode="All"))]
    allocator = Allocator(inv)
    counts = [len(allocator.allocate(n, pod).results[0]["devices"]["results"])
              for n in (NODES[1], NODES[0], NODES[1])]
    assert counts == [2, 1, 2]


def test_a_class_changed_between_nodes_is_seen(inv: Inventory) -> None:
    inv.set_slice(node_slice("n0", [{"name": "gpu-0"}]))
    pod = [claim("c", exactly("r"))]
    allocator = Allocator(inv)
    assert allocator.allocate(NODES[0], pod).allocated
    inv.set_class({**GPU_CLASS, "spec": {"selectors": [{"cel": {"expression": "false"}}]}})
    assert allocator.allocate(NODES[0], pod).unsatisfiable
    inv.remove_class("gpu")
    outcome = allocator.allocate(NODES[0], pod)
    assert outcome.error is not None and "could not retrieve device class gpu" in outcome.error


def test_a_full_node_is_unsatisfiable_with_the_searchs_explanation(
        inv: Inventory, monkeypatch: pytest.MonkeyPatch) -> None:
    inv.set_slice(node_slice("n0", [{"name": "gpu-0"}, {"name": "gpu-1"}]))
    inv.set_claim(allocated("old", "n0", "gpu-0", "gpu-1"))
    pod = [claim("c", exactly("r"))]
    shortcut = answer(Allocator(inv).allocate(NODES[0], pod))
    no_shortcut(monkeypatch)
    assert shortcut == answer(Allocator(inv).allocate(NODES[0], pod))
    assert "2 in use" in shortcut[5]


def test_a_full_node_with_an_invalid_pool_is_still_an_error(inv: Inventory) -> None:
    inv.set_slice(node_slice("n0", [{"name": "gpu-0"}, {"name": "gpu-0"}]))
    inv.set_claim(allocated("old", "n0", "gpu-0"))
    outcome = Allocator(inv).allocate(NODES[0], [claim("c", exactly("r"))])
    assert outcome.error == "invalid resource pools were encountered"


@pytest.mark.parametrize("flying", [False, True])
def test_a_full_pool_beside_an_invalid_one_is_still_an_error(inv: Inventory,
                                                            flying: bool) -> None:
    inv.set_slice(node_slice("n0", [{"name": "gpu-0"}, {"name": "gpu-1"}]))
    invalid = node_slice("n0", [{"name": "gpu-0"}, {"name": "gpu-0"}])
    invalid["metadata"]["name"] = "n0-b-slice"
    invalid["spec"]["pool"]["name"] = "n0-b"
    inv.set_slice(invalid)
    inv.set_claim(allocated("old", "n0", "gpu-0", *([] if flying else ["gpu-1"])))
    in_flight = [allocated("flying", "n0", "gpu-1")] if flying else []
    outcome = Allocator(inv).allocate(NODES[0], [claim("c", exactly("r"))],
                                      in_flight=in_flight)
    assert outcome.error == "invalid resource pools were encountered"


def test_a_selector_error_before_the_first_exclusive_request_still_surfaces(
        inv: Inventory) -> None:
    # All-mode requests evaluate their selectors on every device before the search.
    inv.set_slice(node_slice("n0", [{"name": "gpu-0"}]))
    inv.set_claim(allocated("old", "n0", "gpu-0"))
    broken = [{"cel": {"expression": f'device.attributes["{DRIVER}"].missing == 1'}}]
    pod = [claim("c", exactly("r")), claim("d", exactly("all", allocationMode="All",
                                                        selectors=broken))]
    outcome = Allocator(inv).allocate(NODES[0], pod)
    assert outcome.error is not None and "CEL runtime error" in outcome.error


# --- the same answers, property-tested --------------------------------------------------

@st.composite
def inventories(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]],
                                         list[dict[str, Any]]]:
    """Slices (one or two pools per node, some invalid), allocated claims (often taking
    every device: the case answered without a search) and one claim in flight."""
    slices, claims, flying = [], [], []
    for node in NODES:
        name = node["metadata"]["name"]
        for pool in [name, f"{name}-b"][:draw(st.integers(1, 2))]:
            devices = []
            for i in range(draw(st.integers(0, 3))):
                d: dict[str, Any] = {"name": f"gpu-{i}", "attributes": {
                    "numa": {"int": draw(st.integers(0, 1))},
                    "model": {"string": draw(st.sampled_from("ab"))}},
                    "capacity": {"memory": {"value": "4"}}}
                if draw(st.integers(0, 3)) == 0:
                    d["allowMultipleAllocations"] = True
                devices.append(d)
            if devices and draw(st.integers(0, 5)) == 0:
                devices.append(devices[0])  # listed twice: the pool is invalid
            s = node_slice(name, devices)
            s["metadata"]["name"] = f"{pool}-slice"
            s["spec"]["pool"]["name"] = pool
            slices.append(s)
            every = draw(st.booleans())
            taken = [d["name"] for d in devices if every or draw(st.booleans())]
            if taken:
                claims.append(allocated(f"old-{pool}", pool, *taken))
            if devices and draw(st.integers(0, 4)) == 0:
                flying.append(allocated(f"flying-{pool}", pool, devices[-1]["name"]))
    return slices, claims, flying


@st.composite
def requests(draw: st.DrawFn, name: str) -> dict[str, Any]:
    def spec() -> dict[str, Any]:
        out: dict[str, Any] = {"deviceClassName": "gpu"}
        mode = draw(st.sampled_from(["one", "one", "two", "zero", "all"]))
        if mode == "all":
            out["allocationMode"] = "All"
        elif mode != "one":
            out["count"] = {"two": 2, "zero": 0}[mode]
        if draw(st.booleans()):
            model = draw(st.sampled_from("ab"))
            out["selectors"] = [{"cel": {"expression":
                                         f'device.attributes["{DRIVER}"].model == "{model}"'}}]
        if draw(st.integers(0, 5)) == 0:
            out["adminAccess"] = True
        if draw(st.integers(0, 4)) == 0:
            out["capacity"] = {"requests": {"memory": "1"}}
        return out
    if draw(st.integers(0, 3)) == 0:
        return {"name": name, "firstAvailable": [{"name": f"s{i}", **spec()}
                                                 for i in range(2)]}
    return {"name": name, "exactly": spec()}


@st.composite
def pods(draw: st.DrawFn) -> list[dict[str, Any]]:
    out = []
    for c in range(draw(st.integers(1, 2))):
        reqs = [draw(requests(f"r{r}")) for r in range(draw(st.integers(0, 2)))]
        constraints = [{"matchAttribute": f"{DRIVER}/numa"}] if draw(st.booleans()) else None
        out.append(claim(f"c{c}", *reqs, constraints=constraints))
    return out


FEATURES = st.builds(Features, admin_access=st.booleans(),
                     consumable_capacity=st.booleans())


def build(features: Features, slices: list, claims: list) -> Inventory:
    inv = Inventory()
    inv.features = features
    inv.set_class(GPU_CLASS)
    for s in slices:
        inv.set_slice(s)
    for c in claims:
        inv.set_claim(c)
    return inv


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(features=FEATURES, cluster=inventories(), pod=pods(),
       order=st.lists(st.sampled_from(range(len(NODES))), min_size=1, max_size=6))
def test_one_allocator_for_many_nodes_answers_as_fresh_full_searches(
        features: Features, cluster: tuple, pod: list, order: list[int]) -> None:
    slices, claims, flying = cluster
    inv = build(features, slices, claims)
    shared = Allocator(inv)
    got = [shared.allocate(NODES[i], pod, in_flight=flying if i == 1 else ())
           for i in order]
    with pytest.MonkeyPatch.context() as m:
        no_shortcut(m)
        # Fresh objects too: nothing of the first allocator is reused.
        want = [Allocator(inv).allocate(NODES[i], copy.deepcopy(pod),
                                        in_flight=flying if i == 1 else ())
                for i in order]
    # Explanations were left to now, after every search: each is still its node's.
    assert [answer(o) for o in got] == [answer(o) for o in want]


def test_a_list_of_claims_changed_in_place_between_nodes_is_seen(inv: Inventory) -> None:
    inv.set_slice(node_slice("n0", [{"name": "gpu-0"}]))
    inv.set_claim(allocated("old", "n0", "gpu-0"))
    pod = [claim("c", exactly("r"))]
    allocator = Allocator(inv)
    assert allocator.allocate(NODES[0], pod).unsatisfiable
    pod[0] = claim("c", exactly("r", adminAccess=True))  # admin access: the device is free
    assert allocator.allocate(NODES[0], pod).allocated
    pod[0] = claim("c", exactly("r"))
    assert allocator.allocate(NODES[0], pod).unsatisfiable
    pod.insert(0, claim("d", exactly("r", count=0)))
    assert answer(allocator.allocate(NODES[0], pod)) == \
        answer(Allocator(inv).allocate(NODES[0], pod))
