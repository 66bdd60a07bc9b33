"""Which resource pools, slices and devices an allocation on one node can use (pool
completeness, generations, validity) and in which order the search visits them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from draemu.api.nodeselector import selector_matches
from draemu.scheduler.dra.inventory import Inventory
from draemu.scheduler.dra.model import Device, DeviceID, Exact, Slice


class NodeSelectionError(Exception):
    pass


@dataclass(eq=False)
class Pool:
    driver: str
    name: str
    generation: int
    slices: list[Slice] = field(default_factory=list)  # device slices targeting the node
    other_slices: list[Slice] = field(default_factory=list)  # same generation, elsewhere
    counter_sets: dict[str, dict[str, Exact]] = field(default_factory=dict)
    incomplete: bool = False
    invalid: str = ""  # why the pool is invalid, empty when valid
    has_binding_conditions: bool = False
    devices: list[Device] = field(default_factory=list)  # candidates, in search order
    id: str = field(init=False)  # driver/name

    def __post_init__(self) -> None:
        self.id = f"{self.driver}/{self.name}"

    @property
    def usable(self) -> bool:
        return not self.incomplete and not self.invalid


@dataclass(eq=False)
class NodePools:
    pools: list[Pool]  # search order
    notes: list[str]  # pools left out entirely (obsolete), for explanations
    # Derived once for every search on the node: the devices of usable pools in search
    # order with each one's pool, the pool of each (by id), and whether some pool that is
    # complete is invalid.
    candidates: list[tuple[Device, Pool]] = field(default_factory=list)
    pool_by_device: dict[int, Pool] = field(default_factory=dict)
    candidate_ids: tuple[DeviceID, ...] = ()
    invalid_pools: bool = False

    def __post_init__(self) -> None:
        self.candidates = [(d, p) for p in self.pools if p.usable for d in p.devices]
        self.candidate_ids = tuple(d.id for d, _ in self.candidates)
        self.pool_by_device = {id(d): p for d, p in self.candidates}
        self.invalid_pools = any(p.invalid and not p.incomplete for p in self.pools)


def node_labels(node: dict[str, Any]) -> tuple[str, dict[str, str]]:
    meta = node.get("metadata") or {}
    return meta.get("name", ""), dict(meta.get("labels") or {})


def node_matches(node_name: str, labels: dict[str, str], target_name: str | None,
                 all_nodes: bool, selector: dict[str, Any] | None) -> bool:
    if target_name:
        return target_name == node_name
    if all_nodes:
        return True
    if selector is not None:
        if not isinstance(selector, dict) or not isinstance(
                selector.get("nodeSelectorTerms", []), list):
            raise NodeSelectionError("malformed node selector")
        return selector_matches(selector, labels, node_name)
    return False


def device_matches_node(device: Device, node_name: str, labels: dict[str, str]) -> bool:
    raw = device.raw
    return node_matches(node_name, labels, raw.get("nodeName"), bool(raw.get("allNodes")),
                        raw.get("nodeSelector"))


def gather(inv: Inventory, node: dict[str, Any]) -> NodePools:
    """The node's pools, kept per node until a slice changes or the node's labels do."""
    meta = node.get("metadata") or {}
    node_name = meta.get("name", "")
    labels = meta.get("labels") or {}
    cached = inv.pool_cache.get(node_name)
    if cached is None or cached[0] != labels:
        labels = dict(labels)
        cached = inv.pool_cache[node_name] = (labels, _gather(inv, node_name, labels))
    return cached[1]


def _ignored(s: Slice, features: Any) -> bool:
    """Slices this allocator cannot handle are left out, which leaves their pool
    incomplete: with DRADeviceCompatibilityGroups off, any slice whose devices declare
    compatibility groups (upstream's sliceUsesCompatibilityGroups)."""
    return s.uses_compatibility_groups and not features.compatibility_groups


def _relevant(s: Slice, node_name: str, labels: dict[str, str], partitionable: bool,
              stable: bool = False) -> bool:
    if not partitionable and (s.per_device is not None or s.shared_counters):
        return False
    if stable and s.shared_counters:
        return True  # upstream's stable allocator takes counter slices whatever they target
    try:
        if s.node_name or s.all_nodes or s.node_selector is not None:
            return node_matches(node_name, labels, s.node_name, s.all_nodes, s.node_selector)
        if s.per_device:
            return any(device_matches_node(d, node_name, labels) for d in s.devices)
    except NodeSelectionError as e:
        raise NodeSelectionError(f"failed to perform node selection for slice {s.name}: {e}") \
            from None
    return False


def _gather(inv: Inventory, node_name: str, labels: dict[str, str]) -> NodePools:
    partitionable = inv.features.partitionable_devices
    stable = inv.features.old_stable
    newest: dict[tuple[str, str], list[Slice]] = {}
    candidates = inv.slices_for_node(node_name)
    if stable and partitionable:
        # The stable allocator looks at every slice, so other nodes' counter slices too.
        candidates += [s for s in inv.slices.values() if s.shared_counters and s.node_name
                       and s.node_name != node_name]
    for s in candidates:
        if _ignored(s, inv.features) or \
                not _relevant(s, node_name, labels, partitionable, stable):
            continue
        kept = newest.get(s.pool_id)
        if kept is None or s.generation > kept[0].generation:
            newest[s.pool_id] = [s]
        elif s.generation == kept[0].generation:
            kept.append(s)
    pools: list[Pool] = []
    notes: list[str] = []
    for (driver, name), kept in newest.items():
        generation = kept[0].generation
        pool = Pool(driver, name, generation)
        expected = kept[0].count
        if len(kept) != expected:
            everywhere = list(inv.by_pool.get((driver, name), {}).values())
            if any(s.generation > generation for s in everywhere):
                notes.append(f"pool {driver}/{name}: generation {generation} is obsolete, a "
                             "newer one is being published")
                continue
            same = [s for s in everywhere
                    if s.generation == generation and not _ignored(s, inv.features)]
            if len(same) == expected:
                kept_ids = {id(s) for s in kept}
                pool.other_slices = [s for s in same if id(s) not in kept_ids]
            else:
                pool.incomplete = True
        _classify(pool, kept, partitionable)
        pools.append(pool)
    # Search order: driver, pool name; pools with binding conditions last.
    pools.sort(key=lambda p: (p.has_binding_conditions, p.driver, p.name))
    return NodePools(pools, notes)


def _classify(pool: Pool, kept: list[Slice], partitionable: bool) -> None:
    slices = sorted(kept, key=lambda s: (s.name, s.order))
    counter_slices = [s for s in [*slices, *pool.other_slices] if partitionable and
                      s.is_counter_slice]
    pool.slices = [s for s in slices if not (partitionable and s.is_counter_slice)]
    for s in counter_slices:
        for set_name, counters in s.shared_counters:
            if set_name in pool.counter_sets:
                pool.invalid = pool.invalid or f"counter set {set_name} is defined twice"
            pool.counter_sets[set_name] = counters
    seen: set[str] = set()
    for s in pool.slices:
        for d in s.devices:
            if d.name in seen:
                pool.invalid = pool.invalid or f"device {d.name} is listed twice"
            seen.add(d.name)
    if partitionable:
        for s in [*pool.slices, *pool.other_slices]:
            if not s.is_counter_slice:
                for d in s.devices:
                    pool.invalid = pool.invalid or _unknown_counters(pool, d)
    pool.devices = [d for s in pool.slices for d in s.devices]
    # Only a complete, valid pool goes last for them: upstream keeps an incomplete or
    # invalid one (which it describes without its slices) in its place by name.
    pool.has_binding_conditions = not pool.incomplete and not pool.invalid and \
        any(d.binding_conditions for d in pool.devices)


def _unknown_counters(pool: Pool, device: Device) -> str:
    """Why the device draws from counters its pool does not define ("" if it does not)."""
    for set_name, counters in device.consumes:
        known = pool.counter_sets.get(set_name)
        if known is None:
            return f"device {device.name} consumes unknown counter set {set_name}"
        if any(c not in known for c in counters):
            return f"device {device.name} consumes an unknown counter of set {set_name}"
    return ""
