"""batch/v1 Job strategy."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from core_helpers import created, ctx, rendered

from draemu.apiserver.registry.batch.job import JobStrategy
from draemu.apiserver.registry.strategy import AGE

pytestmark = pytest.mark.unit

JOB = JobStrategy()
UID = "0b6f1d4e-4a0c-4d5e-9a51-0c7cbbd1a001"  # what core_helpers.created assigns


def job(**spec: Any) -> dict:
    base = {"template": {"spec": {"restartPolicy": "Never",
                                  "containers": [{"name": "pi", "image": "perl:5.34"}]}}}
    base.update(spec)
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "pi", "namespace": "default"}, "spec": base}


def test_job_defaults() -> None:
    spec = created(JOB, job())["spec"]
    assert {k: spec[k] for k in ("completions", "parallelism", "backoffLimit", "completionMode",
                                 "suspend", "podReplacementPolicy")} == {
        "completions": 1, "parallelism": 1, "backoffLimit": 6, "completionMode": "NonIndexed",
        "suspend": False, "podReplacementPolicy": "TerminatingOrFailed"}


def test_parallelism_alone_leaves_completions_unset() -> None:
    spec = created(JOB, job(parallelism=3))["spec"]
    assert "completions" not in spec and spec["parallelism"] == 3


def test_generated_selector_and_template_labels() -> None:
    spec = created(JOB, job())["spec"]
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": UID}}
    assert spec["template"]["metadata"]["labels"] == {
        "job-name": "pi", "batch.kubernetes.io/job-name": "pi", "controller-uid": UID,
        "batch.kubernetes.io/controller-uid": UID}


def test_job_without_labels_shows_its_template_labels() -> None:
    assert created(JOB, job())["metadata"]["labels"]["batch.kubernetes.io/job-name"] == "pi"


def test_manual_selector_is_left_alone() -> None:
    obj = job(manualSelector=True, selector={"matchLabels": {"app": "pi"}})
    obj["spec"]["template"]["metadata"] = {"labels": {"app": "pi"}}
    obj = created(JOB, obj)
    assert obj["spec"]["selector"] == {"matchLabels": {"app": "pi"}}
    assert JOB.validate(obj, ctx()) == []


def test_valid_job_is_accepted() -> None:
    assert JOB.validate(created(JOB, job()), ctx()) == []


@pytest.mark.parametrize(("restart_policy", "expected"), [
    ("Always", ['spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", '
                '"Never"']),
    (None, ['spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", '
            '"Never"']),
    ("OnFailure", []),
])
def test_template_restart_policy_must_be_never_or_on_failure(restart_policy: str | None,
                                                            expected: list[str]) -> None:
    obj = job()
    obj["spec"]["template"]["spec"].pop("restartPolicy")
    if restart_policy:
        obj["spec"]["template"]["spec"]["restartPolicy"] = restart_policy
    assert rendered(JOB.validate(created(JOB, obj), ctx())) == expected


@pytest.mark.parametrize(("spec", "expected"), [
    ({"backoffLimit": -1}, ["spec.backoffLimit: Invalid value: -1: must be greater than or "
                            "equal to 0"]),
    ({"completionMode": "Indexed", "completions": None, "parallelism": 2},
     ["spec.completions: Required value: when completion mode is Indexed"]),
    ({"completionMode": "Sometimes"},
     ['spec.completionMode: Unsupported value: "Sometimes": supported values: "NonIndexed", '
      '"Indexed"']),
])
def test_invalid_job_spec(spec: dict, expected: list[str]) -> None:
    obj = job(**spec)
    if spec.get("completions", 0) is None:
        obj["spec"].pop("completions")
    assert rendered(JOB.validate(created(JOB, obj), ctx())) == expected


def test_conflicting_template_label_is_reported() -> None:
    obj = job()
    obj["spec"]["template"]["metadata"] = {"labels": {"job-name": "other"}}
    errs = rendered(JOB.validate(created(JOB, obj), ctx()))
    assert errs == ["spec.template.metadata.labels[job-name]: Invalid value: "
                    '{"batch.kubernetes.io/controller-uid":"' + UID + '",'
                    '"batch.kubernetes.io/job-name":"pi","controller-uid":"' + UID + '",'
                    "\"job-name\":\"other\"}: must be 'pi'"]


def test_template_is_immutable_once_running() -> None:
    old = created(JOB, job())
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "perl:5.36"
    errs = rendered(JOB.validate_update(new, old, ctx()))
    assert len(errs) == 1 and errs[0].startswith("spec.template: Invalid value: ")
    assert errs[0].endswith(": field is immutable")


def test_suspended_job_may_change_its_node_selector() -> None:
    old = created(JOB, job(suspend=True))
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["nodeSelector"] = {"zone": "a"}
    assert JOB.validate_update(new, old, ctx()) == []


def test_completions_are_immutable_for_non_indexed_jobs() -> None:
    old = created(JOB, job())
    new = copy.deepcopy(old)
    new["spec"]["completions"] = 4
    assert rendered(JOB.validate_update(new, old, ctx())) == [
        "spec.completions: Invalid value: 4: field is immutable"]


@pytest.mark.parametrize(("conditions", "deleting", "status"), [
    ([], False, "Running"),
    ([{"type": "Complete", "status": "True"}], False, "Complete"),
    ([{"type": "Failed", "status": "True"}], False, "Failed"),
    ([{"type": "Suspended", "status": "True"}], False, "Suspended"),
    ([], True, "Terminating"),
])
def test_status_column(conditions: list, deleting: bool, status: str) -> None:
    obj = created(JOB, job())
    obj["status"] = {"conditions": conditions}
    if deleting:
        obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert JOB.table_row(obj)[1] == status


def job_with_status() -> dict:
    obj = created(JOB, job(completions=3))
    obj["status"] = {"succeeded": 1, "startTime": "2026-01-01T00:00:00Z",
                     "completionTime": "2026-01-01T00:02:30Z"}
    return obj


def test_job_table_row() -> None:
    row = JOB.table_row(job_with_status())
    assert row[:7] == ["pi", "Running", "1/3", "2m30s", AGE, "pi", "perl:5.34"]


def test_job_field_selector_status_successful() -> None:
    assert JOB.selectable_fields(job_with_status()) == {"status.successful": "1"}


def test_completions_cell_without_completions() -> None:
    obj = created(JOB, job(parallelism=4))
    assert JOB.table_row(obj)[2] == "0/1 of 4"
