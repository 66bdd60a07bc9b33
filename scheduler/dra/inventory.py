"""The long-lived inputs of the allocator, updated incrementally from informer events:
DeviceClasses, ResourceSlices (indexed by node and pool), DeviceTaintRules and the
devices that allocated claims hold."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from draemu.features import FeatureGates
from draemu.scheduler.dra.features import Features
from draemu.scheduler.dra.model import DeviceID, Slice, build_slice
from draemu.scheduler.dra.state import AllocatedState, Usage

# What reading a structurally wrong object raises (a string where a list belongs, ...).
MALFORMED = (TypeError, ValueError, AttributeError, KeyError)


def claim_key(claim: dict[str, Any]) -> str:
    meta = claim.get("metadata") or {}
    ns, name = meta.get("namespace"), meta.get("name", "")
    return f"{ns}/{name}" if ns else str(name)


class Inventory:
    def __init__(self, gates: FeatureGates | None = None) -> None:
        self.features = Features.from_gates(gates)
        self.classes: dict[str, dict[str, Any]] = {}
        # Bumped on every class change; claims prepared against the classes check it.
        self.class_epoch = 0
        self.slices: dict[str, Slice] = {}
        self.by_node: dict[str, dict[str, Slice]] = {}
        self.unbound: dict[str, Slice] = {}  # slices without nodeName
        self.by_pool: dict[tuple[str, str], dict[str, Slice]] = {}
        self.taint_rules: dict[str, dict[str, Any]] = {}
        self.state = AllocatedState()
        self._usage: dict[str, Usage] = {}
        # Device → the keys of the allocated claims in _usage that use it.
        self._holders: dict[DeviceID, set[str]] = {}
        self._order = 0
        # Bumped on every slice change; caches of per-node pool gathering check it.
        self.slice_epoch = 0
        self._taint_cache: dict[DeviceID, list[dict[str, Any]]] = {}
        # node name -> (its labels, its NodePools), for pools.gather
        self.pool_cache: dict[str, tuple[dict[str, str], Any]] = {}
        # Objects too malformed to use (never the case for objects an apiserver
        # validated): name or key → why. They are left out.
        self.rejected: dict[str, str] = {}

    # --- classes ---------------------------------------------------------------------

    def set_class(self, obj: dict[str, Any]) -> None:
        self.classes[(obj.get("metadata") or {}).get("name", "")] = obj
        self.class_epoch += 1

    def remove_class(self, name: str) -> None:
        self.classes.pop(name, None)
        self.class_epoch += 1

    # --- slices ----------------------------------------------------------------------

    def set_slice(self, obj: dict[str, Any]) -> None:
        name = str((obj.get("metadata") or {}).get("name", ""))
        self.remove_slice(name)
        self._order += 1
        try:
            s = build_slice(obj, self._order)
            hash((s.pool_id, s.node_name))
        except MALFORMED as e:
            self.rejected[f"ResourceSlice {name}"] = f"malformed: {e}"
            return
        self.rejected.pop(f"ResourceSlice {name}", None)
        self.slices[name] = s
        if s.node_name:
            self.by_node.setdefault(s.node_name, {})[name] = s
        else:
            self.unbound[name] = s
        self.by_pool.setdefault(s.pool_id, {})[name] = s
        self._slices_changed()

    def remove_slice(self, name: str) -> None:
        s = self.slices.pop(name, None)
        if s is None:
            return
        if s.node_name:
            node = self.by_node.get(s.node_name, {})
            node.pop(name, None)
            if not node:
                self.by_node.pop(s.node_name, None)
        else:
            self.unbound.pop(name, None)
        pool = self.by_pool.get(s.pool_id, {})
        pool.pop(name, None)
        if not pool:
            self.by_pool.pop(s.pool_id, None)
        self._slices_changed()

    def _slices_changed(self) -> None:
        self.slice_epoch += 1
        self.pool_cache.clear()
        self._taint_cache.clear()

    def slices_for_node(self, node_name: str) -> list[Slice]:
        """Slices that may target the node: its own and those without nodeName."""
        return [*self.by_node.get(node_name, {}).values(), *self.unbound.values()]

    # --- taint rules -----------------------------------------------------------------

    def set_taint_rule(self, obj: dict[str, Any]) -> None:
        self.taint_rules[(obj.get("metadata") or {}).get("name", "")] = obj
        self._taint_cache.clear()

    def remove_taint_rule(self, name: str) -> None:
        if self.taint_rules.pop(name, None) is not None:
            self._taint_cache.clear()

    def taints(self, device: Any) -> list[dict[str, Any]]:
        """The device's own taints plus those DeviceTaintRules add to it."""
        if not self.taint_rules or not self.features.device_taint_rules:
            return device.own_taints
        cached = self._taint_cache.get(device.id)
        if cached is None:
            cached = list(device.own_taints)
            for name in sorted(self.taint_rules):
                spec = self.taint_rules[name].get("spec") or {}
                if _rule_selects(spec.get("deviceSelector"), device.id) and spec.get("taint"):
                    cached.append(spec["taint"])
            self._taint_cache[device.id] = cached
        return cached

    # --- claims ----------------------------------------------------------------------

    def set_claim(self, obj: dict[str, Any]) -> None:
        key = claim_key(obj)
        self.remove_claim(key)
        try:
            usage = Usage.of_claim(obj, self.features.consumable_capacity)
            if usage is not None:
                for device in [*usage.exclusive, *usage.shares]:
                    hash(device)
        except MALFORMED as e:
            self.rejected[f"ResourceClaim {key}"] = f"malformed status.allocation: {e}"
            return
        self.rejected.pop(f"ResourceClaim {key}", None)
        if usage is None:
            return
        self._usage[key] = usage
        for device in {*usage.exclusive, *usage.shares}:
            self._holders.setdefault(device, set()).add(key)
        self.state.add(usage)

    def remove_claim(self, key: str) -> None:
        usage = self._usage.pop(key, None)
        if usage is not None:
            for device in {*usage.exclusive, *usage.shares}:
                keys = self._holders.get(device)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del self._holders[device]
            self.state.remove(usage)

    def hide(self, keys: Iterable[str]) -> list[Usage]:
        """Preemption's dry run: the devices of these allocated claims count as free until
        `unhide` gets the returned usages back."""
        hidden = []
        for key in keys:
            usage = self._usage.get(key)
            if usage is not None:
                self.state.remove(usage)
                hidden.append(usage)
        return hidden

    def unhide(self, hidden: list[Usage]) -> None:
        for usage in hidden:
            self.state.add(usage)

    def has_claim_usage(self, key: str) -> bool:
        return key in self._usage

    def holders(self, device: DeviceID) -> list[str]:
        """Allocated claims that use the device (for explanations)."""
        return sorted(self._holders.get(device, ()))


def _rule_selects(selector: dict[str, Any] | None, device: DeviceID) -> bool:
    # A missing selector selects nothing; an empty one selects every device.
    if selector is None:
        return False
    driver, pool, name = device
    return all(selector.get(k) in (None, v)
               for k, v in (("driver", driver), ("pool", pool), ("device", name)))
