"""DRA's own function: `includes` on list attributes."""

from __future__ import annotations

from draemu.cel import cost as costs
from draemu.cel import estimatecalls as estimates
from draemu.cel.errors import CELRuntimeError
from draemu.cel.library.registry import register
from draemu.cel.values import (
    equal,
)

# Most values a DRA list attribute holds (ResourceSliceMaxAttributeValuesPerDevice).
MAX_LIST_ATTRIBUTE_VALUES = 48


@register("includes", True, (1,), "bool", ("dyn",), gate="DRAListTypeAttributes",
          cost=costs.traversal_first, estimate=estimates.traversal_rule("includes"))
def includes(v: object, x: object) -> bool:
    if isinstance(v, (list, tuple)):
        if len(v) > MAX_LIST_ATTRIBUTE_VALUES:
            raise CELRuntimeError("'includes' function cannot be applied to lists longer "
                                  f"than {MAX_LIST_ATTRIBUTE_VALUES} values")
        return any(equal(e, x) for e in v)
    return equal(v, x)
