"""Field paths and field sets of server-side apply, in the `FieldsV1` format.

A path is a tuple of path elements written as `managedFields` writes them:

- `f:<name>` — a struct field or a map key,
- `k:{"name":"c"}` — an item of a list-type=map list, by its keys (JSON, keys sorted),
- `v:"x"` — an item of a list-type=set list, by its value (JSON).

A field set is a Python `set` of such tuples (its members). `to_fields_v1` and
`from_fields_v1` convert to and from the nested `{"f:spec": {"f:replicas": {}}}` form,
where `".": {}` marks a member that also has members below it. `path_string` prints a
path as conflict messages do: `.spec.containers[name="c"].image`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

Path = tuple[str, ...]
FieldSet = set[Path]

_KIND_ORDER = {"f": 0, "v": 1, "k": 2, "i": 3}


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def field(name: str) -> str:
    return f"f:{name}"


def key(values: dict[str, Any]) -> str:
    return f"k:{compact(values)}"


def value(item: Any) -> str:
    return f"v:{compact(item)}"


def to_fields_v1(members: Iterable[Path]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for path in members:
        node = root
        for element in path:
            node = node.setdefault(element, {})
        node["."] = {}
    return _finish(root)


def _finish(node: dict[str, Any]) -> dict[str, Any]:
    children = {k: _finish(v) for k, v in node.items() if k != "."}
    if not children:
        return {}
    ordered = {".": {}} if "." in node else {}
    for k in sorted(children, key=lambda e: (_KIND_ORDER.get(e[:1], 9), e)):
        ordered[k] = children[k]
    return ordered


def from_fields_v1(fields: Any) -> FieldSet:
    out: FieldSet = set()
    if isinstance(fields, dict):
        _collect(fields, (), out)
    return out


def _collect(node: dict[str, Any], prefix: Path, out: FieldSet) -> None:
    for element, sub in node.items():
        if element == ".":
            out.add(prefix)
            continue
        path = (*prefix, element)
        if not sub:
            out.add(path)
        elif isinstance(sub, dict):
            _collect(sub, path, out)


def path_string(path: Path) -> str:
    parts = []
    for element in path:
        kind, text = element[:1], element[2:]
        if kind == "f":
            parts.append(f".{text}")
        elif kind == "k":
            fields = json.loads(text)
            parts.append("[" + ",".join(f"{k}={compact(v)}" for k, v in fields.items()) + "]")
        elif kind == "v":
            parts.append(f"[={text}]")
        else:
            parts.append(f"[{text}]")
    return "".join(parts)


def under(path: Path, prefixes: FieldSet) -> bool:
    """Whether `path` is one of `prefixes` or lies below one of them."""
    return any(path[:i] in prefixes for i in range(len(path) + 1))
