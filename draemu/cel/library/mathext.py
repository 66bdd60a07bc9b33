"""cel-go's math extension (math.greatest, math.least)."""

from __future__ import annotations

from draemu.cel.errors import CELRuntimeError
from draemu.cel.library.registry import register
from draemu.cel.values import (
    is_number,
    no_overload,
)


def _math_pick(name: str, args: tuple, sign_: int) -> object:
    items = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else args
    if not items:
        raise CELRuntimeError(f"{name}(list) argument must not be empty")
    for x in items:
        if not is_number(x):
            raise no_overload(name, x)
    best = items[0]
    for x in items[1:]:
        if (x > best if sign_ > 0 else x < best):
            best = x
    return best


@register("math.greatest", False, (1, 2, 3, 4, 5, 6), "dyn")
def math_greatest(*args: object) -> object:
    return _math_pick("math.greatest", args, 1)


@register("math.least", False, (1, 2, 3, 4, 5, 6), "dyn")
def math_least(*args: object) -> object:
    return _math_pick("math.least", args, -1)
