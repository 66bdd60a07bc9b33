"""Which devices allocated claims use: exclusively, as shares, and how much capacity.

Built the way the scheduler's DynamicResources plugin gathers it: admin-access results
never make a device busy; with DRAConsumableCapacity a result with a shareID is a share
that consumes capacity; anything else uses the device exclusively.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from draemu.scheduler.dra.model import DeviceID, Exact, quantity


@dataclass
class Usage:
    """What one allocated claim holds."""

    exclusive: list[DeviceID] = field(default_factory=list)
    shares: list[DeviceID] = field(default_factory=list)
    consumed: list[tuple[DeviceID, dict[str, Exact]]] = field(default_factory=list)

    @classmethod
    def of_claim(cls, claim: dict[str, Any], consumable_capacity: bool) -> Usage | None:
        allocation = (claim.get("status") or {}).get("allocation")
        if not allocation:
            return None
        usage = cls()
        for r in (allocation.get("devices") or {}).get("results") or []:
            if r.get("adminAccess"):
                continue
            device = (r.get("driver", ""), r.get("pool", ""), r.get("device", ""))
            if consumable_capacity and r.get("shareID"):
                usage.shares.append(device)
                usage.consumed.append((device, {k: quantity(v) for k, v in
                                                (r.get("consumedCapacity") or {}).items()}))
            else:
                usage.exclusive.append(device)
        return usage


class AllocatedState:
    """Reference-counted usage of every allocated claim."""

    def __init__(self) -> None:
        self._exclusive: Counter[DeviceID] = Counter()
        self._shares: Counter[DeviceID] = Counter()
        self._consumed: dict[DeviceID, dict[str, Exact]] = {}

    def add(self, usage: Usage, sign: int = 1) -> None:
        for d in usage.exclusive:
            self._exclusive[d] += sign
            if self._exclusive[d] <= 0:
                del self._exclusive[d]
        for d in usage.shares:
            self._shares[d] += sign
            if self._shares[d] <= 0:
                del self._shares[d]
        for d, amounts in usage.consumed:
            total = self._consumed.setdefault(d, {})
            for name, v in amounts.items():
                total[name] = total.get(name, 0) + sign * v
            if d not in self._shares:
                del self._consumed[d]

    def remove(self, usage: Usage) -> None:
        self.add(usage, -1)

    def exclusive(self, d: DeviceID) -> bool:
        return d in self._exclusive

    @property
    def exclusive_devices(self) -> Mapping[DeviceID, int]:
        """The devices in exclusive use (live, read only): with how many claims."""
        return self._exclusive

    def all_exclusive(self, devices: Iterable[DeviceID]) -> bool:
        """Whether every one of the devices is in exclusive use."""
        exclusive = self._exclusive
        for d in devices:
            if d not in exclusive:
                return False
        return True

    def shared(self, d: DeviceID) -> bool:
        return d in self._shares or d in self._consumed

    def allocated(self, d: DeviceID) -> bool:
        return d in self._exclusive or d in self._shares or d in self._consumed

    def consumed(self, d: DeviceID, name: str) -> Exact:
        return self._consumed.get(d, {}).get(name, 0)


class StateView:
    """The inventory's state plus allocations not yet in it (the scheduler's in-flight
    claims), without copying the former."""

    def __init__(self, base: AllocatedState, extra: AllocatedState | None) -> None:
        self.base = base
        self.extra = extra
        if extra is None:
            # The common case (nothing in flight on the node), asked for every device
            # the search looks at: the base's own lookup, without two calls around it.
            self.exclusive = base.exclusive_devices.__contains__  # type: ignore[method-assign]

    def exclusive(self, d: DeviceID) -> bool:
        return self.base.exclusive(d) or (self.extra is not None and self.extra.exclusive(d))

    def all_exclusive(self, devices: Iterable[DeviceID]) -> bool:
        """Whether every one of the devices is in exclusive use."""
        if self.extra is None:
            return self.base.all_exclusive(devices)
        base, extra = self.base.exclusive_devices, self.extra.exclusive_devices
        return all(d in base or d in extra for d in devices)

    def shared(self, d: DeviceID) -> bool:
        return self.base.shared(d) or (self.extra is not None and self.extra.shared(d))

    def allocated(self, d: DeviceID) -> bool:
        return self.base.allocated(d) or (self.extra is not None and self.extra.allocated(d))

    def consumed(self, d: DeviceID, name: str) -> Exact:
        v = self.base.consumed(d, name)
        return v + self.extra.consumed(d, name) if self.extra is not None else v
