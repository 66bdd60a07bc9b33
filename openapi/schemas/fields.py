"""Unknown-field detection and pruning against a structural schema.

Paths follow upstream's strict JSON decoding: struct fields and map keys joined with
dots, list items as `[i]`; at most 100 distinct errors, duplicates dropped, in the order
the fields appear in the document.
"""

from __future__ import annotations

from typing import Any

from draemu.openapi.schemas.node import LIST, MAP, STRUCT, SchemaNode

MAX_ERRORS = 100


def strict_message(path: str) -> str:
    """The text clients see for one unknown field: `unknown field "spec.foo"`."""
    return f'unknown field "{path.lstrip(".")}"'


def find_unknown(node: SchemaNode, value: Any) -> list[str]:
    found: list[str] = []
    _walk(node, value, "", found)
    return found


def _walk(node: SchemaNode, value: Any, path: str, found: list[str]) -> None:
    if len(found) >= MAX_ERRORS or node.is_open:
        return
    shape = node.shape
    if isinstance(value, dict) and shape in (STRUCT, MAP):
        for key, sub in value.items():
            child = node.field(key)
            here = f"{path}.{key}"
            if child is None:
                if here not in found and len(found) < MAX_ERRORS:
                    found.append(here)
            else:
                _walk(child, sub, here, found)
    elif isinstance(value, list) and shape == LIST:
        items = node.items()
        for i, sub in enumerate(value):
            _walk(items, sub, f"{path}[{i}]", found)


def prune_unknown(node: SchemaNode, value: Any) -> Any:
    if node.is_open:
        return value
    shape = node.shape
    if isinstance(value, dict) and shape in (STRUCT, MAP):
        out = {}
        for key, sub in value.items():
            child = node.field(key)
            if child is not None:
                out[key] = prune_unknown(child, sub)
        return out
    if isinstance(value, list) and shape == LIST:
        items = node.items()
        return [prune_unknown(items, sub) for sub in value]
    return value
