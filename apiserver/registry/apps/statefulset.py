"""apps/v1 StatefulSet (+status, +scale) and ControllerRevision.

A StatefulSet's selector, serviceName, volumeClaimTemplates and podManagementPolicy are
fixed once created; its claim templates are validated as PersistentVolumeClaim specs."""

from __future__ import annotations

from typing import Any

from draemu.api.errors import FieldError, Path, forbidden, invalid, not_supported, required
from draemu.apiserver.registry.apps.common import int_or_percent_value, validate_int_or_percent
from draemu.apiserver.registry.core.common import container_cells, dns_label, nonnegative
from draemu.apiserver.registry.core.labelselector import (
    convertible,
    is_empty,
    matches,
    validate_label_selector,
)
from draemu.apiserver.registry.core.persistentvolume import validate_claim_spec
from draemu.apiserver.registry.core.podspec_defaults import default_pod_template
from draemu.apiserver.registry.core.podtemplate import (
    obsolete_template_field_errors,
    validate_pod_template,
)
from draemu.apiserver.registry.generic import AGE_COLUMN, NAME, GenericStrategy, Printed, get_path
from draemu.apiserver.registry.meta import name_is_dns_label, name_is_dns_subdomain
from draemu.apiserver.registry.strategy import Column, Context, Obj

RETENTION_POLICIES = ["Retain", "Delete"]


def _containers(obj: Obj) -> list[Obj]:
    return get_path(obj, "spec.template.spec.containers") or []


def _ready(obj: Obj) -> str:
    return f"{get_path(obj, 'status.readyReplicas') or 0}/{get_path(obj, 'spec.replicas') or 0}"


def _strategy_errors(strategy: Obj, path: Path) -> list[FieldError]:
    kind = strategy.get("type") or ""
    rolling = strategy.get("rollingUpdate")
    if not kind:
        return [required(path)]
    if kind == "OnDelete":
        if rolling is not None:
            return [invalid(path.child("rollingUpdate"), rolling,
                            "only allowed for updateStrategy 'RollingUpdate'")]
        return []
    if kind != "RollingUpdate":
        return [invalid(path, strategy, "must be 'RollingUpdate' or 'OnDelete'")]
    if rolling is None:
        return []
    p = path.child("rollingUpdate")
    errs = nonnegative(rolling.get("partition"), p.child("partition"))
    unavailable = rolling.get("maxUnavailable")
    if unavailable is not None:
        errs += validate_int_or_percent(unavailable, p.child("maxUnavailable"))
        if int_or_percent_value(unavailable) == 0:
            errs.append(invalid(p.child("maxUnavailable"), unavailable, "cannot be 0"))
        if isinstance(unavailable, str) and int_or_percent_value(unavailable) > 100:
            errs.append(invalid(p.child("maxUnavailable"), unavailable,
                                "must not be greater than 100%"))
    return errs


class StatefulSetStrategy(GenericStrategy):
    group = "apps"
    kind = "StatefulSet"
    resource = "statefulsets"
    singular = "statefulset"
    short_names = ("sts",)
    categories = ("all",)
    versions = ("v1",)
    storage_version = "v1"
    subresources = frozenset({"status", "scale"})
    status_meta_reset = ()
    immutable_fields = ("spec.selector", "spec.volumeClaimTemplates", "spec.serviceName",
                        "spec.podManagementPolicy")
    printer = (
        NAME,
        Printed(Column("Ready", description="Number of the pod with ready state"), _ready),
        AGE_COLUMN,
        Printed(Column("Containers", priority=1, description="Names of each container in the "
                       "template."), lambda o: container_cells(_containers(o))[0]),
        Printed(Column("Images", priority=1, description="Images referenced by each container "
                       "in the template."), lambda o: container_cells(_containers(o))[1]),
    )

    def validate_name(self, name: str, prefix: bool) -> list[str]:
        return name_is_dns_label(name, prefix)

    def default(self, obj: Obj, version: str) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            obj["spec"] = spec = {}
        if not spec.get("podManagementPolicy"):
            spec["podManagementPolicy"] = "OrderedReady"
        strategy = spec.setdefault("updateStrategy", {})
        if isinstance(strategy, dict):
            if not strategy.get("type"):
                strategy["type"] = "RollingUpdate"
                strategy.setdefault("rollingUpdate", {})
            rolling = strategy.get("rollingUpdate")
            if strategy["type"] == "RollingUpdate" and isinstance(rolling, dict):
                rolling.setdefault("partition", 0)
                rolling.setdefault("maxUnavailable", 1)  # MaxUnavailableStatefulSet (1.37)
        retention = spec.setdefault("persistentVolumeClaimRetentionPolicy", {})
        if isinstance(retention, dict):
            for name in ("whenDeleted", "whenScaled"):
                if not retention.get(name):
                    retention[name] = "Retain"
        spec.setdefault("replicas", 1)
        spec.setdefault("revisionHistoryLimit", 10)
        for claim in spec.get("volumeClaimTemplates") or []:
            claim_spec = claim.get("spec") if isinstance(claim, dict) else None
            if isinstance(claim_spec, dict) and claim_spec.get("volumeMode") is None:
                claim_spec["volumeMode"] = "Filesystem"
            if isinstance(claim, dict):
                claim.setdefault("apiVersion", "v1")
                claim.setdefault("kind", "PersistentVolumeClaim")
                claim.setdefault("status", {"phase": "Pending"})
        default_pod_template(spec.get("template"), self.kind, version)

    def obsolete_field_errors(self, obj: Obj, version: str) -> list[FieldError]:
        return obsolete_template_field_errors(obj)

    def prepare_for_create(self, obj: Obj, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        obj["status"] = {"replicas": 0, "availableReplicas": 0}

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        spec = obj.get("spec") or {}
        path = Path("spec")
        errs: list[FieldError] = []
        policy = spec.get("podManagementPolicy") or ""
        if not policy:
            errs.append(required(path.child("podManagementPolicy")))
        elif policy not in ("OrderedReady", "Parallel"):
            errs.append(invalid(path.child("podManagementPolicy"), policy,
                                "must be 'OrderedReady' or 'Parallel'"))
        errs += _strategy_errors(spec.get("updateStrategy") or {}, path.child("updateStrategy"))
        retention = spec.get("persistentVolumeClaimRetentionPolicy")
        if retention is not None:
            for name in ("whenDeleted", "whenScaled"):
                value = retention.get(name)
                if value not in RETENTION_POLICIES:
                    errs.append(not_supported(path.child("persistentVolumeClaimRetentionPolicy",
                                                         name), value, RETENTION_POLICIES))
        for i, claim in enumerate(spec.get("volumeClaimTemplates") or []):
            errs += validate_claim_spec(claim.get("spec") or {},
                                        path.child("volumeClaimTemplates").index(i)
                                        .child("spec"))
        errs += nonnegative(spec.get("replicas"), path.child("replicas"))
        errs += nonnegative(spec.get("minReadySeconds"), path.child("minReadySeconds"))
        if spec.get("ordinals") is not None:
            errs += nonnegative(spec["ordinals"].get("start"), path.child("ordinals.start"))
        if spec.get("serviceName"):
            errs += dns_label(spec["serviceName"], path.child("serviceName"))
        selector = spec.get("selector")
        if selector is None:
            errs.append(required(path.child("selector")))
        else:
            errs += validate_label_selector(selector, path.child("selector"))
            if is_empty(selector):
                errs.append(invalid(path.child("selector"), selector,
                                    "empty selector is invalid for statefulset"))
        template = spec.get("template")
        if template is None:
            errs.append(required(path.child("template")))
        elif convertible(selector):
            labels = get_path(template, "metadata.labels") or {}
            if not is_empty(selector) and not matches(selector, labels):
                errs.append(invalid(path.child("template", "metadata", "labels"), labels,
                                    "`selector` does not match template `labels`"))
            errs += validate_pod_template(self._with_claim_volumes(spec), path.child("template"))
        restart = get_path(spec, "template.spec.restartPolicy") or ""
        if restart != "Always":
            errs.append(not_supported(path.child("template", "spec", "restartPolicy"), restart,
                                      ["Always"]))
        if get_path(spec, "template.spec.activeDeadlineSeconds") is not None:
            errs.append(forbidden(path.child("template", "spec", "activeDeadlineSeconds"),
                                  "activeDeadlineSeconds in StatefulSet is not Supported"))
        return errs

    @staticmethod
    def _with_claim_volumes(spec: Obj) -> Obj:
        """The template as its pods get it: with a volume per claim template (so that
        mounts of those volumes validate), without hostname and subdomain."""
        template: dict[str, Any] = dict(spec.get("template") or {})
        pod: dict[str, Any] = dict(template.get("spec") or {})
        pod.pop("hostname", None)
        pod.pop("subdomain", None)
        claims = {c.get("metadata", {}).get("name", ""): c
                  for c in spec.get("volumeClaimTemplates") or []}
        if claims:
            volumes = [{"name": name, "persistentVolumeClaim": {"claimName": name}}
                       for name in claims]
            volumes += [v for v in pod.get("volumes") or [] if v.get("name") not in claims]
            pod["volumes"] = volumes
        template["spec"] = pod
        return template

    def validate_status_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        status = new.get("status") or {}
        path = Path("status")
        errs: list[FieldError] = []
        for name in ("replicas", "readyReplicas", "currentReplicas", "updatedReplicas",
                     "availableReplicas", "observedGeneration", "collisionCount"):
            errs += nonnegative(status.get(name), path.child(name))
        replicas = status.get("replicas") or 0
        for name in ("readyReplicas", "currentReplicas", "updatedReplicas"):
            if (status.get(name) or 0) > replicas:
                errs.append(invalid(path.child(name), status.get(name),
                                    "cannot be greater than status.replicas"))
        if (status.get("availableReplicas") or 0) > (status.get("readyReplicas") or 0):
            errs.append(invalid(path.child("availableReplicas"), status.get("availableReplicas"),
                                "cannot be greater than status.readyReplicas"))
        before = get_path(old, "status.collisionCount")
        if before is not None and (status.get("collisionCount") or 0) < before:
            errs.append(invalid(path.child("collisionCount"), status.get("collisionCount") or 0,
                                "cannot be decremented"))
        return errs


def _controller(obj: Obj) -> str:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            group = (ref.get("apiVersion") or "").rpartition("/")[0]
            kind = (ref.get("kind") or "").lower()
            return f"{kind}.{group}/{ref.get('name', '')}" if group else \
                f"{kind}/{ref.get('name', '')}"
    return "<none>"


class ControllerRevisionStrategy(GenericStrategy):
    group = "apps"
    kind = "ControllerRevision"
    resource = "controllerrevisions"
    singular = "controllerrevision"
    versions = ("v1",)
    storage_version = "v1"
    has_generation = False
    immutable_fields = ("data",)
    printer = (
        NAME,
        Printed(Column("Controller", description="Controller of the object"), _controller),
        Printed(Column("Revision", type="integer", description="Revision indicates the "
                       "revision of the state represented by Data."),
                lambda o: o.get("revision") or 0),
        AGE_COLUMN,
    )

    def validate_name(self, name: str, prefix: bool) -> list[str]:
        return name_is_dns_subdomain(name, prefix)

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        errs = nonnegative(obj.get("revision"), Path("revision"))
        data = obj.get("data")
        if data is None:
            errs.append(required(Path("data"), "data is mandatory"))
        elif not isinstance(data, dict):
            errs.append(required(Path("data"), "data must be a valid JSON object"))
        return errs


STRATEGIES = [StatefulSetStrategy(), ControllerRevisionStrategy()]
