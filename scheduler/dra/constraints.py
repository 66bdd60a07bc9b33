"""Claim constraints: matchAttribute (same value on every covered device) and
distinctAttribute (pairwise different values), with or without list-type attributes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from draemu.scheduler.dra.model import Device, device_id_str

_SCALARS = ("int", "bool", "string", "version")
_LISTS = {"ints": "int", "bools": "bool", "strings": "string", "versions": "version"}

Value = Any  # (kind, value) for scalars, frozenset of (kind, value) in list mode, or None


def lookup(device: Device, name: str) -> dict[str, Any] | None:
    attrs = device.attributes
    if name in attrs:
        return attrs[name]
    domain, sep, key = name.partition("/")
    if sep and domain == device.id[0] and key in attrs:
        return attrs[key]
    return None


def _scalar(attr: dict[str, Any]) -> Value:
    for kind in _SCALARS:
        if attr.get(kind) is not None:
            return (kind, attr[kind])
    return None


def _as_set(attr: dict[str, Any]) -> Value:
    for kind, element in _LISTS.items():
        if attr.get(kind) is not None:
            return frozenset((element, v) for v in attr[kind]) or None
    scalar = _scalar(attr)
    return frozenset([scalar]) if scalar is not None else None


def show(v: Value) -> str:
    if v is None:
        return "no comparable value"
    if isinstance(v, frozenset):
        return "[" + ", ".join(sorted(str(x[1]) for x in v)) + "]"
    return repr(v[1]) if v[0] == "string" else str(v[1]).lower() if v[0] == "bool" else str(v[1])


class Constraint:
    def __init__(self, index: int, attribute: str, requests: Iterable[str], lists: bool
                 ) -> None:
        self.index = index
        self.attribute = attribute
        self.requests = frozenset(requests)
        self.lists = lists
        self.chosen: list[tuple[Device, Value]] = []

    def covers(self, request: str, subrequest: str | None) -> bool:
        if not self.requests:
            return True
        return request in self.requests or (
            subrequest is not None and f"{request}/{subrequest}" in self.requests)

    def value(self, device: Device, derived: dict[str, Any] | None = None) -> tuple[bool, Value]:
        """`derived`: the value a request's derived attribute of this name gives the device,
        which shadows the device's own attribute."""
        attr = derived if derived is not None else lookup(device, self.attribute)
        if attr is None:
            return False, None
        return True, (_as_set(attr) if self.lists else _scalar(attr))

    def add(self, device: Device, derived: dict[str, Any] | None = None) -> str | None:
        """None if the device may join, else why not."""
        present, v = self.value(device, derived)
        if not present:
            return f"has no attribute {self.attribute} ({self.kind} constraint)"
        reason = self.check(device, v)
        if reason is None:
            self.chosen.append((device, v))
        return reason

    def remove(self, device: Device) -> None:
        for i in range(len(self.chosen) - 1, -1, -1):
            if self.chosen[i][0] is device:
                del self.chosen[i]
                return

    kind = ""

    def check(self, device: Device, v: Value) -> str | None:  # pragma: no cover - abstract
        raise NotImplementedError


class MatchAttribute(Constraint):
    kind = "matchAttribute"

    def check(self, device: Device, v: Value) -> str | None:
        if not self.chosen:
            if self.lists and v is None:
                return f"attribute {self.attribute} is empty (matchAttribute)"
            return None
        first_device, first = self.chosen[0]
        if self.lists:
            running = first
            for _, other in self.chosen[1:]:
                running = running & other
            if v is not None and running and v & running:
                return None
            return (f"{self.attribute} is {show(v)}, which does not intersect "
                    f"{show(running)} of {device_id_str(first_device.id)} (matchAttribute)")
        if v is not None and first is not None and v == first:
            return None
        return (f"{self.attribute} is {show(v)} but {device_id_str(first_device.id)} has "
                f"{show(first)} (matchAttribute)")


class DistinctAttribute(Constraint):
    kind = "distinctAttribute"

    def check(self, device: Device, v: Value) -> str | None:
        if not self.chosen:
            return None
        for other_device, other in self.chosen:
            clash = v is None or other is None or (
                bool(v & other) if self.lists else v == other)
            if clash:
                return (f"{self.attribute} is {show(v)}, not distinct from "
                        f"{device_id_str(other_device.id)} (distinctAttribute)")
        return None
