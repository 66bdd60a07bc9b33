"""apiregistration.k8s.io/v1 APIService (+status): one group-version served by this
apiserver (`spec.service` unset: "Local") or by an extension apiserver behind a Service.
Stored and validated as kube-aggregator's strategy does: the name must be
`<version>.<group>`, priorities within their ranges, a local APIService is Available from
its creation and keeps no CA bundle."""

from __future__ import annotations

import base64
import binascii

from draemu.api.errors import FieldError, Path, invalid, not_supported, required
from draemu.api.meta import time_now
from draemu.api.names import is_dns1035_label, is_dns1123_subdomain
from draemu.apiserver.registry.generic import AGE_COLUMN, NAME, GenericStrategy, Printed, get_path
from draemu.apiserver.registry.strategy import Column, Context, Obj

GROUP = "apiregistration.k8s.io"
_STATUSES = ["True", "False", "Unknown"]


def local_available_condition() -> Obj:
    return {"type": "Available", "status": "True", "lastTransitionTime": time_now(),
            "reason": "Local", "message": "Local APIServices are always available"}


def _service_cell(obj: Obj) -> str:
    service = get_path(obj, "spec.service")
    if not isinstance(service, dict):
        return "Local"
    return f"{service.get('namespace', '')}/{service.get('name', '')}"


def _available_cell(obj: Obj) -> str:
    for condition in get_path(obj, "status.conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "Available":
            status = condition.get("status") or ""
            if status != "True" and condition.get("reason"):
                return f"{status} ({condition['reason']})"
            return status
    return "Unknown"


def _path_segment_errors(name: str, prefix: bool) -> list[str]:
    """content.IsPathSegmentName."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{bad}'" for bad in ("/", "%") if bad in name]


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _priority_errors(spec: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    group_min = _int(spec.get("groupPriorityMinimum"))
    if group_min <= 0 or group_min > 20000:
        errs.append(invalid(path.child("groupPriorityMinimum"), group_min,
                            "must be positive and less than 20000"))
    version_priority = _int(spec.get("versionPriority"))
    if version_priority <= 0 or version_priority > 1000:
        errs.append(invalid(path.child("versionPriority"), version_priority,
                            "must be positive and less than 1000"))
    return errs


def _service_errors(spec: Obj, path: Path) -> list[FieldError]:
    service = spec.get("service")
    skip_verify = bool(spec.get("insecureSkipTLSVerify"))
    if not isinstance(service, dict):
        errs: list[FieldError] = []
        if spec.get("caBundle"):
            size = len(_bundle_bytes(spec["caBundle"]))
            errs.append(invalid(path.child("caBundle"), f"{size} bytes",
                                "local APIServices may not have a caBundle"))
        if skip_verify:
            errs.append(invalid(path.child("insecureSkipTLSVerify"), True,
                                "local APIServices may not have insecureSkipTLSVerify"))
        return errs
    errs = [required(path.child("service", name)) for name in ("namespace", "name")
            if not service.get(name)]
    port = _int(service.get("port"))
    if not 1 <= port <= 65535:
        errs.append(invalid(path.child("service", "port"), port,
                            "port is not valid: must be between 1 and 65535, inclusive"))
    if skip_verify and spec.get("caBundle"):
        errs.append(invalid(path.child("insecureSkipTLSVerify"), True,
                            "may not be true if caBundle is present"))
    return errs


def _bundle_bytes(text: str) -> bytes:
    try:
        return base64.b64decode(text)
    except (binascii.Error, ValueError):
        return text.encode()


class APIServiceStrategy(GenericStrategy):
    group = GROUP
    kind = "APIService"
    resource = "apiservices"
    singular = "apiservice"
    categories = ("api-extensions",)
    namespaced = False
    versions = ("v1",)
    storage_version = "v1"
    subresources = frozenset({"status"})
    has_generation = False
    printer = (
        NAME,
        Printed(Column("Service", description="The reference to the service that hosts "
                       "this API endpoint."), _service_cell),
        Printed(Column("Available", description="Whether this service is available."),
                _available_cell),
        AGE_COLUMN,
    )
    defaults = {"spec.service.port": 443}

    def default(self, obj: Obj, version: str) -> None:
        if isinstance(get_path(obj, "spec.service"), dict):
            super().default(obj, version)

    def validate_name(self, name: str, prefix: bool) -> list[str]:
        return _path_segment_errors(name, prefix)

    def prepare_for_create(self, obj: Obj, ctx: Context) -> None:
        obj["status"] = {}
        if not isinstance(get_path(obj, "spec.service"), dict):
            obj["status"] = {"conditions": [local_available_condition()]}

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        path = Path("spec")
        group, version = str(spec.get("group") or ""), str(spec.get("version") or "")
        name = get_path(obj, "metadata.name") or ""
        errs: list[FieldError] = []
        wanted = f"{version}.{group}"
        if name and not _path_segment_errors(name, False) and name != wanted:
            errs.append(invalid(Path("metadata").child("name"), name,
                                f'must be `spec.version+"."+spec.group`: "{wanted}"'))
        if not group and version != "v1":
            errs.append(required(path.child("group"), "only v1 may have an empty group and "
                                 "it better be legacy kube"))
        if group:
            errs += [invalid(path.child("group"), group, e) for e in is_dns1123_subdomain(group)]
        errs += [invalid(path.child("version"), version, e) for e in is_dns1035_label(version)]
        return errs + _priority_errors(spec, path) + _service_errors(spec, path)

    def validate_status_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        errs: list[FieldError] = []
        conditions = get_path(new, "status.conditions") or []
        for i, condition in enumerate(conditions):
            status = condition.get("status") if isinstance(condition, dict) else None
            if status not in _STATUSES:
                errs.append(not_supported(Path("status").child("conditions").index(i)
                                          .child("status"), status, _STATUSES))
        return errs


STRATEGIES = [APIServiceStrategy()]
