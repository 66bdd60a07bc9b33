"""Unknown-field detection and pruning against a structural schema.

Paths follow upstream's strict JSON decoding: struct fields and map keys joined with
dots, list items as `[i]`; at most 100 distinct errors, duplicates dropped, in the order
the fields appear in the document.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from draemu.openapi.schemas.node import (
    LIST,
    MAP,
    MICRO,
    NOTHING,
    STRUCT,
    TIME,
    WALK_MAP,
    WALK_STRUCT,
    Plan,
    SchemaNode,
)

MAX_ERRORS = 100


def strict_message(path: str) -> str:
    """The text clients see for one unknown field: `unknown field "spec.foo"`."""
    return f'unknown field "{path.lstrip(".")}"'


def find_unknown(node: SchemaNode, value: Any, sort_keys: bool = False) -> list[str]:
    found: list[str] = []
    _walk(node, value, "", found, sort_keys)
    return found


def _walk(node: SchemaNode, value: Any, path: str, found: list[str], sort_keys: bool) -> None:
    if len(found) >= MAX_ERRORS or node.is_open:
        return
    shape = node.shape
    if isinstance(value, dict) and shape in (STRUCT, MAP):
        members = sorted(value.items()) if sort_keys else value.items()
        for key, sub in members:
            child = node.field(key)
            here = f"{path}.{key}"
            if child is None:
                if here not in found and len(found) < MAX_ERRORS:
                    found.append(here)
            else:
                _walk(child, sub, here, found, sort_keys)
    elif isinstance(value, list) and shape == LIST:
        items = node.items()
        for i, sub in enumerate(value):
            _walk(items, sub, f"{path}[{i}]", found, sort_keys)


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


def drop_null_fields(node: SchemaNode, value: Any) -> None:
    """Remove, in place, the struct fields that are `null`: Go decodes them to zero
    values that are then omitted, so `"spec": null` is a Pod without a spec, not a
    `None` for defaulting to trip over. Map values and list items are left alone."""
    if node.is_open:
        return
    shape = node.shape
    if isinstance(value, dict) and shape in (STRUCT, MAP):
        for key in [k for k, sub in value.items() if sub is None and shape == STRUCT]:
            del value[key]
        for key, sub in value.items():
            if isinstance(sub, (dict, list)):
                child = node.field(key)
                if child is not None:
                    drop_null_fields(child, sub)
    elif isinstance(value, list) and shape == LIST:
        items = node.items()
        for sub in value:
            if isinstance(sub, (dict, list)):
                drop_null_fields(items, sub)


def first_type_error(node: SchemaNode, value: Any, kind: str) -> str | None:
    """The first value whose JSON type does not fit the schema, worded as Go's JSON
    decoder words it (kube-apiserver returns it in a 400):
    `json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of
    type int32`. `null` fits everything, as in Go."""
    return _type_error(node, value, "", kind)


_JSON_TYPES = {str: "string", bool: "bool", int: "number", float: "number", list: "array",
               dict: "object"}


def _type_error(node: SchemaNode, value: Any, path: str, owner: str) -> str | None:
    if value is None or node.is_open:
        return None
    target = node.target
    if "oneOf" in target or target.get("format") == "int-or-string":
        return None  # Quantity and IntOrString take strings and numbers
    shape = node.shape
    expected = target.get("type")
    if shape in (STRUCT, MAP):
        if not isinstance(value, dict):
            return _message(value, path, owner, node)
        # Go names the innermost struct and the path of struct fields (not map keys).
        name = (_go_struct(node) or owner) if shape == STRUCT else owner
        for key, sub in value.items():
            child = node.field(key)
            if child is not None:
                here = path if shape == MAP else (f"{path}.{key}" if path else key)
                found = _type_error(child, sub, here, name)
                if found:
                    return found
        return None
    if shape == LIST:
        if not isinstance(value, list):
            return _message(value, path, owner, node)
        items = node.items()
        for sub in value:
            found = _type_error(items, sub, path, owner)
            if found:
                return found
        return None
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    fits = {"boolean": isinstance(value, bool), "string": isinstance(value, str),
            "integer": number and isinstance(value, int), "number": number}.get(expected or "")
    return _message(value, path, owner, node) if fits is False else None


def _message(value: Any, path: str, owner: str, node: SchemaNode) -> str:
    kind = _JSON_TYPES.get(type(value), "value")
    if kind == "number" and node.target.get("type") == "integer":
        kind = f"number {value}"
    return (f"json: cannot unmarshal {kind} into Go struct field {owner}.{path} of type "
            f"{_go_type(node)}")


def _go_struct(node: SchemaNode) -> str:
    return _ref_name(node).rsplit(".", 1)[-1]


def _ref_name(node: SchemaNode) -> str:
    schema = node._schema or {}
    ref = schema.get("$ref") or ((schema.get("allOf") or [{}])[0]).get("$ref") or ""
    return ref.rsplit("/", 1)[-1]


def _go_type(node: SchemaNode) -> str:
    """The Go type name a field decodes into: int32, []v1.Container, map[string]string."""
    target = node.target
    ref = _ref_name(node)
    if ref:
        parts = ref.split(".")
        return f"{parts[-2]}.{parts[-1]}" if "properties" in target else _go_type_of(target)
    return _go_type_of(target, node)


def _go_type_of(target: dict[str, Any], node: SchemaNode | None = None) -> str:
    kind = target.get("type")
    if kind == "integer":
        return target.get("format") or "int64"
    if kind == "number":
        return "float64"
    if kind == "boolean":
        return "bool"
    if kind == "string":
        return "string"
    if kind == "array" and node is not None:
        return "[]" + _go_type(node.items())
    if "additionalProperties" in target and node is not None:
        return "map[string]" + _go_type(node.field(""))
    return "interface {}"


# One request check: every walk over a body in one pass -------------------------------

# Rewrites a Time (micro=False) or MicroTime value in the server's form; None when the
# value is no time.
TimeFormatter = Callable[[str, bool], "str | None"]


@dataclass
class Findings:
    """What one pass over a request body found (see `check_request`)."""

    type_error: str | None = None
    bad_time: bool = False
    unknown: list[str] = field(default_factory=list)


def check_request(node: SchemaNode, obj: dict[str, Any], old: dict[str, Any] | None,
                  kind: str, format_time: TimeFormatter) -> Findings:
    """`first_type_error`, `drop_null_fields`, timestamp rewriting (`format_time`) and
    `find_unknown` in one walk over `obj`, with the same answers.

    `old` is an object the server stored, in the same version as `obj`: it was checked
    on its way in, so a subtree of `obj` strictly equal to the same subtree of `old` is
    known to fit, has no null struct field, no time to rewrite and no unknown field,
    and is skipped. The walk stops at the first type error, which is then worded by
    `first_type_error` (a failing request may take the slow road)."""
    plan, walk = node.plan(), _Walk(format_time)
    if not _fits(plan, obj):
        return Findings(first_type_error(node, obj, kind))
    if plan.action == WALK_STRUCT and (old is None or not _same(obj, old)) \
            and walk.struct(plan, obj, old, ""):
        return Findings(first_type_error(node, obj, kind))
    if walk.bad_time:
        return Findings(None, True)
    # Times are rewritten only when all are good: the caller then finds the first bad one
    # in the object as sent (a rewritten time need not parse twice, e.g. year 999).
    for parent, key, formatted in walk.rewrites:
        parent[key] = formatted
    return Findings(None, False, walk.unknown)


def _fits(plan: Plan, value: Any) -> bool:
    types = plan.types
    return types is None or type(value) in types or plan.fits(value)


def _same(value: Any, old: Any) -> bool:
    """Whether a subtree of a request can be skipped: equal to the stored one with the
    same JSON types (`==` alone takes true for 1 and 1.0 for 1), and without nulls (a
    stored object may hold null struct fields, which a request must lose)."""
    if value != old:
        return False
    try:
        text = orjson.dumps(value)
        return b"null" not in text and (value is old or text == orjson.dumps(old))
    except orjson.JSONEncodeError:  # not plain JSON data: check it
        return False


class _Walk:
    """The state of one pass; each walk returns True when it met a type error."""

    __slots__ = ("bad_time", "format_time", "rewrites", "seen", "unknown")

    def __init__(self, format_time: TimeFormatter) -> None:
        self.format_time = format_time
        self.bad_time = False
        self.rewrites: list[tuple[Any, Any, str]] = []
        self.unknown: list[str] = []
        self.seen: set[str] = set()

    def add_unknown(self, path: str) -> None:
        if len(self.unknown) < MAX_ERRORS and path not in self.seen:
            self.seen.add(path)
            self.unknown.append(path)

    # The loops test types inline: most members are scalars, which need nothing else.
    def struct(self, plan: Plan, value: dict[str, Any], old: Any, path: str) -> bool:
        fields = plan.fields
        nulls: list[str] = []
        old = old if isinstance(old, dict) else None
        for key, sub in value.items():
            if sub is None:
                nulls.append(key)  # Go reads a null struct field as absent, known or not
                continue
            child = fields.get(key)
            if child is None:
                self.add_unknown(f"{path}.{key}")
                continue
            types = child.types
            if types is not None and type(sub) not in types and not child.fits(sub):
                return True
            if child.action != NOTHING and self.descend(
                    child, value, key, sub, old.get(key) if old is not None else None, path):
                return True
        for key in nulls:
            del value[key]
        return False

    def map(self, plan: Plan, value: dict[str, Any], old: Any, path: str) -> bool:
        types, action = plan.types, plan.action
        old = old if isinstance(old, dict) else None
        for key, sub in value.items():
            if sub is None:
                continue
            if types is not None and type(sub) not in types and not plan.fits(sub):
                return True
            if action != NOTHING and self.descend(
                    plan, value, key, sub, old.get(key) if old is not None else None, path):
                return True
        return False

    def list(self, plan: Plan, value: list[Any], old: Any, path: str) -> bool:
        types, action = plan.types, plan.action
        old = old if isinstance(old, list) else ()
        size = len(old)
        for i, sub in enumerate(value):
            if sub is None:
                continue
            if types is not None and type(sub) not in types and not plan.fits(sub):
                return True
            if action != NOTHING and self.descend(
                    plan, value, i, sub, old[i] if i < size else None, path):
                return True
        return False

    def descend(self, plan: Plan, parent: Any, key: Any, value: Any, old: Any,
                path: str) -> bool:
        """Rewrite the time or walk the container `parent[key]` (`value`, of a type that
        fits `plan`); `path` is the parent's."""
        action = plan.action
        if action >= TIME:
            formatted = self.format_time(value, action == MICRO)
            if formatted is None:
                self.bad_time = True
            elif formatted != value:
                self.rewrites.append((parent, key, formatted))
            return False
        if old is not None and _same(value, old):
            return False
        here = f"{path}[{key}]" if isinstance(parent, list) else f"{path}.{key}"
        if action == WALK_STRUCT:
            return self.struct(plan, value, old, here)
        if action == WALK_MAP:
            return self.map(plan.values, value, old, here)
        return self.list(plan.items, value, old, here)


class _Pairs(dict):  # type: ignore[type-arg]
    """A decoded JSON object that remembers its members in order, duplicates included."""

    pairs: list[tuple[str, Any]]


def _pairs_hook(pairs: list[tuple[str, Any]]) -> _Pairs:
    obj = _Pairs(pairs)
    obj.pairs = pairs
    return obj


def strict_errors(node: SchemaNode, body: str | bytes) -> list[str]:
    """Every strict-decoding problem of a JSON body, worded and ordered as kube-apiserver
    reports them: `duplicate field "metadata.name"`, `unknown field "spec.foo"`, in
    document order; a field that is both unknown and repeated counts once, as unknown."""
    found: list[str] = []
    _strict(node, json.loads(body, object_pairs_hook=_pairs_hook), "", found)
    return found


def _strict(node: SchemaNode, value: Any, path: str, found: list[str]) -> None:
    if len(found) >= MAX_ERRORS or node.is_open:
        return
    shape = node.shape
    if isinstance(value, _Pairs) and shape in (STRUCT, MAP):
        seen: set[str] = set()
        for key, sub in value.pairs:
            here = f"{path}.{key}" if path else key
            child = node.field(key)
            if child is None:
                message = strict_message(here)
            elif key in seen:
                message = f'duplicate field "{here}"'
            else:
                message = ""
            seen.add(key)
            if message:
                if message not in found and len(found) < MAX_ERRORS:
                    found.append(message)
                continue
            _strict(child, sub, here, found)
    elif isinstance(value, list) and shape == LIST:
        items = node.items()
        for i, sub in enumerate(value):
            _strict(items, sub, f"{path}[{i}]", found)


def duplicate_fields(body: str | bytes) -> list[str]:
    """Repeated keys of a merge or strategic merge patch, in document order:
    `duplicate field "spec.paused"` (the patch itself has no schema; its unknown fields
    are found on the patched object)."""
    found: list[str] = []
    _duplicates(json.loads(body, object_pairs_hook=_pairs_hook), "", found)
    return found


def _duplicates(value: Any, path: str, found: list[str]) -> None:
    if isinstance(value, _Pairs):
        seen: set[str] = set()
        for key, sub in value.pairs:
            here = f"{path}.{key}" if path else key
            if key in seen:
                message = f'duplicate field "{here}"'
                if message not in found:
                    found.append(message)
            seen.add(key)
            _duplicates(sub, here, found)
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            _duplicates(sub, f"{path}[{i}]", found)


JSON_PATCH_FIELDS = frozenset({"op", "path", "value", "from"})


def json_patch_field_errors(body: str | bytes) -> list[str]:
    """Unknown and repeated members of JSON patch operations:
    `json patch unknown field "[0].foo"`, `json patch duplicate field "[1].path"`."""
    ops = json.loads(body, object_pairs_hook=_pairs_hook)
    found: list[str] = []
    for i, op in enumerate(ops if isinstance(ops, list) else ()):
        if not isinstance(op, _Pairs):
            continue
        seen: set[str] = set()
        for key, _ in op.pairs:
            if key not in JSON_PATCH_FIELDS:
                found.append(f'json patch unknown field "[{i}].{key}"')
            elif key in seen:
                found.append(f'json patch duplicate field "[{i}].{key}"')
            seen.add(key)
    return found
