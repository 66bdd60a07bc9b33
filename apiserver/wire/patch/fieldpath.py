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
from json.encoder import encode_basestring
from typing import Any

Path = tuple[str, ...]
FieldSet = set[Path]

_KIND_ORDER = {"f": 0, "v": 1, "k": 2, "i": 3}
# One encoder for every call: json.dumps with options builds a new one each time.
_COMPACT = json.JSONEncoder(separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def compact(value: Any) -> str:
    return _COMPACT.encode(value)


def field(name: str) -> str:
    return f"f:{name}"


def key(values: dict[str, Any]) -> str:
    # List-map keys are nearly always strings: their JSON is that of each string, which
    # `encode_basestring` (what the encoder calls for them) gives without the encoder.
    parts = []
    for name in sorted(values):
        item = values[name]
        if type(name) is not str or type(item) is not str:
            return f"k:{compact(values)}"
        parts.append(f"{encode_basestring(name)}:{encode_basestring(item)}")
    return "k:{" + ",".join(parts) + "}"


def value(item: Any) -> str:
    if type(item) is str:
        return f"v:{encode_basestring(item)}"
    return f"v:{compact(item)}"


def to_fields_v1(members: Iterable[Path]) -> dict[str, Any]:
    ordered = sorted(members)
    fields = _build_in_order(ordered)
    return fields if fields is not None else _finish(_tree(ordered))


def _build_in_order(ordered: list[Path]) -> dict[str, Any] | None:
    """The FieldsV1 of sorted paths, built in one pass; None when two siblings are of
    different kinds (their order is then not that of strings)."""
    root: dict[str, Any] = {}
    for path in ordered:
        node, created = root, False
        for element in path:
            sub = node.get(element)
            if sub is None:
                if created:
                    pass  # a node made for this path: its first child
                elif node:
                    last = next(reversed(node))
                    if last != "." and last[:2] != element[:2]:
                        return None
                elif node is not root:
                    node["."] = {}  # a member with members below it: "." comes first
                sub = node[element] = {}
                created = True
            node = sub
    if ordered and not ordered[0] and root:
        return {".": {}, **root}  # the empty path: the root itself is a member
    return root


def _tree(members: Iterable[Path]) -> dict[str, Any]:
    """Paths as nested dicts, "." marking members, for `_finish`."""
    root: dict[str, Any] = {}
    for path in members:
        node = root
        for element in path:
            sub = node.get(element)
            if sub is None:
                sub = node[element] = {}
            node = sub
        node["."] = True
    return root


def _finish(node: dict[str, Any]) -> dict[str, Any]:
    """The FieldsV1 of a tree built by `_tree` (`node` is consumed): "." first,
    then fields, values, keys and indexes, each sorted."""
    member = node.pop(".", False)
    if not node:
        return {}
    out: dict[str, Any] = {".": {}} if member else {}
    for element in _ordered(node):
        sub = node[element]
        out[element] = {} if len(sub) == 1 and "." in sub else _finish(sub)  # a leaf
    return out


def _ordered(elements: Iterable[str]) -> list[str]:
    ordered = sorted(elements)
    kind = ordered[0][:2]
    # Elements of one kind (the usual case: a node holds fields, or keys, or values)
    # sort as strings; mixed kinds sort by kind first.
    if ordered[-1][:2] != kind or kind not in ("f:", "v:", "k:", "i:"):
        ordered.sort(key=lambda e: (_KIND_ORDER.get(e[:1], 9), e))
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


def has_members(fields: Any) -> bool:
    """Whether `from_fields_v1(fields)` is not empty, without building it."""
    if not isinstance(fields, dict):
        return False
    for element, sub in fields.items():
        if element == "." or not sub or has_members(sub):
            return True
    return False


def shares_member(fields: Any, other: dict[str, Any]) -> bool:
    """Whether `from_fields_v1(fields)` and `from_fields_v1(other)` share a path other
    than the root, read from both at once without building either; `other` is as
    `to_fields_v1` writes it."""
    if not isinstance(fields, dict):
        return False
    for element, below in other.items():
        if element == ".":
            continue
        sub = fields.get(element, _ABSENT)
        if sub is _ABSENT:
            continue
        sub_is_dict = type(sub) is dict
        if (not below or "." in below) and (not sub or (sub_is_dict and "." in sub)):
            return True
        if below and sub_is_dict and shares_member(sub, below):
            return True
    return False


def owns_any_under(fields: Any, prefixes: Iterable[Path]) -> bool:
    """Whether `from_fields_v1(fields)` holds a path at or below one of `prefixes`."""
    for prefix in prefixes:
        if not prefix:
            if has_members(fields):
                return True
            continue
        sub = _subtree(fields, prefix)
        if sub is not _ABSENT and (not sub or has_members(sub)):
            return True
    return False


_ABSENT: Any = object()


def _subtree(fields: dict[str, Any], path: Path) -> Any:
    """The FieldsV1 node at `path`, or _ABSENT (`from_fields_v1` descends dicts only)."""
    node: Any = fields
    for element in path:
        if type(node) is not dict or element == ".":
            return _ABSENT
        node = node.get(element, _ABSENT)
        if node is _ABSENT:
            return _ABSENT
    return node


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
