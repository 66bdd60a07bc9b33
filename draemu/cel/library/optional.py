"""CEL's optional values (optional.of, optional.none, hasValue, value, orValue, or)."""

from __future__ import annotations

from draemu.cel.errors import CELRuntimeError
from draemu.cel.library.registry import register
from draemu.cel.values import (
    NONE,
    OptionalValue,
    is_number,
    no_overload,
)


@register("optional.of", False, (1,), "optional")
def optional_of(v: object) -> OptionalValue:
    return OptionalValue(True, v)


@register("optional.none", False, (0,), "optional")
def optional_none() -> OptionalValue:
    return NONE


@register("optional.ofNonZeroValue", False, (1,), "optional")
def optional_of_non_zero(v: object) -> OptionalValue:
    zero = v is None or v is False or (is_number(v) and v == 0) or (
        isinstance(v, (str, bytes, list, tuple, dict)) and len(v) == 0)
    return NONE if zero else OptionalValue(True, v)


def _optional(name: str, v: object) -> OptionalValue:
    if not isinstance(v, OptionalValue):
        raise no_overload(name, v)
    return v


@register("hasValue", True, (0,), "bool", ("optional",))
def has_value(v: object) -> bool:
    return _optional("hasValue", v).present


@register("value", True, (0,), "dyn", ("optional",))
def value(v: object) -> object:
    opt = _optional("value", v)
    if not opt.present:
        raise CELRuntimeError("optional.none() dereference")
    return opt.value


@register("orValue", True, (1,), "dyn", ("optional",))
def or_value(v: object, default: object) -> object:
    opt = _optional("orValue", v)
    return opt.value if opt.present else default


@register("or", True, (1,), "optional", ("optional",))
def optional_or(v: object, other: object) -> object:
    opt = _optional("or", v)
    return opt if opt.present else _optional("or", other)
