"""core/v1 ResourceQuota (+status) and LimitRange. A quota's status (hard and used) is
written by the resource-quota controller; enforcing quotas on creates is not done."""

from __future__ import annotations

from draemu.api.errors import FieldError, Path, invalid, not_supported, required
from draemu.api.names import is_qualified_name
from draemu.api.quantity import QuantityError
from draemu.apiserver.registry.core.common import (
    IS_NEGATIVE,
    check_quantities,
    parse_quantity,
    qualified_name,
)
from draemu.apiserver.registry.generic import (
    AGE_COLUMN,
    CREATED_AT,
    NAME,
    GenericStrategy,
    Printed,
    get_path,
)
from draemu.apiserver.registry.strategy import Column, Context, Obj

SCOPES = ["BestEffort", "CrossNamespacePodAffinity", "NotBestEffort", "NotTerminating",
          "PriorityClass", "Terminating", "VolumeAttributesClass"]
SELECTOR_OPERATORS = ["DoesNotExist", "Exists", "In", "NotIn"]
LIMIT_TYPES = ["Container", "PersistentVolumeClaim", "Pod"]
# What the quota system knows by a bare name (helper.IsStandardQuotaResourceName).
STANDARD_QUOTA_RESOURCES = frozenset({
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
    "requests.storage", "requests.ephemeral-storage", "limits.cpu", "limits.memory",
    "limits.ephemeral-storage", "pods", "resourcequotas", "services",
    "replicationcontrollers", "secrets", "persistentvolumeclaims", "configmaps",
    "services.nodeports", "services.loadbalancers"})
INTEGER_RESOURCES = frozenset({
    "pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps",
    "persistentvolumeclaims", "services.nodeports", "services.loadbalancers"})


def _is_extended(name: str) -> bool:
    """IsExtendedResourceName: `example.com/foo`, `count/pods`, `<class>.deviceclass...`."""
    native = "/" not in name or "kubernetes.io/" in name
    if native or name.startswith("requests."):
        return False
    return not is_qualified_name("requests." + name)


def quota_resource_errors(name: str, raw: object, path: Path) -> list[FieldError]:
    """ValidateResourceQuotaResourceName and ValidateResourceQuantityValue."""
    errs = qualified_name(name, path)
    if "/" not in name and name not in STANDARD_QUOTA_RESOURCES and not name.startswith(
            ("hugepages-", "requests.hugepages-")):
        errs.append(invalid(path, name, "must be a standard resource for quota"))
    try:
        quantity = parse_quantity(raw)  # type: ignore[arg-type]
    except (QuantityError, TypeError):
        return errs  # decoding refused it already
    if quantity.value < 0:
        errs.append(invalid(path, raw, IS_NEGATIVE))
    if (name in INTEGER_RESOURCES or _is_extended(name)) and quantity.value.denominator != 1:
        errs.append(invalid(path, raw, "must be an integer"))
    return errs


def _quota_columns(obj: Obj) -> tuple[str, str]:
    """printResourceQuota: `name: used/hard` pairs, limits.* in the second column."""
    hard = get_path(obj, "status.hard") or {}
    used = get_path(obj, "status.used") or {}
    requests, limits = [], []
    for name in sorted(hard):
        text = f"{name}: {used.get(name, '0')}/{hard[name]}"
        (limits if name.split(".")[0] == "limits" and "." in name else requests).append(text)
    return ", ".join(requests), ", ".join(limits)


def _quantity_map_errors(values: dict[str, object], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for name, raw in (values or {}).items():
        p = path.key(name)
        errs += qualified_name(name, p)
        try:
            quantity = parse_quantity(raw)  # type: ignore[arg-type]
        except (QuantityError, TypeError):
            continue  # decoding refused it already
        if quantity.value < 0:
            errs.append(invalid(p, raw, IS_NEGATIVE))
    return errs


class ResourceQuotaStrategy(GenericStrategy):
    kind = "ResourceQuota"
    resource = "resourcequotas"
    singular = "resourcequota"
    short_names = ("quota",)
    versions = ("v1",)
    storage_version = "v1"
    subresources = frozenset({"status"})
    status_meta_reset = ()
    has_generation = False
    printer = (
        NAME,
        AGE_COLUMN,
        Printed(Column("Request", description="Request represents a minimum amount of cpu/"
                       "memory that a container may consume."),
                lambda o: _quota_columns(o)[0]),
        Printed(Column("Limit", description="Limits control the maximum amount of cpu/memory "
                       "that a container may use independent of contention on the node."),
                lambda o: _quota_columns(o)[1]),
    )

    def default(self, obj: Obj, version: str) -> None:
        check_quantities([*(get_path(obj, "spec.hard") or {}).values(),
                          *(get_path(obj, "status.hard") or {}).values(),
                          *(get_path(obj, "status.used") or {}).values()], self.kind, version)

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        spec = obj.get("spec") or {}
        path = Path("spec")
        errs: list[FieldError] = []
        for name, raw in (spec.get("hard") or {}).items():
            errs += quota_resource_errors(name, raw, path.child("hard").key(name))
        scopes = spec.get("scopes") or []
        for scope in scopes:
            if scope not in SCOPES:
                errs.append(not_supported(path.child("scopes"), scope, SCOPES))
        if "Terminating" in scopes and "NotTerminating" in scopes:
            errs.append(invalid(path.child("scopes"), scopes, "conflicting scopes"))
        if "BestEffort" in scopes and "NotBestEffort" in scopes:
            errs.append(invalid(path.child("scopes"), scopes, "conflicting scopes"))
        for i, expr in enumerate(get_path(spec, "scopeSelector.matchExpressions") or []):
            p = path.child("scopeSelector", "matchExpressions").index(i)
            if expr.get("scopeName") not in SCOPES:
                errs.append(not_supported(p.child("scopeName"), expr.get("scopeName"), SCOPES))
            if expr.get("operator") not in SELECTOR_OPERATORS:
                errs.append(not_supported(p.child("operator"), expr.get("operator"),
                                          SELECTOR_OPERATORS))
        return errs

    def validate_status_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        status = new.get("status") or {}
        return (_quantity_map_errors(status.get("hard") or {}, Path("status").child("hard"))
                + _quantity_map_errors(status.get("used") or {}, Path("status").child("used")))


class LimitRangeStrategy(GenericStrategy):
    kind = "LimitRange"
    resource = "limitranges"
    singular = "limitrange"
    short_names = ("limits",)
    versions = ("v1",)
    storage_version = "v1"
    has_generation = False
    printer = (NAME, CREATED_AT)

    def default(self, obj: Obj, version: str) -> None:
        values = []
        for item in get_path(obj, "spec.limits") or []:
            if not isinstance(item, dict):
                continue
            for name in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"):
                values += list((item.get(name) or {}).values())
            # SetDefaults_LimitRangeItem: a Container's default limit starts from max, its
            # default request from the default limit, then from min.
            if item.get("type") == "Container":
                for name, value in (item.get("max") or {}).items():
                    item.setdefault("default", {}).setdefault(name, value)
                for name, value in (item.get("default") or {}).items():
                    item.setdefault("defaultRequest", {}).setdefault(name, value)
                for name, value in (item.get("min") or {}).items():
                    item.setdefault("defaultRequest", {}).setdefault(name, value)
        check_quantities(values, self.kind, version)

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        errs: list[FieldError] = []
        for i, item in enumerate(get_path(obj, "spec.limits") or []):
            p = Path("spec").child("limits").index(i)
            kind = item.get("type") or ""
            if not kind:
                errs.append(required(p.child("type")))
            elif kind not in LIMIT_TYPES and "/" not in kind:
                errs.append(not_supported(p.child("type"), kind, LIMIT_TYPES))
            for name in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"):
                errs += _quantity_map_errors(item.get(name) or {}, p.child(name))
            if kind == "Pod":
                for name in ("default", "defaultRequest"):
                    if item.get(name):
                        errs.append(invalid(p.child(name), item[name],
                                            "may not be specified when `type` is 'Pod'"))
            for resource, low in (item.get("min") or {}).items():
                high = (item.get("max") or {}).get(resource)
                if high is not None and parse_quantity(low).value > parse_quantity(high).value:
                    errs.append(invalid(p.child("min").key(resource), low,
                                        f"min value {low} is greater than max value {high}"))
        return errs


STRATEGIES = [ResourceQuotaStrategy(), LimitRangeStrategy()]
