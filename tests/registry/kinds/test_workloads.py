"""apps/v1 DaemonSet, StatefulSet, ControllerRevision, core/v1 ReplicationController and
batch/v1 CronJob: defaults, validation with upstream's messages, immutability, columns."""

from __future__ import annotations

import copy

import pytest
from kind_helpers import created, ctx, messages, updated

from draemu.apiserver.registry.apps.daemonset import TEMPLATE_GENERATION, DaemonSetStrategy
from draemu.apiserver.registry.apps.statefulset import (
    ControllerRevisionStrategy,
    StatefulSetStrategy,
)
from draemu.apiserver.registry.batch.cronjob import CronJobStrategy, schedule_error
from draemu.apiserver.registry.core.replicationcontroller import ReplicationControllerStrategy
from draemu.apiserver.registry.strategy import AGE

pytestmark = pytest.mark.unit
DS, STS, REV = DaemonSetStrategy(), StatefulSetStrategy(), ControllerRevisionStrategy()
RC, CJ = ReplicationControllerStrategy(), CronJobStrategy()
TEMPLATE = {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}


def workload(kind: str, **spec: object) -> dict:
    base: dict = {"selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE}
    base.update(spec)
    return {"apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": "web", "namespace": "default"}, "spec": copy.deepcopy(base)}


def test_daemonset_defaults() -> None:
    obj = created(DS, workload("DaemonSet"))
    assert obj["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {
        "maxUnavailable": 1, "maxSurge": 0}}
    assert obj["spec"]["revisionHistoryLimit"] == 10
    assert obj["metadata"]["annotations"][TEMPLATE_GENERATION] == "1"
    assert DS.validate(obj, ctx()) == []


def test_daemonset_selector_must_match_template() -> None:
    obj = created(DS, workload("DaemonSet", selector={"matchLabels": {"app": "db"}}))
    assert messages(DS.validate(obj, ctx())) == [
        'spec.template.metadata.labels: Invalid value: {"app":"web"}: `selector` does not '
        "match template `labels`"]


def test_daemonset_rolling_update_needs_one_of_surge_and_unavailable() -> None:
    obj = created(DS, workload("DaemonSet", updateStrategy={
        "type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}}))
    assert messages(DS.validate(obj, ctx())) == [
        "spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when "
        "maxSurge is 0"]


def test_daemonset_template_change_bumps_the_generation_and_selector_is_fixed() -> None:
    old = created(DS, workload("DaemonSet"))
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.28"
    new = updated(DS, new, old)
    assert new["metadata"]["annotations"][TEMPLATE_GENERATION] == "2"
    moved = copy.deepcopy(old)
    moved["spec"]["selector"] = {"matchLabels": {"app": "web", "tier": "x"}}
    moved["spec"]["template"]["metadata"]["labels"]["tier"] = "x"
    assert "spec.selector: Invalid value: " in messages(
        DS.validate_update(updated(DS, moved, old), old, ctx()))[0]


def test_daemonset_columns() -> None:
    obj = created(DS, workload("DaemonSet"))
    obj["spec"]["template"]["spec"]["nodeSelector"] = {"gpu": "true"}
    assert DS.table_row(obj) == ["web", 0, 0, 0, 0, 0, "gpu=true", AGE, "web", "nginx:1.27",
                                 "app=web"]


def test_statefulset_defaults() -> None:
    spec = created(STS, workload("StatefulSet", serviceName="web"))["spec"]
    assert spec["podManagementPolicy"] == "OrderedReady"
    assert spec["updateStrategy"] == {"type": "RollingUpdate",
                                      "rollingUpdate": {"partition": 0, "maxUnavailable": 1}}
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain",
                                                            "whenScaled": "Retain"}
    assert (spec["replicas"], spec["revisionHistoryLimit"]) == (1, 10)


def test_statefulset_claim_templates_are_validated_and_mountable() -> None:
    obj = workload("StatefulSet", volumeClaimTemplates=[
        {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}])
    obj["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "data", "mountPath": "/data"}]
    assert messages(STS.validate(created(STS, obj), ctx())) == [
        "spec.volumeClaimTemplates[0].spec.resources[storage]: Required value"]


@pytest.mark.parametrize("field,value", [
    ("serviceName", "other"), ("podManagementPolicy", "Parallel"),
    ("volumeClaimTemplates", [{"metadata": {"name": "d"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}])])
def test_statefulset_immutable_fields(field: str, value: object) -> None:
    old = created(STS, workload("StatefulSet", serviceName="web"))
    new = copy.deepcopy(old)
    new["spec"][field] = value
    errors = messages(STS.validate_update(updated(STS, new, old), old, ctx()))
    assert errors and all(m.startswith(f"spec.{field}: Invalid value: ")
                          and m.endswith(": field is immutable") for m in errors)


def test_statefulset_replicas_may_change() -> None:
    old = created(STS, workload("StatefulSet", serviceName="web"))
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 5
    assert STS.validate_update(updated(STS, new, old), old, ctx()) == []


def test_statefulset_columns() -> None:
    obj = created(STS, workload("StatefulSet", serviceName="web", replicas=3))
    obj["status"]["readyReplicas"] = 2
    assert STS.table_row(obj) == ["web", "2/3", AGE, "web", "nginx:1.27"]


def test_controller_revision_needs_data_and_keeps_it() -> None:
    rev = {"apiVersion": "apps/v1", "kind": "ControllerRevision",
           "metadata": {"name": "web-1", "namespace": "default", "ownerReferences": [
               {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "u",
                "controller": True}]}, "revision": 1}
    assert messages(REV.validate(created(REV, rev), ctx())) == [
        "data: Required value: data is mandatory"]
    rev["data"] = {"spec": {}}
    old = created(REV, rev)
    assert REV.table_row(old) == ["web-1", "statefulset.apps/web", 1, AGE]
    new = copy.deepcopy(old)
    new["data"] = {"spec": {"x": 1}}
    assert messages(REV.validate_update(new, old, ctx())) == [
        'data: Invalid value: {"spec":{"x":1}}: field is immutable']


def test_replication_controller_selector_defaults_to_template_labels() -> None:
    obj = created(RC, {"apiVersion": "v1", "kind": "ReplicationController",
                       "metadata": {"name": "rc", "namespace": "default"},
                       "spec": {"template": copy.deepcopy(TEMPLATE)}})
    assert obj["spec"]["selector"] == {"app": "web"}
    assert obj["metadata"]["labels"] == {"app": "web"}
    assert obj["spec"]["replicas"] == 1
    assert RC.validate(obj, ctx()) == []
    assert RC.table_row(obj) == ["rc", 1, 0, 0, AGE, "web", "nginx:1.27", "app=web"]


def cronjob(**spec: object) -> dict:
    base: dict = {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {
        "spec": {"restartPolicy": "OnFailure", "containers": [{"name": "c",
                                                               "image": "busybox"}]}}}}}
    base.update(spec)
    return {"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "cj", "namespace": "default"}, "spec": base}


def test_cronjob_defaults() -> None:
    spec = created(CJ, cronjob())["spec"]
    assert (spec["concurrencyPolicy"], spec["suspend"], spec["successfulJobsHistoryLimit"],
            spec["failedJobsHistoryLimit"]) == ("Allow", False, 3, 1)
    assert "backoffLimit" not in spec["jobTemplate"]["spec"]
    assert CJ.validate(created(CJ, cronjob()), ctx()) == []


@pytest.mark.parametrize("schedule,error", [
    ("@hourly", ""), ("0 0 * * MON-FRI", ""), ("@every 1h30m", ""),
    ("* * *", "expected exactly 5 fields, found 3: [* * *]"),
    ("61 * * * *", "end of range (61) above maximum (59): 61"),
    ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
    ("*/0 * * * *", "step of range should be a positive number: */0"),
    ("@sometimes", "unrecognized descriptor: @sometimes"),
])
def test_cron_schedules_parse_as_robfig_cron(schedule: str, error: str) -> None:
    assert schedule_error(schedule) == error


def test_cronjob_time_zone_and_tz_in_schedule() -> None:
    assert messages(CJ.validate(created(CJ, cronjob(timeZone="Mars/Olympus")), ctx())) == [
        'spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus']
    assert messages(CJ.validate(created(CJ, cronjob(schedule="TZ=UTC 0 * * * *")), ctx())) == [
        'spec.schedule: Invalid value: "TZ=UTC 0 * * * *": cannot use TZ or CRON_TZ in '
        "schedule, use timeZone field instead"]
    assert CJ.validate(created(CJ, cronjob(timeZone="Europe/Paris")), ctx()) == []


def test_cronjob_job_template_restart_policy() -> None:
    obj = cronjob()
    obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    assert messages(CJ.validate(created(CJ, obj), ctx())) == [
        'spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: '
        '"OnFailure", "Never"']


def test_cronjob_columns() -> None:
    obj = created(CJ, cronjob())
    assert CJ.table_row(obj) == ["cj", "*/5 * * * *", "<none>", "False", 0, "<none>", AGE,
                                 "c", "busybox", "<none>"]
