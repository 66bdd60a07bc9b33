"""The resource pool status controller: answers a ResourcePoolStatusRequest (served
when the DRAResourcePoolStatus gate is on) with a snapshot of the driver's pools, then
marks it Complete. A request with status is finished and never touched again.

Per complete pool (the slices of its newest generation, all published): devices in
total, allocated (distinct devices of non-adminAccess results), unavailable (a
NoSchedule/NoExecute taint, on the device or from a DeviceTaintRule) and available, and
two views:

- partitionSummary: devices that consume shared counters, grouped by (attribute,
  value) of their slice's partitionTypeAttribute (or the request's
  defaultPartitionTypeAttribute when no slice of the pool names one); per group the
  devices in total and how many free ones still fit in the counters left by the
  devices in use, each group measured on its own;
- shareableSummary: devices with allowMultipleAllocations, unused or shared, and their
  capacity per name (total, consumed by claims, available).

A structural problem is reported in the pool's validationError, behind a
machine-readable prefix, and drops the partition view. A pool whose slices are not all
published yet (PoolIncomplete) holds the answer back: the request is looked at again a
few times, as the driver may still be publishing."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from draemu.api.meta import name_of, set_condition
from draemu.api.quantity import Quantity
from draemu.api.types import Obj
from draemu.client import ApiError
from draemu.controllers.base import Controller

V1 = "resource.k8s.io/v1"
RPSR_VERSION = "resource.k8s.io/v1alpha3"
_BLOCKING = ("NoSchedule", "NoExecute")
LIMIT_DEFAULT = 100
MAX_STATUS_ITEMS = 32          # maxItems of partitionSummary and shareableSummary.capacity
VALIDATION_ERROR_MAX = 256     # bytes
INCOMPLETE_RETRIES = 5

PREFIX_INCOMPLETE = "PoolIncomplete:"
PREFIX_TYPE_MISSING = "PartitionTypeMissing:"
PREFIX_COST_MISMATCH = "PartitionCostMismatch:"
PREFIX_PARTITION_OVER_CAP = "PartitionSummaryOverCap:"
PREFIX_SHAREABLE_OVER_CAP = "ShareableSummaryOverCap:"

# counter set name -> counter name -> amount
Counters = dict[str, dict[str, Fraction]]


@dataclass
class PoolDevice:
    """One device of a complete pool, as the views need it."""
    name: str
    attributes: Obj = field(default_factory=dict)
    cost: Counters = field(default_factory=dict)        # its consumesCounters
    shareable: bool = False
    capacity: Obj = field(default_factory=dict)
    slice_attribute: str = ""   # partitionTypeAttribute of its own slice
    group_attribute: str = ""   # the attribute that groups it ("" none)
    partition_type: str | None = None   # that attribute's string value, None if absent


@dataclass
class PoolUsage:
    """What the claims of one pool take: devices in use and consumed capacity."""
    in_use: set[str] = field(default_factory=set)
    consumed: dict[str, Quantity] = field(default_factory=dict)


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _amounts(counters: Obj | None) -> dict[str, Fraction]:
    return {name: Quantity.parse((c or {}).get("value", "0")).value
            for name, c in (counters or {}).items()}


def device_cost(device: Obj) -> Counters:
    cost: Counters = {}
    for entry in device.get("consumesCounters") or []:
        cost.setdefault(entry.get("counterSet", ""), {}).update(_amounts(entry.get("counters")))
    return cost


def shared_counters(slices: list[Obj]) -> Counters:
    """The pool's counter sets, merged from its slices (names are unique in a pool)."""
    shared: Counters = {}
    for s in slices:
        for cs in (s.get("spec") or {}).get("sharedCounters") or []:
            shared.setdefault(cs.get("name", ""), {}).update(_amounts(cs.get("counters")))
    return shared


def pool_devices(slices: list[Obj]) -> list[PoolDevice]:
    out = []
    for s in slices:
        spec = s.get("spec") or {}
        for dev in spec.get("devices") or []:
            out.append(PoolDevice(
                name=dev.get("name", ""), attributes=dev.get("attributes") or {},
                cost=device_cost(dev), shareable=bool(dev.get("allowMultipleAllocations")),
                capacity=dev.get("capacity") or {},
                slice_attribute=spec.get("partitionTypeAttribute") or ""))
    return out


def attribute_string(driver: str, attributes: Obj, name: str) -> str | None:
    """The string value of attribute `name` (domain/id) on a device. An attribute of the
    driver's own domain may be written bare; the fully qualified key wins."""
    attr = attributes.get(name)
    if attr is None and name.startswith(driver + "/"):
        attr = attributes.get(name[len(driver) + 1:])
    value = (attr or {}).get("string")
    return value if isinstance(value, str) else None


def resolve_partitions(driver: str, devices: list[PoolDevice],
                       default_attribute: str | None) -> None:
    """Each device is grouped by its own slice's attribute; the request's default applies
    only when no slice of the pool names one."""
    declared = any(d.slice_attribute for d in devices)
    for d in devices:
        d.group_attribute = d.slice_attribute or (
            "" if declared else (default_attribute or ""))
        d.partition_type = (attribute_string(driver, d.attributes, d.group_attribute)
                            if d.group_attribute else None)


def _fits(cost: Counters, avail: Counters) -> bool:
    for set_name, counters in cost.items():
        have = avail.get(set_name, {})
        for name, amount in counters.items():
            if name not in have or have[name] < amount:
                return False
    return True


def _deduct(cost: Counters, avail: Counters) -> None:
    for set_name, counters in cost.items():
        have = avail.get(set_name)
        for name, amount in counters.items():
            if have is not None and name in have:
                have[name] -= amount


def _cost_key(cost: Counters) -> tuple[tuple[str, str, Fraction], ...]:
    return tuple(sorted((s, n, a) for s, counters in cost.items() for n, a in counters.items()))


def _partition_groups(pool_id: str, devices: list[PoolDevice]
                      ) -> tuple[dict[tuple[str, str], list[PoolDevice]], str]:
    """Counter-consuming, grouped devices by (attribute, type); all of a type must cost
    the same."""
    groups: dict[tuple[str, str], list[PoolDevice]] = {}
    for d in devices:
        if not d.cost or not d.group_attribute:
            continue
        if d.partition_type is None:
            return {}, (f"{PREFIX_TYPE_MISSING} device {_quoted(d.name)} in pool {pool_id} does "
                        f"not carry partition type attribute {_quoted(d.group_attribute)}")
        members = groups.setdefault((d.group_attribute, d.partition_type), [])
        if members and _cost_key(members[0].cost) != _cost_key(d.cost):
            return {}, (f"{PREFIX_COST_MISMATCH} devices of partition type "
                        f"{_quoted(d.partition_type)} in pool {pool_id} consume different "
                        "counters")
        members.append(d)
    return groups, ""


def partition_summary(pool_id: str, devices: list[PoolDevice], shared: Counters,
                      in_use: set[str]) -> tuple[list[Obj], str]:
    """One PartitionTypeStatus per (attribute, type), sorted; or a validation error."""
    groups, error = _partition_groups(pool_id, devices)
    if error:
        return [], error
    left = copy.deepcopy(shared)
    for d in devices:
        if d.name in in_use:
            _deduct(d.cost, left)
    out = []
    for (attribute, ptype), members in sorted(groups.items()):
        avail = copy.deepcopy(left)
        allocatable = 0
        for d in members:
            if d.name not in in_use and _fits(d.cost, avail):
                allocatable += 1
                _deduct(d.cost, avail)
        out.append({"attribute": attribute, "type": ptype, "total": len(members),
                    "allocatable": allocatable})
    if len(out) > MAX_STATUS_ITEMS:
        return [], (f"{PREFIX_PARTITION_OVER_CAP} pool {pool_id} has {len(out)} partition "
                    f"types, exceeding the maximum of {MAX_STATUS_ITEMS}")
    return out, ""


def _add(total: Quantity | None, q: Quantity) -> Quantity:
    return q if total is None else Quantity(total.value + q.value, total.format)


def shareable_summary(pool_id: str, devices: list[PoolDevice],
                      usage: PoolUsage) -> tuple[Obj | None, str]:
    """The shareable devices' view (None when the pool has none), or a validation error."""
    shareable = [d for d in devices if d.shareable]
    if not shareable:
        return None, ""
    totals: dict[str, Quantity] = {}
    for d in shareable:
        for key, cap in d.capacity.items():
            totals[key] = _add(totals.get(key), Quantity.parse((cap or {}).get("value", "0")))
    if len(totals) > MAX_STATUS_ITEMS:
        return None, (f"{PREFIX_SHAREABLE_OVER_CAP} pool {pool_id} has {len(totals)} shareable "
                      f"capacity keys, exceeding the maximum of {MAX_STATUS_ITEMS}")
    capacity = []
    for key in sorted(totals):
        total = totals[key]
        consumed = usage.consumed.get(key, Quantity(0))
        available = Quantity(max(Fraction(0), total.value - consumed.value), total.format)
        capacity.append({"name": key, "total": total.canonical(),
                         "consumed": consumed.canonical(), "available": available.canonical()})
    used = sum(1 for d in shareable if d.name in usage.in_use)
    summary: Obj = {"fullyAvailableDevices": len(shareable) - used,
                    "partiallyAvailableDevices": used}
    if capacity:
        summary["capacity"] = capacity
    return summary, ""


def pool_views(pool_id: str, devices: list[PoolDevice], shared: Counters,
               usage: PoolUsage) -> tuple[list[Obj], Obj | None, str]:
    """(partitionSummary, shareableSummary, validationError): the first error wins and
    drops the partition view; the shareable view stands unless it failed itself."""
    summary: list[Obj] = []
    error = ""
    if any(d.group_attribute for d in devices):
        if not shared:
            error = (f"{PREFIX_TYPE_MISSING} pool {pool_id} declares partitionTypeAttribute "
                     "but publishes no sharedCounters")
        else:
            summary, error = partition_summary(pool_id, devices, shared, usage.in_use)
    shareable, shareable_error = shareable_summary(pool_id, devices, usage)
    error = error or shareable_error
    return ([] if error else summary), shareable, error


def claim_usage(driver: str, claims: list[Obj]) -> dict[str, PoolUsage]:
    """Per pool of `driver`: allocated devices and consumed capacity; adminAccess
    results observe and take nothing."""
    usage: dict[str, PoolUsage] = {}
    for c in claims:
        alloc = (c.get("status") or {}).get("allocation") or {}
        for r in (alloc.get("devices") or {}).get("results") or []:
            if r.get("driver") != driver or r.get("adminAccess"):
                continue
            pool = usage.setdefault(r.get("pool", ""), PoolUsage())
            pool.in_use.add(r.get("device", ""))
            for key, value in (r.get("consumedCapacity") or {}).items():
                pool.consumed[key] = _add(pool.consumed.get(key), Quantity.parse(value))
    return usage


def _rule_blocks(rule: Obj, driver: str, pool: str, device: str) -> bool:
    """A DeviceTaintRule with a NoSchedule/NoExecute taint selecting the device (a rule
    without a selector selects nothing)."""
    spec = rule.get("spec") or {}
    sel = spec.get("deviceSelector")
    if (spec.get("taint") or {}).get("effect") not in _BLOCKING or sel is None:
        return False
    return all(sel.get(k) is None or sel[k] == v
               for k, v in (("driver", driver), ("pool", pool), ("device", device)))


def _unavailable(dev: Obj, driver: str, pool: str, rules: list[Obj]) -> bool:
    if any(t.get("effect") in _BLOCKING for t in dev.get("taints") or []):
        return True
    return any(_rule_blocks(r, driver, pool, dev.get("name", "")) for r in rules)


def _newest_slices(driver: str, pool_name: str | None,
                   slices: list[Obj]) -> dict[str, list[Obj]]:
    """Per pool of `driver`, the slices of its newest generation, by name."""
    pools: dict[str, list[Obj]] = {}
    for s in sorted(slices, key=name_of):
        spec = s.get("spec") or {}
        pool = (spec.get("pool") or {}).get("name", "")
        if spec.get("driver") == driver and (pool_name is None or pool == pool_name):
            pools.setdefault(pool, []).append(s)

    def generation(s: Obj) -> int:
        return int(((s.get("spec") or {}).get("pool") or {}).get("generation", 0))

    return {pool: [s for s in members if generation(s) == max(map(generation, members))]
            for pool, members in pools.items()}


def _clip(message: str) -> str:
    """A validationError holds at most 256 bytes."""
    return message.encode()[:VALIDATION_ERROR_MAX].decode(errors="ignore")


def _pool_status(driver: str, pool: str, current: list[Obj], usage: PoolUsage,
                 rules: list[Obj], default_attribute: str | None) -> Obj:
    first = current[0]["spec"]
    generation = int(first["pool"].get("generation", 0))
    status: Obj = {"driver": driver, "poolName": pool, "generation": generation}
    nodes = {(s.get("spec") or {}).get("nodeName") or "" for s in current}
    if len(nodes) == 1 and "" not in nodes:
        status["nodeName"] = nodes.pop()
    pool_id = f"{driver}/{pool}"
    expected = int(first["pool"].get("resourceSliceCount", 0) or 0)
    if len(current) < expected:
        status["validationError"] = _clip(
            f"{PREFIX_INCOMPLETE} pool {pool_id} is incomplete: observed "
            f"{len(current)}/{expected} slices at generation {generation}")
        return status
    raw = [d for s in current for d in (s.get("spec") or {}).get("devices") or []]
    unavailable = sum(1 for d in raw if _unavailable(d, driver, pool, rules))
    allocated = len(usage.in_use)
    status.update({"resourceSliceCount": len(current), "totalDevices": len(raw),
                   "allocatedDevices": allocated, "unavailableDevices": unavailable,
                   "availableDevices": max(0, len(raw) - allocated - unavailable)})
    devices = pool_devices(current)
    resolve_partitions(driver, devices, default_attribute)
    summary, shareable, error = pool_views(pool_id, devices, shared_counters(current), usage)
    if summary:
        status["partitionSummary"] = summary
    if shareable is not None:
        status["shareableSummary"] = shareable
    if error:
        status["validationError"] = _clip(error)
    return status


def pool_statuses(driver: str, pool_name: str | None, slices: list[Obj], claims: list[Obj],
                  rules: list[Obj], default_attribute: str | None = None) -> list[Obj]:
    """One PoolStatus per pool of `driver`, sorted by pool name."""
    usage = claim_usage(driver, claims)
    newest = _newest_slices(driver, pool_name, slices)
    return [_pool_status(driver, pool, newest[pool], usage.get(pool, PoolUsage()), rules,
                         default_attribute)
            for pool in sorted(newest)]


def is_incomplete(pool: Obj) -> bool:
    return (pool.get("validationError") or "").startswith(PREFIX_INCOMPLETE)


class ResourcePoolStatusController(Controller):
    name = "resourcepoolstatus"

    def setup(self) -> None:
        inf = self.ctx.informers
        self.requests = inf.informer(RPSR_VERSION, "resourcepoolstatusrequests")
        self.slices = inf.informer(V1, "resourceslices")
        self.claims = inf.informer(V1, "resourceclaims")
        self.rules = inf.informer(V1, "devicetaintrules")
        self.handlers_enqueue(self.requests)
        self.incomplete_tries: dict[str, int] = {}

    def primary(self) -> Any:
        return self.requests

    async def reconcile(self, key: str) -> float | None:
        req = self.requests.get(key)
        if req is None or req.get("status"):
            self.incomplete_tries.pop(key, None)
            return None
        spec = req.get("spec") or {}
        pools = pool_statuses(spec.get("driver", ""), spec.get("poolName"), self.slices.list(),
                              self.claims.list(), self.rules.list(),
                              spec.get("defaultPartitionTypeAttribute"))
        if any(is_incomplete(p) for p in pools):
            # A driver may still be publishing: look again a few times, with back-off.
            tries = self.incomplete_tries.get(key, 0)
            if tries >= INCOMPLETE_RETRIES:
                self.incomplete_tries.pop(key, None)
                return None
            self.incomplete_tries[key] = tries + 1
            return 0.005 * 2 ** tries
        self.incomplete_tries.pop(key, None)
        await self._answer(req, pools, int(spec.get("limit") or LIMIT_DEFAULT))
        return None

    async def _answer(self, req: Obj, pools: list[Obj], limit: int) -> None:
        shown = pools[:limit]
        flagged = sum(1 for p in shown if p.get("validationError"))
        message = f"Calculated status for {len(shown)} pools"
        if flagged:
            message += f" ({flagged} incomplete)"
        conditions: list[Obj] = []
        set_condition(conditions, "Complete", "True", "CalculationComplete", message)
        fresh = copy.deepcopy(req)
        fresh["status"] = {"poolCount": len(pools), "pools": shown, "conditions": conditions}
        try:
            await self.client.update(RPSR_VERSION, "resourcepoolstatusrequests", fresh,
                                     subresource="status")
        except ApiError as e:
            if e.code != 404:
                raise
        self.log.info("pool status computed", request=name_of(req), pools=len(pools))
