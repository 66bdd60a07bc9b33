"""admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration and
MutatingWebhookConfiguration: stored, defaulted and validated as upstream does
(`draemu.apiserver.admission.webhooks` calls the webhooks)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from draemu.api.errors import FieldError, Path, duplicate, invalid, not_supported, required
from draemu.api.names import is_dns1035_label, is_dns1123_subdomain
from draemu.api.types import Obj
from draemu.apiserver.registry.admissionregistration.common import (
    FAILURE_POLICIES,
    MATCH_POLICIES,
    WEBHOOK_VARIABLES,
    static_suffix_warnings,
    validate_fully_qualified_name,
    validate_match_conditions,
    validate_rule,
    validate_static_suffix,
)
from draemu.apiserver.registry.core.labelselector import validate_label_selector
from draemu.apiserver.registry.strategy import (
    AGE,
    AGE_COLUMN,
    NAME_COLUMN,
    Column,
    Context,
    Strategy,
)

REVIEW_VERSIONS = ["v1", "v1beta1"]
NO_SIDE_EFFECTS = ["None", "NoneOnDryRun"]
REINVOCATION = ["IfNeeded", "Never"]


class _WebhookConfigurationStrategy(Strategy):
    group = "admissionregistration.k8s.io"
    namespaced = False
    versions = ("v1",)
    storage_version = "v1"
    categories = ("api-extensions",)
    has_generation = True
    mutating = False

    def default(self, obj: Obj, version: str) -> None:
        for hook in obj.get("webhooks") or []:
            if not isinstance(hook, dict):
                continue
            hook.setdefault("failurePolicy", "Fail")
            hook.setdefault("matchPolicy", "Equivalent")
            hook.setdefault("namespaceSelector", {})
            hook.setdefault("objectSelector", {})
            hook.setdefault("timeoutSeconds", 10)
            if self.mutating:
                hook.setdefault("reinvocationPolicy", "Never")
            for rule in hook.get("rules") or []:
                if isinstance(rule, dict):
                    rule.setdefault("scope", "*")
            service = (hook.get("clientConfig") or {}).get("service")
            if isinstance(service, dict):
                service.setdefault("port", 443)

    def validate(self, obj: Obj, ctx: Context) -> list[FieldError]:
        return self.validate_update(obj, obj, ctx) + validate_static_suffix(
            obj["metadata"].get("name") or "")

    def warnings(self, obj: Obj, ctx: Context) -> list[str]:
        return static_suffix_warnings(obj, ctx)

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        obj = new
        errs: list[FieldError] = []
        names: set[str] = set()
        for i, hook in enumerate(obj.get("webhooks") or []):
            if not isinstance(hook, dict):
                errs.append(required(Path("webhooks").index(i)))
                continue
            path = Path("webhooks").index(i)
            errs += self._validate_hook(hook, path)
            errs += _review_versions(hook.get("admissionReviewVersions") or [],
                                     path.child("admissionReviewVersions"))
            name = hook.get("name") or ""
            if name and name in names:
                errs.append(duplicate(path.child("name"), name))
            names.add(name)
        return errs

    def _validate_hook(self, hook: Obj, path: Path) -> list[FieldError]:
        errs = validate_fully_qualified_name(hook.get("name") or "", path.child("name"))
        for i, rule in enumerate(hook.get("rules") or []):
            if not isinstance(rule, dict):
                errs.append(required(path.child("rules").index(i)))
                continue
            errs += validate_rule(rule, path.child("rules").index(i))
        failure = hook.get("failurePolicy")
        if failure is not None and failure not in FAILURE_POLICIES:
            errs.append(not_supported(path.child("failurePolicy"), failure, FAILURE_POLICIES))
        match = hook.get("matchPolicy")
        if match is not None and match not in MATCH_POLICIES:
            errs.append(not_supported(path.child("matchPolicy"), match, MATCH_POLICIES))
        side = hook.get("sideEffects")
        if side is None:
            errs.append(required(path.child("sideEffects"),
                                 "must specify one of " + ", ".join(NO_SIDE_EFFECTS)))
        elif side not in NO_SIDE_EFFECTS:
            errs.append(not_supported(path.child("sideEffects"), side, NO_SIDE_EFFECTS))
        timeout = hook.get("timeoutSeconds")
        if timeout is not None and not 1 <= timeout <= 30:
            errs.append(invalid(path.child("timeoutSeconds"), timeout,
                                "the timeout value must be between 1 and 30 seconds"))
        if self.mutating:
            policy = hook.get("reinvocationPolicy")
            if policy is not None and policy not in REINVOCATION:
                errs.append(not_supported(path.child("reinvocationPolicy"), policy,
                                          REINVOCATION))
        for key in ("namespaceSelector", "objectSelector"):
            errs += validate_label_selector(hook.get(key), path.child(key))
        errs += _client_config(hook.get("clientConfig") or {}, path.child("clientConfig"))
        errs += validate_match_conditions(hook.get("matchConditions") or [],
                                          WEBHOOK_VARIABLES, path.child("matchConditions"))
        return errs

    def table_columns(self) -> list[Column]:
        return [NAME_COLUMN,
                Column("Webhooks", type="integer", description="Webhooks indicates the "
                       "number of webhooks registered in this configuration"),
                AGE_COLUMN]

    def table_row(self, obj: Obj) -> list[Any]:
        return [obj["metadata"].get("name", ""), len(obj.get("webhooks") or []), AGE]


def _review_versions(versions: list[str], path: Path) -> list[FieldError]:
    if not versions:
        return [required(path, "must specify one of " + ", ".join(REVIEW_VERSIONS))]
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, version in enumerate(versions):
        if version in seen:
            errs.append(invalid(path.index(i), version, "duplicate version"))
            continue
        seen.add(version)
        errs += [invalid(path.index(i), version, m)
                 for m in is_dns1035_label(version if isinstance(version, str) else "")]
    if not seen & set(REVIEW_VERSIONS):
        errs.append(invalid(path, versions, "must include at least one of " +
                            ", ".join(REVIEW_VERSIONS)))
    return errs


def _client_config(config: Obj, path: Path) -> list[FieldError]:
    url, service = config.get("url"), config.get("service")
    if (url is None) == (service is None):
        return [required(path, "exactly one of url or service is required")]
    errs: list[FieldError] = []
    if url is not None:
        upath = path.child("url")
        form = "; desired format: https://host[/path]"
        parts = urlsplit(url)
        if parts.scheme != "https":
            errs.append(invalid(upath, parts.scheme, "'https' is the only allowed URL scheme" +
                                form))
        if not parts.netloc:
            errs.append(invalid(upath, "", "host must be specified" + form))
        if "@" in parts.netloc:
            errs.append(invalid(upath, parts.netloc.split("@")[0],
                                "user information is not permitted in the URL"))
        if parts.fragment:
            errs.append(invalid(upath, parts.fragment, "fragments are not permitted in the URL"))
        if parts.query:
            errs.append(invalid(upath, parts.query, "query parameters are not permitted in "
                                "the URL"))
        return errs
    spath = path.child("service")
    if not service.get("name"):
        errs.append(required(spath.child("name")))
    if not service.get("namespace"):
        errs.append(required(spath.child("namespace")))
    port = service.get("port", 443)
    if not isinstance(port, int) or not 1 <= port <= 65535:
        errs.append(invalid(spath.child("port"), port, "port is not valid: must be between 1 "
                            "and 65535, inclusive"))
    url_path = service.get("path")
    if url_path and url_path != "/":
        if not url_path.startswith("/"):
            errs.append(invalid(spath.child("path"), url_path, "must start with a '/'"))
        steps = url_path[1:].removesuffix("/").split("/")
        for i, step in enumerate(steps):
            if not step:
                errs.append(invalid(spath.child("path"), url_path,
                                    f"segment[{i}] may not be empty"))
                continue
            for failure in is_dns1123_subdomain(step):
                errs.append(invalid(spath.child("path"), url_path, f"segment[{i}]: {failure}"))
    return errs


class ValidatingWebhookConfigurationStrategy(_WebhookConfigurationStrategy):
    kind = "ValidatingWebhookConfiguration"
    resource = "validatingwebhookconfigurations"
    singular = "validatingwebhookconfiguration"


class MutatingWebhookConfigurationStrategy(_WebhookConfigurationStrategy):
    kind = "MutatingWebhookConfiguration"
    resource = "mutatingwebhookconfigurations"
    singular = "mutatingwebhookconfiguration"
    mutating = True


STRATEGIES = [ValidatingWebhookConfigurationStrategy(), MutatingWebhookConfigurationStrategy()]
