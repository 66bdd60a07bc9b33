"""The resource.k8s.io strategies the apiserver serves (dra-api.md §2, §6)."""

from __future__ import annotations

from typing import Any

from draemu.api.errors import FieldError, Path, StatusError, forbidden, internal
from draemu.api.meta import time_now
from draemu.api.types import Obj
from draemu.apiserver.registry.strategy import AGE, Column, Context, Strategy

from . import (
    claims,
    classes,
    conversion,
    defaults,
    gates,
    poolstatus,
    rules,
    slices,
    statusauthz,
    taintrules,
)
from .fields import obj

GROUP = "resource.k8s.io"
_ALL = ("v1", "v1beta2", "v1beta1", "v1alpha3")
# (deprecated in, unavailable in) per version, from the prerelease lifecycle markers.
_LIFECYCLE = {"v1beta2": ("1.36", "1.39"), "v1beta1": ("1.35", "1.38")}
_TAINT_RULE_LIFECYCLE = {"v1beta2": ("1.39", "1.42"), "v1alpha3": ("1.36", "1.39")}
# (first release serving it, first release not serving it) per version.
_RELEASES: dict[str, tuple[str, str | None]] = {
    "v1": ("1.34", None), "v1beta2": ("1.33", "1.39"), "v1beta1": ("1.32", "1.38")}
_TAINT_RULE_RELEASES: dict[str, tuple[str, str | None]] = {
    "v1": ("1.37", None), "v1beta2": ("1.36", "1.42"), "v1alpha3": ("1.33", "1.39")}
# v1alpha3 of the four original kinds, in its Kubernetes 1.31 shape: gone upstream since
# 1.32, served by draemu only when asked (`--legacy-v1alpha3`; the seed preset does) so
# that the DRA introduction's manifests apply as published.
_LEGACY = ("v1alpha3",)


def _warnings(kind: str, lifecycle: dict[str, tuple[str, str]],
              legacy: tuple[str, ...] = ()) -> dict[str, str]:
    out = {version: f"{GROUP}/{version} {kind} is deprecated in v{dep}+, unavailable in "
                    f"v{gone}+; use {GROUP}/v1 {kind}"
           for version, (dep, gone) in lifecycle.items()}
    for version in legacy:
        out[version] = (f"{GROUP}/{version} {kind} is served by draemu for old manifests; "
                        f"Kubernetes 1.34+ does not serve it; use {GROUP}/v1 {kind}")
    return out


class ResourceStrategy(Strategy):
    group = GROUP
    storage_version = "v1"
    # Claims, templates and pool status requests have no generation upstream; the
    # kinds that do (classes, slices, taint rules) say so below.
    has_generation = False

    def default(self, o: Obj, version: str) -> None:
        defaults.default(self.kind, o, version)

    def to_storage(self, o: Obj, version: str) -> Obj:
        return conversion.to_storage(self.kind, o, version)

    def from_storage(self, o: Obj, version: str) -> Obj:
        return conversion.from_storage(self.kind, o, version)


def _namespace_allows_admin_access(ctx: Context, namespace: str) -> bool | FieldError:
    """Whether the namespace carries `resource.kubernetes.io/admin-access: "true"`
    (`ctx.lookup` reads the apiserver's watch cache synchronously)."""
    if ctx.lookup is None:
        return True
    try:
        found = ctx.lookup("namespaces", "", "", namespace)
    except (StatusError, OSError, LookupError) as e:  # unreadable: an internal error
        return internal(Path("metadata.namespace"), f"could not read namespace {namespace}: {e}")
    labels = obj(obj(obj(found).get("metadata")).get("labels"))
    return labels.get(claims.ADMIN_ACCESS_LABEL) == "true"


def _admin_access_errors(o: Obj, paths: list[Path], ctx: Context) -> list[FieldError]:
    if not paths:
        return []
    allowed = _namespace_allows_admin_access(ctx, obj(o.get("metadata")).get("namespace", ""))
    if isinstance(allowed, FieldError):
        return [allowed]
    if allowed:
        return []
    return [forbidden(p, claims.ADMIN_ACCESS_DETAIL) for p in paths]


# DeviceClass -----------------------------------------------------------------------------

class DeviceClassStrategy(ResourceStrategy):
    kind = "DeviceClass"
    resource = "deviceclasses"
    singular = "deviceclass"
    namespaced = False
    versions = _ALL
    has_generation = True  # starts at 1, bumped by spec changes
    deprecated_versions = _warnings("DeviceClass", _LIFECYCLE, _LEGACY)
    version_releases = _RELEASES
    legacy_versions = _LEGACY

    def prepare_for_create(self, o: Obj, ctx: Context) -> None:
        gates.class_spec(o.get("spec"), None, ctx.gates)

    def prepare_for_update(self, new: Obj, old: Obj, ctx: Context) -> None:
        gates.class_spec(new.get("spec"), obj(old.get("spec")), ctx.gates)

    def validate(self, o: Obj, ctx: Context) -> list[FieldError]:
        return classes.class_spec(obj(o.get("spec")), None, ctx.gates)

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        return classes.class_spec(obj(new.get("spec")), obj(old.get("spec")), ctx.gates)


# ResourceClaim ---------------------------------------------------------------------------

def claim_state(o: Obj) -> str:
    """The STATE column: deleted, pending, allocated, reserved (comma-separated)."""
    deleted = bool(obj(o.get("metadata")).get("deletionTimestamp"))
    status = obj(o.get("status"))
    states = ["deleted"] if deleted else []
    if not isinstance(status.get("allocation"), dict):
        if not deleted:
            states.append("pending")
    else:
        states.append("allocated")
        if status.get("reservedFor"):
            states.append("reserved")
    return ",".join(states)


class ResourceClaimStrategy(ResourceStrategy):
    kind = "ResourceClaim"
    resource = "resourceclaims"
    singular = "resourceclaim"
    versions = _ALL
    deprecated_versions = _warnings("ResourceClaim", _LIFECYCLE, _LEGACY)
    version_releases = _RELEASES
    legacy_versions = _LEGACY
    subresources = frozenset({"status"})

    def prepare_for_create(self, o: Obj, ctx: Context) -> None:
        o["status"] = {}  # Go always serializes the empty status struct
        gates.claim_spec(o.get("spec"), None, ctx.gates)

    def prepare_for_update(self, new: Obj, old: Obj, ctx: Context) -> None:
        super().prepare_for_update(new, old, ctx)
        gates.claim_spec(new.get("spec"), obj(old.get("spec")), ctx.gates)

    def prepare_for_status_update(self, new: Obj, old: Obj, ctx: Context) -> None:
        super().prepare_for_status_update(new, old, ctx)
        status = new.get("status")
        if not isinstance(status, dict):
            status = new["status"] = {}
        gates.claim_status(status, obj(old.get("status")), ctx.gates)
        gates.prune_device_statuses(status)

    def validate(self, o: Obj, ctx: Context) -> list[FieldError]:
        spec = obj(o.get("spec"))
        errors = claims.claim_spec(spec, Path("spec"), ctx.gates)
        return errors + _admin_access_errors(o, claims.admin_access_paths(spec, Path("spec")),
                                             ctx)

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        return claims.immutable(new.get("spec"), old.get("spec"), Path("spec"))

    def validate_status_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        paths = claims.new_result_admin_access_paths(obj(new.get("status")),
                                                     obj(old.get("status")))
        errors = _admin_access_errors(new, paths, ctx)
        errors += statusauthz.status_errors(new, old, obj(new.get("metadata")).get(
            "namespace", ""), ctx)
        return errors + claims.claim_status_update(new, old, ctx.gates)

    def table_columns(self) -> list[Column]:
        name, age = super().table_columns()
        return [name, Column("State", description="A summary of the claim's state: pending, "
                             "allocated, reserved, deleted."), age]

    def table_row(self, o: Obj) -> list[Any]:
        return [obj(o.get("metadata")).get("name", ""), claim_state(o), AGE]


# ResourceClaimTemplate -------------------------------------------------------------------

class ResourceClaimTemplateStrategy(ResourceStrategy):
    kind = "ResourceClaimTemplate"
    resource = "resourceclaimtemplates"
    singular = "resourceclaimtemplate"
    versions = _ALL
    deprecated_versions = _warnings("ResourceClaimTemplate", _LIFECYCLE, _LEGACY)
    version_releases = _RELEASES
    legacy_versions = _LEGACY

    def prepare_for_create(self, o: Obj, ctx: Context) -> None:
        gates.claim_spec(obj(o.get("spec")).get("spec"), None, ctx.gates)

    def prepare_for_update(self, new: Obj, old: Obj, ctx: Context) -> None:
        gates.claim_spec(obj(new.get("spec")).get("spec"), obj(obj(old.get("spec")).get("spec")),
                         ctx.gates)

    def validate(self, o: Obj, ctx: Context) -> list[FieldError]:
        errors = claims.template_spec(obj(o.get("spec")), Path("spec"), ctx.gates)
        spec = obj(obj(o.get("spec")).get("spec"))
        return errors + _admin_access_errors(
            o, claims.admin_access_paths(spec, Path("spec.spec")), ctx)

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        errors: list[FieldError] = []
        if rules.applies(ctx.gates, rules.TEMPLATE_UPDATE_VALIDATED):
            errors = claims.template_spec(obj(new.get("spec")), Path("spec"), ctx.gates,
                                          obj(old.get("spec")))
        return errors + claims.immutable(new.get("spec"), old.get("spec"), Path("spec"))


# ResourceSlice ---------------------------------------------------------------------------

class ResourceSliceStrategy(ResourceStrategy):
    kind = "ResourceSlice"
    resource = "resourceslices"
    singular = "resourceslice"
    namespaced = False
    versions = _ALL
    has_generation = True  # starts at 1, bumped by spec changes
    deprecated_versions = _warnings("ResourceSlice", _LIFECYCLE, _LEGACY)
    version_releases = _RELEASES
    legacy_versions = _LEGACY

    def prepare_for_create(self, o: Obj, ctx: Context) -> None:
        gates.slice_spec(o.get("spec"), None, ctx.gates)

    def prepare_for_update(self, new: Obj, old: Obj, ctx: Context) -> None:
        gates.slice_spec(new.get("spec"), obj(old.get("spec")), ctx.gates)

    def validate(self, o: Obj, ctx: Context) -> list[FieldError]:
        return slices.slice_spec(obj(o.get("spec")), None, ctx.gates)

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        return slices.slice_spec(obj(new.get("spec")), obj(old.get("spec")), ctx.gates)

    def warnings(self, o: Obj, ctx: Context) -> list[str]:
        driver = obj(o.get("spec")).get("driver", "")
        if isinstance(driver, str) and driver != driver.lower():
            return [(f'spec.driver: driver names should be lowercase; "{driver}" contains '
                     "uppercase characters")]
        return []

    def selectable_fields(self, o: Obj) -> dict[str, str]:
        spec = obj(o.get("spec"))
        return {"spec.nodeName": spec.get("nodeName") or "",
                "spec.driver": spec.get("driver") or "",
                "spec.pool.name": obj(spec.get("pool")).get("name") or ""}

    def table_columns(self) -> list[Column]:
        name, age = super().table_columns()
        return [name,
                Column("Node", description="The node that the devices in the slice are "
                       "local to, if any."),
                Column("Driver", description="The DRA driver that published the slice."),
                Column("Pool", description="The resource pool the slice belongs to."),
                age]

    def table_row(self, o: Obj) -> list[Any]:
        spec = obj(o.get("spec"))
        return [obj(o.get("metadata")).get("name", ""), spec.get("nodeName") or "",
                spec.get("driver", ""), obj(spec.get("pool")).get("name", ""), AGE]


# DeviceTaintRule -------------------------------------------------------------------------

class DeviceTaintRuleStrategy(ResourceStrategy):
    kind = "DeviceTaintRule"
    resource = "devicetaintrules"
    singular = "devicetaintrule"
    namespaced = False
    versions = ("v1", "v1beta2", "v1alpha3")
    has_generation = True  # starts at 1, bumped by spec changes
    deprecated_versions = _warnings("DeviceTaintRule", _TAINT_RULE_LIFECYCLE)
    version_releases = _TAINT_RULE_RELEASES
    subresources = frozenset({"status"})

    def prepare_for_create(self, o: Obj, ctx: Context) -> None:
        o["status"] = {}

    def prepare_for_update(self, new: Obj, old: Obj, ctx: Context) -> None:
        super().prepare_for_update(new, old, ctx)
        taint, old_taint = obj(obj(new.get("spec")).get("taint")), obj(
            obj(old.get("spec")).get("taint"))
        if (taint and taint.get("effect") != old_taint.get("effect")
                and taint.get("timeAdded") == old_taint.get("timeAdded")):
            taint["timeAdded"] = time_now()

    def validate(self, o: Obj, ctx: Context) -> list[FieldError]:
        return taintrules.taint_rule_spec(obj(o.get("spec")), None)

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        return taintrules.taint_rule_spec(obj(new.get("spec")), obj(old.get("spec")))

    def validate_status_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        return taintrules.taint_rule_status(obj(new.get("status")))


# ResourcePoolStatusRequest ---------------------------------------------------------------

class ResourcePoolStatusRequestStrategy(ResourceStrategy):
    kind = "ResourcePoolStatusRequest"
    resource = "resourcepoolstatusrequests"
    singular = "resourcepoolstatusrequest"
    namespaced = False
    versions = ("v1alpha3",)
    storage_version = "v1alpha3"
    subresources = frozenset({"status"})
    feature_gate = "DRAResourcePoolStatus"

    # Served and stored in v1alpha3 only: nothing to convert.
    def to_storage(self, o: Obj, version: str) -> Obj:
        return o

    def from_storage(self, o: Obj, version: str) -> Obj:
        return o

    def prepare_for_create(self, o: Obj, ctx: Context) -> None:
        o.pop("status", None)

    def validate(self, o: Obj, ctx: Context) -> list[FieldError]:
        return poolstatus.request_spec(obj(o.get("spec")), ctx.gates)

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        return claims.immutable(new.get("spec"), old.get("spec"), Path("spec"))

    def validate_status_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        return poolstatus.request_status(obj(new.get("status")))


STRATEGIES: list[Strategy] = [
    DeviceClassStrategy(),
    ResourceClaimStrategy(),
    ResourceClaimTemplateStrategy(),
    ResourceSliceStrategy(),
    DeviceTaintRuleStrategy(),
    ResourcePoolStatusRequestStrategy(),
]
