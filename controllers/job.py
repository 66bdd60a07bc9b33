"""The Job controller: runs pods from the template until `completions` succeed (or
the first success for work queues), within `parallelism`, and fails the Job after
`backoffLimit` failures, past `activeDeadlineSeconds`, or on a pod failure policy
`FailJob` rule.

Terminated pods are counted exactly once through the `batch.kubernetes.io/job-tracking`
finalizer: a finished pod's uid goes to `status.uncountedTerminatedPods` first, then
its finalizer is removed, then it moves into `succeeded`/`failed`. A finishing Job
gets `SuccessCriteriaMet` or `FailureTarget` first and `Complete` or `Failed` once
none of its pods is still terminating, as Kubernetes 1.31+ does.
"""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

from draemu.api.meta import (
    controller_of,
    format_time,
    get_condition,
    meta,
    name_of,
    namespace_of,
    now,
    parse_time,
    pod_is_ready,
    set_condition,
    uid_of,
)
from draemu.api.types import Obj
from draemu.client import ApiError
from draemu.controllers.base import Controller
from draemu.controllers.replicaset import pod_from_template

TRACKING = "batch.kubernetes.io/job-tracking"
INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
INDEX_LABEL = "batch.kubernetes.io/job-completion-index"


def _finished(job: Obj) -> str:
    for type_ in ("Complete", "Failed"):
        cond = get_condition(job, type_)
        if cond and cond.get("status") == "True":
            return type_
    return ""


def _pod_failed(pod: Obj) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase == "Failed" or (bool(meta(pod).get("deletionTimestamp"))
                                 and phase != "Succeeded")


def _pod_succeeded(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Succeeded"


def _index(pod: Obj) -> int | None:
    value = (meta(pod).get("annotations") or {}).get(INDEX_ANNOTATION)
    return int(value) if value is not None and value.isdigit() else None


def format_indexes(indexes: set[int]) -> str:
    """`0-2,4` as `status.completedIndexes` writes intervals."""
    out, ordered = [], sorted(indexes)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(out)


def parse_indexes(text: str | None) -> set[int]:
    found: set[int] = set()
    for part in (text or "").split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        found.update(range(int(lo), int(hi or lo) + 1))
    return found


def failure_policy_action(job: Obj, pod: Obj) -> tuple[str, str]:
    """(action, message) of the first pod failure policy rule matching a failed pod."""
    rules = ((job.get("spec") or {}).get("podFailurePolicy") or {}).get("rules") or []
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    for i, rule in enumerate(rules):
        codes = rule.get("onExitCodes")
        if codes:
            for cs in statuses:
                if codes.get("containerName") and codes["containerName"] != cs.get("name"):
                    continue
                code = ((cs.get("state") or {}).get("terminated") or {}).get("exitCode")
                if code is None or code == 0:
                    continue
                inside = code in (codes.get("values") or [])
                if inside == (codes.get("operator") == "In"):
                    return rule.get("action", "Count"), (
                        f"Container {cs.get('name')} for pod {namespace_of(pod)}/"
                        f"{name_of(pod)} failed with exit code {code} matching "
                        f"{rule.get('action')} rule at index {i}")
        for pat in rule.get("onPodConditions") or []:
            cond = get_condition(pod, pat.get("type", ""))
            if cond and cond.get("status") == pat.get("status", "True"):
                return rule.get("action", "Count"), (
                    f"Pod {namespace_of(pod)}/{name_of(pod)} has condition {pat.get('type')} "
                    f"matching {rule.get('action')} rule at index {i}")
    return "Count", ""


class JobController(Controller):
    name = "job"
    workers = 2

    def setup(self) -> None:
        self.backoff_base = self.ctx.setting("job_backoff_base", 10.0)
        inf = self.ctx.informers
        self.jobs = inf.informer("batch/v1", "jobs")
        self.pods = inf.informer("v1", "pods")
        self.handlers_enqueue(self.jobs)
        self.pods.add_handler(on_add=self._pod_changed,
                              on_update=lambda _o, n: self._pod_changed(n),
                              on_delete=self._pod_changed)

    def primary(self) -> Any:
        return self.jobs

    def _pod_changed(self, pod: Obj) -> None:
        ref = controller_of(pod)
        if ref and ref.get("kind") == "Job":
            self.queue.add(f"{namespace_of(pod)}/{ref.get('name')}")

    def _pods(self, job: Obj) -> list[Obj]:
        uid = uid_of(job)
        return [p for p in self.pods.list() if namespace_of(p) == namespace_of(job)
                and (controller_of(p) or {}).get("uid") == uid]

    async def reconcile(self, key: str) -> float | None:
        job = self.jobs.get(key)
        if job is None:
            await self._release_orphans(key)
            return None
        job = copy.deepcopy(job)
        spec = job.get("spec") or {}
        job.setdefault("status", {})
        await self._track_terminated(job, self._pods(job))
        status = job["status"]
        before = copy.deepcopy(status)
        pods = self._pods(job)
        active = [p for p in pods if not _pod_succeeded(p) and not _pod_failed(p)]
        terminating = [p for p in pods if meta(p).get("deletionTimestamp")
                       and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
        again: float | None = None
        if not _finished(job) and not spec.get("suspend"):
            again = await self._progress(job, pods, active)
        elif spec.get("suspend") and not _finished(job):
            for pod in active:
                await self._delete_pod(pod)
            set_condition(status.setdefault("conditions", []), "Suspended", "True",
                          "JobSuspended", "Job suspended", probe_time=True)
        self._conclude(job, terminating)
        if status != before:
            try:
                await self.client.update("batch/v1", "jobs", job, subresource="status")
            except ApiError as e:
                if e.code == 409:
                    self.queue.add(key)
                elif e.code != 404:
                    raise
        return again

    async def _progress(self, job: Obj, pods: list[Obj], active: list[Obj]) -> float | None:
        """A running job: its success or failure criteria met, or as many pods as it
        wants now; seconds after which to look again (backoff, active deadline)."""
        spec, status = job.get("spec") or {}, job["status"]
        uncounted = status.get("uncountedTerminatedPods") or {}
        succeeded = int(status.get("succeeded", 0)) + len(uncounted.get("succeeded") or [])
        failed = int(status.get("failed", 0)) + len(uncounted.get("failed") or [])
        indexed = spec.get("completionMode") == "Indexed"
        done_indexes = parse_indexes(status.get("completedIndexes")) if indexed else set()
        if indexed:
            succeeded = len(done_indexes)
        status.setdefault("startTime", format_time(now()))
        verdict = self._verdict(job, pods, succeeded, failed, active, done_indexes)
        if verdict:
            type_, reason, message = verdict
            target = "SuccessCriteriaMet" if type_ == "Complete" else "FailureTarget"
            conds = status.setdefault("conditions", [])
            set_condition(conds, target, "True", reason, message, probe_time=True)
            if type_ == "Failed":
                for pod in active:
                    await self._delete_pod(pod)
            return None
        completions = spec.get("completions")
        want = int(spec.get("parallelism", 1))
        if completions is not None:
            want = min(want, int(completions) - succeeded)
        elif succeeded > 0:
            want = 0
        want = max(0, want)
        again: float | None = None
        if len(active) < want:
            delay = self._backoff_delay(job, pods, failed)
            if delay > 0:
                again = delay
            else:
                await self._create_pods(job, want - len(active), active, done_indexes)
        elif len(active) > want:
            for pod in active[want:]:
                await self._delete_pod(pod)
        deadline = spec.get("activeDeadlineSeconds")
        if deadline is not None:
            started = parse_time(status.get("startTime")) or now()
            left = (started + timedelta(seconds=int(deadline)) - now()).total_seconds()
            again = left if again is None else min(again, left)
        return again

    def _conclude(self, job: Obj, terminating: list[Obj]) -> None:
        """Complete or Failed once the target condition is met and no pod runs or
        terminates; the active, ready and terminating counts."""
        status = job["status"]
        conds = status.setdefault("conditions", [])
        target_met = get_condition(job, "SuccessCriteriaMet")
        failure_target = get_condition(job, "FailureTarget")
        live = [p for p in self._pods(job) if not _pod_succeeded(p) and not _pod_failed(p)]
        if not _finished(job) and not terminating and not live:
            if failure_target and failure_target.get("status") == "True":
                set_condition(conds, "Failed", "True", failure_target.get("reason", ""),
                              failure_target.get("message", ""), probe_time=True)
            elif target_met and target_met.get("status") == "True":
                set_condition(conds, "Complete", "True", "", "", probe_time=True)
                status["completionTime"] = format_time(now())
        status["active"] = len([p for p in live if not meta(p).get("deletionTimestamp")])
        status["ready"] = sum(1 for p in live if pod_is_ready(p))
        status["terminating"] = len(terminating)
        if not conds:
            status.pop("conditions", None)
        for k in ("active", "terminating"):
            if not status.get(k):
                status.pop(k, None)

    def _verdict(self, job: Obj, pods: list[Obj], succeeded: int, failed: int,
                 active: list[Obj], done_indexes: set[int]) -> tuple[str, str, str] | None:
        spec = job.get("spec") or {}
        for pod in pods:
            if _pod_failed(pod):
                action, message = failure_policy_action(job, pod)
                if action == "FailJob":
                    return "Failed", "PodFailurePolicy", message
        if failed > int(spec.get("backoffLimit", 6)):
            return "Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit"
        deadline = spec.get("activeDeadlineSeconds")
        started = parse_time((job.get("status") or {}).get("startTime"))
        if deadline is not None and started is not None and (
                now() - started).total_seconds() >= int(deadline):
            return "Failed", "DeadlineExceeded", "Job was active longer than specified deadline"
        completions = spec.get("completions")
        if completions is not None and succeeded >= int(completions):
            return "Complete", "CompletionsReached", "Reached expected number of succeeded pods"
        if completions is None and succeeded > 0 and not active:
            return "Complete", "CompletionsReached", "Reached expected number of succeeded pods"
        return None

    def _backoff_delay(self, job: Obj, pods: list[Obj], failed: int) -> float:
        """Failed pods are replaced after 10 s, 20 s, 40 s ... (at most 6 min)."""
        if failed == 0:
            return 0.0
        last = max((parse_time(((c.get("state") or {}).get("terminated") or {}).get(
            "finishedAt")) for p in pods if _pod_failed(p)
            for c in (p.get("status") or {}).get("containerStatuses") or []
            if ((c.get("state") or {}).get("terminated") or {}).get("finishedAt")),
            default=None)
        if last is None:
            return 0.0
        delay = min(self.backoff_base * 2 ** (failed - 1), 360.0)
        return max(0.0, (last + timedelta(seconds=delay) - now()).total_seconds())

    async def _track_terminated(self, job: Obj, pods: list[Obj]) -> None:
        status = job["status"]
        uncounted = status.setdefault("uncountedTerminatedPods", {})
        known = set(uncounted.get("succeeded") or []) | set(uncounted.get("failed") or [])
        changed = False
        for pod in pods:
            if TRACKING not in (meta(pod).get("finalizers") or []) or uid_of(pod) in known:
                continue
            if _pod_succeeded(pod):
                uncounted.setdefault("succeeded", []).append(uid_of(pod))
            elif _pod_failed(pod) and (meta(pod).get("deletionTimestamp") or (
                    pod.get("status") or {}).get("phase") == "Failed"):
                action, _ = failure_policy_action(job, pod)
                if action == "Ignore":
                    await self._remove_tracking(pod)
                    continue
                uncounted.setdefault("failed", []).append(uid_of(pod))
            else:
                continue
            changed = True
        if changed:
            job.update(await self.client.update("batch/v1", "jobs", job, subresource="status"))
            status = job["status"]
            uncounted = status.setdefault("uncountedTerminatedPods", {})
        by_uid = {uid_of(p): p for p in pods}
        moved = False
        for bucket in ("succeeded", "failed"):
            for uid in list(uncounted.get(bucket) or []):
                pod = by_uid.get(uid)
                if pod is not None and TRACKING in (meta(pod).get("finalizers") or []):
                    await self._remove_tracking(pod)
                uncounted[bucket].remove(uid)
                status[bucket] = int(status.get(bucket, 0)) + 1
                if bucket == "succeeded" and pod is not None and _index(pod) is not None:
                    idx = parse_indexes(status.get("completedIndexes"))
                    idx.add(_index(pod))  # type: ignore[arg-type]
                    status["completedIndexes"] = format_indexes(idx)
                moved = True
            if not uncounted.get(bucket):
                uncounted.pop(bucket, None)
        if moved:
            job.update(await self.client.update("batch/v1", "jobs", job, subresource="status"))
        job.setdefault("status", {}).setdefault("uncountedTerminatedPods", {})

    async def _remove_tracking(self, pod: Obj) -> None:
        fins = [f for f in meta(pod).get("finalizers") or [] if f != TRACKING]
        try:
            await self.client.patch("v1", "pods", name_of(pod), {
                "metadata": {"finalizers": fins or None}}, namespace=namespace_of(pod))
        except ApiError as e:
            if e.code != 404:
                raise

    async def _release_orphans(self, key: str) -> None:
        ns, _, name = key.partition("/")
        for pod in self.pods.list():
            ref = controller_of(pod) or {}
            if namespace_of(pod) == ns and ref.get("kind") == "Job" and ref.get(
                    "name") == name and TRACKING in (meta(pod).get("finalizers") or []):
                await self._remove_tracking(pod)

    async def _create_pods(self, job: Obj, count: int, active: list[Obj],
                           done_indexes: set[int]) -> None:
        spec = job.get("spec") or {}
        indexed = spec.get("completionMode") == "Indexed"
        free: list[int] = []
        if indexed:
            busy = {_index(p) for p in active} | done_indexes
            free = [i for i in range(int(spec.get("completions") or 0)) if i not in busy]
            count = min(count, len(free))
        for n in range(min(count, 500)):
            template = copy.deepcopy(spec.get("template") or {})
            prefix = f"{name_of(job)}-"
            if indexed:
                idx = free[n]
                tmeta = template.setdefault("metadata", {})
                tmeta.setdefault("annotations", {})[INDEX_ANNOTATION] = str(idx)
                tmeta.setdefault("labels", {})[INDEX_LABEL] = str(idx)
                template.setdefault("spec", {}).setdefault("hostname", f"{name_of(job)}-{idx}")
                prefix = f"{name_of(job)}-{idx}-"
            pod = pod_from_template(template, job, prefix)
            pod["metadata"]["finalizers"] = [*pod["metadata"].get("finalizers", []), TRACKING]
            try:
                created = await self.client.create("v1", "pods", pod,
                                                   namespace=namespace_of(job))
            except ApiError as e:
                await self.recorder.event(job, "Warning", "FailedCreate",
                                          f"Error creating: {e.message}")
                raise
            await self.recorder.event(job, "Normal", "SuccessfulCreate",
                                      f"Created pod: {name_of(created)}")

    async def _delete_pod(self, pod: Obj) -> None:
        try:
            await self.client.delete("v1", "pods", name_of(pod), namespace_of(pod))
        except ApiError as e:
            if e.code != 404:
                raise
