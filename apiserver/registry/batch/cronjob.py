"""batch/v1 CronJob (+status): defaults, the schedule and time zone checks of upstream
(robfig/cron's standard parser, with its error texts), the job template rules and the
`kubectl get cronjobs` columns."""

from __future__ import annotations

import re
import zoneinfo

from draemu.api.errors import FieldError, Path, invalid, not_supported, required
from draemu.apiserver.registry.batch.job import validate_job_spec
from draemu.apiserver.registry.core.common import container_cells, label_selector_string, since
from draemu.apiserver.registry.core.podspec_defaults import default_pod_template
from draemu.apiserver.registry.core.podtemplate import obsolete_template_field_errors
from draemu.apiserver.registry.generic import AGE_COLUMN, NAME, GenericStrategy, Printed, get_path
from draemu.apiserver.registry.meta import validate_labels
from draemu.apiserver.registry.strategy import Column, Context, Obj

CONCURRENCY_POLICIES = ["Allow", "Forbid", "Replace"]
DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight",
               "@hourly")
_MONTHS = {m: i + 1 for i, m in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul",
                                           "aug", "sep", "oct", "nov", "dec"])}
_DAYS = {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
# minute, hour, day of month, month, day of week: (minimum, maximum, names)
_FIELDS = ((0, 59, {}), (0, 23, {}), (1, 31, {}), (1, 12, _MONTHS), (0, 6, _DAYS))
_TIME_ZONE_PART = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")
_GO_DURATION = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)"
                          r"((\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h))*$")
# A CronJob's Jobs get an 11-character suffix; their names must stay DNS labels.
MAX_CRONJOB_NAME = 52


def _atoi(text: str) -> tuple[int | None, str]:
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text), ""
    return None, f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid ' \
                 "syntax"


def _value(text: str, names: dict[str, int]) -> tuple[int | None, str]:
    if names and text.lower() in names:
        return names[text.lower()], ""
    return _atoi(text)


def _range_error(expr: str, low: int, high: int, names: dict[str, int]) -> str:
    """robfig/cron getRange: "" when `expr` is a valid range of one field."""
    range_and_step = expr.split("/")
    if len(range_and_step) > 2:
        return f"too many slashes: {expr}"
    low_high = range_and_step[0].split("-")
    single = len(low_high) == 1
    if low_high[0] in ("*", "?"):
        start, end = low, high
    else:
        start, err = _value(low_high[0], names)
        if err:
            return err
        end = start
        if len(low_high) == 2:
            end, err = _value(low_high[1], names)
            if err:
                return err
        elif len(low_high) > 2:
            return f"too many hyphens: {expr}"
    if len(range_and_step) == 2:
        step, err = _atoi(range_and_step[1])
        if err:
            return err
        if step is not None and step <= 0:
            return f"step of range should be a positive number: {expr}"
        if single and low_high[0] not in ("*", "?"):
            end = high
    assert start is not None and end is not None
    if start < low:
        return f"beginning of range ({start}) below minimum ({low}): {expr}"
    if end > high:
        return f"end of range ({end}) above maximum ({high}): {expr}"
    if start > end:
        return f"beginning of range ({start}) beyond end of range ({end}): {expr}"
    return ""


def schedule_error(schedule: str) -> str:
    """Why robfig/cron's standard parser refuses `schedule` ("" when it parses)."""
    text = schedule.strip()
    if text.startswith(("TZ=", "CRON_TZ=")):
        zone, _, text = text.partition(" ")
        name = zone.split("=", 1)[1]
        try:
            zoneinfo.ZoneInfo(name)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            return f"provided bad location {name}: unknown time zone {name}"
        text = text.strip()
    if not text:
        return "empty spec string"
    if text.startswith("@"):
        if text in DESCRIPTORS:
            return ""
        if text.startswith("@every "):
            duration = text[len("@every "):]
            if not _GO_DURATION.match(duration):
                return f'failed to parse duration {text}: time: invalid duration "{duration}"'
            return ""
        return f"unrecognized descriptor: {text}"
    fields = text.split()
    if len(fields) != 5:
        return f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]"
    for field_text, (low, high, names) in zip(fields, _FIELDS, strict=True):
        for expr in field_text.split(","):
            why = _range_error(expr, low, high, names)
            if why:
                return why
    return ""


def time_zone_errors(zone: str | None, path: Path) -> list[FieldError]:
    if zone is None:
        return []
    if not zone:
        return [invalid(path, zone, "timeZone must be nil or non-empty string")]
    for part in zone.split("/"):
        if part in (".", "..") or part.startswith("-") or not _TIME_ZONE_PART.match(part):
            return [invalid(path, zone, f"unknown time zone {zone}")]
    if zone.lower() == "local":
        return [invalid(path, zone, "timeZone must be an explicit time zone as defined in "
                        "https://www.iana.org/time-zones")]
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return [invalid(path, zone, f"unknown time zone {zone}")]
    return []


def _template_containers(obj: Obj) -> list[Obj]:
    return get_path(obj, "spec.jobTemplate.spec.template.spec.containers") or []


def _bool_cell(value: object) -> str:
    return "<unset>" if value is None else "True" if value else "False"


class CronJobStrategy(GenericStrategy):
    group = "batch"
    kind = "CronJob"
    resource = "cronjobs"
    singular = "cronjob"
    short_names = ("cj",)
    categories = ("all",)
    versions = ("v1",)
    storage_version = "v1"
    subresources = frozenset({"status"})
    status_meta_reset = ()
    printer = (
        NAME,
        Printed(Column("Schedule", description="The schedule in Cron format, see "
                       "https://en.wikipedia.org/wiki/Cron."),
                lambda o: get_path(o, "spec.schedule") or ""),
        Printed(Column("Timezone", description="The time zone name for the given schedule, "
                       "see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones."),
                lambda o: get_path(o, "spec.timeZone") or "<none>"),
        Printed(Column("Suspend", type="boolean", description="This flag tells the "
                       "controller to suspend subsequent executions, it does not apply to "
                       "already started executions.  Defaults to false."),
                lambda o: _bool_cell(get_path(o, "spec.suspend"))),
        Printed(Column("Active", type="integer", description="A list of pointers to currently "
                       "running jobs."), lambda o: len(get_path(o, "status.active") or [])),
        Printed(Column("Last Schedule", description="Information when was the last time the "
                       "job was successfully scheduled."),
                lambda o: since(get_path(o, "status.lastScheduleTime"))
                if get_path(o, "status.lastScheduleTime") else "<none>"),
        AGE_COLUMN,
        Printed(Column("Containers", priority=1, description="Names of each container in the "
                       "template."), lambda o: container_cells(_template_containers(o))[0]),
        Printed(Column("Images", priority=1, description="Images referenced by each container "
                       "in the template."), lambda o: container_cells(_template_containers(o))[1]),
        Printed(Column("Selector", priority=1, description="A label query over pods that "
                       "should match the pod count."),
                lambda o: label_selector_string(get_path(o, "spec.jobTemplate.spec.selector"))),
    )

    def default(self, obj: Obj, version: str) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            obj["spec"] = spec = {}
        if not spec.get("concurrencyPolicy"):
            spec["concurrencyPolicy"] = "Allow"
        spec.setdefault("suspend", False)
        spec.setdefault("successfulJobsHistoryLimit", 3)
        spec.setdefault("failedJobsHistoryLimit", 1)
        default_pod_template(get_path(spec, "jobTemplate.spec.template"), self.kind, version)

    def obsolete_field_errors(self, obj: Obj, version: str) -> list[FieldError]:
        job_spec = get_path(obj, "spec.jobTemplate.spec")
        return obsolete_template_field_errors({"spec": job_spec}) if isinstance(
            job_spec, dict) else []

    def validate_name(self, name: str, prefix: bool) -> list[str]:
        errs = super().validate_name(name, prefix)
        if not prefix and len(name) > MAX_CRONJOB_NAME:
            errs.append(f"must be no more than {MAX_CRONJOB_NAME} characters")
        return errs

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        return self._spec_errors(obj, None)

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        return self._spec_errors(new, old)

    def _spec_errors(self, obj: Obj, old: Obj | None) -> list[FieldError]:
        spec = obj.get("spec") or {}
        path = Path("spec")
        errs: list[FieldError] = []
        schedule = spec.get("schedule") or ""
        old_schedule = get_path(old, "spec.schedule") or "" if old else ""
        if not schedule:
            errs.append(required(path.child("schedule")))
        else:
            why = schedule_error(schedule)
            if why:
                errs.append(invalid(path.child("schedule"), schedule, why))
            if "TZ" in old_schedule and "TZ" in schedule and spec.get("timeZone") is not None:
                errs.append(invalid(path.child("schedule"), schedule, "cannot use both "
                                    "timeZone field and TZ or CRON_TZ in schedule"))
            elif "TZ" not in old_schedule and "TZ" in schedule:
                errs.append(invalid(path.child("schedule"), schedule, "cannot use TZ or "
                                    "CRON_TZ in schedule, use timeZone field instead"))
        if spec.get("startingDeadlineSeconds") is not None and spec[
                "startingDeadlineSeconds"] < 0:
            errs.append(invalid(path.child("startingDeadlineSeconds"),
                                spec["startingDeadlineSeconds"],
                                "must be greater than or equal to 0"))
        if old is None or get_path(old, "spec.timeZone") != spec.get("timeZone"):
            errs += time_zone_errors(spec.get("timeZone"), path.child("timeZone"))
        policy = spec.get("concurrencyPolicy") or ""
        if not policy:
            errs.append(required(path.child("concurrencyPolicy")))
        elif policy not in CONCURRENCY_POLICIES:
            errs.append(not_supported(path.child("concurrencyPolicy"), policy,
                                      CONCURRENCY_POLICIES))
        template = spec.get("jobTemplate") or {}
        template_path = path.child("jobTemplate")
        errs += validate_labels(get_path(template, "metadata.labels"),
                                template_path.child("metadata", "labels"))
        errs += validate_job_spec(template.get("spec") or {}, template_path.child("spec"),
                                  selector_required=False)
        for name in ("successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
            value = spec.get(name)
            if value is not None and value < 0:
                errs.append(invalid(path.child(name), value,
                                    "must be greater than or equal to 0"))
        return errs


STRATEGIES = [CronJobStrategy()]
