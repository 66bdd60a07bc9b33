"""events.k8s.io/v1 Event: the core/v1 Event seen through the newer API. Objects are
stored once, in the core/v1 shape under the core `events` key prefix, so that every
Event is visible through both APIs; `to_storage`/`from_storage` always convert."""

from __future__ import annotations

from typing import Any

from draemu.api.errors import FieldError, Path, invalid, required
from draemu.api.types import Obj
from draemu.apiserver.registry.core import event as core_event
from draemu.apiserver.registry.strategy import Column, Context, Strategy

EVENT_TYPES = ("Normal", "Warning")


class EventsV1Strategy(Strategy):
    group = "events.k8s.io"
    kind = "Event"
    resource = "events"
    singular = "event"
    short_names = ("ev",)
    versions = ("v1",)
    storage_version = "v1"
    has_generation = False
    storage_group = ""
    storage_resource = "events"

    def to_storage(self, obj: Obj, version: str) -> Obj:
        return core_event.to_core(obj)

    def from_storage(self, obj: Obj, version: str) -> Obj:
        return core_event.from_core(obj)

    def validate(self, obj: Obj, ctx: Context) -> list[FieldError]:
        errs = core_event.validate_legacy(obj, core_request=False)
        errs += core_event.validate_series(obj)
        if not obj.get("eventTime"):
            errs.append(required(Path("eventTime")))
        kind = obj.get("type") or ""
        if kind not in EVENT_TYPES:
            errs.append(invalid(Path("type"), "", f"has invalid value: {kind}"))
        for name in ("firstTimestamp", "lastTimestamp", "count"):
            if obj.get(name):
                errs.append(invalid(Path(name), "", "needs to be unset"))
        source = obj.get("source") or {}
        if source.get("component") or source.get("host"):
            errs.append(invalid(Path("source"), "", "needs to be unset"))
        return errs

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        return (core_event.validate_legacy(new, core_request=False)
                + core_event.validate_strict_update(new, old))

    def selectable_fields(self, obj: Obj) -> dict[str, str]:
        fields = core_event.selectable_fields(obj)
        # The same attributes under this API's own names.
        for key in list(fields):
            if key.startswith("involvedObject."):
                fields["regarding." + key.split(".", 1)[1]] = fields[key]
        fields["reportingController"] = fields["reportingComponent"]
        return fields

    def table_columns(self) -> list[Column]:
        return core_event.table_columns()

    def table_row(self, obj: Obj) -> list[Any]:
        return core_event.table_row(obj)


STRATEGIES = [EventsV1Strategy()]
