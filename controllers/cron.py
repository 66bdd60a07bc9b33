"""Cron schedules as CronJobs take them (robfig/cron v3's standard parser): five fields
(minute, hour, day of month, month, day of week) with `*`, `?`, lists, ranges, steps and
month/day names, or a descriptor (`@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`,
`@midnight`, `@hourly`, `@every <duration>`), optionally after `TZ=<zone>` or
`CRON_TZ=<zone>`. When both day fields are restricted a day matches either (cron's
rule); when one is `*` both must match. Times are computed in the schedule's zone."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_MONTHS = {m: i + 1 for i, m in enumerate(
    "jan feb mar apr may jun jul aug sep oct nov dec".split())}
_DAYS = {d: i for i, d in enumerate("sun mon tue wed thu fri sat".split())}
_DESCRIPTORS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
                "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
                "@hourly": "0 * * * *"}
_BOUNDS = [(0, 59, {}), (0, 23, {}), (1, 31, {}), (1, 12, _MONTHS), (0, 6, _DAYS)]
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)")
_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


class ScheduleError(ValueError):
    pass


def load_zone(name: str) -> tzinfo:
    """A time zone by IANA name ("" and "UTC" are UTC, "Local" the machine's)."""
    if name in ("", "UTC"):
        return UTC
    if name == "Local":
        return datetime.now().astimezone().tzinfo or UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise ScheduleError(f"unknown time zone {name}") from e


def _field(text: str, index: int) -> tuple[frozenset[int], bool]:
    low, high, names = _BOUNDS[index]
    values: set[int] = set()
    star = False
    for part in text.split(","):
        step = 1
        if "/" in part:
            part, step_text = part.split("/", 1)
            if not step_text.isdigit() or int(step_text) == 0:
                raise ScheduleError(f"failed to parse int from {step_text}: invalid step")
            step = int(step_text)
        if part in ("*", "?"):
            start, end = low, high
            star = step == 1
        else:
            bounds = part.split("-", 1)
            start = _value(bounds[0], names)
            end = _value(bounds[1], names) if len(bounds) > 1 else (high if step > 1 else start)
            if start < low:
                raise ScheduleError(f"beginning of range ({start}) below minimum ({low}): {part}")
            if end > high:
                raise ScheduleError(f"end of range ({end}) above maximum ({high}): {part}")
            if start > end:
                raise ScheduleError(f"beginning of range ({start}) beyond end of range ({end}):"
                                    f" {part}")
        values.update(range(start, end + 1, step))
    return frozenset(values), star


def _value(text: str, names: dict[str, int]) -> int:
    if text.lower() in names:
        return names[text.lower()]
    if not text.isdigit():
        raise ScheduleError(f"failed to parse int from {text}")
    return int(text)


@dataclass(frozen=True)
class Schedule:
    minutes: frozenset[int] = frozenset()
    hours: frozenset[int] = frozenset()
    days: frozenset[int] = frozenset()
    months: frozenset[int] = frozenset()
    weekdays: frozenset[int] = frozenset()
    any_day: bool = False
    any_weekday: bool = False
    every: timedelta | None = None
    zone: tzinfo = UTC

    def _day_matches(self, t: datetime) -> bool:
        dom = t.day in self.days
        dow = (t.isoweekday() % 7) in self.weekdays
        if self.any_day or self.any_weekday:
            return dom and dow
        return dom or dow

    def next(self, after: datetime) -> datetime | None:
        """The first activation strictly after `after` (an aware datetime), in UTC; None if
        there is none within five years."""
        if self.every is not None:
            base = after.astimezone(UTC).replace(microsecond=0)
            return base + self.every
        t = after.astimezone(self.zone).replace(second=0, microsecond=0, tzinfo=None)
        t += timedelta(minutes=1)
        limit = t + timedelta(days=366 * 5)
        while t < limit:
            if t.month not in self.months:
                t = (t.replace(day=1, hour=0, minute=0) + timedelta(days=32)).replace(day=1)
                continue
            if not self._day_matches(t):
                t = t.replace(hour=0, minute=0) + timedelta(days=1)
                continue
            if t.hour not in self.hours:
                t = t.replace(minute=0) + timedelta(hours=1)
                continue
            if t.minute not in self.minutes:
                t += timedelta(minutes=1)
                continue
            return t.replace(tzinfo=self.zone).astimezone(UTC)
        return None


def parse(spec: str, zone: str | None = None) -> Schedule:
    """A schedule, in `zone` (spec.timeZone) unless the text names its own."""
    text = spec.strip()
    tz = load_zone(zone or "")
    if text.startswith(("TZ=", "CRON_TZ=")):
        head, _, text = text.partition(" ")
        tz = load_zone(head.split("=", 1)[1])
        text = text.strip()
    if text.startswith("@every"):
        total = 0.0
        rest = text[len("@every"):].strip()
        pos = 0
        for m in _DURATION.finditer(rest):
            if m.start() != pos:
                break
            total += float(m.group(1)) * _UNITS[m.group(2)]
            pos = m.end()
        if not rest or pos != len(rest):
            raise ScheduleError(f"failed to parse duration {text}: time: invalid duration")
        return Schedule(every=timedelta(seconds=max(1, int(total))), zone=tz)
    if text.startswith("@"):
        if text not in _DESCRIPTORS:
            raise ScheduleError(f"unrecognized descriptor: {text}")
        text = _DESCRIPTORS[text]
    fields = text.split()
    if len(fields) != 5:
        raise ScheduleError(f"expected exactly 5 fields, found {len(fields)}: {text}")
    parsed = [_field(f, i) for i, f in enumerate(fields)]
    return Schedule(minutes=parsed[0][0], hours=parsed[1][0], days=parsed[2][0],
                    months=parsed[3][0], weekdays=parsed[4][0], any_day=parsed[2][1],
                    any_weekday=parsed[4][1], zone=tz)
