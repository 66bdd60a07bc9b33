"""Cron schedules and the CronJob controller's decisions (fake informers, a fixed clock)."""

from datetime import UTC, datetime

import pytest
from controller_fakes import context

from draemu.api.meta import format_time
from draemu.controllers.cron import ScheduleError, parse
from draemu.controllers.cronjob import CronJobController

pytestmark = pytest.mark.unit

T0 = datetime(2026, 3, 2, 10, 7, 30, tzinfo=UTC)  # a Monday


def nxt(spec, at=T0, zone=None):
    return parse(spec, zone).next(at)


def test_steps_ranges_and_lists():
    assert nxt("*/15 * * * *") == datetime(2026, 3, 2, 10, 15, tzinfo=UTC)
    assert nxt("5,50 9-11 * * *") == datetime(2026, 3, 2, 10, 50, tzinfo=UTC)
    assert nxt("0 12 * * *") == datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
    assert nxt("5 10 * * *") == datetime(2026, 3, 3, 10, 5, tzinfo=UTC)


def test_descriptors():
    assert nxt("@hourly") == datetime(2026, 3, 2, 11, 0, tzinfo=UTC)
    assert nxt("@daily") == nxt("@midnight") == datetime(2026, 3, 3, tzinfo=UTC)
    assert nxt("@weekly") == datetime(2026, 3, 8, tzinfo=UTC)  # Sunday
    assert nxt("@monthly") == datetime(2026, 4, 1, tzinfo=UTC)
    assert nxt("@yearly") == nxt("@annually") == datetime(2027, 1, 1, tzinfo=UTC)
    assert nxt("@every 90s") == datetime(2026, 3, 2, 10, 9, tzinfo=UTC)


def test_names_and_the_day_of_month_or_week_rule():
    assert nxt("0 0 * FEB,APR sun") == datetime(2026, 4, 5, tzinfo=UTC)
    # Both day fields restricted: either matches (the 13th, or any Friday).
    assert nxt("0 0 13 * fri") == datetime(2026, 3, 6, tzinfo=UTC)


def test_time_zones_from_the_spec_or_the_schedule():
    assert nxt("0 9 * * *", zone="Europe/Berlin") == datetime(2026, 3, 3, 8, 0, tzinfo=UTC)
    assert nxt("CRON_TZ=America/New_York 0 9 * * *") == datetime(2026, 3, 2, 14, 0,
                                                                   tzinfo=UTC)


@pytest.mark.parametrize("bad", ["* * * *", "61 * * * *", "* * * * 7", "@fortnightly",
                                 "*/0 * * * *", "x * * * *"])
def test_invalid_schedules_are_refused(bad):
    with pytest.raises(ScheduleError):
        parse(bad)


def test_an_unknown_zone_is_refused():
    with pytest.raises(ScheduleError):
        parse("* * * * *", "Mars/Olympus")


def cronjob(**spec):
    return {"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "backup", "namespace": "ns", "uid": "uid-cj",
                         "creationTimestamp": "2026-03-02T09:00:00Z"},
            "spec": {"schedule": "*/5 * * * *", "jobTemplate": {
                "metadata": {"labels": {"app": "backup"}},
                "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
                    {"name": "c", "image": "busybox"}]}}}}, **spec},
            "status": spec.pop("status", {})}


def controller(cj, jobs=()):
    ctx, client, inf = context()
    ctrl = CronJobController(ctx)
    ctrl.now = lambda: T0  # type: ignore[method-assign]
    inf.informer("batch/v1", "cronjobs").put(cj)
    for j in jobs:
        inf.informer("batch/v1", "jobs").put(j)
    return ctrl, client


def job(name, *, done=None, start="2026-03-02T10:00:00Z", completed=None):
    conds = [{"type": done, "status": "True"}] if done else []
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                         "ownerReferences": [{"kind": "CronJob", "name": "backup",
                                              "uid": "uid-cj", "controller": True}]},
            "status": {"startTime": start, "conditions": conds,
                       **({"completionTime": completed} if completed else {})}}


async def test_creates_the_job_of_the_latest_missed_time_and_records_it():
    ctrl, client = controller(cronjob(status={"lastScheduleTime": "2026-03-02T09:50:00Z"}))
    again = await ctrl.reconcile("ns/backup")
    [created] = client.of("create", "jobs")
    scheduled = datetime(2026, 3, 2, 10, 5, tzinfo=UTC)
    assert created["metadata"]["name"] == f"backup-{int(scheduled.timestamp()) // 60}"
    assert created["metadata"]["annotations"] == {
        "batch.kubernetes.io/cronjob-scheduled-timestamp": "2026-03-02T10:05:00Z"}
    assert created["metadata"]["labels"] == {"app": "backup"}
    assert created["metadata"]["ownerReferences"][0]["uid"] == "uid-cj"
    [status] = [o["status"] for o in client.of("update/status", "cronjobs")]
    assert status["lastScheduleTime"] == format_time(scheduled)
    assert [a["name"] for a in status["active"]] == [created["metadata"]["name"]]
    assert again == pytest.approx(150.1)  # until 10:10:00


async def test_forbid_skips_while_a_job_runs():
    running = job("backup-1")
    ref = {"name": "backup-1", "namespace": "ns", "uid": "uid-backup-1"}
    ctrl, client = controller(cronjob(concurrencyPolicy="Forbid", status={
        "active": [ref], "lastScheduleTime": "2026-03-02T10:00:00Z"}), [running])
    await ctrl.reconcile("ns/backup")
    assert client.of("create", "jobs") == []


async def test_replace_deletes_the_running_job_first():
    running = job("backup-1")
    ref = {"name": "backup-1", "namespace": "ns", "uid": "uid-backup-1"}
    ctrl, client = controller(cronjob(concurrencyPolicy="Replace", status={
        "active": [ref], "lastScheduleTime": "2026-03-02T10:00:00Z"}), [running])
    await ctrl.reconcile("ns/backup")
    assert [c[1] for c in client.of("delete", "jobs")] == ["backup-1"]
    assert len(client.of("create", "jobs")) == 1


async def test_a_start_past_the_deadline_is_missed():
    ctrl, client = controller(cronjob(startingDeadlineSeconds=60, status={
        "lastScheduleTime": "2026-03-02T10:00:00Z"}))
    await ctrl.reconcile("ns/backup")
    assert client.of("create", "jobs") == []


async def test_suspended_cronjobs_start_nothing():
    ctrl, client = controller(cronjob(suspend=True))
    await ctrl.reconcile("ns/backup")
    assert client.of("create", "jobs") == []


async def test_finished_jobs_leave_active_and_the_oldest_beyond_the_limits_go():
    jobs = [job(f"backup-{i}", done="Complete", start=f"2026-03-02T09:0{i}:00Z",
                completed=f"2026-03-02T09:0{i}:30Z") for i in range(4)]
    ref = {"name": "backup-3", "namespace": "ns", "uid": "uid-backup-3"}
    ctrl, client = controller(cronjob(successfulJobsHistoryLimit=2, status={
        "active": [ref], "lastScheduleTime": "2026-03-02T10:05:00Z"}), jobs)
    await ctrl.reconcile("ns/backup")
    assert [c[1] for c in client.of("delete", "jobs")] == ["backup-0", "backup-1"]
    [status] = [o["status"] for o in client.of("update/status", "cronjobs")]
    assert "active" not in status
    assert status["lastSuccessfulTime"] == "2026-03-02T09:03:30Z"
