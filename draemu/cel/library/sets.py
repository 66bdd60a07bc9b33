"""cel-go's sets extension."""

from __future__ import annotations

from draemu.cel.library.lists import as_list
from draemu.cel.library.registry import register
from draemu.cel.values import (
    equal,
)


@register("sets.contains", False, (2,), "bool")
def sets_contains(a: object, b: object) -> bool:
    return all(any(equal(x, y) for y in as_list("sets.contains", a))
               for x in as_list("sets.contains", b))


@register("sets.equivalent", False, (2,), "bool")
def sets_equivalent(a: object, b: object) -> bool:
    return sets_contains(a, b) and sets_contains(b, a)


@register("sets.intersects", False, (2,), "bool")
def sets_intersects(a: object, b: object) -> bool:
    return any(any(equal(x, y) for y in as_list("sets.intersects", b))
               for x in as_list("sets.intersects", a))
