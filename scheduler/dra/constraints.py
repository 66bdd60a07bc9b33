"""Claim constraints: matchAttribute (same value on every covered device) and
distinctAttribute (pairwise different values), with or without list-type attributes."""

from __future__ import annotations

from collections.abc import Callable, Iterable
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


def _item(kind: str, value: Any, precedence: bool) -> tuple[str, Any]:
    """With `precedence` (1.38), versions compare as semver's Equals does: build metadata
    ("+...") does not count."""
    if precedence and kind == "version" and isinstance(value, str):
        return kind, value.partition("+")[0]
    return kind, value


def _scalar(attr: dict[str, Any], precedence: bool = False) -> Value:
    for kind in _SCALARS:
        if attr.get(kind) is not None:
            return _item(kind, attr[kind], precedence)
    return None


def _as_set(attr: dict[str, Any], precedence: bool = False) -> Value:
    for kind, element in _LISTS.items():
        if attr.get(kind) is not None:
            return frozenset(_item(element, v, precedence) for v in attr[kind]) or None
    scalar = _scalar(attr, precedence)
    return frozenset([scalar]) if scalar is not None else None


def show(v: Value) -> str:
    if v is None:
        return "no comparable value"
    if isinstance(v, frozenset):
        return "[" + ", ".join(sorted(str(x[1]) for x in v)) + "]"
    return repr(v[1]) if v[0] == "string" else str(v[1]).lower() if v[0] == "bool" else str(v[1])


# Why a device cannot join, made into words only when an explanation asks (a search may
# turn down thousands of devices and explain none of them).
Reason = Callable[[], str]


class Constraint:
    def __init__(self, index: int, attribute: str, requests: Iterable[str], lists: bool,
                 precedence: bool = False) -> None:
        """`lists`: list-type attributes (DRAListTypeAttributes); `precedence`: versions
        equal by semver precedence, build metadata aside (1.38)."""
        self.index = index
        self.attribute = attribute
        self.requests = frozenset(requests)
        self.lists = lists
        self.precedence = precedence
        self.chosen: list[tuple[Device, Value]] = []
        self._key = (attribute, lists, precedence)

    def covers(self, request: str, subrequest: str | None) -> bool:
        if not self.requests:
            return True
        return request in self.requests or (
            subrequest is not None and f"{request}/{subrequest}" in self.requests)

    def value(self, device: Device, derived: dict[str, Any] | None = None) -> tuple[bool, Value]:
        """`derived`: the value a request's derived attribute of this name gives the device,
        which shadows the device's own attribute. A device's own value is worked out once
        (its attributes do not change: a slice update makes new Device objects)."""
        if derived is None:
            known = device.constraint_values.get(self._key)
            if known is None:
                known = device.constraint_values[self._key] = \
                    self._value(lookup(device, self.attribute))
            return known
        return self._value(derived)

    def _value(self, attr: dict[str, Any] | None) -> tuple[bool, Value]:
        if attr is None:
            return False, None
        return True, (_as_set(attr, self.precedence) if self.lists
                      else _scalar(attr, self.precedence))

    def add(self, device: Device, derived: dict[str, Any] | None = None) -> Reason | None:
        """None if the device may join, else why not."""
        present, v = self.value(device, derived)
        if not present:
            attribute, kind = self.attribute, self.kind
            return lambda: f"has no attribute {attribute} ({kind} constraint)"
        reason = self.check(device, v)
        if reason is None:
            self._join(device, v)
        return reason

    def _join(self, device: Device, v: Value) -> None:
        self.chosen.append((device, v))

    def remove(self, device: Device) -> None:
        for i in range(len(self.chosen) - 1, -1, -1):
            if self.chosen[i][0] is device:
                del self.chosen[i]
                self._removed(i)
                return

    def _removed(self, index: int) -> None:
        """The device at `index` of `chosen` left."""

    kind = ""

    def check(self, device: Device, v: Value) -> Reason | None:  # pragma: no cover - abstract
        raise NotImplementedError


class MatchAttribute(Constraint):
    kind = "matchAttribute"

    def __init__(self, index: int, attribute: str, requests: Iterable[str], lists: bool,
                 precedence: bool = False) -> None:
        super().__init__(index, attribute, requests, lists, precedence)
        # Lists: the values every device chosen so far has in common, after each of them.
        self._common: list[Value] = []

    def _join(self, device: Device, v: Value) -> None:
        super()._join(device, v)
        if self.lists:
            self._common.append(v if not self._common else self._common[-1] & v)

    def _removed(self, index: int) -> None:
        if self.lists:
            del self._common[index:]
            for _, v in self.chosen[index:]:
                self._common.append(v if not self._common else self._common[-1] & v)

    def check(self, device: Device, v: Value) -> Reason | None:
        if not self.chosen:
            if self.lists and v is None:
                attribute = self.attribute
                return lambda: f"attribute {attribute} is empty (matchAttribute)"
            return None
        first_device, first = self.chosen[0]
        attribute = self.attribute
        if self.lists:
            running = self._common[-1]
            if v is not None and running and not v.isdisjoint(running):
                return None
            return lambda: (f"{attribute} is {show(v)}, which does not intersect "
                            f"{show(running)} of {device_id_str(first_device.id)} "
                            "(matchAttribute)")
        if v is not None and first is not None and v == first:
            return None
        return lambda: (f"{attribute} is {show(v)} but {device_id_str(first_device.id)} has "
                        f"{show(first)} (matchAttribute)")


class DistinctAttribute(Constraint):
    kind = "distinctAttribute"

    def check(self, device: Device, v: Value) -> Reason | None:
        if not self.chosen:
            return None
        for other_device, other in self.chosen:
            clash = v is None or other is None or (
                not v.isdisjoint(other) if self.lists else v == other)
            if clash:
                attribute = self.attribute
                return lambda: (f"{attribute} is {show(v)}, not distinct from "
                                f"{device_id_str(other_device.id)} (distinctAttribute)")
        return None
