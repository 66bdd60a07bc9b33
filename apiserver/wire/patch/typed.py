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

from draemu.apiserver.wire.jsoncopy import clone
from draemu.apiserver.wire.patch import fieldpath
from draemu.apiserver.wire.patch.fieldpath import FieldSet, Path
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
    return _info(node).item_key(item)


class _Info:
    """What walks ask of a schema node, computed once: the shape of a dict or a list
    value there, its children, its items and list-map keys."""

    __slots__ = ("_declared", "_fields", "_items", "_keys", "_other", "dict_kind", "embedded",
                 "list_kind", "node", "required")

    def __init__(self, node: SchemaNode) -> None:
        self.node = node
        granular = node.is_open or (node.shape in (STRUCT, MAP) and node.map_type != "atomic")
        self.dict_kind = GRANULAR if granular else ATOMIC
        self.list_kind = ATOMIC
        if not node.is_open and node.shape == LIST:
            if node.list_type == "map" and node.list_map_keys:
                self.list_kind = LIST_MAP
            elif node.list_type == "set":
                self.list_kind = SET
        self.required = frozenset(node.required)
        self.embedded = node.embedded
        # Declared struct fields have nodes of their own; every other name shares one
        # (a map's values, or the open node), so the caches never grow with the data.
        self._declared = node.properties if node.shape == STRUCT else {}
        self._fields: dict[str, tuple[_Info, bool]] = {}
        self._other: _Info | None = None
        self._items: _Info | None = None
        self._keys: tuple[tuple[str, Any], ...] | None = None

    def kind(self, value: Any) -> str:
        """`shape(self.node, value)`."""
        if isinstance(value, dict):
            return self.dict_kind
        if isinstance(value, list):
            return self.list_kind
        return ATOMIC

    def child(self, name: str) -> tuple[_Info, bool]:
        """The node of field `name` and whether creating the field is a change of its
        own. Embedded structs and required fields exist (empty) in every object upstream,
        so only what is set inside them is."""
        found = self._fields.get(name)
        if found is not None:
            return found
        if name in self._declared:
            sub = _info(child(self.node, name))
            found = self._fields[name] = (sub, not (sub.embedded or name in self.required))
            return found
        if self._other is None:
            self._other = _info(child(self.node, name))
        return self._other, not (self._other.embedded or name in self.required)

    def items(self) -> _Info:
        if self._items is None:
            self._items = _info(self.node.items())
        return self._items

    def item_key(self, item: Any) -> str:
        if self._keys is None:
            items = self.node.items()
            self._keys = tuple((k, items.default_of(k)) for k in self.node.list_map_keys)
        values = {}
        if isinstance(item, dict):
            for name, default in self._keys:
                value = item.get(name, default)
                if value is not None:
                    values[name] = value
        return fieldpath.key(values)


_INFOS: dict[SchemaNode, _Info] = {}
# Far more than the nodes of every built-in kind: only schema reloads (CRDs) add more.
_MAX_INFOS = 20000


def _info(node: SchemaNode) -> _Info:
    info = _INFOS.get(node)
    if info is None:
        if len(_INFOS) >= _MAX_INFOS:
            _INFOS.clear()
        info = _INFOS[node] = _Info(node)
    return info


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
    if old is MISSING or new is MISSING:
        _compare_missing(old, new, _info(node), (), changes, False, IGNORED_TOP)
    else:  # no `old != new` first: the walk compares each field, and objects differ
        _compare(old, new, _info(node), (), changes, IGNORED_TOP)
    return changes


_NOTHING: frozenset[str] = frozenset()


def _skipped(prefix: Path, name: str) -> frozenset[str]:
    """The bookkeeping fields below field `name` of the value at `prefix` (see `ignored`)."""
    return IGNORED_META if not prefix and name == "metadata" else _NOTHING


def _compare_missing(old: Any, new: Any, info: _Info, prefix: Path, changes: Changes,
                     member: bool, skip: frozenset[str]) -> None:
    if old is MISSING and new is not MISSING:
        _everything(new, info, prefix, changes.added, member, skip)
    elif new is MISSING and old is not MISSING:
        changes.removed.add(prefix)


def _compare(old: Any, new: Any, info: _Info, prefix: Path, changes: Changes,
             skip: frozenset[str]) -> None:
    """The changes between two present values; `skip` are the names of the value's
    bookkeeping fields."""
    kind = info.kind(new)
    if kind != info.kind(old):
        kind = ATOMIC
    if kind == GRANULAR:
        for name, sub in new.items():
            if name in skip:
                continue
            before = old.get(name, MISSING)
            if before is MISSING:
                sub_info, member = info.child(name)
                _everything(sub, sub_info, (*prefix, f"f:{name}"), changes.added, member,
                            _skipped(prefix, name))
            elif before != sub:
                _compare_field(before, sub, info, prefix, name, changes)
        for name in old:
            if name not in new and name not in skip:
                changes.removed.add((*prefix, f"f:{name}"))
    elif kind == LIST_MAP:
        items = info.items()
        before = {info.item_key(i): i for i in old}
        after = {info.item_key(i): i for i in new}
        for k, item in after.items():
            was = before.get(k, MISSING)
            if was is MISSING:
                _everything(item, items, (*prefix, k), changes.added, True, _NOTHING)
            elif was != item:
                _compare(was, item, items, (*prefix, k), changes, _NOTHING)
        changes.removed.update((*prefix, k) for k in before if k not in after)
    elif kind == SET:
        before_set = {fieldpath.value(i) for i in old}
        after_set = {fieldpath.value(i) for i in new}
        changes.added.update((*prefix, v) for v in after_set - before_set)
        changes.removed.update((*prefix, v) for v in before_set - after_set)
    elif prefix:
        changes.modified.add(prefix)


def _compare_field(old: Any, new: Any, info: _Info, prefix: Path, name: str,
                   changes: Changes) -> None:
    """Field `name` of a granular value, present and unequal on both sides."""
    path = (*prefix, f"f:{name}")
    if not isinstance(new, (dict, list)) or not isinstance(old, (dict, list)):
        changes.modified.add(path)  # a scalar on either side: the field is atomic
        return
    _compare(old, new, info.child(name)[0], path, changes, _skipped(prefix, name))


def _everything(value: Any, info: _Info, prefix: Path, out: FieldSet, member: bool,
                skip: frozenset[str]) -> None:
    """Every field of a value that appears as a whole (the value itself included);
    `member` says whether the value is a change of its own (see `_Info.child`)."""
    kind = info.kind(value)
    if prefix and (member or kind == ATOMIC):
        out.add(prefix)
    if kind == GRANULAR:
        for name, sub in value.items():
            if name in skip:
                continue
            path = (*prefix, f"f:{name}")
            if isinstance(sub, (dict, list)):
                sub_info, sub_member = info.child(name)
                _everything(sub, sub_info, path, out, sub_member, _skipped(prefix, name))
            else:
                out.add(path)  # a scalar is atomic: owned whatever its schema
    elif kind == LIST_MAP:
        items = info.items()
        for item in value:
            _everything(item, items, (*prefix, info.item_key(item)), out, True, _NOTHING)
    elif kind == SET:
        out.update((*prefix, fieldpath.value(item)) for item in value)


def created_fields_v1(obj: Any, node: SchemaNode) -> dict[str, Any] | None:
    """The FieldsV1 of what creating `obj` sets (`to_fields_v1(compare({}, obj,
    node).added)`), built in one walk, ordered as it goes. None when the walk cannot
    build it alone (an object that is not a struct, list-map items sharing a key)."""
    info = _info(node)
    if not isinstance(obj, dict) or info.dict_kind != GRANULAR:
        return None
    try:
        return _created(obj, info, False, IGNORED_TOP) or {}
    except _SharedKey:
        return None


class _SharedKey(Exception):
    """Two items of a list map with one key: their fields merge, which `_created` does
    not do."""


def _created(value: Any, info: _Info, member: bool, skip: frozenset[str],
             ) -> dict[str, Any] | None:
    """The FieldsV1 node of a value created whole (see `_everything`); None when it
    holds no field at all."""
    kind = info.kind(value)
    children: dict[str, Any] = {}
    if kind == GRANULAR:
        for name in sorted(value):  # "f:" elements sort as their names
            if name in skip:
                continue
            sub = value[name]
            if isinstance(sub, (dict, list)):
                sub_info, sub_member = info.child(name)
                below = IGNORED_META if skip is IGNORED_TOP and name == "metadata" else _NOTHING
                fields = _created(sub, sub_info, sub_member, below)
                if fields is not None:
                    children[f"f:{name}"] = fields
            else:
                children[f"f:{name}"] = {}
    elif kind == LIST_MAP:
        items = info.items()
        keyed = {info.item_key(item): item for item in value}
        if len(keyed) != len(value):
            raise _SharedKey
        for k in sorted(keyed):
            children[k] = _created(keyed[k], items, True, _NOTHING)
    elif kind == SET:
        children = {v: {} for v in sorted({fieldpath.value(item) for item in value})}
    if not children:
        return {} if member or kind == ATOMIC else None
    return {".": {}, **children} if member else children


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
