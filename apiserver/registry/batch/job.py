"""batch/v1 Job (+status): defaults, the generated selector and template labels that tie
a Job to its pods, spec validation and what may change on update; `kubectl get jobs`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from draemu.api.errors import FieldError, Path, invalid, not_supported, required
from draemu.api.meta import human_duration
from draemu.api.names import is_dns1123_label
from draemu.api.types import Obj
from draemu.apiserver.registry.apps.replicaset import TEMPLATE_COLUMNS, template_cells
from draemu.apiserver.registry.core.common import (
    immutable,
    nonnegative,
    parse_time,
)
from draemu.apiserver.registry.core.labelselector import (
    convertible,
    matches,
    validate_label_selector,
)
from draemu.apiserver.registry.core.podspec_defaults import default_pod_template
from draemu.apiserver.registry.core.podtemplate import (
    obsolete_template_field_errors,
    validate_pod_template,
)
from draemu.apiserver.registry.strategy import (
    AGE,
    AGE_COLUMN,
    NAME_COLUMN,
    Column,
    Context,
    Strategy,
)

JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_JOB_NAME_LABEL = "job-name"
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
COMPLETION_MODES = ["NonIndexed", "Indexed"]
MAX_PARALLELISM_INDEXED = 100000
MAX_INT32 = 2**31 - 1
_IMMUTABLE_SPEC_FIELDS = ("completionMode", "podFailurePolicy", "backoffLimitPerIndex",
                          "managedBy", "successPolicy")


def generate_selector(job: Obj) -> None:
    """Label the template with the job's name and uid and select on the uid, unless the
    user manages the selector (`manualSelector: true`)."""
    spec = job.setdefault("spec", {})
    if spec.get("manualSelector"):
        return
    meta = job.get("metadata") or {}
    template = spec.setdefault("template", {})
    labels = template.setdefault("metadata", {}).setdefault("labels", {})
    # Labels the user already set are kept; a conflict is caught by validation.
    for key in (LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL):
        labels.setdefault(key, meta.get("name") or "")
    for key in (LEGACY_CONTROLLER_UID_LABEL, CONTROLLER_UID_LABEL):
        labels.setdefault(key, meta.get("uid") or "")
    selector = spec.get("selector") or {}
    selector.setdefault("matchLabels", {}).setdefault(CONTROLLER_UID_LABEL, meta.get("uid") or "")
    spec["selector"] = selector


def _has_label(labels: dict[str, str], key: str, expected: str, path: Path) -> list[FieldError]:
    p = path.child("labels").key(key)
    if key not in labels:
        return [required(p, expected)]
    if labels[key] != expected:
        return [invalid(p, labels, f"must be '{expected}'")]
    return []


def _validate_generated_selector(job: Obj) -> list[FieldError]:
    spec = job.get("spec") or {}
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
    selector = spec.get("selector")
    if spec.get("manualSelector") or labels is None or not selector or \
            selector.get("matchLabels") is None:
        return []
    meta = job.get("metadata") or {}
    uid, name = meta.get("uid") or "", meta.get("name") or ""
    errs: list[FieldError] = []
    if not uid:
        errs.append(required(Path("metadata").child("uid")))
    path = Path("spec").child("template", "metadata")
    for key, value in ((LEGACY_CONTROLLER_UID_LABEL, uid), (LEGACY_JOB_NAME_LABEL, name),
                       (CONTROLLER_UID_LABEL, uid), (JOB_NAME_LABEL, name)):
        errs += _has_label(labels, key, value, path)
    expected = {CONTROLLER_UID_LABEL: uid, JOB_NAME_LABEL: name, LEGACY_JOB_NAME_LABEL: name}
    if not matches(selector, expected):
        errs.append(invalid(Path("spec").child("selector"), selector,
                            "`selector` not auto-generated"))
    return errs


def validate_job_spec(spec: Obj, path: Path, selector_required: bool = True
                      ) -> list[FieldError]:
    """A Job's spec; a CronJob's job template has no selector yet (`selector_required`)."""
    errs: list[FieldError] = []
    for name in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit",
                 "ttlSecondsAfterFinished"):
        errs += nonnegative(spec.get(name), path.child(name))
    mode = spec.get("completionMode")
    if mode is not None:
        if mode not in COMPLETION_MODES:
            errs.append(not_supported(path.child("completionMode"), mode, COMPLETION_MODES))
        if mode == "Indexed":
            if spec.get("completions") is None:
                errs.append(required(path.child("completions"),
                                     "when completion mode is Indexed"))
            parallelism = spec.get("parallelism")
            if parallelism is not None and parallelism > MAX_PARALLELISM_INDEXED:
                errs.append(invalid(path.child("parallelism"), parallelism,
                                    f"must be less than or equal to {MAX_PARALLELISM_INDEXED} "
                                    "when completion mode is Indexed"))
    template = spec.get("template") or {}
    errs += validate_pod_template(template, path.child("template"))
    restart_policy = (template.get("spec") or {}).get("restartPolicy") or ""
    restart_path = path.child("template", "spec", "restartPolicy")
    if restart_policy in ("Always", ""):
        errs.append(required(restart_path, 'valid values: "OnFailure", "Never"'))
    elif restart_policy not in ("OnFailure", "Never"):
        errs.append(not_supported(restart_path, restart_policy, ["OnFailure", "Never"]))
    elif spec.get("podFailurePolicy") is not None and restart_policy != "Never":
        errs.append(invalid(restart_path, restart_policy,
                            'only "Never" is supported when podFailurePolicy is specified'))
    selector = spec.get("selector")
    if selector is None:
        if selector_required:
            errs.append(required(path.child("selector")))
    else:
        errs += validate_label_selector(selector, path.child("selector"))
        labels = (template.get("metadata") or {}).get("labels") or {}
        if convertible(selector) and not matches(selector, labels):
            errs.append(invalid(path.child("template", "metadata", "labels"), labels,
                                "`selector` does not match template `labels`"))
    return errs


def _suspended_never_started(old: Obj) -> bool:
    """Scheduling directives of a suspended job's template may change before it starts."""
    return bool((old.get("spec") or {}).get("suspend")) and not (
        old.get("status") or {}).get("startTime")


def _validate_template_update(new: Obj, old: Obj, path: Path) -> list[FieldError]:
    new_template = (new.get("spec") or {}).get("template")
    old_template = (old.get("spec") or {}).get("template")
    if not _suspended_never_started(old):
        return immutable(new_template, old_template, path)
    # Only node affinity, node selector, tolerations, scheduling gates, annotations and
    # labels may change.
    mutable = ("affinity", "nodeSelector", "tolerations", "schedulingGates")
    strip_new = {k: v for k, v in ((new_template or {}).get("spec") or {}).items()
                 if k not in mutable}
    strip_old = {k: v for k, v in ((old_template or {}).get("spec") or {}).items()
                 if k not in mutable}
    return immutable(strip_new, strip_old, path)


class JobStrategy(Strategy):
    group = "batch"
    kind = "Job"
    resource = "jobs"
    singular = "job"
    categories = ("all",)
    versions = ("v1",)
    storage_version = "v1"
    subresources = frozenset({"status"})
    status_meta_reset = ()  # upstream resets only the spec

    def default(self, obj: Obj, version: str) -> None:
        spec = obj.setdefault("spec", {})
        if spec.get("completions") is None and spec.get("parallelism") is None:
            spec["completions"] = 1
        spec.setdefault("parallelism", 1)
        if spec.get("backoffLimit") is None:
            spec["backoffLimit"] = MAX_INT32 if spec.get("backoffLimitPerIndex") is not None \
                else 6
        self._copy_template_labels(obj)
        spec.setdefault("completionMode", "NonIndexed")
        spec.setdefault("suspend", False)
        policy = spec.get("podFailurePolicy")
        for rule in (policy or {}).get("rules") or []:
            for pattern in rule.get("onPodConditions") or []:
                pattern.setdefault("status", "True")
        spec.setdefault("podReplacementPolicy",
                        "Failed" if policy is not None else "TerminatingOrFailed")
        default_pod_template(spec.get("template"), self.kind, version)

    def obsolete_field_errors(self, obj: Obj, version: str) -> list[FieldError]:
        return obsolete_template_field_errors(obj)

    def prepare_for_create(self, obj: Obj, ctx: Context) -> None:
        """Needs `metadata.name` and `metadata.uid` set: the selector is built from them."""
        super().prepare_for_create(obj, ctx)
        generate_selector(obj)
        # Upstream defaults again when it reads the job back from storage, so a job without
        # labels of its own shows the generated template labels from its first response.
        self._copy_template_labels(obj)
        obj["status"] = {}

    @staticmethod
    def _copy_template_labels(obj: Obj) -> None:
        """A job without labels takes its pod template's."""
        spec = obj.get("spec") or {}
        template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
        meta = obj.setdefault("metadata", {})
        if template_labels and not meta.get("labels"):
            meta["labels"] = dict(template_labels)

    def validate(self, obj: Obj, ctx: Context) -> list[FieldError]:
        spec = obj.get("spec") or {}
        errs = _validate_generated_selector(obj) + validate_job_spec(spec, Path("spec"))
        completions = spec.get("completions")
        if spec.get("completionMode") == "Indexed" and completions:
            name = (obj.get("metadata") or {}).get("name") or ""
            hostname = f"{name}-{completions - 1}"
            if is_dns1123_label(hostname):
                errs.append(invalid(Path("metadata").child("name"), name, "will not able to "
                                    f"create pod with invalid DNS label: {hostname}"))
        return errs

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
        path = Path("spec")
        errs = _validate_generated_selector(new) + validate_job_spec(spec, path)
        errs += _validate_completions_update(spec, old_spec, path)
        errs += immutable(spec.get("selector"), old_spec.get("selector"), path.child("selector"))
        errs += _validate_template_update(new, old, path.child("template"))
        for name in _IMMUTABLE_SPEC_FIELDS:
            errs += immutable(spec.get(name), old_spec.get(name), path.child(name))
        return errs

    def validate_status_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        status = new.get("status") or {}
        errs: list[FieldError] = []
        for name in ("active", "succeeded", "failed", "ready", "terminating"):
            errs += nonnegative(status.get(name), Path("status").child(name))
        return errs

    def selectable_fields(self, obj: Obj) -> dict[str, str]:
        return {"status.successful": str((obj.get("status") or {}).get("succeeded") or 0)}

    def table_columns(self) -> list[Column]:
        return [NAME_COLUMN,
                Column("Status", description="Status of the job."),
                Column("Completions", description="The number of pods which reached phase "
                       "Succeeded."),
                Column("Duration", description="Time required to complete the job."),
                AGE_COLUMN,
                *TEMPLATE_COLUMNS]

    def table_row(self, obj: Obj) -> list[Any]:
        return [(obj.get("metadata") or {}).get("name", ""), job_status(obj),
                completions_cell(obj), duration_cell(obj), AGE, *template_cells(obj)]


def _validate_completions_update(spec: Obj, old: Obj, path: Path) -> list[FieldError]:
    completions = spec.get("completions")
    if spec.get("completionMode") != "Indexed":
        return immutable(completions, old.get("completions"), path.child("completions"))
    # Elastic indexed jobs: completions may change together with parallelism.
    if completions == old.get("completions") or completions is None:
        return []
    if completions != spec.get("parallelism"):
        return [invalid(path.child("completions"), completions,
                        "can only be modified in tandem with spec.parallelism")]
    return []


def _has_condition(obj: Obj, kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or [])


def job_status(obj: Obj) -> str:
    if _has_condition(obj, "Complete"):
        return "Complete"
    if _has_condition(obj, "Failed"):
        return "Failed"
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    for kind in ("Suspended", "FailureTarget", "SuccessCriteriaMet"):
        if _has_condition(obj, kind):
            return kind
    return "Running"


def completions_cell(obj: Obj) -> str:
    spec = obj.get("spec") or {}
    succeeded = (obj.get("status") or {}).get("succeeded") or 0
    if spec.get("completions") is not None:
        return f"{succeeded}/{spec['completions']}"
    parallelism = spec.get("parallelism") or 0
    if parallelism > 1:
        return f"{succeeded}/1 of {parallelism}"
    return f"{succeeded}/1"


def duration_cell(obj: Obj, now: datetime | None = None) -> str:
    status = obj.get("status") or {}
    start = parse_time(status.get("startTime"))
    if start is None:
        return ""
    end = parse_time(status.get("completionTime")) or now or datetime.now(UTC)
    return human_duration((end - start).total_seconds())


STRATEGIES = [JobStrategy()]
