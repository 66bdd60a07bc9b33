"""`metadata.managedFields`: who set which field, recorded on every write.

Entries are identified as upstream identifies managers: `(manager, operation, apiVersion,
subresource)` for `Update` entries and `(manager, Apply, subresource)` for `Apply` entries
(an applier keeps one entry whatever version it applies with). Entries whose field set is
empty are dropped; the list is sorted by operation, time, manager, apiVersion and
subresource, as kube-apiserver sorts it.
"""

from __future__ import annotations

from typing import Any

from draemu.api.meta import time_now
from draemu.apiserver.wire.patch import fieldpath
from draemu.apiserver.wire.patch.fieldpath import FieldSet
from draemu.apiserver.wire.patch.typed import compare, created_fields_v1
from draemu.openapi import schemas
from draemu.openapi.schemas.node import SchemaNode

APPLY, UPDATE = "Apply", "Update"
MAX_MANAGER_LENGTH = 128
# Upstream keeps at most 10 Update entries; older ones are folded, per API version, into
# one entry of this manager.
MAX_UPDATE_MANAGERS = 10
ANCIENT = "ancient-changes"


class Entry:
    """One manager's entry. Its field set is decoded from the stored `fieldsV1` only
    when a write touches the entry (most writes touch one or two of several), and an
    entry whose fields end up as stored keeps its stored `fieldsV1` as is."""

    __slots__ = ("_fields", "_stored_set", "api_version", "manager", "operation", "stored",
                 "subresource", "time")

    def __init__(self, manager: str, operation: str, api_version: str, time: str,
                 fields: FieldSet | None = None, subresource: str = "",
                 stored: dict[str, Any] | None = None) -> None:
        self.manager = manager
        self.operation = operation
        self.api_version = api_version
        self.time = time
        self.subresource = subresource
        # The stored fieldsV1, and the set it decodes to once decoded; `_fields` is None
        # until then.
        self.stored = stored
        self._stored_set: FieldSet | None = None
        if fields is None and stored is None:
            fields = set()
        self._fields = fields

    @property
    def fields(self) -> FieldSet:
        if self._fields is None:
            self._stored_set = fieldpath.from_fields_v1(self.stored)
            self._fields = set(self._stored_set)
        return self._fields

    @fields.setter
    def fields(self, value: FieldSet) -> None:
        self._fields = value

    @property
    def identity(self) -> tuple[str, str, str, str]:
        version = "" if self.operation == APPLY else self.api_version
        return (self.manager, self.operation, version, self.subresource)

    def has_fields(self) -> bool:
        if self._fields is None:
            return fieldpath.has_members(self.stored)
        return bool(self._fields)

    def release(self, owned: FieldSet, owned_v1: dict[str, Any], removed: FieldSet) -> None:
        """Give up the fields in `owned` (whose FieldsV1 is `owned_v1`) and every field
        at or below one in `removed`."""
        if self._fields is None and not (fieldpath.shares_member(self.stored, owned_v1)
                                         or fieldpath.owns_any_under(self.stored, removed)
                                         or () in owned):
            return
        if removed:
            self.fields = {p for p in self.fields
                           if p not in owned and not fieldpath.under(p, removed)}
        else:
            self.fields = self.fields - owned

    def own(self, owned: FieldSet, owned_v1: dict[str, Any]) -> None:
        """Add the fields in `owned`, whose FieldsV1 is `owned_v1`."""
        if self.stored is None and not self._fields:
            self.stored, self._fields = owned_v1, None  # a new entry holds just these
        else:
            self.fields |= owned

    def detach(self) -> None:
        """Forget the stored form: the entry is encoded from its fields."""
        self._fields = self.fields  # decoded while the stored form is still there
        self.stored = self._stored_set = None

    def encode(self) -> dict[str, Any]:
        out: dict[str, Any] = {"manager": self.manager, "operation": self.operation,
                               "apiVersion": self.api_version}
        if self.time:
            out["time"] = self.time
        out["fieldsType"] = "FieldsV1"
        if self._fields is None or (self.stored is not None
                                    and self._stored_set == self._fields):
            out["fieldsV1"] = self.stored
        else:
            out["fieldsV1"] = fieldpath.to_fields_v1(self._fields)
        if self.subresource:
            out["subresource"] = self.subresource
        return out


def decode(obj: dict[str, Any] | None) -> list[Entry]:
    raw = ((obj or {}).get("metadata") or {}).get("managedFields") or []
    entries = []
    for item in raw:
        if not isinstance(item, dict) or not item.get("manager"):
            continue  # `[{}]` is how users wipe managedFields
        entries.append(Entry(item["manager"], item.get("operation", UPDATE),
                             item.get("apiVersion", ""), item.get("time", ""), None,
                             item.get("subresource", ""), item.get("fieldsV1") or {}))
    return entries


def encode(entries: list[Entry]) -> list[dict[str, Any]]:
    kept = [e for e in entries if e.has_fields()]
    kept.sort(key=lambda e: (e.operation, e.time, e.manager, e.api_version, e.subresource))
    return [e.encode() for e in kept]


def store(obj: dict[str, Any], entries: list[Entry]) -> None:
    meta = obj.setdefault("metadata", {})
    encoded = encode(entries)
    if encoded:
        meta["managedFields"] = encoded
    else:
        meta.pop("managedFields", None)


def schema_of(obj: dict[str, Any]) -> SchemaNode:
    """The schema of an object, found from its apiVersion and kind."""
    group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
    return schemas.patch_meta(group, version, str(obj.get("kind", "")))


def manager_from_user_agent(user_agent: str) -> str:
    """The manager name upstream derives when a request names no fieldManager:
    the user agent up to its first '/', at most 128 characters."""
    return user_agent.split("/", 1)[0][:MAX_MANAGER_LENGTH]


def find(entries: list[Entry], manager: str, operation: str, api_version: str,
         subresource: str, time: str) -> Entry:
    """The entry of a manager, added to `entries` when it is new."""
    probe = Entry(manager, operation, api_version, time, set(), subresource)
    identity = probe.identity
    for entry in entries:
        if entry.identity == identity:
            return entry
    entries.append(probe)
    return probe


def _base_entries(old: dict[str, Any] | None, new: dict[str, Any]) -> list[Entry]:
    """The entries a write starts from: the stored ones, unless the request set its own
    (a non-empty list that differs; `[{}]` clears them)."""
    requested = (new.get("metadata") or {}).get("managedFields")
    stored = ((old or {}).get("metadata") or {}).get("managedFields")
    if requested and requested != stored:
        return decode(new)
    return decode(old)


def update_managed_fields(old: dict[str, Any] | None, new: dict[str, Any], manager: str,
                          operation: str = UPDATE, api_version: str | None = None,
                          time: str | None = None, *, subresource: str = "",
                          schema: SchemaNode | None = None) -> dict[str, Any]:
    """Record an ordinary write (create, update, patch) of `new` over `old` (None for a
    create) by `manager`: the fields it added or changed become its own and leave other
    managers; removed fields leave everyone. Sets `new.metadata.managedFields` and
    returns `new`.

    `api_version` defaults to `new["apiVersion"]`, `time` to now, `schema` to the
    schema of `new`'s kind.
    """
    node = schema if schema is not None else schema_of(new)
    entries = _base_entries(old, new)
    if old is None and not entries and _record_create(new, node, manager, operation,
                                                      api_version, time, subresource):
        return new
    changes = compare(old or {}, new, node)
    if changes:
        owned = changes.added | changes.modified
        owned_v1 = fieldpath.to_fields_v1(owned)
        for entry in entries:
            entry.release(owned, owned_v1, changes.removed)
        mine = find(entries, manager, operation, api_version or new.get("apiVersion", ""),
                    subresource, time or time_now())
        mine.own(owned, owned_v1)
        mine.time = time or time_now()
        entries = cap_update_entries(entries)
    store(new, entries)
    return new


def _record_create(new: dict[str, Any], node: SchemaNode, manager: str, operation: str,
                   api_version: str | None, time: str | None, subresource: str) -> bool:
    """A create with no entries to start from: the manager owns everything set, its
    FieldsV1 built in one walk. False when the walk cannot build it."""
    fields = created_fields_v1(new, node)
    if fields is None:
        return False
    entries = []
    if fields:
        entries.append(Entry(manager, operation, api_version or new.get("apiVersion", ""),
                             time or time_now(), None, subresource, fields))
    store(new, entries)
    return True


def cap_update_entries(entries: list[Entry]) -> list[Entry]:
    """Fold the oldest Update entries into per-version `ancient-changes` entries until
    at most MAX_UPDATE_MANAGERS Update entries are left (entries with no fields don't
    count: they are dropped anyway)."""
    if (len(entries) <= MAX_UPDATE_MANAGERS
            or sum(e.operation == UPDATE for e in entries) <= MAX_UPDATE_MANAGERS):
        return entries  # the usual case, decided without looking at any fields
    updates = [e for e in entries if e.operation == UPDATE and e.has_fields()]
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
            first.manager, first.subresource = ANCIENT, ""
            first.detach()
        first.fields = first.fields | entry.fields
        first.time = entry.time  # the bucket is as recent as what it last took in
        gone.append(entry)
        excess -= 1
    return [e for e in entries if not any(e is g for g in gone)]
