"""CEL's standard functions: size, string tests, matches, conversions, type."""

from __future__ import annotations

import math

from draemu.cel.errors import CELRuntimeError
from draemu.cel.library.regex import compiled
from draemu.cel.library.registry import FUNCTIONS, Function, register, want
from draemu.cel.syntax import Uint
from draemu.cel.values import (
    CelType,
    QuantityValue,
    Semver,
    check_int,
    check_uint,
    is_number,
    no_overload,
    type_name,
)


@register("size", False, (1,), "int")
def size(v: object) -> int:
    if isinstance(v, (str, bytes, list, tuple, dict)):
        return len(v)
    raise no_overload("size", v)


FUNCTIONS[("size", True)] = Function("size", True, (0,), "int", size,
                                     frozenset({"string", "bytes", "list", "map"}))


@register("contains", True, (1,), "bool", ("string",))
def contains(s: str, sub: str) -> bool:
    want("contains", s, str)
    want("contains", sub, str)
    return sub in s


@register("startsWith", True, (1,), "bool", ("string",))
def starts_with(s: str, prefix: str) -> bool:
    want("startsWith", s, str)
    want("startsWith", prefix, str)
    return s.startswith(prefix)


@register("endsWith", True, (1,), "bool", ("string",))
def ends_with(s: str, suffix: str) -> bool:
    want("endsWith", s, str)
    want("endsWith", suffix, str)
    return s.endswith(suffix)


@register("matches", True, (1,), "bool", ("string",))
def matches(s: str, pattern: str) -> bool:
    want("matches", s, str)
    want("matches", pattern, str)
    return compiled(pattern).search(s) is not None


FUNCTIONS[("matches", False)] = Function("matches", False, (2,), "bool", matches)


@register("int", False, (1,), "int")
def to_int(v: object) -> int:
    if isinstance(v, bool):
        raise no_overload("int", v)
    if isinstance(v, int):
        return check_int(int(v))
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            raise CELRuntimeError("double is out of range for int")
        return check_int(int(v))
    if isinstance(v, str):
        try:
            return check_int(int(v, 10))
        except ValueError:
            raise CELRuntimeError(f"cannot parse {v!r} as int") from None
    raise no_overload("int", v)


@register("uint", False, (1,), "uint")
def to_uint(v: object) -> Uint:
    if isinstance(v, bool):
        raise no_overload("uint", v)
    if isinstance(v, (int, float)):
        return check_uint(int(v))
    if isinstance(v, str):
        try:
            return check_uint(int(v, 10))
        except ValueError:
            raise CELRuntimeError(f"cannot parse {v!r} as uint") from None
    raise no_overload("uint", v)


@register("double", False, (1,), "double")
def to_double(v: object) -> float:
    if is_number(v):
        return float(v)  # type: ignore[arg-type]
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            raise CELRuntimeError(f"cannot parse {v!r} as double") from None
    raise no_overload("double", v)


@register("string", False, (1,), "string")
def to_string(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, str)):
        return str(v)
    if isinstance(v, float):
        return repr(v) if not v.is_integer() else str(int(v)) if abs(v) < 1e21 else repr(v)
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, QuantityValue):
        return v.text
    if isinstance(v, Semver):
        return v.text
    raise no_overload("string", v)


@register("bytes", False, (1,), "bytes")
def to_bytes(v: object) -> bytes:
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode()
    raise no_overload("bytes", v)


@register("bool", False, (1,), "bool")
def to_bool(v: object) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, str):
        if v in ("true", "True", "TRUE", "t", "1"):
            return True
        if v in ("false", "False", "FALSE", "f", "0"):
            return False
        raise CELRuntimeError(f"type conversion error from 'string' to 'bool': {v}")
    raise no_overload("bool", v)


@register("dyn", False, (1,), "dyn")
def to_dyn(v: object) -> object:
    return v


@register("type", False, (1,), "type")
def type_of(v: object) -> CelType:
    return CelType(type_name(v))
