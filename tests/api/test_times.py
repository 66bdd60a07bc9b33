"""metav1.Time and MicroTime as a Go server parses and writes them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from draemu.api.meta import format_micro_time, format_time, parse_time

pytestmark = pytest.mark.unit


def test_times_are_written_in_utc_with_seconds_and_z():
    when = datetime(2026, 11, 29, 7, 57, 10, 123456, timezone(timedelta(hours=1)))
    assert format_time(when) == "2026-11-29T06:57:10Z"
    assert format_micro_time(when) == "2026-11-29T06:57:10.123456Z"


def test_years_are_padded_to_four_digits():
    assert format_time(datetime(999, 1, 2, tzinfo=UTC)) == "0999-01-02T00:00:00Z"


def test_a_naive_datetime_is_written_as_utc():
    assert format_time(datetime(2026, 1, 1, 12)) == "2026-01-01T12:00:00Z"


@pytest.mark.parametrize("text, expected", [
    ("2026-11-29T07:57:10Z", datetime(2026, 11, 29, 7, 57, 10, tzinfo=UTC)),
    ("2026-11-29T07:57:10.5+01:00", datetime(2026, 11, 29, 6, 57, 10, 500000, tzinfo=UTC)),
    ("2026-11-29T07:57:10.123456789Z", datetime(2026, 11, 29, 7, 57, 10, 123456, tzinfo=UTC)),
])
def test_rfc3339_times_parse_to_aware_datetimes(text, expected):
    assert parse_time(text) == expected


@pytest.mark.parametrize("text", [
    "", "yesterday", "2026-11-29", "2026-11-29T07:57:10", "2026-11-29T07:57:10z",
    "2026-11-29t07:57:10Z", "2026-11-29 07:57:10Z", "2026-11-29T24:00:00Z",
    "2026-11-29T07:57:60Z", "2026-02-30T00:00:00Z", "2026-11-29T07:57:10+0100",
])
def test_what_go_refuses_is_no_time(text):
    assert parse_time(text) is None
