"""The PodSecurity admission plugin's answers, as kube-apiserver's (admission plugin
`PodSecurity`, on create and update):

- a pod is checked against its namespace's `enforce` policy (a violation is a 403:
  `pods "p" is forbidden: violates PodSecurity "baseline:latest": privileged (container
  "c" must not set securityContext.privileged=true)`), `warn` (a Warning) and `audit`
  (an audit annotation); its updates only when an image changes or an ephemeral
  container is added; its exec, attach, binding, eviction, log, portforward, proxy and
  status subresources never;
- a pod controller's or template's pod template (Deployments, ReplicaSets, StatefulSets,
  DaemonSets, Jobs, CronJobs, ReplicationControllers, PodTemplates) gets `warn` and
  `audit` only, never a denial (its pods are checked when they are made);
- a namespace with bad `pod-security.kubernetes.io/*` labels is refused (422); one whose
  enforce level gets stricter is admitted with warnings naming its pods that violate it
  (one per reason, at most 3000 pods checked).

Audit annotations are returned without their `pod-security.kubernetes.io/` prefix
(`enforce-policy`, `audit-violations`, `error`, `exempt`), as upstream's library does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from draemu.api.errors import (
    FieldError,
    StatusError,
    aggregate,
    forbidden_error,
    internal_error,
    invalid_object,
)
from draemu.api.types import Obj
from draemu.apiserver.admission.podsecurity.evaluator import Aggregate, Evaluator
from draemu.apiserver.admission.podsecurity.levels import (
    ENFORCE,
    ENFORCE_VERSION,
    PRIVILEGED,
    LevelVersion,
    Policy,
    compare,
    policy_of,
)

MAX_PODS_CHECKED = 3000
IGNORED_POD_SUBRESOURCES = frozenset({"exec", "attach", "binding", "eviction", "log",
                                      "portforward", "proxy", "status"})
# (group, resource) -> where its pod template is
POD_TEMPLATES: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "replicationcontrollers"): ("spec", "template"),
    ("", "podtemplates"): ("template",),
    ("apps", "replicasets"): ("spec", "template"),
    ("apps", "deployments"): ("spec", "template"),
    ("apps", "statefulsets"): ("spec", "template"),
    ("apps", "daemonsets"): ("spec", "template"),
    ("batch", "jobs"): ("spec", "template"),
    ("batch", "cronjobs"): ("spec", "jobTemplate", "spec", "template"),
}


@dataclass(frozen=True)
class Attributes:
    operation: str  # CREATE, UPDATE
    group: str
    resource: str
    subresource: str
    namespace: str
    name: str
    obj: Obj | None
    old: Obj | None = None
    user: str = ""


@dataclass
class Answer:
    error: StatusError | None = None  # the request's denial
    warnings: list[str] = field(default_factory=list)
    audit: dict[str, str] = field(default_factory=dict)

    @property
    def allowed(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class Exemptions:
    usernames: frozenset[str] = frozenset()
    namespaces: frozenset[str] = frozenset()
    runtime_classes: frozenset[str] = frozenset()


def applies_to(group: str, resource: str) -> bool:
    return (group, resource) in (("", "pods"), ("", "namespaces")) or \
        (group, resource) in POD_TEMPLATES


class PodSecurity:
    def __init__(self, evaluator: Evaluator, defaults: Policy | None = None,
                 exemptions: Exemptions | None = None) -> None:
        """`defaults`: the policy of namespaces without labels (privileged, as
        kube-apiserver's default configuration); `exemptions`: none by default."""
        self.evaluator = evaluator
        self.defaults = defaults or Policy()
        self.exemptions = exemptions or Exemptions()

    def admit(self, attrs: Attributes, namespace: Callable[[str], Obj | None],
              pods: Callable[[str], list[Obj]]) -> Answer:
        """`namespace(name)`: the namespace object (None: there is none); `pods(name)`: the
        namespace's pods."""
        if attrs.operation not in ("CREATE", "UPDATE"):
            return Answer()
        if (attrs.group, attrs.resource) == ("", "namespaces"):
            return self.namespace(attrs, pods)
        if (attrs.group, attrs.resource) == ("", "pods"):
            return self.pod(attrs, namespace)
        if (attrs.group, attrs.resource) in POD_TEMPLATES:
            return self.controller(attrs, namespace)
        return Answer()

    # ---- namespaces

    def namespace(self, attrs: Attributes, pods: Callable[[str], list[Obj]]) -> Answer:
        if attrs.subresource or attrs.obj is None:
            return Answer()
        labels = (attrs.obj.get("metadata") or {}).get("labels") or {}
        policy, errors = policy_of(labels, self.defaults)
        name = attrs.obj.get("metadata", {}).get("name", attrs.name)
        if attrs.operation == "CREATE":
            if errors:
                return Answer(invalid_object("Namespace", "", name, errors))
            return self._exempt_namespace_warning(name, policy, labels)
        old_labels = ((attrs.old or {}).get("metadata") or {}).get("labels") or {}
        old_policy, old_errors = policy_of(old_labels, self.defaults)
        if errors and (not old_errors or errors != old_errors):
            return Answer(invalid_object("Namespace", "", name, errors))
        new, old = policy.enforce, old_policy.enforce
        if new == old or new.level == PRIVILEGED or \
                (new.version == old.version and compare(new.level, old.level) < 1):
            return Answer()
        if name in self.exemptions.namespaces:
            return self._exempt_namespace_warning(name, policy, labels)
        return Answer(warnings=self.existing_pods(name, new, pods(name)))

    def _exempt_namespace_warning(self, name: str, policy: Policy, labels: dict[str, str]
                                  ) -> Answer:
        if name not in self.exemptions.namespaces or policy.fully_privileged() or \
                policy.equivalent(self.defaults):
            return Answer()
        parts = []
        for mode, lv, keys in (("enforce", policy.enforce, (ENFORCE, ENFORCE_VERSION)),
                               ("audit", policy.audit, ("pod-security.kubernetes.io/audit",
                                                        "pod-security.kubernetes.io/audit-version")),
                               ("warn", policy.warn, ("pod-security.kubernetes.io/warn",
                                                      "pod-security.kubernetes.io/warn-version"))):
            if lv.level != PRIVILEGED and any(k in labels for k in keys):
                parts.append(f"{mode}={lv}")
        return Answer(warnings=[f'namespace "{name}" is exempt from Pod Security, and the '
                                f"policy ({', '.join(parts)}) will be ignored"])

    def existing_pods(self, namespace: str, enforce: LevelVersion, pods: list[Obj]) -> list[str]:
        ordered = self._prioritized(pods)
        total = len(ordered)
        ordered = ordered[:MAX_PODS_CHECKED]
        first_pod: dict[str, str] = {}
        counts: dict[str, int] = {}
        reasons: list[str] = []
        for pod in ordered:
            result = self.evaluator.evaluate(enforce, pod.get("metadata") or {},
                                             pod.get("spec") or {})
            if result.allowed:
                continue
            reason, pod_name = result.reason(), pod["metadata"]["name"]
            if reason not in counts:
                reasons.append(reason)
                first_pod[reason] = pod_name
            elif pod_name < first_pod[reason]:
                first_pod[reason] = pod_name
            counts[reason] = counts.get(reason, 0) + 1
        warnings = []
        if len(ordered) < total:
            warnings.append(f"new PodSecurity enforce level only checked against the first "
                            f"{len(ordered)} of {total} existing pods")
        if reasons:
            warnings.append(f'existing pods in namespace "{namespace}" violate the new '
                            f'PodSecurity enforce level "{enforce}"')
        decorated = []
        for reason in reasons:
            count, first = counts[reason], first_pod[reason]
            others = "" if count == 1 else " (and 1 other pod)" if count == 2 else \
                f" (and {count - 1} other pods)"
            decorated.append(f"{first}{others}: {reason}")
        return warnings + sorted(decorated)

    def _prioritized(self, pods: list[Obj]) -> list[Obj]:
        """Pods without a controller and one pod per controller first, as upstream."""
        first, repeats, seen = [], [], set()
        for pod in pods:
            if self._exempt_runtime_class(pod.get("spec") or {}):
                continue
            owner = next((ref.get("uid") for ref in (pod.get("metadata") or {}).get(
                "ownerReferences") or [] if ref.get("controller")), None)
            if owner is not None and owner in seen:
                repeats.append(pod)
                continue
            if owner is not None:
                seen.add(owner)
            first.append(pod)
        return first + repeats

    # ---- pods and their controllers

    def pod(self, attrs: Attributes, namespace: Callable[[str], Obj | None]) -> Answer:
        if attrs.subresource in IGNORED_POD_SUBRESOURCES:
            return Answer()
        exempt = self._exempt(attrs)
        if exempt is not None:
            return exempt
        ns = namespace(attrs.namespace)
        if ns is None:
            return Answer(internal_error(f'failed to lookup namespace "{attrs.namespace}"'),
                          audit={"error": f'failed to lookup namespace "{attrs.namespace}"'})
        policy, errors = policy_of((ns.get("metadata") or {}).get("labels"), self.defaults)
        if not errors and policy.fully_privileged():
            return Answer(audit={"enforce-policy": str(LevelVersion(PRIVILEGED))})
        pod = attrs.obj or {}
        if attrs.operation == "UPDATE" and not _significant_update(pod, attrs.old or {}):
            return Answer()
        return self.evaluate(attrs, policy, errors, pod.get("metadata") or {},
                             pod.get("spec") or {}, enforce=True)

    def controller(self, attrs: Attributes, namespace: Callable[[str], Obj | None]) -> Answer:
        if attrs.subresource:
            return Answer()
        exempt = self._exempt(attrs)
        if exempt is not None:
            return exempt
        ns = namespace(attrs.namespace)
        if ns is None:
            return Answer(audit={"error": f'failed to lookup namespace "{attrs.namespace}"'})
        policy, errors = policy_of((ns.get("metadata") or {}).get("labels"), self.defaults)
        if not errors and policy.warn.level == PRIVILEGED and policy.audit.level == PRIVILEGED:
            return Answer()
        template: Any = attrs.obj or {}
        for key in POD_TEMPLATES[(attrs.group, attrs.resource)]:
            template = (template or {}).get(key)
        if template is None:
            return Answer()
        return self.evaluate(attrs, policy, errors, template.get("metadata") or {},
                             template.get("spec") or {}, enforce=False)

    def _exempt(self, attrs: Attributes) -> Answer | None:
        if attrs.namespace and attrs.namespace in self.exemptions.namespaces:
            return Answer(audit={"exempt": "namespace"})
        if attrs.user and attrs.user in self.exemptions.usernames:
            return Answer(audit={"exempt": "user"})
        return None

    def _exempt_runtime_class(self, spec: Obj) -> bool:
        return bool(spec.get("runtimeClassName")) and \
            spec["runtimeClassName"] in self.exemptions.runtime_classes

    def evaluate(self, attrs: Attributes, policy: Policy, errors: list[FieldError], meta: Obj,
                 spec: Obj, enforce: bool) -> Answer:
        if self._exempt_runtime_class(spec):
            return Answer(audit={"exempt": "runtimeClass"})
        answer = Answer()
        if errors:
            answer.audit["error"] = "Failed to parse policy: " + aggregate(errors)
        cache: dict[LevelVersion, Aggregate] = {}

        def result(lv: LevelVersion) -> Aggregate:
            if lv not in cache:
                cache[lv] = self.evaluator.evaluate(lv, meta, spec)
            return cache[lv]

        if enforce:
            answer.audit["enforce-policy"] = str(policy.enforce)
            enforced = result(policy.enforce)
            if not enforced.allowed:
                answer.error = _forbidden(attrs, f'violates PodSecurity "{policy.enforce}": '
                                                 f"{enforced.detail()}")
        audited = result(policy.audit)
        if not audited.allowed:
            answer.audit["audit-violations"] = (f'would violate PodSecurity "{policy.audit}": '
                                                f"{audited.detail()}")
        if answer.allowed:
            warned = result(policy.warn)
            if not warned.allowed:
                answer.warnings.append(f'would violate PodSecurity "{policy.warn}": '
                                       f"{warned.detail()}")
        return answer


def _significant_update(pod: Obj, old: Obj) -> bool:
    """An image changed, or an ephemeral container was added or changed its image."""
    spec, old_spec = pod.get("spec") or {}, old.get("spec") or {}
    for key in ("containers", "initContainers"):
        new_list, old_list = spec.get(key) or [], old_spec.get(key) or []
        if len(new_list) != len(old_list):
            return True
        if any(a.get("image") != b.get("image") for a, b in zip(new_list, old_list, strict=True)):
            return True
    olds = {c.get("name"): c for c in old_spec.get("ephemeralContainers") or []}
    return any(c.get("name") not in olds or c.get("image") != olds[c.get("name")].get("image")
               for c in spec.get("ephemeralContainers") or [])


def _forbidden(attrs: Attributes, why: str) -> StatusError:
    """apierrors.NewForbidden for the request's resource and name."""
    qualified = attrs.resource if not attrs.group else f"{attrs.resource}.{attrs.group}"
    message = f'{qualified} "{attrs.name}" is forbidden: {why}' if attrs.name else \
        f"{qualified} is forbidden: {why}"
    details = {k: v for k, v in (("name", attrs.name), ("group", attrs.group),
                                 ("kind", attrs.resource)) if v}
    return forbidden_error(message, details)
