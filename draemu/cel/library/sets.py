"""cel-go's sets extension. Upstream compares every element of one list with every element
of the other (and charges n·m for it, see `draemu.cel.cost`); here scalars are looked up
in a hash set, so the work is n+m and only lists, maps and other values are compared
one by one."""

from __future__ import annotations

import math

from draemu.cel.library.lists import as_list
from draemu.cel.library.registry import register
from draemu.cel.syntax import Uint
from draemu.cel.values import equal

_NUMBERS = (int, float, Uint)


def _key(v: object) -> tuple[str, object] | None:
    """A hashable stand-in with CEL's equality (numbers equal across int, uint and double;
    bools only bools), or None for values compared one by one (NaN equals nothing)."""
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, _NUMBERS):
        if isinstance(v, float) and math.isnan(v):
            return None
        return ("n", v)
    if isinstance(v, str):
        return ("s", v)
    if isinstance(v, bytes):
        return ("y", v)
    if v is None:
        return ("z", None)
    return None


class _Members:
    """The elements of a list, for membership tests."""

    def __init__(self, items: list) -> None:
        self.keys: set[tuple[str, object]] = set()
        self.others: list = []
        for v in items:
            k = _key(v)
            if k is None:
                self.others.append(v)
            else:
                self.keys.add(k)

    def __contains__(self, v: object) -> bool:
        k = _key(v)
        if k is not None:
            return k in self.keys
        return any(equal(v, o) for o in self.others)


@register("sets.contains", False, (2,), "bool")
def sets_contains(a: object, b: object) -> bool:
    members = _Members(as_list("sets.contains", a))
    return all(x in members for x in as_list("sets.contains", b))


@register("sets.equivalent", False, (2,), "bool")
def sets_equivalent(a: object, b: object) -> bool:
    return sets_contains(a, b) and sets_contains(b, a)


@register("sets.intersects", False, (2,), "bool")
def sets_intersects(a: object, b: object) -> bool:
    members = _Members(as_list("sets.intersects", b))
    return any(x in members for x in as_list("sets.intersects", a))
