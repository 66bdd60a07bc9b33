"""Hypothesis strategies for the allocator differential test: one case is the feature
gates, DeviceClasses, ResourceSlices, allocated claims, claims to allocate and a node,
all resource.k8s.io/v1 objects as an apiserver stores them (defaulted and valid; the
test checks each with draemu's own validation before use).

What is drawn, and why it is small: a few devices per slice, a few slices per pool, one
to three pools per driver, one or two claims of one to three requests. Small inventories
keep both searches short (upstream's stable tier tries permutations) while every
feature still meets every other: partitionable counters (counter slices, devices that
consume, unknown counters that make a pool invalid), consumable capacity (multi-
allocatable devices, request policies with defaults, ranges with and without steps,
valid values), taints of every effect with tolerations of every operator, binding
conditions with and without bindsToNode, multi-host pools (one pool over several
nodes' slices), incomplete and outdated pools, per-device node selection, exactly
(ExactCount and All) and firstAvailable requests with counts, matchAttribute and
distinctAttribute constraints over scalar and list attributes, admin access, CEL
selectors from a grammar of real attribute and capacity expressions (some of which fail
at run time on some devices, as users' do), and allocated claims that hold devices
exclusively, as shares with consumed capacity, or with admin access.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from hypothesis import strategies as st

from draemu.features import FeatureGates, known

DRIVERS = ("gpu.example.com", "nic.example.com")
TOPOLOGY = "topology.example.com"
NODE_NAME = "node-a"
NODES = {
    "node-a": {"kubernetes.io/hostname": "node-a", "zone": "z1", "rack": "r1"},
    "node-b": {"kubernetes.io/hostname": "node-b", "zone": "z1", "rack": "r2"},
    "node-c": {"kubernetes.io/hostname": "node-c", "zone": "z2", "rack": "r3"},
}
TIME = "2026-01-01T00:00:00Z"
MODELS = ("a100", "h100", "t4")
VERSIONS = ("1.0.0", "1.2.3", "2.0.0-rc.1", "2.0.0")
ROOTS = ("pci0", "pci1", "pci2")
MEMORY = ("4Gi", "8Gi", "16Gi", "40Gi", "80Gi")
TAINT_KEYS = ("example.com/unhealthy", "example.com/maintenance")
NAMESPACE = "default"

# The gates the allocator and the scheduler's DRA plugin read, and what a case may set.
ALLOCATOR_GATES = (
    "DRAAdminAccess", "DRAPrioritizedList", "DRAPartitionableDevices", "DRADeviceTaints",
    "DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus", "DRAConsumableCapacity",
    "DRAFractionalCapacityRange", "DRAListTypeAttributes", "DRAOptionalNodeOperations",
    "DRADerivedAttributes", "DRADeviceCompatibilityGroups", "DRAExtendedResource",
    "DRASchedulerFilterTimeout", "DRADeviceTaintRules")
TOGGLED = ("DRAPartitionableDevices", "DRADeviceTaints", "DRADeviceBindingConditions",
           "DRAConsumableCapacity", "DRAFractionalCapacityRange", "DRAListTypeAttributes",
           "DRADeviceCompatibilityGroups")


def chance(draw: st.DrawFn, percent: float) -> bool:
    """True in about `percent` % of draws (a window away from the range's ends, which
    Hypothesis draws far more often than their share)."""
    return 250 <= draw(st.integers(0, 999)) < 250 + percent * 10


def q(value: str) -> dict[str, str]:
    return {"value": value}


# --- feature gates -----------------------------------------------------------------------

@st.composite
def gates(draw: st.DrawFn, version: str) -> FeatureGates:
    """The release's defaults half of the time, else some gates flipped (those the release
    lets one set, with what they depend on); the stable tier needs every beta gate off."""
    table = known(version)
    if draw(st.integers(0, 1)) == 0:
        return FeatureGates(emulated_version=version)
    overrides: dict[str, bool] = {}
    if draw(st.integers(0, 3)) == 0:  # the stable tier: beta features off
        for name in ("DRAConsumableCapacity", "DRADeviceBindingConditions",
                     "DRAFractionalCapacityRange"):
            overrides[name] = False
    for name in TOGGLED:
        gate = table.get(name)
        if gate is None or gate.locked or gate.stage == "" or name in overrides:
            continue
        if draw(st.integers(0, 2)) == 0:
            overrides[name] = not gate.default
    for _ in range(6):
        # Settle dependencies: a gate whose dependency is off goes off too, unless it is
        # locked on (then its dependencies go back on).
        try:
            return FeatureGates(overrides, version)
        except ValueError as e:
            for name, deps in _DEPENDS.findall(str(e)):
                if table[name].locked:
                    overrides.update({d: True for d in deps.split()})
                else:
                    overrides[name] = False
    return FeatureGates(overrides, version)


_DEPENDS = re.compile(r"(\w+) is enabled, but depends on features that are disabled: \[([^\]]*)\]")


def resolved(g: FeatureGates) -> dict[str, bool]:
    """Every gate the allocator reads, as the set has it (for the oracle)."""
    out = {}
    for name in ALLOCATOR_GATES:
        try:
            out[name] = g.enabled(name)
        except KeyError:
            out[name] = False
    return out


# --- CEL selectors -----------------------------------------------------------------------

def _attr(driver: str, name: str) -> str:
    return f'device.attributes["{driver}"].{name}'


@st.composite
def atom(draw: st.DrawFn, driver: str, consumable: bool, lists: bool) -> str:
    """One comparison over a real attribute or capacity; some name attributes the device
    may lack (a run-time error for that device, as upstream has it) or guard with `in`."""
    other = draw(st.sampled_from(DRIVERS))
    kind = draw(st.integers(0, 13))
    if kind == 0:
        return f'device.driver == "{draw(st.sampled_from(DRIVERS))}"'
    if kind == 1:
        return f'{_attr(driver, "model")} == "{draw(st.sampled_from(MODELS))}"'
    if kind == 2:
        op = draw(st.sampled_from(["<", "<=", ">", ">=", "==", "!="]))
        return f'{_attr(driver, "index")} {op} {draw(st.integers(0, 4))}'
    if kind == 3:
        return f'"model" in device.attributes["{other}"] && ' \
               f'{_attr(other, "model")} != "{draw(st.sampled_from(MODELS))}"'
    if kind == 4:
        fn = draw(st.sampled_from(["isGreaterThan", "isLessThan", "compareTo"]))
        test = " == 0" if fn == "compareTo" else ""
        return f'{_attr(driver, "driverVersion")}.{fn}(semver("' \
               f'{draw(st.sampled_from(VERSIONS))}")){test}'
    if kind == 5:
        op = draw(st.sampled_from([">=", "<", "=="]))
        return (f'device.capacity["{driver}"].memory.compareTo('
                f'quantity("{draw(st.sampled_from(MEMORY))}")) {op} 0')
    if kind == 6:
        return f'device.attributes["{TOPOLOGY}"].pcieRoot == "{draw(st.sampled_from(ROOTS))}"'
    if kind == 7:
        return f'{_attr(driver, "healthy")}'
    if kind == 8:
        return f'"memory" in device.capacity["{driver}"]'
    if kind == 9 and consumable:
        return f"device.allowMultipleAllocations == {draw(st.sampled_from(['true', 'false']))}"
    if kind == 10:
        return f'{_attr(driver, "numa")} == {draw(st.integers(0, 1))}'
    if kind == 11 and lists:
        return f'"{draw(st.sampled_from(ROOTS))}" in {_attr(driver, "roots")}'
    if kind == 12:
        return f'device.capacity["{driver}"].memory.isGreaterThan(quantity("' \
               f'{draw(st.sampled_from(MEMORY))}"))'
    return "true" if draw(st.booleans()) else f'device.driver != "{other}"'


_FIELD = re.compile(r'device\.(attributes|capacity)\["([^"]+)"\]\.(\w+)')


@st.composite
def guarded(draw: st.DrawFn, driver: str, consumable: bool, lists: bool) -> str:
    """An atom, most of the time guarded by `in` against devices that lack its field."""
    expr = draw(atom(driver, consumable, lists))
    found = _FIELD.search(expr)
    if found is None or draw(st.integers(0, 2)) == 0:
        return expr
    kind, domain, name = found.groups()
    return f'"{name}" in device.{kind}["{domain}"] && {expr}'


@st.composite
def expression(draw: st.DrawFn, driver: str, consumable: bool, lists: bool) -> str:
    first = draw(guarded(driver, consumable, lists))
    shape = draw(st.integers(0, 5))
    if shape <= 2:
        return first
    second = draw(guarded(driver, consumable, lists))
    if shape == 3:
        return f"{first} && {second}"
    if shape == 4:
        return f"{first} || {second}"
    return f"!({first})"


def selector(expr: str) -> dict[str, Any]:
    return {"cel": {"expression": expr}}


# --- inventories -------------------------------------------------------------------------

@st.composite
def attributes(draw: st.DrawFn, lists: bool) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    if draw(st.integers(0, 5)):
        attrs["model"] = {"string": draw(st.sampled_from(MODELS))}
    if draw(st.integers(0, 4)):
        attrs["index"] = {"int": draw(st.integers(0, 4))}
    if draw(st.integers(0, 2)):
        attrs["numa"] = {"int": draw(st.integers(0, 1))}
    if draw(st.integers(0, 2)):
        attrs["healthy"] = {"bool": draw(st.booleans())}
    if draw(st.integers(0, 2)):
        attrs["driverVersion"] = {"version": draw(st.sampled_from(VERSIONS))}
    if draw(st.integers(0, 2)):
        attrs[f"{TOPOLOGY}/pcieRoot"] = {"string": draw(st.sampled_from(ROOTS))}
    if lists and draw(st.integers(0, 2)) == 0:
        attrs["roots"] = {"strings": sorted(draw(st.sets(st.sampled_from(ROOTS), min_size=1)))}
    if lists and draw(st.integers(0, 3)) == 0:
        attrs["numa"] = {"ints": sorted(draw(st.sets(st.integers(0, 2), min_size=1)))}
    return attrs


@st.composite
def request_policy(draw: st.DrawFn, total: int) -> dict[str, Any] | None:
    """A policy for a capacity of `total` (whole units of Gi)."""
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return None
    if kind == 1:
        return {"default": f"{draw(st.integers(0, total))}Gi"}
    if kind == 2:
        values = sorted(draw(st.sets(st.integers(1, total), min_size=1, max_size=4)))
        default = draw(st.sampled_from(values))
        return {"default": f"{default}Gi", "validValues": [f"{v}Gi" for v in values]}
    low = draw(st.integers(0, max(total // 2, 1)))
    rng: dict[str, Any] = {"min": f"{low}Gi"}
    step = draw(st.integers(1, 4)) if kind == 4 else 0
    if step:
        rng["step"] = f"{step}Gi"
    high = None
    if draw(st.booleans()):  # the max is min plus whole steps, at most the capacity
        high = low + max(step, 1) * draw(st.integers(0, (total - low) // max(step, 1)))
        rng["max"] = f"{high}Gi"
    default = low
    if draw(st.booleans()):
        default = low + max(step, 1) * draw(st.integers(0, 2))
        if default > (high if high is not None else total):
            default = low
    return {"default": f"{default}Gi", "validRange": rng}


@st.composite
def milli_policy(draw: st.DrawFn) -> dict[str, Any]:
    """A policy for cores in milli-units (DRAFractionalCapacityRange rounds with them; with
    the gate off upstream rounds to whole units)."""
    if draw(st.booleans()):
        return {"default": "1", "validValues": ["250m", "500m", "1", "2"]}
    low, step = draw(st.sampled_from([0, 100, 250, 1000])), draw(st.sampled_from([100, 250,
                                                                              500, 1000]))
    rng = {"min": f"{low}m", "step": f"{step}m"}
    if draw(st.booleans()):  # min plus whole steps, within the 4 cores every such device has
        rng["max"] = f"{low + step * ((4000 - low) // step)}m"
    return {"default": rng["min"], "validRange": rng}


@st.composite
def device(draw: st.DrawFn, name: str, ctx: dict[str, Any], per_device: bool
           ) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name}
    attrs = draw(attributes(ctx["lists"]))
    if attrs:
        d["attributes"] = attrs
    multi = ctx["consumable"] and draw(st.integers(0, 2)) == 0
    if draw(st.integers(0, 3)):
        total = draw(st.sampled_from([8, 16, 40]))
        mem: dict[str, Any] = q(f"{total}Gi")
        if multi and draw(st.booleans()):  # a policy needs allowMultipleAllocations
            policy = draw(request_policy(total))
            if policy is not None:
                mem["requestPolicy"] = policy
        d["capacity"] = {"memory": mem}
        if draw(st.integers(0, 2)) == 0:
            cores: dict[str, Any] = q(str(draw(st.integers(1, 8))))
            if multi and draw(st.booleans()):
                cores = {**q(str(draw(st.integers(4, 8)))), "requestPolicy": draw(milli_policy())}
            d["capacity"]["cores"] = cores
    if multi:
        d["allowMultipleAllocations"] = True
    counter_sets = ctx["counter_sets"]
    if counter_sets and draw(st.integers(0, 3)):
        cs = draw(st.sampled_from(sorted(counter_sets)))
        counters = {c: q(f"{draw(st.integers(1, 3))}{'Gi' if c == 'memory' else ''}")
                    for c in counter_sets[cs] if draw(st.integers(0, 3))}
        if chance(draw, 2):
            counters["unknown"] = q("1")  # a counter the set lacks: the pool is invalid
        if counters:
            d["consumesCounters"] = [{"counterSet": cs, "counters": counters}]
    if chance(draw, 20):
        d["taints"] = [draw(taint()) for _ in range(draw(st.integers(1, 2)))]
    if ctx["binding"] and draw(st.integers(0, 4)) == 0:
        d["bindingConditions"] = ["attached"]
        d["bindingFailureConditions"] = ["failed"]
        if draw(st.booleans()):
            d["bindsToNode"] = True
    if per_device:
        d.update(draw(node_selection(per_device=True)))
    return d


@st.composite
def taint(draw: st.DrawFn) -> dict[str, Any]:
    t: dict[str, Any] = {"key": draw(st.sampled_from(TAINT_KEYS)),
                         "effect": draw(st.sampled_from(["NoSchedule", "NoExecute", "None"])),
                         "timeAdded": TIME}
    if draw(st.booleans()):
        t["value"] = draw(st.sampled_from(["true", "false"]))
    return t


@st.composite
def node_selection(draw: st.DrawFn, per_device: bool = False, node: str | None = None
                   ) -> dict[str, Any]:
    """How a slice (or, with per-device selection, a device) names its nodes."""
    if node is not None:
        return {"nodeName": node}
    kind = draw(st.integers(0, 6))
    if kind <= 2:
        return {"nodeName": "node-b" if chance(draw, 25) else NODE_NAME}
    if kind == 3:
        return {"allNodes": True}
    if kind == 4:
        expressions = [draw(st.sampled_from([
            {"key": "zone", "operator": "In", "values": ["z1"]},
            {"key": "zone", "operator": "In", "values": ["z2"]},
            {"key": "rack", "operator": "NotIn", "values": ["r3"]},
            {"key": "rack", "operator": "In", "values": ["r1", "r2"]},
            {"key": "zone", "operator": "Exists"},
            {"key": "gpu", "operator": "DoesNotExist"}]))
            for _ in range(1 if draw(st.booleans()) else 2)]
        return {"nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": expressions}]}}
    if kind == 5:  # a field selector takes one value
        return {"nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In",
             "values": [draw(st.sampled_from(sorted(NODES)))]}]}]}}
    if per_device:
        return {"nodeName": NODE_NAME}
    return {"perDeviceNodeSelection": True}


def _slice(name: str, driver: str, pool: str, generation: int, count: int,
           selection: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": name, "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, name)),
                         "generation": 1},
            "spec": {"driver": driver, "pool": {"name": pool, "generation": generation,
                                                "resourceSliceCount": count},
                     **selection, **body}}


@st.composite
def pool(draw: st.DrawFn, driver: str, index: int, ctx: dict[str, Any]
         ) -> list[dict[str, Any]]:
    """The slices of one pool: device slices for one node or several (multi-host), maybe
    a counter slice, maybe too few slices (incomplete) or an older generation's."""
    name = f"pool-{index}"
    counter_sets: dict[str, list[str]] = {}
    if ctx["partitionable"] and draw(st.integers(0, 2)) == 0:
        for i in range(draw(st.integers(1, 2))):
            counter_sets[f"cs-{i}"] = ["memory", "slots"]
    dctx = {**ctx, "counter_sets": counter_sets}
    layout = draw(st.integers(0, 5))
    if layout == 0:  # multi-host: one slice per node
        hosts = sorted(draw(st.sets(st.sampled_from(sorted(NODES)), min_size=2, max_size=3)))
        selections = [{"nodeName": h} for h in hosts]
    elif layout == 1:
        selections = [draw(node_selection()) for _ in range(2)]
    else:
        selections = [draw(node_selection())]
    if not ctx["partitionable"]:
        selections = [s if "perDeviceNodeSelection" not in s else {"nodeName": NODE_NAME}
                      for s in selections]
    bodies = []
    for k, sel in enumerate(selections):
        per_device = "perDeviceNodeSelection" in sel
        # Now and then a name another slice of the pool has too: the pool is invalid.
        devices = [draw(device("dev-0-0" if k > 0 and i == 0 and chance(draw, 3)
                               else f"dev-{k}-{i}", dctx, per_device))
                   for i in range(0 if chance(draw, 8) and not per_device
                                  else draw(st.integers(1, 4)))]
        bodies.append((sel, {"devices": devices}))
    if counter_sets:
        shared = [{"name": cs, "counters": {"memory": q(f"{draw(st.integers(2, 8))}Gi"),
                                            "slots": q(str(draw(st.integers(1, 3))))}}
                  for cs in sorted(counter_sets)]
        bodies.append((draw(node_selection()), {"sharedCounters": shared}))
    count = len(bodies)
    generation = 1
    fate = 0 if chance(draw, 6) else 1 if chance(draw, 6) else 2
    if fate == 0:
        count += 1  # incomplete: a slice never arrives
    slices = [_slice(f"{driver.split('.')[0]}-{name}-{k}", driver, name, generation, count,
                     sel, body) for k, (sel, body) in enumerate(bodies)]
    if fate == 1 and len(slices) > 1:
        # The driver is replacing the pool: one slice of the next generation already.
        newer = slices[-1]
        newer["spec"]["pool"]["generation"] = generation + 1
    return slices


@st.composite
def inventory(draw: st.DrawFn, ctx: dict[str, Any]) -> list[dict[str, Any]]:
    slices: list[dict[str, Any]] = []
    for driver in DRIVERS:
        for p in range(draw(st.integers(0 if driver != DRIVERS[0] else 1, 2))):
            slices.extend(draw(pool(driver, p, ctx)))
    # As an informer lists them: by name.
    return sorted(slices, key=lambda s: s["metadata"]["name"])


# --- classes and claims --------------------------------------------------------------------

@st.composite
def classes(draw: st.DrawFn, ctx: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for driver in DRIVERS:
        spec: dict[str, Any] = {"selectors": [selector(f'device.driver == "{driver}"')]}
        if draw(st.integers(0, 4)) == 0:
            spec["selectors"].append(selector(draw(expression(driver, ctx["consumable"],
                                                              ctx["lists"]))))
        if draw(st.integers(0, 3)) == 0:
            spec["config"] = [{"opaque": {"driver": driver,
                                          "parameters": {"class": driver.split(".")[0]}}}]
        out.append(_class(driver.split(".")[0], spec))
    out.append(_class("any", {}))
    return out


def _class(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": name, "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, name)),
                         "generation": 1}, "spec": spec}


CLASS_DRIVER = {"gpu": DRIVERS[0], "nic": DRIVERS[1], "any": DRIVERS[0]}


@st.composite
def device_request(draw: st.DrawFn, name: str, ctx: dict[str, Any], sub: bool
                   ) -> dict[str, Any]:
    cls = draw(st.sampled_from(["gpu", "gpu", "nic", "any"]))
    if chance(draw, 1):
        cls = "missing"  # a class that does not exist
    r: dict[str, Any] = {"deviceClassName": cls}
    if chance(draw, 10):
        r["allocationMode"] = "All"
    else:
        r["allocationMode"] = "ExactCount"
        r["count"] = 1 if draw(st.booleans()) else draw(st.sampled_from([1, 2, 2, 3]))
        if chance(draw, 2):
            r["count"] = draw(st.integers(16, 33))  # near and past the claim's limit
    if draw(st.integers(0, 2)) == 0:
        driver = CLASS_DRIVER.get(cls, DRIVERS[0])
        r["selectors"] = [selector(draw(expression(driver, ctx["consumable"], ctx["lists"])))
                          for _ in range(draw(st.integers(1, 2)))]
    if draw(st.integers(0, 3)) == 0:
        r["tolerations"] = [draw(toleration()) for _ in range(draw(st.integers(1, 2)))]
    if ctx["consumable_requests"] and draw(st.integers(0, 2)) == 0:
        requests: dict[str, str] = {}
        if draw(st.integers(0, 3)):
            requests["memory"] = draw(st.sampled_from([
                f"{draw(st.integers(1, 20))}Gi", f"{draw(st.integers(1, 20)) * 1024}Mi",
                f"{draw(st.integers(1, 20000))}Mi", f"{draw(st.integers(1, 20))}G"]))
        if not requests or draw(st.booleans()):
            requests["cores"] = draw(st.sampled_from(["1", "2", "250m", "500m", "1500m",
                                                      "0.3", "3", "1500u"]))
        r["capacity"] = {"requests": requests}
    if not sub and chance(draw, 5):
        r["adminAccess"] = True
    return {"name": name, **r} if sub else r


@st.composite
def toleration(draw: st.DrawFn) -> dict[str, Any]:
    t: dict[str, Any] = {}
    if draw(st.integers(0, 4)):
        t["key"] = draw(st.sampled_from(TAINT_KEYS))
    if "key" not in t or draw(st.booleans()):
        t["operator"] = "Exists"
    else:
        t["operator"] = "Equal"
        t["value"] = draw(st.sampled_from(["true", "false"]))
    if draw(st.booleans()):
        t["effect"] = draw(st.sampled_from(["NoSchedule", "NoExecute"]))
    return t


CONSTRAINT_ATTRS = ("gpu.example.com/model", "gpu.example.com/numa", f"{TOPOLOGY}/pcieRoot",
                    "gpu.example.com/driverVersion", "nic.example.com/numa",
                    "gpu.example.com/roots")


@st.composite
def claim(draw: st.DrawFn, index: int, ctx: dict[str, Any]) -> dict[str, Any]:
    requests = []
    names = []
    for i in range(1 if draw(st.booleans()) else draw(st.integers(1, 3))):
        name = f"req-{i}"
        names.append(name)
        if ctx["prioritized"] and draw(st.integers(0, 3)) == 0:
            subs = [draw(device_request(f"sub-{j}", ctx, sub=True))
                    for j in range(draw(st.integers(1, 3)))]
            requests.append({"name": name, "firstAvailable": subs})
        else:
            requests.append({"name": name, "exactly": draw(device_request(name, ctx, False))})
    devices: dict[str, Any] = {"requests": requests}
    constraints = []
    for _ in range(draw(st.integers(0, 2)) if draw(st.integers(0, 2)) == 0 else 0):
        c: dict[str, Any] = {}
        attr = draw(st.sampled_from(CONSTRAINT_ATTRS))
        if ctx["consumable"] and draw(st.integers(0, 2)) == 0:
            c["distinctAttribute"] = attr
        else:
            c["matchAttribute"] = attr
        if draw(st.booleans()):
            c["requests"] = sorted(draw(st.sets(st.sampled_from(names), min_size=1)))
        constraints.append(c)
    if constraints:
        devices["constraints"] = constraints
    if draw(st.integers(0, 4)) == 0:
        devices["config"] = [{"requests": [draw(st.sampled_from(names))],
                              "opaque": {"driver": DRIVERS[0], "parameters": {"claim": index}}}]
    name = f"claim-{index}"
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": NAMESPACE,
                         "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"claim/{name}"))},
            "spec": {"devices": devices}}


@st.composite
def allocated(draw: st.DrawFn, slices: list[dict[str, Any]], ctx: dict[str, Any]
              ) -> list[dict[str, Any]]:
    """Claims allocated earlier: each holds a few of the inventory's devices (or a device
    that no longer exists) exclusively, as a share with consumed capacity, or with admin
    access."""
    devices = [(s["spec"]["driver"], s["spec"]["pool"]["name"], d)
               for s in slices for d in s["spec"].get("devices") or []]
    out = []
    for i in range(draw(st.integers(0, 3)) if devices else 0):
        results = []
        for j in range(draw(st.integers(1, 3))):
            driver, pool_name, d = draw(st.sampled_from(devices))
            name = "gone" if chance(draw, 5) else d["name"]
            r: dict[str, Any] = {"request": f"req-{j}", "driver": driver, "pool": pool_name,
                                 "device": name}
            if chance(draw, 8):
                r["adminAccess"] = True
            elif d.get("allowMultipleAllocations") and draw(st.integers(0, 3)):
                r["shareID"] = str(uuid.UUID(int=draw(st.integers(1, 2**64))))
                if d.get("capacity") and draw(st.integers(0, 3)):
                    r["consumedCapacity"] = {
                        c: f"{draw(st.integers(0, 8))}{'Gi' if c == 'memory' else ''}"
                        for c in d["capacity"]}
            results.append(r)
        name = f"old-{i}"
        out.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                    "metadata": {"name": name, "namespace": NAMESPACE,
                                 "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"old/{name}"))},
                    "spec": {"devices": {"requests": [
                        {"name": f"req-{j}", "exactly": {"deviceClassName": "any",
                                                         "allocationMode": "ExactCount",
                                                         "count": 1}}
                        for j in range(len(results))]}},
                    "status": {"allocation": {"devices": {"results": results}}}})
    return out


def node(name: str = NODE_NAME) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": dict(NODES[name]),
                         "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"node/{name}"))}}


@st.composite
def case(draw: st.DrawFn, version: str = "1.37") -> dict[str, Any]:
    g = draw(gates(version))
    resolved_gates = resolved(g)
    consumable = resolved_gates["DRAConsumableCapacity"]
    # Objects keep fields written while a gate was on: most cases use only what the gates
    # allow, some carry fields of disabled features (both allocators must refuse them).
    stale = chance(draw, 10)
    ctx = {
        "consumable": consumable or stale,
        "consumable_requests": consumable or stale,
        "lists": resolved_gates["DRAListTypeAttributes"],
        "partitionable": resolved_gates["DRAPartitionableDevices"] or stale,
        "binding": resolved_gates["DRADeviceBindingConditions"] or stale,
        "prioritized": resolved_gates["DRAPrioritizedList"] or stale,
    }
    slices = draw(inventory(ctx))
    return {
        "version": version,
        "gates": resolved_gates,
        "overrides": g.overrides(),
        "classes": draw(classes(ctx)),
        "slices": slices,
        "allocated": draw(allocated(slices, ctx)),
        "claims": [draw(claim(i, ctx)) for i in range(1 if draw(st.booleans()) else 2)],
        "node": node(),
    }
