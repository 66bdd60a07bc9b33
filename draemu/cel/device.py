"""The `device` variable: a ResourceSlice device (v1 JSON) as CEL sees it."""

from __future__ import annotations

from typing import Any

from draemu.cel.errors import CELRuntimeError
from draemu.cel.interpreter import EmptyDomains
from draemu.cel.values import QuantityValue, Semver

_SCALARS = ("bool", "int", "string", "version")
_LISTS = {"bools": "bool", "ints": "int", "strings": "string", "versions": "version"}


class CelDevice:
    """The CEL view of one device, built once and reused for every evaluation.

    A device whose data CEL cannot represent (an attribute without a value, a bad
    version) still converts; the problem is raised by every evaluation, as upstream.
    """

    __slots__ = ("error", "name", "value")

    def __init__(self, device: dict[str, Any], driver: str | None = None) -> None:
        driver = driver if driver is not None else device.get("driver", "")
        self.name = "/".join(x for x in (driver, device.get("pool", ""),
                                         device.get("name", "")) if x)
        self.error: CELRuntimeError | None = None
        attributes: dict[str, dict[str, Any]] = EmptyDomains()
        for name, attr in (device.get("attributes") or {}).items():
            domain, key = _qualify(name, driver)
            try:
                attributes.setdefault(domain, {})[key] = _attribute_value(name, attr)
            except CELRuntimeError as e:
                self.error = self.error or e
        capacity: dict[str, dict[str, Any]] = EmptyDomains()
        for name, cap in (device.get("capacity") or {}).items():
            domain, key = _qualify(name, driver)
            raw = cap.get("value") if isinstance(cap, dict) else cap
            try:
                capacity.setdefault(domain, {})[key] = QuantityValue.parse(str(raw))
            except CELRuntimeError as e:
                self.error = self.error or e
        self.value = {
            "driver": driver,
            "attributes": attributes,
            "capacity": capacity,
            "allowMultipleAllocations": bool(device.get("allowMultipleAllocations", False)),
        }


def _qualify(name: str, driver: str) -> tuple[str, str]:
    domain, sep, key = name.rpartition("/")
    return (domain, key) if sep else (driver, name)


def _attribute_value(name: str, attr: Any) -> Any:
    if isinstance(attr, dict):
        for kind in _SCALARS:
            if kind in attr and attr[kind] is not None:
                return _scalar(kind, attr[kind])
        for kind, element in _LISTS.items():
            if kind in attr and attr[kind] is not None:
                return [_scalar(element, v) for v in attr[kind]]
    raise CELRuntimeError(f"attribute {name}: unsupported attribute value")


def _scalar(kind: str, v: Any) -> Any:
    if kind == "version":
        try:
            return Semver(str(v))
        except ValueError as e:
            raise CELRuntimeError(f"parse semantic version: {e}") from None
    if kind == "int":
        return int(v)
    if kind == "bool":
        return bool(v)
    return str(v)
