"""Timestamps as a Go server writes them: every `metav1.Time` field becomes
`YYYY-MM-DDTHH:MM:SSZ` and every `metav1.MicroTime` `YYYY-MM-DDTHH:MM:SS.ffffffZ`,
whatever RFC 3339 form a client sent (Python clients send `+00:00` offsets and
microseconds). A string that is no RFC 3339 time is a 400, as upstream's decoding.

Which fields are times comes from the kind's schema (`draemu.openapi.schemas`); the
plan of each definition is computed once.
"""

from __future__ import annotations

from functools import cache, lru_cache
from typing import Any

from draemu.api.errors import StatusError
from draemu.api.meta import format_micro_time, format_time, parse_time

_REF = "#/components/schemas/"
_TIME = "io.k8s.apimachinery.pkg.apis.meta.v1.Time"
_MICRO = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"

# A field's plan: ("time"|"micro", None), ("object", name), ("list", plan), ("map", plan)
Plan = tuple[str, Any]


def _ref(schema: dict[str, Any]) -> str | None:
    ref = schema.get("$ref")
    if ref is None and len(schema.get("allOf", ())) == 1:
        ref = schema["allOf"][0].get("$ref")
    return ref[len(_REF):] if isinstance(ref, str) and ref.startswith(_REF) else None


def _plan(schema: dict[str, Any]) -> Plan | None:
    ref = _ref(schema)
    if ref == _TIME:
        return ("time", None)
    if ref == _MICRO:
        return ("micro", None)
    if ref is not None:
        return ("object", ref) if _fields(ref) else None
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        inner = _plan(schema["items"])
        return ("list", inner) if inner else None
    if isinstance(schema.get("additionalProperties"), dict):
        inner = _plan(schema["additionalProperties"])
        return ("map", inner) if inner else None
    return None


_visiting: set[str] = set()


@cache
def _fields(name: str) -> dict[str, Plan]:
    """The properties of definition `name` that are, or contain, timestamps."""
    from draemu.openapi import schemas

    if name in _visiting:  # a recursive schema: the outer call covers this definition
        return {}
    _visiting.add(name)
    try:
        definition = schemas.definition(name)
        out: dict[str, Plan] = {}
        for prop, sub in (definition.get("properties") or {}).items():
            plan = _plan(sub)
            if plan is not None:
                out[prop] = plan
        return out
    except KeyError:
        return {}
    finally:
        _visiting.discard(name)


@lru_cache(maxsize=4096)
def format_value(value: str, micro: bool) -> str | None:
    """`value` as a Go server writes a Time (or a MicroTime when `micro`); None when it is
    no RFC 3339 time. Cached: the objects of one second carry the same times."""
    t = parse_time(value)
    if t is None:
        return None
    return format_micro_time(t) if micro else format_time(t)


def _format(value: Any, micro: bool, path: str) -> str:
    formatted = format_value(value, micro) if isinstance(value, str) else None
    if formatted is None:
        raise _BadTime(value, path)
    return formatted


class _BadTime(Exception):
    def __init__(self, value: Any, path: str) -> None:
        super().__init__(path)
        self.value = value
        self.path = path


def _apply(plan: Plan, value: Any, path: str) -> Any:
    kind, arg = plan
    if value is None:
        return None
    if kind in ("time", "micro"):
        return _format(value, kind == "micro", path)
    if kind == "object" and isinstance(value, dict):
        _walk(arg, value, path)
    elif kind == "list" and isinstance(value, list):
        for i, item in enumerate(value):
            value[i] = _apply(arg, item, f"{path}[{i}]")
    elif kind == "map" and isinstance(value, dict):
        for key in value:
            value[key] = _apply(arg, value[key], f"{path}[{key}]")
    return value


def _walk(name: str, obj: dict[str, Any], path: str) -> None:
    for prop, plan in _fields(name).items():
        if prop in obj:
            obj[prop] = _apply(plan, obj[prop], f"{path}.{prop}" if path else prop)


def normalize(group: str, version: str, kind: str, obj: dict[str, Any]) -> None:
    """Rewrite the timestamps of `obj` (a decoded request object of `version`) in
    place; raises a 400 StatusError for a value that is not a time."""
    from draemu.openapi import schemas

    if not schemas.has_kind(group, version, kind):
        return
    name, _ = schemas.for_kind(group, version, kind)
    try:
        _walk(name, obj, "")
    except _BadTime as e:
        text = e.value if isinstance(e.value, str) else repr(e.value)
        raise StatusError(400, "BadRequest",
                          f'{kind} in version "{version}" cannot be handled as a {kind}: '
                          f'parsing time "{text}" as "2006-01-02T15:04:05Z07:00": cannot parse '
                          f'"{text}" as "2006" ({e.path})') from None
