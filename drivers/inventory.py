"""Turning a preset's short device descriptions into ResourceSlice devices."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from draemu.api.quantity import Quantity
from draemu.api.types import Obj

# The standard attributes (k8s.io/dynamic-resource-allocation/deviceattribute, 1.37) the
# built-in GPU and NIC drivers publish, so that a `matchAttribute` constraint can align a
# GPU with a NIC: the same fully qualified name in every driver's devices. numaNode is
# the device's physical NUMA node as an int.
NUMA_ATTRIBUTE = "resource.kubernetes.io/numaNode"
PCIE_ROOT_ATTRIBUTE = "resource.kubernetes.io/pcieRoot"


def attribute(value: Any) -> Obj:
    """A DeviceAttribute from a plain value; dicts are taken as already typed."""
    if isinstance(value, dict):
        return value
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    return {"string": str(value)}


def quantity(value: Any) -> str:
    """Canonical form, so what we publish is exactly what the apiserver stores."""
    return Quantity.parse(value if isinstance(value, str | int) else str(value)).canonical()


def quantity_bytes(value: Any) -> int:
    return int(Quantity.parse(value if isinstance(value, str | int) else str(value)).value)


def binary(n: int) -> str:
    return Quantity(n, "BinarySI").canonical()


def stable_uuid(*parts: str) -> str:
    """A UUID derived from the node and device, the same on every run."""
    return str(uuid.UUID(hashlib.sha256("/".join(parts).encode()).hexdigest()[:32]))
