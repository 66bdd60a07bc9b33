"""The resource pool status controller: answers a ResourcePoolStatusRequest (served
when the DRAResourcePoolStatus gate is on) with a snapshot of the driver's pools —
devices in total, allocated, unavailable (tainted NoSchedule/NoExecute) and available
— then marks it Complete. A request with status is finished and never touched again."""

from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any

from draemu.api.meta import name_of, set_condition
from draemu.api.quantity import Quantity
from draemu.api.types import Obj
from draemu.client import ApiError
from draemu.controllers.base import Controller
from draemu.controllers.devicetainteviction import rule_selects

V1 = "resource.k8s.io/v1"
RPSR_VERSION = "resource.k8s.io/v1alpha3"
_BLOCKING = ("NoSchedule", "NoExecute")


def pool_statuses(driver: str, pool_name: str | None, slices: list[Obj], claims: list[Obj],
                  rules: list[Obj]) -> list[Obj]:
    """One PoolStatus per pool of `driver`, sorted by pool name."""
    pools: dict[str, list[Obj]] = {}
    for s in slices:
        spec = s.get("spec") or {}
        pool = (spec.get("pool") or {}).get("name", "")
        if spec.get("driver") == driver and (pool_name is None or pool == pool_name):
            pools.setdefault(pool, []).append(s)
    used: dict[tuple[str, str], list[dict[str, Fraction]]] = {}
    for c in claims:
        alloc = (c.get("status") or {}).get("allocation") or {}
        for r in (alloc.get("devices") or {}).get("results") or []:
            if r.get("driver") == driver:
                used.setdefault((r.get("pool", ""), r.get("device", "")), []).append(
                    {k.rsplit("/", 1)[-1]: Quantity.parse(v).value
                     for k, v in (r.get("consumedCapacity") or {}).items()})
    out = []
    for pool in sorted(pools):
        members = pools[pool]
        generation = max(int(((s.get("spec") or {}).get("pool") or {}).get("generation", 0))
                         for s in members)
        current = [s for s in members if int(s["spec"]["pool"].get("generation", 0)) ==
                   generation]
        status: Obj = {"driver": driver, "poolName": pool, "generation": generation,
                       "resourceSliceCount": len(current)}
        nodes = {(s.get("spec") or {}).get("nodeName") for s in current}
        if len(nodes) == 1 and None not in nodes:
            status["nodeName"] = nodes.pop()
        expected = int(current[0]["spec"]["pool"].get("resourceSliceCount", len(current)))
        if len(current) < expected:
            status["validationError"] = (f"pool is incomplete: {len(current)} of {expected} "
                                         f"ResourceSlices of generation {generation} published")
            out.append(status)
            continue
        total = allocated = unavailable = 0
        fully = partially = 0
        capacity: dict[str, list[Fraction]] = {}
        for s in current:
            for dev in (s.get("spec") or {}).get("devices") or []:
                total += 1
                users = used.get((pool, dev["name"]), [])
                taints = list(dev.get("taints") or []) + [
                    (r.get("spec") or {}).get("taint") or {} for r in rules
                    if rule_selects(r, (driver, pool, dev["name"]))]
                if dev.get("allowMultipleAllocations"):
                    if not users:
                        fully += 1
                    else:
                        partially += 1
                    for cname, c in (dev.get("capacity") or {}).items():
                        key = cname.rsplit("/", 1)[-1]
                        tot = Quantity.parse(c.get("value", "0")).value
                        consumed = sum(u.get(key, Fraction(0)) for u in users)
                        acc = capacity.setdefault(key, [Fraction(0), Fraction(0)])
                        acc[0] += tot
                        acc[1] += consumed
                if users:
                    allocated += 1
                elif any(t.get("effect") in _BLOCKING for t in taints):
                    unavailable += 1
        status.update({"totalDevices": total, "allocatedDevices": allocated,
                       "unavailableDevices": unavailable,
                       "availableDevices": total - allocated - unavailable})
        if fully or partially:
            status["shareableSummary"] = {
                "fullyAvailableDevices": fully, "partiallyAvailableDevices": partially,
                "capacity": [{"name": k, "total": Quantity(v[0], "BinarySI").canonical(),
                              "consumed": Quantity(v[1], "BinarySI").canonical(),
                              "available": Quantity(v[0] - v[1], "BinarySI").canonical()}
                             for k, v in sorted(capacity.items())][:32]}
        out.append(status)
    return out


class ResourcePoolStatusController(Controller):
    name = "resourcepoolstatus"

    def setup(self) -> None:
        inf = self.ctx.informers
        self.requests = inf.informer(RPSR_VERSION, "resourcepoolstatusrequests")
        self.slices = inf.informer(V1, "resourceslices")
        self.claims = inf.informer(V1, "resourceclaims")
        self.rules = inf.informer(V1, "devicetaintrules")
        self.handlers_enqueue(self.requests)

    def primary(self) -> Any:
        return self.requests

    async def reconcile(self, key: str) -> float | None:
        req = self.requests.get(key)
        if req is None or req.get("status"):
            return None
        spec = req.get("spec") or {}
        pools = pool_statuses(spec.get("driver", ""), spec.get("poolName"), self.slices.list(),
                              self.claims.list(), self.rules.list())
        limit = int(spec.get("limit") or 100)
        conditions: list[Obj] = []
        set_condition(conditions, "Complete", "True", "PoolsListed",
                      f"{len(pools)} pools of driver {spec.get('driver')}")
        fresh = copy.deepcopy(req)
        fresh["status"] = {"poolCount": len(pools), "pools": pools[:limit],
                           "conditions": conditions}
        gen = req.get("metadata", {}).get("generation")
        if gen is not None:
            for cond in conditions:
                cond["observedGeneration"] = gen
        try:
            await self.client.update(RPSR_VERSION, "resourcepoolstatusrequests", fresh,
                                     subresource="status")
        except ApiError as e:
            if e.code != 404:
                raise
        self.log.info("pool status computed", request=name_of(req), pools=len(pools))
        return None
