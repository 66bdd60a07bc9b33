"""The managedFields bookkeeping of ordinary writes as it was before it was made fast
(commit 65247a6): every entry decoded, every field compared, every entry re-encoded.
Kept as the oracle the fast implementation must match byte for byte; the helpers the
rewrite left as they were (reading FieldsV1, a field's schema node and shape) are the
live ones."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from draemu.apiserver.wire.patch.fieldpath import from_fields_v1
from draemu.apiserver.wire.patch.typed import Changes, child, ignored, shape
from draemu.openapi.schemas.node import SchemaNode

Path = tuple[str, ...]
FieldSet = set[Path]
MISSING: Any = object()
GRANULAR, LIST_MAP, SET, ATOMIC = "granular", "listmap", "set", "atomic"
APPLY, UPDATE = "Apply", "Update"
MAX_UPDATE_MANAGERS = 10
ANCIENT = "ancient-changes"
_KIND_ORDER = {"f": 0, "v": 1, "k": 2, "i": 3}


# Field sets and FieldsV1 ------------------------------------------------------------------
def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def to_fields_v1(members: FieldSet) -> dict[str, Any]:
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


def under(path: Path, prefixes: FieldSet) -> bool:
    return any(path[:i] in prefixes for i in range(len(path) + 1))


# Comparing objects by their schema --------------------------------------------------------
def item_key(node: SchemaNode, item: Any) -> str:
    items = node.items()
    values = {}
    if isinstance(item, dict):
        for name in node.list_map_keys:
            value = item.get(name, items.default_of(name))
            if value is not None:
                values[name] = value
    return f"k:{compact(values)}"


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
    if old == new:
        return
    kind = shape(node, new)
    if kind != shape(node, old):
        kind = ATOMIC
    if kind == GRANULAR:
        for name in {**old, **new}:
            if not ignored(prefix, name):
                _compare(old.get(name, MISSING), new.get(name, MISSING), child(node, name),
                         (*prefix, f"f:{name}"), changes, _member(node, name))
    elif kind == LIST_MAP:
        items = node.items()
        before = {item_key(node, i): i for i in old}
        after = {item_key(node, i): i for i in new}
        for k in {**before, **after}:
            _compare(before.get(k, MISSING), after.get(k, MISSING), items, (*prefix, k),
                     changes, True)
    elif kind == SET:
        before_set = {f"v:{compact(i)}" for i in old}
        after_set = {f"v:{compact(i)}" for i in new}
        changes.added.update((*prefix, v) for v in after_set - before_set)
        changes.removed.update((*prefix, v) for v in before_set - after_set)
    elif prefix:
        changes.modified.add(prefix)


def _member(parent: SchemaNode, name: str) -> bool:
    return not (child(parent, name).embedded or name in parent.required)


def _everything(value: Any, node: SchemaNode, prefix: Path, out: FieldSet,
                member: bool) -> None:
    kind = shape(node, value)
    if prefix and (member or kind == ATOMIC):
        out.add(prefix)
    if kind == GRANULAR:
        for name, sub in value.items():
            if not ignored(prefix, name):
                _everything(sub, child(node, name), (*prefix, f"f:{name}"), out,
                            _member(node, name))
    elif kind == LIST_MAP:
        items = node.items()
        for item in value:
            _everything(item, items, (*prefix, item_key(node, item)), out, True)
    elif kind == SET:
        out.update((*prefix, f"v:{compact(item)}") for item in value)


# Entries ----------------------------------------------------------------------------------
@dataclass
class Entry:
    manager: str
    operation: str
    api_version: str
    time: str
    fields: FieldSet = field(default_factory=set)
    subresource: str = ""
    stored: tuple[dict[str, Any], FieldSet] | None = None

    @property
    def identity(self) -> tuple[str, str, str, str]:
        version = "" if self.operation == APPLY else self.api_version
        return (self.manager, self.operation, version, self.subresource)

    def encode(self) -> dict[str, Any]:
        out: dict[str, Any] = {"manager": self.manager, "operation": self.operation,
                               "apiVersion": self.api_version}
        if self.time:
            out["time"] = self.time
        out["fieldsType"] = "FieldsV1"
        if self.stored is not None and self.stored[1] == self.fields:
            out["fieldsV1"] = self.stored[0]
        else:
            out["fieldsV1"] = to_fields_v1(self.fields)
        if self.subresource:
            out["subresource"] = self.subresource
        return out


def decode(obj: dict[str, Any] | None) -> list[Entry]:
    raw = ((obj or {}).get("metadata") or {}).get("managedFields") or []
    entries = []
    for item in raw:
        if not isinstance(item, dict) or not item.get("manager"):
            continue
        fields = from_fields_v1(item.get("fieldsV1"))
        entries.append(Entry(item["manager"], item.get("operation", UPDATE),
                             item.get("apiVersion", ""), item.get("time", ""), fields,
                             item.get("subresource", ""),
                             (item.get("fieldsV1") or {}, set(fields))))
    return entries


def store(obj: dict[str, Any], entries: list[Entry]) -> None:
    meta = obj.setdefault("metadata", {})
    kept = [e for e in entries if e.fields]
    kept.sort(key=lambda e: (e.operation, e.time, e.manager, e.api_version, e.subresource))
    if kept:
        meta["managedFields"] = [e.encode() for e in kept]
    else:
        meta.pop("managedFields", None)


def find(entries: list[Entry], manager: str, operation: str, api_version: str,
         subresource: str, time: str) -> Entry:
    probe = Entry(manager, operation, api_version, time, set(), subresource)
    for entry in entries:
        if entry.identity == probe.identity:
            return entry
    entries.append(probe)
    return probe


def update_managed_fields(old: dict[str, Any] | None, new: dict[str, Any], manager: str,
                          operation: str, api_version: str, time: str, *,
                          subresource: str = "", schema: SchemaNode) -> dict[str, Any]:
    requested = (new.get("metadata") or {}).get("managedFields")
    stored = ((old or {}).get("metadata") or {}).get("managedFields")
    entries = decode(new) if requested and requested != stored else decode(old)
    changes = compare(old or {}, new, schema)
    if changes:
        owned = changes.added | changes.modified
        for entry in entries:
            entry.fields = {p for p in entry.fields
                            if p not in owned and not under(p, changes.removed)}
        mine = find(entries, manager, operation, api_version, subresource, time)
        mine.fields |= owned
        mine.time = time
        entries = cap_update_entries(entries)
    store(new, entries)
    return new


def cap_update_entries(entries: list[Entry]) -> list[Entry]:
    updates = [e for e in entries if e.operation == UPDATE and e.fields]
    excess = len(updates) - MAX_UPDATE_MANAGERS
    if excess <= 0:
        return entries
    updates.sort(key=lambda e: (e.time, e.manager))
    first_of_version: dict[str, Entry] = {}
    gone: list[Entry] = []
    for entry in updates:
        if excess <= 0:
            break
        first = first_of_version.get(entry.api_version)
        if first is None:
            first_of_version[entry.api_version] = entry
            continue
        if first.manager != ANCIENT:
            first.manager, first.subresource, first.stored = ANCIENT, "", None
        first.fields = first.fields | entry.fields
        first.time = entry.time
        gone.append(entry)
        excess -= 1
    return [e for e in entries if not any(e is g for g in gone)]
