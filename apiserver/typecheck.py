"""JSON types against the kind's schema, as upstream's typed decoding checks them: a
number where a string belongs is a 400, never a stored object that clients with
strict models (the official Python client) then fail to read.

The first mismatch is reported, worded like Go's `encoding/json` errors.
"""

from __future__ import annotations

from typing import Any

from draemu.openapi.schemas import SchemaNode

_MAP, _STRUCT, _LIST, _SCALAR = "map", "struct", "list", "scalar"


def _json_word(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _scalar_ok(target: dict[str, Any], value: Any) -> str | None:
    """None when `value` fits the scalar schema, else the Go type it should have been."""
    if "oneOf" in target or "anyOf" in target:  # Quantity: a string or a number
        return None if isinstance(value, (str, int, float)) and not isinstance(value, bool) \
            else "resource.Quantity"
    kind, fmt = target.get("type"), target.get("format", "")
    if fmt == "int-or-string":
        ok = isinstance(value, (str, int)) and not isinstance(value, bool)
        return None if ok else "intstr.IntOrString"
    if kind == "string":
        return None if isinstance(value, str) else "string"
    if kind == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
        return None if ok else (fmt or "int64")
    if kind == "number":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return None if ok else "float64"
    if kind == "boolean":
        return None if isinstance(value, bool) else "bool"
    return None


def first_mismatch(node: SchemaNode, value: Any, path: str = "") -> tuple[str, str, str] | None:
    """(json value word, path, expected Go type) of the first type error, or None."""
    if value is None or node.is_open:
        return None
    shape = node.shape
    if shape in (_STRUCT, _MAP):
        if not isinstance(value, dict):
            return _json_word(value), path, "object" if shape == _STRUCT else "map"
        for key, sub in value.items():
            child = node.field(key)
            if child is not None:
                found = first_mismatch(child, sub, f"{path}.{key}" if shape == _STRUCT
                                       else path)
                if found:
                    return found
        return None
    if shape == _LIST:
        if not isinstance(value, list):
            return _json_word(value), path, "array"
        items = node.items()
        for sub in value:
            found = first_mismatch(items, sub, path)
            if found:
                return found
        return None
    expected = _scalar_ok(node.target, value)
    return (_json_word(value), path, expected) if expected else None


def message(kind: str, mismatch: tuple[str, str, str]) -> str:
    word, path, expected = mismatch
    return (f"json: cannot unmarshal {word} into Go struct field {kind}{path} of type "
            f"{expected}")
