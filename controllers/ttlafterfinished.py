"""The TTL-after-finished controller (upstream's pkg/controller/ttlafterfinished): a Job
with `spec.ttlSecondsAfterFinished` is deleted (foreground, so its pods go first) that
many seconds after it finished (its completionTime, or the time its Complete or Failed
condition became True). The Job is read again from the API before the delete, which is
guarded by its uid, so a Job whose TTL was changed or that was recreated survives."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from draemu.api.meta import name_of, namespace_of, now, parse_time, uid_of
from draemu.api.types import Obj
from draemu.client import ApiError
from draemu.controllers.base import Controller


def finish_time(job: Obj) -> datetime | None:
    status = job.get("status") or {}
    for c in status.get("conditions") or []:
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return parse_time(status.get("completionTime")) or parse_time(
                c.get("lastTransitionTime"))
    return None


def expires_at(job: Obj) -> datetime | None:
    ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
    finished = finish_time(job)
    if ttl is None or finished is None or (job.get("metadata") or {}).get(
            "deletionTimestamp"):
        return None
    return finished + timedelta(seconds=int(ttl))


class TTLAfterFinishedController(Controller):
    name = "ttl-after-finished"

    def setup(self) -> None:
        self.jobs = self.ctx.informers.informer("batch/v1", "jobs")
        self.handlers_enqueue(self.jobs)

    def primary(self) -> Any:
        return self.jobs

    async def reconcile(self, key: str) -> float | None:
        job = self.jobs.get(key)
        expiry = expires_at(job) if job is not None else None
        if job is None or expiry is None:
            return None
        left = (expiry - now()).total_seconds()
        if left > 0:
            return left
        try:  # the cache may be stale: decide on the live object
            fresh = await self.client.get("batch/v1", "jobs", name_of(job),
                                          namespace=namespace_of(job))
        except ApiError as e:
            if e.code == 404:
                return None
            raise
        expiry = expires_at(fresh)
        if expiry is None:
            return None
        left = (expiry - now()).total_seconds()
        if left > 0:
            return left
        try:
            await self.client.delete("batch/v1", "jobs", name_of(fresh), namespace_of(fresh),
                                     propagation_policy="Foreground",
                                     preconditions={"uid": uid_of(fresh)})
        except ApiError as e:
            if e.code not in (404, 409):
                raise
        return None
