"""Walking objects the way server-side apply sees them, guided by their schema.

Every value is one of four shapes:

- *granular* — a struct or a map (`x-kubernetes-map-type` not `atomic`): its keys are
  fields of their own;
- *list map* — `x-kubernetes-list-type: map`: items are identified by their
  `x-kubernetes-list-map-keys` (a missing key takes its schema default);
- *set* — `x-kubernetes-list-type: set`: items are identified by value;
- *atomic* — scalars, atomic lists (the default for lists) and atomic maps: one field.

Fields of unknown schema are granular when they are objects and atomic otherwise, as
upstream treats fields it cannot type. The bookkeeping fields of an object (apiVersion,
kind, metadata.name, uid, resourceVersion, managedFields, ...) are never tracked.
"""

from __future__ import annotations

from typing import Any

from draemu.apiserver.jsoncopy import clone
from draemu.apiserver.patch import fieldpath
from draemu.apiserver.patch.fieldpath import FieldSet, Path
from draemu.openapi.schemas.node import LIST, MAP, STRUCT, SchemaNode

MISSING: Any = object()
GRANULAR, LIST_MAP, SET, ATOMIC = "granular", "listmap", "set", "atomic"

IGNORED_TOP = frozenset({"apiVersion", "kind"})
IGNORED_META = frozenset({"name", "namespace", "uid", "resourceVersion", "generation",
                          "creationTimestamp", "deletionTimestamp",
                          "deletionGracePeriodSeconds", "managedFields", "selfLink"})


def child(node: SchemaNode, name: str) -> SchemaNode:
    return node.field(name) or SchemaNode.open()


def shape(node: SchemaNode, value: Any) -> str:
    if isinstance(value, dict):
        if node.is_open or (node.shape in (STRUCT, MAP) and node.map_type != "atomic"):
            return GRANULAR
        return ATOMIC
    if isinstance(value, list) and not node.is_open and node.shape == LIST:
        if node.list_type == "map" and node.list_map_keys:
            return LIST_MAP
        if node.list_type == "set":
            return SET
    return ATOMIC


def ignored(prefix: Path, name: str) -> bool:
    return (not prefix and name in IGNORED_TOP) or (prefix == ("f:metadata",)
                                                    and name in IGNORED_META)


def item_key(node: SchemaNode, item: Any) -> str:
    """The `k:{...}` element of a list-map item (`node` is the list's node)."""
    items = node.items()
    values = {}
    if isinstance(item, dict):
        for name in node.list_map_keys:
            value = item.get(name, items.default_of(name))
            if value is not None:
                values[name] = value
    return fieldpath.key(values)


def typing_errors(config: Any, node: SchemaNode, path: str = "") -> list[str]:
    """What stops an applied configuration from being typed by its schema, worded as
    upstream's typed conversion words it: undeclared fields, list-map items that lack a
    key (without a default) or repeat one."""
    errors: list[str] = []
    kind = shape(node, config)
    if kind == GRANULAR:
        for name, sub in config.items():
            sub_node = node.field(name)
            if sub_node is None:
                errors.append(f"{path}.{name}: field not declared in schema")
            else:
                errors += typing_errors(sub, sub_node, f"{path}.{name}")
    elif kind == LIST_MAP:
        items = node.items()
        seen: set[str] = set()
        for i, item in enumerate(config):
            missing = [k for k in node.list_map_keys if not isinstance(item, dict) or (
                k not in item and items.default_of(k) is None)]
            if missing:
                errors.append(f"{path}: element {i}: associative list with keys has an "
                              f'element that omits key field "{missing[0]}" (and doesn\'t '
                              "have default value)")
                continue
            k = item_key(node, item)
            if k in seen:
                errors.append(f"{path}: duplicate entries for key {fieldpath.path_string((k,))}")
            seen.add(k)
            errors += typing_errors(item, items, f"{path}{fieldpath.path_string((k,))}")
    elif isinstance(config, list) and not node.is_open and node.shape == LIST:
        items = node.items()
        for i, item in enumerate(config):
            errors += typing_errors(item, items, f"{path}[{i}]")
    return errors


def applied_set(config: Any, node: SchemaNode) -> FieldSet:
    """The fields an applied configuration sets: leaves, list items, empty maps."""
    out: FieldSet = set()
    _leaves(config, node, (), out)
    return out


def _leaves(value: Any, node: SchemaNode, prefix: Path, out: FieldSet) -> None:
    kind = shape(node, value)
    if kind == GRANULAR:
        if not value and prefix:
            out.add(prefix)
        for name, sub in value.items():
            if not ignored(prefix, name):
                _leaves(sub, child(node, name), (*prefix, fieldpath.field(name)), out)
    elif kind == LIST_MAP:
        items = node.items()
        for item in value:
            path = (*prefix, item_key(node, item))
            out.add(path)
            if isinstance(item, dict):
                for name, sub in item.items():
                    _leaves(sub, child(items, name), (*path, fieldpath.field(name)), out)
    elif kind == SET:
        out.update((*prefix, fieldpath.value(item)) for item in value)
    elif prefix:
        out.add(prefix)


class Changes:
    """What changed between two versions of an object, field by field."""

    def __init__(self) -> None:
        self.added: FieldSet = set()
        self.modified: FieldSet = set()
        self.removed: FieldSet = set()

    def __bool__(self) -> bool:
        return bool(self.added or self.modified or self.removed)


def compare(old: Any, new: Any, node: SchemaNode) -> Changes:
    changes = Changes()
    _compare(old, new, node, (), changes, member=False)
    return changes


def _compare(old: Any, new: Any, node: SchemaNode, prefix: Path, changes: Changes,
             member: bool) -> None:
    if old is MISSING and new is MISSING:
        return
    if old is MISSING:
        _everything(new, node, prefix, changes.added, member)
        return
    if new is MISSING:
        changes.removed.add(prefix)
        return
    if old == new:  # equal subtrees (compared in C) have nothing to report
        return
    kind = shape(node, new)
    if kind != shape(node, old):
        kind = ATOMIC
    if kind == GRANULAR:
        for name in {**old, **new}:
            if not ignored(prefix, name):
                _compare(old.get(name, MISSING), new.get(name, MISSING), child(node, name),
                         (*prefix, fieldpath.field(name)), changes, _member(node, name))
    elif kind == LIST_MAP:
        items = node.items()
        before = {item_key(node, i): i for i in old}
        after = {item_key(node, i): i for i in new}
        for k in {**before, **after}:
            _compare(before.get(k, MISSING), after.get(k, MISSING), items, (*prefix, k),
                     changes, True)
    elif kind == SET:
        before_set = {fieldpath.value(i) for i in old}
        after_set = {fieldpath.value(i) for i in new}
        changes.added.update((*prefix, v) for v in after_set - before_set)
        changes.removed.update((*prefix, v) for v in before_set - after_set)
    elif prefix:
        changes.modified.add(prefix)


def _member(parent: SchemaNode, name: str) -> bool:
    """Whether creating this field is a change of its own. Embedded structs and required
    fields exist (empty) in every object upstream, so only what is set inside them is."""
    return not (child(parent, name).embedded or name in parent.required)


def _everything(value: Any, node: SchemaNode, prefix: Path, out: FieldSet,
                member: bool) -> None:
    """Every field of a value that appears as a whole (the value itself included)."""
    kind = shape(node, value)
    if prefix and (member or kind == ATOMIC):
        out.add(prefix)
    if kind == GRANULAR:
        for name, sub in value.items():
            if not ignored(prefix, name):
                _everything(sub, child(node, name), (*prefix, fieldpath.field(name)), out,
                            _member(node, name))
    elif kind == LIST_MAP:
        items = node.items()
        for item in value:
            _everything(item, items, (*prefix, item_key(node, item)), out, True)
    elif kind == SET:
        out.update((*prefix, fieldpath.value(item)) for item in value)


def merge(live: Any, config: Any, node: SchemaNode) -> Any:
    """`live` with an applied configuration merged in (new values win; list maps merge
    by key, sets by value; atomic values are replaced). `live` is not changed."""
    kind = shape(node, config)
    if kind == GRANULAR:
        out = dict(live) if isinstance(live, dict) else {}
        for name, sub in config.items():
            if sub is None:
                out.pop(name, None)
            else:
                out[name] = merge(out.get(name, MISSING), sub, child(node, name))
        return out
    if kind == LIST_MAP and isinstance(live, list):
        items = node.items()
        return _merge_items(live, config, lambda i: item_key(node, i),
                            lambda old, new: merge(old, new, items))
    if kind == SET and isinstance(live, list):
        return _merge_items(live, config, fieldpath.value, lambda old, new: old)
    return clone(config)


def _merge_items(live: list[Any], config: list[Any], key: Any, combine: Any) -> list[Any]:
    """Merge two keyed lists in upstream's order: the applied items in their applied
    order, items only the live list has where the live list had them."""
    live_by_key = {key(i): i for i in live}
    applied_keys = [key(i) for i in config]
    applied_set = set(applied_keys)
    shared = iter([k for k in applied_keys if k in live_by_key])
    next_shared = next(shared, None)
    out: list[Any] = []
    done: set[str] = set()
    left = right = 0
    while left < len(live) or right < len(config):
        if left < len(live) and right < len(config):
            k = key(live[left])
            if k == applied_keys[right]:
                out.append(combine(live[left], config[right]))
                done.add(k)
                left, right = left + 1, right + 1
                next_shared = next(shared, None)
                continue
            if k in applied_set and next_shared is not None and next_shared != k:
                left += 1  # a shared item out of the applied order: placed when reached
                continue
        if left < len(live):
            k = key(live[left])
            if k not in applied_set:
                out.append(live[left])
                left += 1
                continue
            if k in done:
                left += 1
                continue
        if right < len(config):
            k = applied_keys[right]
            before = live_by_key.get(k, MISSING)
            out.append(clone(config[right]) if before is MISSING
                       else combine(before, config[right]))
            done.add(k)
            right += 1
            if next_shared == k:
                next_shared = next(shared, None)
    return out


def remove(obj: dict[str, Any], path: Path, node: SchemaNode, keep: FieldSet) -> None:
    """Remove the field at `path` from `obj` (in place); maps left empty go too unless
    someone owns them (`keep`)."""
    _remove(obj, path, node, keep, ())


def _remove(value: Any, path: Path, node: SchemaNode, keep: FieldSet, prefix: Path) -> bool:
    """Returns whether `value` became empty and may go."""
    element, rest = path[0], path[1:]
    kind, text = element[:1], element[2:]
    if kind == "f" and isinstance(value, dict):
        if text not in value:
            return False
        if rest:
            emptied = _remove(value[text], rest, child(node, text), keep, (*prefix, element))
            if not emptied or fieldpath.under((*prefix, element), keep):
                return False
        del value[text]
        return not value
    if kind == "k" and isinstance(value, list):
        for i, item in enumerate(value):
            if item_key(node, item) != element:
                continue
            if rest:
                _remove(item, rest, node.items(), keep, (*prefix, element))
            else:
                del value[i]
            break
        return False
    if kind == "v" and isinstance(value, list):
        value[:] = [v for v in value if fieldpath.value(v) != element]
    return False


def value_at(obj: Any, path: Path, node: SchemaNode) -> Any:
    """The value at `path` (MISSING when absent); a set element reads as its value."""
    value = obj
    for element in path:
        kind, text = element[:1], element[2:]
        if kind == "f" and isinstance(value, dict) and text in value:
            value, node = value[text], child(node, text)
        elif kind == "k" and isinstance(value, list):
            value = next((i for i in value if item_key(node, i) == element), MISSING)
            node = node.items()
        elif kind == "v" and isinstance(value, list):
            value = next((i for i in value if fieldpath.value(i) == element), MISSING)
        else:
            return MISSING
        if value is MISSING:
            return MISSING
    return value
