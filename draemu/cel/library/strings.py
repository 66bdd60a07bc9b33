"""cel-go's strings extension (charAt, indexOf, replace, split, join, quote, ...); its
`format` is in `draemu.cel.netlib`."""

from __future__ import annotations

from draemu.cel import cost as costs
from draemu.cel import estimatecalls as estimates
from draemu.cel.errors import CELRuntimeError
from draemu.cel.library.registry import PATCH_TYPES, register, want
from draemu.cel.values import (
    equal,
)


@register("charAt", True, (1,), "string", ("string",))
def char_at(s: str, i: int) -> str:
    want("charAt", s, str)
    want("charAt", i, int)
    if not 0 <= i <= len(s):
        raise CELRuntimeError(f"index out of range: {i}")
    return s[i: i + 1]


@register("indexOf", True, (1, 2), "int", ("string", "list"),
          cost=costs.traversal_first, estimate=estimates.traversal_rule("indexOf"))
def index_of(s: object, sub: object, start: int = 0) -> int:
    if isinstance(s, (list, tuple)):
        for i, v in enumerate(s):
            if equal(v, sub):
                return i
        return -1
    want("indexOf", s, str)
    want("indexOf", sub, str)
    if not 0 <= start <= len(s):  # type: ignore[arg-type]
        raise CELRuntimeError(f"index out of range: {start}")
    return s.find(sub, start)  # type: ignore[union-attr, arg-type]


@register("lastIndexOf", True, (1, 2), "int", ("string", "list"),
          cost=costs.traversal_first, estimate=estimates.traversal_rule("lastIndexOf"))
def last_index_of(s: object, sub: object, end: int | None = None) -> int:
    if isinstance(s, (list, tuple)):
        for i in range(len(s) - 1, -1, -1):
            if equal(s[i], sub):
                return i
        return -1
    want("lastIndexOf", s, str)
    want("lastIndexOf", sub, str)
    if end is None:
        return s.rfind(sub)  # type: ignore[union-attr, arg-type]
    if not 0 <= end < len(s):  # type: ignore[arg-type]
        raise CELRuntimeError(f"index out of range: {end}")
    return s.rfind(sub, 0, end + len(sub))  # type: ignore[union-attr, arg-type]


@register("lowerAscii", True, (0,), "string", ("string",),
          cost=costs.strings_traversal, estimate=estimates.member_scan)
def lower_ascii(s: str) -> str:
    want("lowerAscii", s, str)
    return "".join(c.lower() if c.isascii() else c for c in s)


@register("upperAscii", True, (0,), "string", ("string",),
          cost=costs.strings_traversal, estimate=estimates.member_scan)
def upper_ascii(s: str) -> str:
    want("upperAscii", s, str)
    return "".join(c.upper() if c.isascii() else c for c in s)


@register("replace", True, (2, 3), "string", ("string",),
          cost=costs.strings_construct, estimate=estimates.replace_rule)
def replace(s: str, old: str, new: str, n: int = -1) -> str:
    for v in (s, old, new):
        want("replace", v, str)
    return s.replace(old, new, n if n >= 0 else -1)


@register("split", True, (1, 2), "list", ("string",),
          cost=costs.strings_construct, estimate=estimates.split_rule)
def split(s: str, sep: str, n: int = -1) -> list[str]:
    want("split", s, str)
    want("split", sep, str)
    if n == 0:
        return []
    if sep == "":
        parts = list(s)
        return parts if n < 0 or n >= len(parts) else [*parts[: n - 1], "".join(parts[n - 1:])]
    return s.split(sep, n - 1 if n > 0 else -1)


@register("substring", True, (1, 2), "string", ("string",),
          cost=costs.strings_traversal, estimate=estimates.member_scan)
def substring(s: str, start: int, end: int | None = None) -> str:
    want("substring", s, str)
    end = len(s) if end is None else end
    if not 0 <= start <= end <= len(s):
        raise CELRuntimeError(f"index out of range: {start if start > len(s) else end}")
    return s[start:end]


@register("trim", True, (0,), "string", ("string",),
          cost=costs.strings_traversal, estimate=estimates.member_scan)
def trim(s: str) -> str:
    want("trim", s, str)
    return s.strip()


@register("join", True, (0, 1), "string", ("list",),
          cost=costs.join_cost, estimate=estimates.join_rule)
def join(items: list[str], sep: str = "") -> str:
    want("join", items, list, tuple)
    for v in items:
        want("join", v, str)
    return sep.join(items)


@register("reverse", True, (0,), "dyn", ("string", "list"))
def reverse(v: object) -> object:
    if isinstance(v, str):
        return v[::-1]
    want("reverse", v, list, tuple)
    return list(v)[::-1]  # type: ignore[call-overload]


@register("strings.quote", False, (1,), "string")
def quote(s: str) -> str:
    want("strings.quote", s, str)
    escaped = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


@register("jsonpatch.escapeKey", False, (1,), "string", gate=PATCH_TYPES,
          cost=costs.strings_traversal, estimate=estimates.global_scan)
def jsonpatch_escape_key(s: str) -> str:
    """A key as one JSON Pointer segment: `~` is `~0`, `/` is `~1` (RFC 6901)."""
    want("jsonpatch.escapeKey", s, str)
    return s.replace("~", "~0").replace("/", "~1")
