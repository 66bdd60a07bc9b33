"""The CronJob controller (upstream's cronjob_controllerv2): at each scheduled time a Job
`<cronjob>-<minutes since the epoch>` from the jobTemplate, owned by the CronJob and
annotated with its scheduled time; `status.active` lists the running Jobs,
`lastScheduleTime` and `lastSuccessfulTime` follow them. concurrencyPolicy Allow, Forbid
(skip while one runs) or Replace (delete the running ones first); a start later than
`startingDeadlineSeconds` is missed; finished Jobs beyond the history limits are deleted,
oldest first; `suspend` stops new Jobs. Schedules without a time zone run in UTC."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta
from typing import Any

from draemu.api.meta import (
    controller_of,
    format_time,
    meta,
    name_of,
    namespace_of,
    now,
    owner_reference,
    parse_time,
    uid_of,
)
from draemu.api.types import Obj
from draemu.client import ApiError
from draemu.controllers.base import Controller
from draemu.controllers.cron import Schedule, ScheduleError, load_zone, parse

SCHEDULED_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
MANY_MISSED = 100


def finished(job: Obj) -> str | None:
    """"Complete" or "Failed" once the Job has that condition True."""
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return str(c["type"])
    return None


def most_recent(cj: Obj, at: datetime, sched: Schedule, with_deadline: bool
                ) -> tuple[datetime, datetime | None, int]:
    """(earliest time considered, the latest missed activation up to `at` or None, how
    many activations were missed) — upstream's mostRecentScheduleTime."""
    spec, status = cj.get("spec") or {}, cj.get("status") or {}
    earliest = parse_time(status.get("lastScheduleTime")) or parse_time(
        meta(cj).get("creationTimestamp")) or at
    deadline = spec.get("startingDeadlineSeconds")
    if with_deadline and deadline is not None:
        earliest = max(earliest, at - timedelta(seconds=int(deadline)))
    t1 = sched.next(earliest)
    if t1 is None or at < t1:
        return earliest, None, 0
    t2 = sched.next(t1)
    if t2 is None or at < t2:
        return earliest, t1, 1
    period = max(1, round((t2 - t1).total_seconds()))
    missed = int((at - t1).total_seconds()) // period + 1
    latest: datetime | None = None
    t: datetime | None = t1 + timedelta(seconds=(missed - 2) * period)
    t = sched.next(t) if t is not None else None
    while t is not None and t <= at:
        latest = t
        t = sched.next(t)
    return earliest, latest, missed


def job_name(cj: Obj, scheduled: datetime) -> str:
    return f"{name_of(cj)}-{int(scheduled.timestamp()) // 60}"


def _start_key(job: Obj) -> tuple[int, str, str]:
    start = (job.get("status") or {}).get("startTime")
    return (0 if start else 1, start or "", name_of(job))


class CronJobController(Controller):
    name = "cronjob"
    resync_seconds = 10.0  # upstream re-checks every CronJob at least this often

    def component(self) -> str:
        return "cronjob-controller"

    def setup(self) -> None:
        inf = self.ctx.informers
        self.cronjobs = inf.informer("batch/v1", "cronjobs")
        self.jobs = inf.informer("batch/v1", "jobs")
        self.handlers_enqueue(self.cronjobs)
        self.jobs.add_handler(on_add=self._job_changed,
                              on_update=lambda _o, n: self._job_changed(n),
                              on_delete=self._job_changed)

    def primary(self) -> Any:
        return self.cronjobs

    def _job_changed(self, job: Obj) -> None:
        ref = controller_of(job)
        if ref is not None and ref.get("kind") == "CronJob":
            self.queue.add(f"{namespace_of(job)}/{ref.get('name')}")

    def now(self) -> datetime:
        return now()

    async def reconcile(self, key: str) -> float | None:
        cj = self.cronjobs.get(key)
        if cj is None:
            return None
        cj = copy.deepcopy(cj)
        uid = uid_of(cj)
        jobs = [j for j in self.jobs.list() if namespace_of(j) == namespace_of(cj)
                and (controller_of(j) or {}).get("uid") == uid]
        status = cj.setdefault("status", {})
        before = copy.deepcopy(status)
        again = await self._sync(cj, jobs)
        if not meta(cj).get("deletionTimestamp"):
            await self._cleanup(cj, jobs)
        if status != before:
            if not status.get("active"):
                status.pop("active", None)
            try:
                await self.client.update("batch/v1", "cronjobs", cj, subresource="status")
            except ApiError as e:
                if e.code != 404:
                    raise
        return again

    def _active_uids(self, cj: Obj) -> set[str]:
        return {a.get("uid") for a in (cj["status"].get("active") or [])}

    def _drop_active(self, cj: Obj, uid: str) -> None:
        cj["status"]["active"] = [a for a in cj["status"].get("active") or []
                                  if a.get("uid") != uid]

    async def _sync(self, cj: Obj, jobs: list[Obj]) -> float | None:
        at = self.now()
        await self._observe_jobs(cj, jobs)
        await self._forget_missing_jobs(cj, {uid_of(j) for j in jobs})
        if meta(cj).get("deletionTimestamp"):
            return None
        sched = await self._schedule(cj)
        if sched is None:
            return None
        _, scheduled, missed = most_recent(cj, at, sched, True)
        if scheduled is None or not await self._due(cj, at, scheduled, missed):
            return self._next_in(cj, at, sched)
        if not await self._start_job(cj, scheduled):
            return None
        return self._next_in(cj, at, sched)

    async def _observe_jobs(self, cj: Obj, jobs: list[Obj]) -> None:
        """Finished jobs leave `active` (the newest success is recorded); unknown running
        ones are reported."""
        status = cj["status"]
        for job in jobs:
            done = finished(job)
            if uid_of(job) not in self._active_uids(cj) and done is None:
                await self.recorder.event(cj, "Warning", "UnexpectedJob",
                                          "Saw a job that the controller did not create or "
                                          f"forgot: {name_of(job)}")
            elif done is not None:
                if uid_of(job) in self._active_uids(cj):
                    self._drop_active(cj, uid_of(job))
                    await self.recorder.event(cj, "Normal", "SawCompletedJob",
                                              f"Saw completed job: {name_of(job)}, condition: "
                                              f"{done}")
                completed = parse_time((job.get("status") or {}).get("completionTime"))
                last = parse_time(status.get("lastSuccessfulTime"))
                if done == "Complete" and completed and (last is None or completed > last):
                    status["lastSuccessfulTime"] = job["status"]["completionTime"]

    async def _forget_missing_jobs(self, cj: Obj, children: set[str]) -> None:
        """Active jobs that are gone (not children, and not found) leave `active`."""
        for ref in list(cj["status"].get("active") or []):
            if ref.get("uid") in children:
                continue
            try:
                await self.client.get("batch/v1", "jobs", ref.get("name", ""),
                                      namespace=ref.get("namespace") or namespace_of(cj))
            except ApiError as e:
                if e.code != 404:
                    raise
                await self.recorder.event(cj, "Normal", "MissingJob",
                                          f"Active job went missing: {ref.get('name')}")
                self._drop_active(cj, ref.get("uid", ""))

    async def _schedule(self, cj: Obj) -> Schedule | None:
        """The CronJob's schedule in its time zone; None (and an event) when it is
        suspended or its zone or schedule cannot be read."""
        spec = cj.get("spec") or {}
        zone = spec.get("timeZone")
        if zone is not None:
            try:
                load_zone(zone)
            except ScheduleError as e:
                await self.recorder.event(cj, "Warning", "UnknownTimeZone",
                                          f'invalid timeZone: "{zone}": {e}')
                return None
        if spec.get("suspend"):
            return None
        schedule = str(spec.get("schedule") or "")
        if "TZ" in schedule:
            await self.recorder.event(
                cj, "Warning", "UnsupportedSchedule",
                f'CRON_TZ or TZ used in schedule "{schedule}" is not officially supported, see '
                "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more "
                "details")
        try:
            return parse(schedule, zone)
        except ScheduleError as e:
            await self.recorder.event(cj, "Warning", "UnparseableSchedule",
                                      f'unparseable schedule: "{schedule}" : {e}')
            return None

    async def _due(self, cj: Obj, at: datetime, scheduled: datetime, missed: int) -> bool:
        """Whether the job of the `scheduled` time is to start now: not past the starting
        deadline, not started already, not forbidden by the concurrency policy."""
        spec, status = cj.get("spec") or {}, cj["status"]
        if missed > MANY_MISSED:
            await self.recorder.event(cj, "Warning", "TooManyMissedTimes",
                                      "too many missed start times. Set or decrease "
                                      ".spec.startingDeadlineSeconds or check clock skew")
        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None and scheduled + timedelta(seconds=int(deadline)) < at:
            await self.recorder.event(cj, "Warning", "MissSchedule",
                                      "Missed scheduled time to start a job: "
                                      f"{scheduled.strftime('%a, %d %b %Y %H:%M:%S +0000')}")
            return False
        name = job_name(cj, scheduled)
        if any(a.get("name") == name for a in status.get("active") or []) or \
                parse_time(status.get("lastScheduleTime")) == scheduled:
            return False
        if spec.get("concurrencyPolicy", "Allow") == "Forbid" and status.get("active"):
            await self.recorder.event(cj, "Normal", "JobAlreadyActive",
                                      "Not starting job because prior execution is running "
                                      "and concurrency policy is Forbid")
            return False
        return True

    async def _start_job(self, cj: Obj, scheduled: datetime) -> bool:
        """Creates the job of the `scheduled` time (after deleting the active ones with
        concurrencyPolicy Replace) and records it; False if a job of that name exists that
        is not ours, or is ours and recorded already."""
        status = cj["status"]
        name = job_name(cj, scheduled)
        if (cj.get("spec") or {}).get("concurrencyPolicy", "Allow") == "Replace":
            for ref in list(status.get("active") or []):
                await self._delete_job(cj, ref.get("name", ""), ref.get("uid", ""))
        job = self._job_from_template(cj, scheduled, name)
        try:
            created = await self.client.create("batch/v1", "jobs", job,
                                               namespace=namespace_of(cj))
            await self.recorder.event(cj, "Normal", "SuccessfulCreate",
                                      f"Created job {name_of(created)}")
        except ApiError as e:
            if e.code != 409:
                await self.recorder.event(cj, "Warning", "FailedCreate",
                                          f"Error creating job: {e.message}")
                raise
            created = await self.client.get("batch/v1", "jobs", name,
                                            namespace=namespace_of(cj))
            if (controller_of(created) or {}).get("uid") != uid_of(cj) or \
                    uid_of(created) in self._active_uids(cj):
                return False
        status.setdefault("active", []).append({
            "apiVersion": "batch/v1", "kind": "Job", "name": name_of(created),
            "namespace": namespace_of(created), "uid": uid_of(created),
            "resourceVersion": meta(created).get("resourceVersion", "")})
        status["lastScheduleTime"] = format_time(scheduled)
        return True

    def _next_in(self, cj: Obj, at: datetime, sched: Schedule) -> float | None:
        """Seconds until the next activation, plus upstream's 100 ms."""
        earliest, latest, missed = most_recent(cj, at, sched, False)
        base = latest or (earliest if missed == 0 else at)
        upcoming = sched.next(base)
        if upcoming is None:
            return None
        return max(0.1, (upcoming - at).total_seconds() + 0.1)

    def _job_from_template(self, cj: Obj, scheduled: datetime, name: str) -> Obj:
        template = (cj.get("spec") or {}).get("jobTemplate") or {}
        tmeta = template.get("metadata") or {}
        zone = load_zone((cj.get("spec") or {}).get("timeZone") or "")
        annotations = dict(tmeta.get("annotations") or {})
        annotations[SCHEDULED_ANNOTATION] = scheduled.astimezone(zone).isoformat(
            timespec="seconds").replace("+00:00", "Z")
        md: Obj = {"name": name, "namespace": namespace_of(cj), "annotations": annotations,
                   "ownerReferences": [owner_reference(cj)]}
        if tmeta.get("labels"):
            md["labels"] = dict(tmeta["labels"])
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": md,
                "spec": copy.deepcopy(template.get("spec") or {})}

    async def _delete_job(self, cj: Obj, name: str, uid: str) -> bool:
        try:
            await self.client.delete("batch/v1", "jobs", name, namespace_of(cj),
                                     propagation_policy="Background")
        except ApiError as e:
            if e.code != 404:
                await self.recorder.event(cj, "Warning", "FailedDelete",
                                          f"Deleted job: {e.message}")
                return False
        self._drop_active(cj, uid)
        await self.recorder.event(cj, "Normal", "SuccessfulDelete", f"Deleted job {name}")
        return True

    async def _cleanup(self, cj: Obj, jobs: list[Obj]) -> None:
        spec = cj.get("spec") or {}
        for kind, field in (("Complete", "successfulJobsHistoryLimit"),
                            ("Failed", "failedJobsHistoryLimit")):
            if spec.get(field) is None:
                continue
            done = sorted((j for j in jobs if finished(j) == kind), key=_start_key)
            for job in done[: max(0, len(done) - int(spec[field]))]:
                await self._delete_job(cj, name_of(job), uid_of(job))
