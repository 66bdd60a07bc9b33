"""The DRA workloads bench/realk8s.py runs against both control planes.

After the shapes of upstream's scheduler_perf DRA set (test/integration/scheduler_perf/dra/
of kubernetes/kubernetes), with our own objects, one pool per node (ResourceSlices with
`nodeName`, no kubelets):

- template: SchedulingWithResourceClaimTemplate. 8 devices per node, one DeviceClass, pods
  each with a claim from one ResourceClaimTemplate whose request picks a device by CEL
  (bench/scheduler.py's objects).
- churn: SteadyStateClusterResourceClaimTemplate, its "full" variant. The same devices,
  all but `inflight` of them already allocated to standalone claims (written as
  allocated, as upstream's allocResourceClaims does); then `inflight` pods at a time:
  each pod, once bound with its claim allocated, is deleted (grace period 0) and a new
  one created, so every new pod needs the device its predecessor's claim held, freed
  only once the resource-claim controller has deleted and deallocated that claim.
- partitionable: SchedulingWithResourceClaimTemplatePartitionable. Per node a pool of
  two slices, one with a counter set (4 counters of 1), one with 6 devices consuming
  them (two devices take two counters each, four take one); each claim asks for 2
  devices with the same `dra.example.com/slice` attribute. Gate DRAPartitionableDevices.
- consumable: SteadyStateClusterResourceClaimTemplateConsumableCapacity. Per node 2
  devices with allowMultipleAllocations and 80Gi of consumable memory (request policy:
  default 1Gi, at least 1Gi); each claim has two requests of 10Gi. Gate
  DRAConsumableCapacity.
- prioritized: SteadyStateClusterResourceClaimTemplateFirstAvailable. The template's
  request is `firstAvailable`: first a class that matches no device, then the GPU class.
  Gate DRAPrioritizedList.

Each workload says what a correct allocation looks like (`check`): no device given to two
live claims unless it allows multiple allocations, no counter or capacity overcommitted,
the subrequest chosen.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from draemu.api.types import Obj

_spec = importlib.util.spec_from_file_location("bench_scheduler_workload",
                                               Path(__file__).with_name("scheduler.py"))
assert _spec is not None and _spec.loader is not None
basic = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(basic)

NS = basic.NS
DRIVER = basic.DRIVER
CLASS = basic.CLASS
TEMPLATE_NAME = basic.TEMPLATE["metadata"]["name"]
SLICE_ATTRIBUTE = "dra.example.com/slice"
NO_DEVICES_CLASS = "no-devices.example.com"



def node(i: int) -> Obj:
    return basic.node(i)


def node_name(i: int) -> str:
    return str(basic.node(i)["metadata"]["name"])


def pod(i: int) -> Obj:
    return basic.pod(i)


def _template(requests: list[Obj], constraints: list[Obj] | None = None) -> Obj:
    devices: Obj = {"requests": requests}
    if constraints:
        devices["constraints"] = constraints
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": TEMPLATE_NAME, "namespace": NS},
            "spec": {"spec": {"devices": devices}}}


def _slice(i: int, suffix: str, spec: Obj, count: int = 1) -> Obj:
    name = node_name(i)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{name}-{suffix}"},
            "spec": {"driver": DRIVER, "nodeName": name,
                     "pool": {"name": name, "generation": 1, "resourceSliceCount": count},
                     **spec}}


# partitionable ----------------------------------------------------------------------

COUNTER_SET = "counter-set"
COUNTERS = ("counter1", "counter2", "counter3", "counter4")
# device name -> the counters it consumes (one unit each)
PARTITIONS = {"two-counters-1": ("counter1", "counter2"),
              "two-counters-2": ("counter3", "counter4"),
              "one-counter-1": ("counter1",), "one-counter-2": ("counter2",),
              "one-counter-3": ("counter3",), "one-counter-4": ("counter4",)}


def partitionable_slices(i: int) -> list[Obj]:
    counters = _slice(i, "counters", {"sharedCounters": [
        {"name": COUNTER_SET, "counters": {c: {"value": "1"} for c in COUNTERS}}]}, count=2)
    devices = _slice(i, "devices", {"devices": [
        {"name": name,
         "attributes": {SLICE_ATTRIBUTE: {"int": i}},
         "capacity": {"counters": {"value": str(len(used))}},
         "consumesCounters": [{"counterSet": COUNTER_SET,
                               "counters": {c: {"value": "1"} for c in used}}]}
        for name, used in PARTITIONS.items()]}, count=2)
    return [counters, devices]


# consumable capacity ----------------------------------------------------------------

SHARED_DEVICES = ("shareable-0", "shareable-1")
SHARED_MEMORY_GI = 80
REQUEST_MEMORY_GI = 10


def consumable_slices(i: int) -> list[Obj]:
    return [_slice(i, DRIVER, {"devices": [
        {"name": name, "allowMultipleAllocations": True,
         "attributes": {SLICE_ATTRIBUTE: {"int": i}},
         "capacity": {"memory": {"value": f"{SHARED_MEMORY_GI}Gi", "requestPolicy": {
             "default": "1Gi", "validRange": {"min": "1Gi"}}}}}
        for name in SHARED_DEVICES]})]


def _gi(quantity: str) -> float:
    units = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40}
    for suffix, factor in units.items():
        if quantity.endswith(suffix):
            return float(quantity[:-2]) * factor / 2 ** 30
    return float(quantity) / 2 ** 30


# checks -----------------------------------------------------------------------------

def _results(claim: Obj) -> list[Obj]:
    alloc = (claim.get("status") or {}).get("allocation") or {}
    return list((alloc.get("devices") or {}).get("results") or [])


def check_exclusive(claims: list[Obj]) -> list[str]:
    """No device in the results of two claims."""
    owner: dict[tuple[str, str, str], str] = {}
    problems = []
    for c in claims:
        for r in _results(c):
            key = (r["driver"], r["pool"], r["device"])
            if key in owner and owner[key] != c["metadata"]["name"]:
                problems.append(f"device {'/'.join(key)} allocated to both {owner[key]} and "
                                f"{c['metadata']['name']}")
            owner[key] = c["metadata"]["name"]
    return problems


def check_partitionable(claims: list[Obj]) -> list[str]:
    problems = check_exclusive(claims)
    used: dict[tuple[str, str], int] = {}
    for c in claims:
        results = _results(c)
        name = c["metadata"]["name"]
        if len(results) != 2:
            problems.append(f"{name}: {len(results)} devices allocated, 2 asked")
        if len({r["pool"] for r in results}) > 1:
            problems.append(f"{name}: devices from pools {sorted({r['pool'] for r in results})}"
                            f" despite matchAttribute {SLICE_ATTRIBUTE}")
        for r in results:
            for counter in PARTITIONS.get(r["device"], ()):
                used[(r["pool"], counter)] = used.get((r["pool"], counter), 0) + 1
    problems += [f"pool {pool}: {counter} consumed {n} times, it has 1"
                 for (pool, counter), n in sorted(used.items()) if n > 1]
    return problems


def check_consumable(claims: list[Obj]) -> list[str]:
    problems = []
    consumed: dict[tuple[str, str], float] = {}
    for c in claims:
        results = _results(c)
        name = c["metadata"]["name"]
        if len(results) != 2:
            problems.append(f"{name}: {len(results)} results, 2 requests")
        for r in results:
            memory = (r.get("consumedCapacity") or {}).get("memory")
            if memory is None:
                problems.append(f"{name}: result {r.get('request')} without consumedCapacity")
                continue
            if not r.get("shareID"):
                problems.append(f"{name}: result {r.get('request')} on a shareable device "
                                "without shareID")
            key = (r["pool"], r["device"])
            consumed[key] = consumed.get(key, 0.0) + _gi(memory)
    problems += [f"device {pool}/{device}: {gi:g}Gi consumed of {SHARED_MEMORY_GI}Gi"
                 for (pool, device), gi in sorted(consumed.items()) if gi > SHARED_MEMORY_GI]
    return problems


def check_prioritized(claims: list[Obj]) -> list[str]:
    problems = check_exclusive(claims)
    for c in claims:
        requests = sorted({r["request"] for r in _results(c)})
        if requests != ["gpu/sub-1"]:
            problems.append(f"{c['metadata']['name']}: results for {requests}, expected "
                            "['gpu/sub-1'] (the first subrequest matches no device)")
    return problems


# the workloads ------------------------------------------------------------------------

@dataclass(frozen=True)
class Workload:
    name: str
    gates: tuple[str, ...]                  # feature gates set to true on both sides
    slices: Callable[[int], list[Obj]]      # the ResourceSlices of node i
    template: Obj
    devices_per_node: int                   # how many pods a node can take
    check: Callable[[list[Obj]], list[str]]
    device_classes: tuple[Obj, ...] = (basic.DEVICE_CLASS,)
    churn: bool = False
    pods_per_node: float = 4
    extra: dict[str, Any] = field(default_factory=dict)

    def default_pods(self, nodes: int) -> int:
        if self.churn:
            return 1000
        return max(1, min(1000, int(self.pods_per_node * nodes),
                          self.devices_per_node * nodes))


NO_DEVICES = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
              "metadata": {"name": NO_DEVICES_CLASS},
              "spec": {"selectors": [{"cel": {
                  "expression": 'device.driver == "no-such-driver.example.com"'}}]}}


def basic_slices(i: int) -> list[Obj]:
    return [basic.resource_slice(i)]


WORKLOADS: dict[str, Workload] = {w.name: w for w in (
    Workload("template", (), basic_slices, basic.TEMPLATE, basic.DEVICES_PER_NODE,
             check_exclusive),
    Workload("churn", (), basic_slices, basic.TEMPLATE, basic.DEVICES_PER_NODE,
             check_exclusive, churn=True),
    Workload("partitionable", ("DRAPartitionableDevices",), partitionable_slices,
             _template([{"name": "gpu", "exactly": {"deviceClassName": CLASS, "count": 2}}],
                       [{"requests": ["gpu"], "matchAttribute": SLICE_ATTRIBUTE}]),
             # the first fit takes both two-counter devices: one claim per node
             1, check_partitionable, pods_per_node=1),
    Workload("consumable", ("DRAConsumableCapacity",), consumable_slices,
             _template([{"name": f"mem-{k}", "exactly": {
                 "deviceClassName": CLASS,
                 "capacity": {"requests": {"memory": f"{REQUEST_MEMORY_GI}Gi"}}}}
                 for k in range(2)]),
             len(SHARED_DEVICES) * SHARED_MEMORY_GI // (2 * REQUEST_MEMORY_GI),
             check_consumable),
    Workload("prioritized", ("DRAPrioritizedList",), basic_slices,
             _template([{"name": "gpu", "firstAvailable": [
                 {"name": "sub-0", "deviceClassName": NO_DEVICES_CLASS},
                 {"name": "sub-1", "deviceClassName": CLASS,
                  "selectors": basic.TEMPLATE["spec"]["spec"]["devices"]["requests"][0][
                      "exactly"]["selectors"]}]}]),
             basic.DEVICES_PER_NODE, check_prioritized,
             device_classes=(basic.DEVICE_CLASS, NO_DEVICES)),
)}


# churn: the standalone claims that fill the cluster ---------------------------------------

def prefill_claims(nodes: int, free: int) -> list[tuple[Obj, Obj]]:
    """(claim, its status) for every device but the last `free`: allocated, not reserved.
    The real resource-claim controller leaves such claims allocated (upstream's
    allocResourceClaims makes the same)."""
    devices = [(n, d) for n in range(nodes) for d in range(basic.DEVICES_PER_NODE)]
    out = []
    for k, (n, d) in enumerate(devices[:max(0, len(devices) - free)]):
        name = node_name(n)
        claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                 "metadata": {"name": f"fill-{k:05d}", "namespace": NS},
                 "spec": {"devices": {"requests": [
                     {"name": "gpu", "exactly": {"deviceClassName": CLASS}}]}}}
        status = {"allocation": {
            "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": name,
                                     "device": f"gpu-{d}"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [name]}]}]}}}
        out.append((claim, status))
    return out
