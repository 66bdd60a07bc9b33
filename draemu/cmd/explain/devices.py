"""A table of every device the drivers publish, with who has it and what is left:
`draemu devices`. For devices that allow multiple allocations, the consumed capacity of
each claim and the remaining capacity are shown."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from draemu.api.quantity import Quantity

V1 = "resource.k8s.io/v1"
_MODEL_KEYS = ("model", "productName", "type")


@dataclass
class DeviceRow:
    node: str
    driver: str
    pool: str
    device: str
    model: str
    capacity: dict[str, Quantity]
    shared: bool
    users: list[tuple[str, dict[str, Fraction]]] = field(default_factory=list)

    def free(self) -> str:
        if not self.users:
            return "all"
        if not self.shared:
            return "none"
        left = []
        for name, total in sorted(self.capacity.items()):
            used = sum(u.get(name, Fraction(0)) for _, u in self.users)
            left.append(f"{name}={Quantity(total.value - used, total.format).canonical()}")
        return ",".join(left) or "-"


def _model(attributes: dict[str, Any]) -> str:
    for key in _MODEL_KEYS:
        for name, value in attributes.items():
            if name.rsplit("/", 1)[-1] == key and isinstance(value, dict):
                return str(next(iter(value.values())))
    return ""


def build(slices: list[dict[str, Any]], claims: list[dict[str, Any]]) -> list[DeviceRow]:
    rows: dict[tuple[str, str, str], DeviceRow] = {}
    for s in slices:
        spec = s.get("spec") or {}
        driver, pool = spec.get("driver", ""), (spec.get("pool") or {}).get("name", "")
        for dev in spec.get("devices") or []:
            capacity = {name.rsplit("/", 1)[-1]: Quantity.parse(c.get("value", "0"))
                        for name, c in (dev.get("capacity") or {}).items()}
            node = dev.get("nodeName") or spec.get("nodeName") or (
                "(all nodes)" if spec.get("allNodes") or dev.get("allNodes") else "(selector)")
            rows[(driver, pool, dev["name"])] = DeviceRow(
                node, driver, pool, dev["name"], _model(dev.get("attributes") or {}), capacity,
                bool(dev.get("allowMultipleAllocations")))
    for c in claims:
        meta = c.get("metadata") or {}
        who = f"{meta.get('namespace')}/{meta.get('name')}"
        alloc = (c.get("status") or {}).get("allocation") or {}
        for r in (alloc.get("devices") or {}).get("results") or []:
            row = rows.get((r.get("driver"), r.get("pool"), r.get("device")))
            if row is None:
                continue
            consumed = {name.rsplit("/", 1)[-1]: Quantity.parse(v).value
                        for name, v in (r.get("consumedCapacity") or {}).items()}
            row.users.append((who, consumed))
    return sorted(rows.values(), key=lambda r: (r.node, r.driver, r.pool, _natural(r.device)))


def _natural(name: str) -> tuple[Any, ...]:
    head = name.rstrip("0123456789")
    tail = name[len(head):]
    return (head, int(tail) if tail else -1)


def render(rows: list[DeviceRow]) -> str:
    header = ("NODE", "DRIVER", "DEVICE", "MODEL", "CAPACITY", "ALLOCATED TO", "FREE")
    table = [header]
    for r in rows:
        cap = ",".join(f"{k}={v.canonical()}" for k, v in sorted(r.capacity.items())) or "-"
        users = ", ".join(
            who + (" (" + ",".join(f"{k}={Quantity(v, 'BinarySI').canonical()}"
                                   for k, v in sorted(used.items())) + ")" if used else "")
            for who, used in r.users) or "-"
        table.append((r.node, r.driver, r.device, r.model or "-", cap, users, r.free()))
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    return "\n".join("   ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))
                     .rstrip() for row in table)
