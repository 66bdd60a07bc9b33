"""The allocator's typed view of ResourceSlices and their devices, built once per slice
version from the v1 JSON and reused by every allocation attempt."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any

from draemu.api.quantity import Quantity, QuantityError
from draemu.cel import CelDevice, CELRuntimeError

DeviceID = tuple[str, str, str]  # driver, pool, device name
# An exact amount: an int when whole (almost every quantity a slice or a claim carries:
# bytes, counts), else a Fraction. Ints add and compare several times faster than
# Fractions, and the allocator's counter and capacity sums are its inner loop.
Exact = int | Fraction


def device_id_str(d: DeviceID) -> str:
    return "/".join(d)


def quantity(value: Any) -> Exact:
    """A quantity as an exact number; unparsable values read as 0 (validation's job)."""
    if isinstance(value, dict):
        value = value.get("value")
    if value is None:
        return 0
    return _parsed(value if isinstance(value, (int, float)) else str(value))[0]


def quantity_format(value: Any) -> str:
    """The format a quantity is written in (BinarySI for 1Gi, DecimalSI for 1G or 1)."""
    if isinstance(value, dict):
        value = value.get("value")
    if value is None:
        return "DecimalSI"
    return _parsed(value if isinstance(value, (int, float)) else str(value))[1] or "DecimalSI"


# Slices repeat the same few quantity strings on every device of every node: parsed once.
@lru_cache(maxsize=4096, typed=True)
def _parsed(value: str | float) -> tuple[Exact, str | None]:
    """The quantity's exact value and its format (None, and 0, when it does not parse)."""
    try:
        q = Quantity.parse(value)
    except QuantityError:
        return 0, None
    return (q.value.numerator if q.value.denominator == 1 else q.value), q.format


@dataclass(eq=False)
class Capacity:
    value: Exact
    policy: dict[str, Any] | None
    format: str = "DecimalSI"  # how consumed amounts of it are written (1Gi stays binary)
    parsed_policy: Any = None  # the request policy's quantities, read on first use


def _capacity(raw: Any) -> Capacity:
    raw = raw if isinstance(raw, dict) else {"value": raw}
    fmt = _parsed(str(raw.get("value")))[1] or "DecimalSI"
    return Capacity(quantity(raw.get("value")), raw.get("requestPolicy"), fmt)


@dataclass(eq=False)
class Device:
    id: DeviceID
    slice: Slice
    raw: dict[str, Any]
    capacity: dict[str, Capacity]
    consumes: list[tuple[str, dict[str, Exact]]]
    allow_multiple: bool
    binding_conditions: list[str]
    binding_failure_conditions: list[str]
    binds_to_node: bool
    # CEL verdicts by expression; slice updates build new Device objects, so a verdict
    # lives exactly as long as the slice generation it was computed for.
    verdicts: dict[str, bool | CELRuntimeError] = field(default_factory=dict)
    # Derived attribute values by expression, with the same lifetime.
    derived: dict[str, dict[str, Any] | CELRuntimeError] = field(default_factory=dict)
    # DRADeviceCompatibilityGroups: counter set → the groups its consumption declares.
    groups: dict[str, frozenset[str]] = field(default_factory=dict)
    # What requests consume of its capacities (capacity.consumption), by the requests.
    consumptions: dict[tuple[tuple[str, Exact], ...], dict[str, Exact] | None] = field(
        default_factory=dict)
    # Constraints' comparable values of its attributes, by (attribute, list mode).
    constraint_values: dict[tuple[str, bool], tuple[bool, Any]] = field(default_factory=dict)
    has_request_policy: bool = field(init=False)
    _cel: CelDevice | None = None

    def __post_init__(self) -> None:
        self.has_request_policy = any(c.policy for c in self.capacity.values())

    @property
    def name(self) -> str:
        return self.id[2]

    @property
    def attributes(self) -> dict[str, dict[str, Any]]:
        return self.raw.get("attributes") or {}

    @property
    def own_taints(self) -> list[dict[str, Any]]:
        return self.raw.get("taints") or []

    def cel(self) -> CelDevice:
        if self._cel is None:
            self._cel = CelDevice({**self.raw, "pool": self.id[1]}, driver=self.id[0])
        return self._cel


@dataclass(eq=False)
class Slice:
    name: str
    driver: str
    pool: str
    generation: int
    count: int
    node_name: str | None
    node_selector: dict[str, Any] | None
    all_nodes: bool
    per_device: bool | None  # None when the field is unset
    shared_counters: list[tuple[str, dict[str, Exact]]]
    devices: list[Device]
    order: int  # arrival order, for stable sorting of equal names
    has_binding_conditions: bool
    uses_compatibility_groups: bool = False
    skip_node_operations: list[str] = field(default_factory=list)

    @property
    def pool_id(self) -> tuple[str, str]:
        return (self.driver, self.pool)

    @property
    def is_counter_slice(self) -> bool:
        return bool(self.shared_counters)


def build_slice(obj: dict[str, Any], order: int) -> Slice:
    spec = obj.get("spec") or {}
    pool = spec.get("pool") or {}
    counters = [(cs.get("name", ""),
                 {k: quantity(v) for k, v in (cs.get("counters") or {}).items()})
                for cs in spec.get("sharedCounters") or []]
    s = Slice(
        name=(obj.get("metadata") or {}).get("name", ""),
        driver=spec.get("driver", ""),
        pool=pool.get("name", ""),
        generation=int(pool.get("generation") or 0),
        count=int(pool.get("resourceSliceCount") or 0),
        node_name=spec.get("nodeName") or None,
        node_selector=spec.get("nodeSelector"),
        all_nodes=bool(spec.get("allNodes")),
        per_device=spec.get("perDeviceNodeSelection"),
        shared_counters=counters,
        devices=[],
        order=order,
        has_binding_conditions=False,
        skip_node_operations=list(spec.get("skipNodeOperations") or []),
    )
    for raw in spec.get("devices") or []:
        device = Device(
            id=(s.driver, s.pool, raw.get("name", "")),
            slice=s,
            raw=raw,
            capacity={k: _capacity(v) for k, v in (raw.get("capacity") or {}).items()},
            consumes=[(c.get("counterSet", ""),
                       {k: quantity(v) for k, v in (c.get("counters") or {}).items()})
                      for c in raw.get("consumesCounters") or []],
            allow_multiple=bool(raw.get("allowMultipleAllocations")),
            binding_conditions=list(raw.get("bindingConditions") or []),
            binding_failure_conditions=list(raw.get("bindingFailureConditions") or []),
            binds_to_node=bool(raw.get("bindsToNode")),
            groups={c.get("counterSet", ""): frozenset(c.get("compatibilityGroups") or ())
                    for c in raw.get("consumesCounters") or []},
        )
        s.uses_compatibility_groups = s.uses_compatibility_groups or any(device.groups.values())
        s.devices.append(device)
        s.has_binding_conditions = s.has_binding_conditions or bool(device.binding_conditions)
    return s
