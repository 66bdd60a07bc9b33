"""core/v1 and events.k8s.io/v1 Events: one storage, two shapes."""

from __future__ import annotations

import copy

import pytest
from core_helpers import ctx, rendered

from draemu.apiserver.registry import discover
from draemu.apiserver.registry.core.event import EventStrategy
from draemu.apiserver.registry.events.event import EventsV1Strategy

pytestmark = pytest.mark.unit

CORE, NEW = EventStrategy(), EventsV1Strategy()
META = {"name": "web.17a2b", "namespace": "default"}


def new_event(**fields: object) -> dict:
    event = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": dict(META),
             "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController":
             "example.com/ctl", "reportingInstance": "ctl-1", "action": "Bind",
             "reason": "Scheduled", "type": "Normal", "note": "assigned",
             "regarding": {"kind": "Pod", "namespace": "default", "name": "web", "uid": "u1",
                           "apiVersion": "v1"}}
    event.update(fields)
    return event


def legacy_event(**fields: object) -> dict:
    event = {"apiVersion": "v1", "kind": "Event", "metadata": dict(META),
             "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web",
                                "uid": "u1", "apiVersion": "v1", "fieldPath":
                                "spec.containers{app}"},
             "reason": "Pulled", "message": "Pulled image ", "type": "Normal",
             "source": {"component": "kubelet", "host": "n1"},
             "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:01:00Z",
             "count": 3}
    event.update(fields)
    return event


def test_both_kinds_share_the_core_events_storage() -> None:
    events = [s for s in discover() if s.kind == "Event"]
    assert {(s.group, s.group if s.storage_group is None else s.storage_group,
             s.storage_resource or s.resource) for s in events} == {
        ("", "", "events"), ("events.k8s.io", "", "events")}


def test_events_v1_converts_to_the_core_shape() -> None:
    stored = NEW.to_storage(new_event(), "v1")
    assert stored["apiVersion"] == "v1"
    assert stored["involvedObject"]["name"] == "web"
    assert stored["message"] == "assigned"
    assert stored["reportingComponent"] == "example.com/ctl"
    assert "regarding" not in stored and "note" not in stored


def test_conversion_round_trips() -> None:
    event = new_event(series={"count": 2, "lastObservedTime": "2026-01-01T00:05:00.000000Z"})
    back = NEW.from_storage(NEW.to_storage(event, "v1"), "v1")
    assert {k: v for k, v in back.items() if k in event} == event


def test_both_shapes_carry_the_fields_a_go_server_always_writes() -> None:
    stored = NEW.to_storage(new_event(), "v1")
    assert (stored["source"], stored["firstTimestamp"], stored["lastTimestamp"]) == (
        {}, None, None)
    seen = NEW.from_storage(legacy_event(eventTime=None, reportingComponent=""), "v1")
    assert (seen["eventTime"], seen["regarding"]["name"]) == (None, "web")
    assert "reportingController" not in seen


def test_core_events_get_the_always_written_fields_on_decode() -> None:
    event = {"metadata": dict(META), "involvedObject": {"kind": "Pod", "name": "web"}}
    CORE.default(event, "v1")
    assert (event["reportingComponent"], event["reportingInstance"], event["eventTime"],
            event["source"]) == ("", "", None, {})


def test_legacy_event_reads_through_events_v1_with_deprecated_fields() -> None:
    seen = NEW.from_storage(legacy_event(), "v1")
    assert seen["deprecatedSource"] == {"component": "kubelet", "host": "n1"}
    assert seen["deprecatedCount"] == 3
    assert seen["deprecatedFirstTimestamp"] == "2026-01-01T00:00:00Z"
    assert seen["note"] == "Pulled image "
    assert seen["eventTime"] is None


def test_valid_events_are_accepted_by_both_apis() -> None:
    assert CORE.validate(legacy_event(), ctx()) == []
    assert NEW.validate(NEW.to_storage(new_event(), "v1"), ctx()) == []


def test_core_events_accept_any_name() -> None:
    assert CORE.validate_name("Not_A.DNS:name", False) == []
    assert NEW.validate_name("Not_A", False) != []


@pytest.mark.parametrize(("fields", "expected"), [
    ({"involvedObject": {"kind": "Pod", "namespace": "other", "name": "x"}},
     ['involvedObject.namespace: Invalid value: "other": does not match event.namespace']),
    ({"eventTime": "2026-01-01T00:00:00.000000Z"},
     ["reportingComponent: Required value",
      'reportingComponent: Invalid value: "": name part must be non-empty',
      "reportingInstance: Required value", "action: Required value"]),
])
def test_legacy_validation(fields: dict, expected: list[str]) -> None:
    assert rendered(CORE.validate(legacy_event(**fields), ctx())) == expected


@pytest.mark.parametrize(("fields", "expected"), [
    ({"eventTime": None}, ["eventTime: Required value"]),
    ({"type": "Fatal"}, ['type: Invalid value: "": has invalid value: Fatal']),
    ({"series": {"count": 1}}, ['series.count: Invalid value: "": should be at least 2',
                                "series.lastObservedTime: Required value"]),
    ({"deprecatedCount": 4}, ['count: Invalid value: "": needs to be unset']),
    ({"reportingController": "bad controller"},
     ['reportingController: Invalid value: "bad controller": name part must consist of '
      "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
      "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
      "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"]),
])
def test_events_v1_strict_validation(fields: dict, expected: list[str]) -> None:
    stored = NEW.to_storage(new_event(**fields), "v1")
    assert rendered(NEW.validate(stored, ctx())) == expected


def test_events_v1_update_may_not_change_the_note() -> None:
    old = NEW.to_storage(new_event(), "v1")
    new = copy.deepcopy(old)
    new["message"] = "changed"
    assert rendered(NEW.validate_update(new, old, ctx())) == [
        'message: Invalid value: "changed": field is immutable']


def test_field_selectors_kubectl_describe_uses() -> None:
    fields = CORE.selectable_fields(legacy_event())
    assert {k: fields[k] for k in ("involvedObject.kind", "involvedObject.name",
                                   "involvedObject.namespace", "involvedObject.uid", "type",
                                   "reason", "source")} == {
        "involvedObject.kind": "Pod", "involvedObject.name": "web",
        "involvedObject.namespace": "default", "involvedObject.uid": "u1", "type": "Normal",
        "reason": "Pulled", "source": "kubelet"}
    assert NEW.selectable_fields(legacy_event())["regarding.name"] == "web"


def test_table_row_of_a_legacy_event() -> None:
    row = CORE.table_row(legacy_event())
    assert row[1:] == ["Normal", "Pulled", "pod/web", "spec.containers{app}", "kubelet, n1",
                       "Pulled image", row[7], 3, "web.17a2b"]
    assert [c.name for c in CORE.table_columns() if c.priority == 0] == [
        "Last Seen", "Type", "Reason", "Object", "Message"]


def test_singleton_new_event_counts_once() -> None:
    assert NEW.table_row(NEW.to_storage(new_event(), "v1"))[8] == 1


def test_event_series_sets_the_count() -> None:
    stored = NEW.to_storage(new_event(series={
        "count": 5, "lastObservedTime": "2026-01-01T00:05:00Z"}), "v1")
    assert NEW.table_row(stored)[8] == 5
