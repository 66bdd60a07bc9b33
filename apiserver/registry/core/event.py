"""core/v1 Event, and what it shares with events.k8s.io/v1 Event: both are one stored
object (core/v1 shape), converted field by field as upstream converts them, validated
by the legacy rules (plus strict ones for events.k8s.io writes) and printed alike."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from draemu.api.errors import FieldError, Path, invalid, required
from draemu.api.types import Obj
from draemu.apiserver.registry.core.common import dns_subdomain, immutable, qualified_name, since
from draemu.apiserver.registry.meta import name_is_anything
from draemu.apiserver.registry.strategy import NAME_COLUMN, Column, Context, Strategy
from draemu.apiserver.wire.jsoncopy import clone

REPORTING_INSTANCE_LIMIT = 128
ACTION_LIMIT = 128
REASON_LIMIT = 128
NOTE_LIMIT = 1024

# events.k8s.io/v1 field -> core/v1 field, for the fields whose names differ.
RENAMED = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
SHARED = ("metadata", "eventTime", "series", "action", "reason", "related",
          "reportingInstance", "type")


# Fields each shape always carries, with the value a Go server writes when unset (structs
# are never omitted, zero times are null, two core strings lack `omitempty`).
CORE_ALWAYS = {"involvedObject": {}, "source": {}, "firstTimestamp": None,
               "lastTimestamp": None, "eventTime": None, "reportingComponent": "",
               "reportingInstance": ""}
EVENTS_V1_ALWAYS = {"eventTime": None, "regarding": {}, "deprecatedSource": {},
                    "deprecatedFirstTimestamp": None, "deprecatedLastTimestamp": None}


def _fill(obj: Obj, always: Obj) -> Obj:
    for name, value in always.items():
        if obj.get(name) is None:
            obj[name] = clone(value)
    return obj


def normalize_core(obj: Obj) -> None:
    """Give a core/v1 Event the fields a real server always serializes."""
    _fill(obj, CORE_ALWAYS)


def _set_if_present(out: Obj, name: str, value: Any) -> None:
    # `omitempty` fields: absent when empty.
    if value not in (None, "", 0, {}, []):
        out[name] = clone(value)


def to_core(obj: Obj) -> Obj:
    """An events.k8s.io/v1 Event in the core/v1 (storage) shape."""
    out: Obj = {"apiVersion": "v1", "kind": "Event"}
    for name in SHARED:
        if name in obj:
            out[name] = clone(obj[name])
    for new, old in RENAMED.items():
        _set_if_present(out, old, obj.get(new))
    return _fill(out, CORE_ALWAYS)


def from_core(obj: Obj) -> Obj:
    """A stored core/v1 Event in the events.k8s.io/v1 shape."""
    out: Obj = {"apiVersion": "events.k8s.io/v1", "kind": "Event"}
    for name in SHARED:
        if name in obj:
            out[name] = clone(obj[name])
    for new, old in RENAMED.items():
        _set_if_present(out, new, obj.get(old))
    return _fill(out, EVENTS_V1_ALWAYS)


def validate_legacy(event: Obj, core_request: bool) -> list[FieldError]:
    """Rules every Event write passes, whichever API it came through."""
    errs: list[FieldError] = []
    namespace = (event.get("metadata") or {}).get("namespace") or ""
    involved_ns = (event.get("involvedObject") or {}).get("namespace") or ""
    involved_path = Path("involvedObject").child("namespace")
    mismatch = "does not match event.namespace"
    controller_field = "reportingComponent" if core_request else "reportingController"
    if not event.get("eventTime"):
        if involved_ns:
            if namespace != involved_ns:
                errs.append(invalid(involved_path, involved_ns, mismatch))
        elif namespace not in ("", "default"):
            errs.append(invalid(involved_path, involved_ns, mismatch))
    else:
        if not involved_ns and namespace not in ("default", "kube-system"):
            errs.append(invalid(involved_path, involved_ns, mismatch))
        controller = event.get("reportingComponent") or ""
        if not controller:
            errs.append(required(Path(controller_field)))
        errs += qualified_name(controller, Path(controller_field))
        errs += _required_within("reportingInstance", event, REPORTING_INSTANCE_LIMIT)
        errs += _required_within("action", event, ACTION_LIMIT)
        errs += _required_within("reason", event, REASON_LIMIT)
        if len(event.get("message") or "") > NOTE_LIMIT:
            errs.append(invalid(Path("message"), "", f"can have at most {NOTE_LIMIT} characters"))
    errs += dns_subdomain(namespace, Path("namespace"))
    return errs


def _required_within(name: str, event: Obj, limit: int) -> list[FieldError]:
    value = event.get(name) or ""
    if not value:
        return [required(Path(name))]
    if len(value) > limit:
        return [invalid(Path(name), "", f"can have at most {limit} characters")]
    return []


def validate_series(event: Obj) -> list[FieldError]:
    series = event.get("series")
    if series is None:
        return []
    errs: list[FieldError] = []
    if (series.get("count") or 0) < 2:
        errs.append(invalid(Path("series.count"), "", "should be at least 2"))
    if not series.get("lastObservedTime"):
        errs.append(required(Path("series.lastObservedTime")))
    return errs


def selectable_fields(event: Obj) -> dict[str, str]:
    involved = event.get("involvedObject") or {}
    source = (event.get("source") or {}).get("component") or event.get("reportingComponent")
    fields = {f"involvedObject.{k}": involved.get(k) or "" for k in (
        "kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")}
    fields.update({"reason": event.get("reason") or "",
                   "reportingComponent": event.get("reportingComponent") or "",
                   "source": source or "", "type": event.get("type") or ""})
    return fields


def table_columns() -> list[Column]:
    return [
        Column("Last Seen", description="The time at which the most recent occurrence of this "
               "event was recorded."),
        Column("Type", description="Type of this event (Normal, Warning), new types could be "
               "added in the future"),
        Column("Reason", description="This should be a short, machine understandable string "
               "that gives the reason for the transition into the object's current status."),
        Column("Object", description="The object that this event is about."),
        Column("Subobject", priority=1, description="If referring to a piece of an object "
               "instead of an entire object, this string should contain a valid JSON/Go-field "
               "access statement, such as desiredState.manifest.containers[2]."),
        Column("Source", priority=1, description="The component reporting this event. Should "
               "be a short machine understandable string."),
        Column("Message", description="A human-readable description of the status of this "
               "operation."),
        Column("First Seen", priority=1, description="The time at which the event was first "
               "recorded. (Time of server receipt is in TypeMeta.)"),
        Column("Count", priority=1, description="The number of times this event has occurred."),
        replace(NAME_COLUMN, priority=1),
    ]


def _source_cell(event: Obj) -> str:
    source = event.get("source") or {}
    component = source.get("component") or event.get("reportingComponent") or ""
    host = source.get("host") or event.get("reportingInstance") or ""
    return f"{component}, {host}" if host else component


def table_row(event: Obj) -> list[Any]:
    first = since(event.get("firstTimestamp")) if event.get("firstTimestamp") \
        else since(event.get("eventTime"))
    last = since(event.get("lastTimestamp")) if event.get("lastTimestamp") else first
    count = event.get("count") or 0
    series = event.get("series")
    if series is not None:
        last = since(series.get("lastObservedTime"))
        count = series.get("count") or 0
    elif not count:
        count = 1  # singleton events of the new API carry no count
    involved = event.get("involvedObject") or {}
    kind = (involved.get("kind") or "").lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    return [last, event.get("type") or "", event.get("reason") or "", target,
            involved.get("fieldPath") or "", _source_cell(event),
            (event.get("message") or "").strip(), first, count,
            (event.get("metadata") or {}).get("name", "")]


class EventStrategy(Strategy):
    kind = "Event"
    resource = "events"
    singular = "event"
    short_names = ("ev",)
    versions = ("v1",)
    storage_version = "v1"
    has_generation = False

    def validate_name(self, name: str, prefix: bool) -> list[str]:
        # core/v1 Events skip metadata validation for old clients' sake.
        return name_is_anything(name, prefix)

    def default(self, obj: Obj, version: str) -> None:
        normalize_core(obj)

    def validate(self, obj: Obj, ctx: Context) -> list[FieldError]:
        return validate_legacy(obj, core_request=True)

    def selectable_fields(self, obj: Obj) -> dict[str, str]:
        return selectable_fields(obj)

    def table_columns(self) -> list[Column]:
        return table_columns()

    def table_row(self, obj: Obj) -> list[Any]:
        return table_row(obj)


def validate_strict_update(new: Obj, old: Obj) -> list[FieldError]:
    """What events.k8s.io/v1 updates may not change."""
    errs: list[FieldError] = []
    if new.get("series") != old.get("series"):
        errs += validate_series(new)
    for name in ("involvedObject", "reason", "message", "source", "firstTimestamp",
                 "lastTimestamp", "count", "reason", "type", "eventTime", "action", "related",
                 "reportingComponent", "reportingInstance"):
        path = "reportingController" if name == "reportingComponent" else name
        errs += immutable(new.get(name), old.get(name), Path(path))
    return errs


STRATEGIES = [EventStrategy()]
