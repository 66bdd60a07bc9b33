"""cel-go's size and cost ranges: (min, max) pairs of unsigned 64-bit counts whose
arithmetic saturates at 2^64-1 instead of overflowing, and the sizes of a container's
entries."""

from __future__ import annotations

import math
from dataclasses import dataclass

from draemu.cel.cost import UINT64_MAX

Range = tuple[int, int]

UNKNOWN: Range = (0, UINT64_MAX)
ZERO: Range = (0, 0)
ONE: Range = (1, 1)


def fixed(n: int) -> Range:
    return (n, n)


def add(a: Range, b: Range) -> Range:
    return (min(a[0] + b[0], UINT64_MAX), min(a[1] + b[1], UINT64_MAX))


def multiply(a: Range, b: Range) -> Range:
    return (min(a[0] * b[0], UINT64_MAX), min(a[1] * b[1], UINT64_MAX))


def _by_factor(x: int, factor: float) -> int:
    fx = float(x)
    if fx > 0 and factor > 0 and fx > UINT64_MAX / factor:
        return UINT64_MAX
    c = math.ceil(fx * factor)
    return UINT64_MAX if c >= 2**64 else c


def by_factor(a: Range, factor: float) -> Range:
    """cel-go's MultiplyByCostFactor: each bound times `factor`, rounded up."""
    return (_by_factor(a[0], factor), _by_factor(a[1], factor))


def union(a: Range, b: Range) -> Range:
    return (min(a[0], b[0]), max(a[1], b[1]))


@dataclass
class Entry:
    """The sizes of a container's keys (indexes) and values (cel-go's
    entrySizeEstimate)."""

    container: str  # "list" or "map"
    key: Range
    value: Range

    def union(self, other: Entry | None) -> Entry | None:
        if other is None:
            return None
        return Entry(self.container, union(self.key, other.key),
                     union(self.value, other.value))
