"""storage.k8s.io/v1: StorageClass, CSIDriver, CSINode, CSIStorageCapacity,
VolumeAttachment (+status), VolumeAttributesClass. The real kube-scheduler and
kube-controller-manager list and watch every one of them, whatever volumes pods use.

Validation follows pkg/apis/storage/validation for names, required fields, the enums
and the immutable parts; the checks of driver-specific parameters are not done."""

from __future__ import annotations

from draemu.api.errors import FieldError, Path, invalid, not_supported, required, too_long
from draemu.apiserver.registry.core.common import (
    check_quantities,
    dns_subdomain,
    nonnegative,
    qualified_name,
)
from draemu.apiserver.registry.core.labelselector import validate_label_selector
from draemu.apiserver.registry.generic import (
    AGE_COLUMN,
    NAME,
    GenericStrategy,
    Printed,
    get_path,
    name_of,
)
from draemu.apiserver.registry.strategy import Column, Context, Obj

GROUP = "storage.k8s.io"
RECLAIM_POLICIES = ["Delete", "Retain"]
BINDING_MODES = ["Immediate", "WaitForFirstConsumer"]
LIFECYCLE_MODES = ["Ephemeral", "Persistent"]
FS_GROUP_POLICIES = ["File", "None", "ReadWriteOnceWithFSType"]
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
_MAX_PROVISIONER = 63


def csi_driver_name_errors(name: str, path: Path) -> list[FieldError]:
    """ValidateCSIDriverName: a DNS subdomain of at most 63 characters."""
    if not name:
        return [required(path)]
    if len(name) > 63:
        return [too_long(path, 63)]
    return [invalid(path, name, e.detail) for e in dns_subdomain(name.lower(), path)]


def _bool(obj: Obj, dotted: str, default: bool) -> bool:
    value = get_path(obj, dotted)
    return default if value is None else bool(value)


def _class_name(obj: Obj) -> str:
    name = name_of(obj)
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return f"{name} (default)" if annotations.get(DEFAULT_CLASS_ANNOTATION) == "true" else name


class StorageClassStrategy(GenericStrategy):
    group = GROUP
    kind = "StorageClass"
    resource = "storageclasses"
    singular = "storageclass"
    short_names = ("sc",)
    namespaced = False
    versions = ("v1",)
    storage_version = "v1"
    has_generation = False
    immutable_fields = ("parameters", "provisioner", "reclaimPolicy", "volumeBindingMode")
    defaults = {"reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"}
    printer = (
        Printed(NAME.column, _class_name),
        Printed(Column("Provisioner", description="Provisioner indicates the type of the "
                       "provisioner."), lambda o: o.get("provisioner", "")),
        Printed(Column("ReclaimPolicy", description="ReclaimPolicy controls the reclaimPolicy "
                       "for dynamically provisioned PersistentVolumes of this storage class."),
                lambda o: o.get("reclaimPolicy") or "Delete"),
        Printed(Column("VolumeBindingMode", description="VolumeBindingMode indicates how "
                       "PersistentVolumeClaims should be provisioned and bound."),
                lambda o: o.get("volumeBindingMode") or "Immediate"),
        Printed(Column("AllowVolumeExpansion", description="AllowVolumeExpansion shows "
                       "whether the storage class allow volume expand."),
                lambda o: bool(o.get("allowVolumeExpansion"))),
        AGE_COLUMN,
    )

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        errs: list[FieldError] = []
        provisioner = obj.get("provisioner") or ""
        if not provisioner:
            errs.append(required(Path("provisioner")))
        else:
            if len(provisioner) > _MAX_PROVISIONER:
                errs.append(too_long(Path("provisioner"), _MAX_PROVISIONER))
            errs += qualified_name(provisioner.lower(), Path("provisioner"))
        policy = obj.get("reclaimPolicy")
        if policy is not None and policy not in RECLAIM_POLICIES:
            errs.append(not_supported(Path("reclaimPolicy"), policy, RECLAIM_POLICIES))
        mode = obj.get("volumeBindingMode")
        if mode is None:
            errs.append(required(Path("volumeBindingMode")))
        elif mode not in BINDING_MODES:
            errs.append(not_supported(Path("volumeBindingMode"), mode, BINDING_MODES))
        for i, term in enumerate(obj.get("allowedTopologies") or []):
            if not (term.get("matchLabelExpressions") or []):
                errs.append(required(Path("allowedTopologies").index(i)
                                     .child("matchLabelExpressions"),
                                     "must have at least one label expression"))
        return errs


class CSIDriverStrategy(GenericStrategy):
    group = GROUP
    kind = "CSIDriver"
    resource = "csidrivers"
    singular = "csidriver"
    namespaced = False
    versions = ("v1",)
    storage_version = "v1"
    immutable_fields = ("spec.attachRequired", "spec.podInfoOnMount",
                        "spec.volumeLifecycleModes")
    defaults = {"spec.attachRequired": True, "spec.podInfoOnMount": False,
                "spec.storageCapacity": False, "spec.fsGroupPolicy": "ReadWriteOnceWithFSType",
                "spec.requiresRepublish": False, "spec.seLinuxMount": False}
    printer = (
        NAME,
        Printed(Column("AttachRequired", type="boolean", description="Indicates this CSI "
                       "volume driver requires an attach operation"),
                lambda o: _bool(o, "spec.attachRequired", True)),
        Printed(Column("PodInfoOnMount", type="boolean", description="Indicates this CSI "
                       "volume driver requires additional pod information during mount "
                       "operations"), lambda o: _bool(o, "spec.podInfoOnMount", False)),
        Printed(Column("StorageCapacity", type="boolean", description="Indicates this CSI "
                       "volume driver wants pod scheduling to consider storage capacity"),
                lambda o: _bool(o, "spec.storageCapacity", False)),
        Printed(Column("TokenRequests", description="Indicates the CSI driver needs pods' "
                       "service account tokens it is mounting volume for to do necessary "
                       "authentication."), lambda o: "<unset>" if get_path(
                           o, "spec.tokenRequests") is None else ",".join(
                           t.get("audience", "") for t in o["spec"]["tokenRequests"])),
        Printed(Column("RequiresRepublish", type="boolean", description="RequiresRepublish "
                       "indicates the CSI driver wants NodePublishVolume being periodically "
                       "called to reflect any possible change in the mounted volume"),
                lambda o: _bool(o, "spec.requiresRepublish", False)),
        Printed(Column("Modes", description="Indicates volume lifecycle modes supported by "
                       "this CSI volume driver"),
                lambda o: ",".join(get_path(o, "spec.volumeLifecycleModes") or []) or "<none>"),
        AGE_COLUMN,
    )

    def default(self, obj: Obj, version: str) -> None:
        super().default(obj, version)
        spec = obj.get("spec")
        if isinstance(spec, dict) and spec.get("volumeLifecycleModes") is None:
            spec["volumeLifecycleModes"] = ["Persistent"]

    def validate_name(self, name: str, prefix: bool) -> list[str]:
        if prefix:
            return super().validate_name(name, prefix)
        errs = [] if len(name) <= 63 else ["must be no more than 63 characters"]
        return errs + super().validate_name(name.lower(), prefix)

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        spec = obj.get("spec") or {}
        path = Path("spec")
        errs: list[FieldError] = []
        for name in ("attachRequired", "podInfoOnMount", "storageCapacity",
                     "requiresRepublish", "seLinuxMount"):
            if spec.get(name) is None:
                errs.append(required(path.child(name)))
        policy = spec.get("fsGroupPolicy")
        if policy is not None and policy not in FS_GROUP_POLICIES:
            errs.append(not_supported(path.child("fsGroupPolicy"), policy, FS_GROUP_POLICIES))
        for i, mode in enumerate(spec.get("volumeLifecycleModes") or []):
            if mode not in LIFECYCLE_MODES:
                errs.append(not_supported(path.child("volumeLifecycleModes").index(i), mode,
                                          LIFECYCLE_MODES))
        seen: set[str] = set()
        for i, request in enumerate(spec.get("tokenRequests") or []):
            audience = request.get("audience", "")
            p = path.child("tokenRequests").index(i)
            if audience in seen:
                errs.append(invalid(p.child("audience"), audience, "may not be duplicated"))
            seen.add(audience)
            seconds = request.get("expirationSeconds")
            if seconds is not None and seconds < 600:
                errs.append(invalid(p.child("expirationSeconds"), seconds,
                                    "may not specify a duration less than 10 minutes"))
        return errs


class CSINodeStrategy(GenericStrategy):
    group = GROUP
    kind = "CSINode"
    resource = "csinodes"
    singular = "csinode"
    namespaced = False
    versions = ("v1",)
    storage_version = "v1"
    has_generation = False
    printer = (
        NAME,
        Printed(Column("Drivers", type="integer", description="Drivers indicates the number "
                       "of CSI drivers registered on the node"),
                lambda o: len(get_path(o, "spec.drivers") or [])),
        AGE_COLUMN,
    )

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        path = Path("spec").child("drivers")
        errs: list[FieldError] = []
        names: set[str] = set()
        for i, driver in enumerate(get_path(obj, "spec.drivers") or []):
            p = path.index(i)
            name = driver.get("name") or ""
            errs += csi_driver_name_errors(name, p.child("name"))
            if name in names:
                errs.append(invalid(p.child("name"), name, "duplicate value"))
            names.add(name)
            if not driver.get("nodeID"):
                errs.append(required(p.child("nodeID")))
            elif len(driver["nodeID"]) > 192:
                errs.append(too_long(p.child("nodeID"), 192))
            count = (driver.get("allocatable") or {}).get("count")
            errs += nonnegative(count, p.child("allocatable", "count"))
            keys = driver.get("topologyKeys") or []
            for j, key in enumerate(keys):
                errs += qualified_name(key, p.child("topologyKeys").index(j))
        return errs

    def validate_object_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        """A driver's nodeID and topology keys are fixed once registered."""
        old_drivers = {d.get("name"): d for d in get_path(old, "spec.drivers") or []}
        errs: list[FieldError] = []
        for i, driver in enumerate(get_path(new, "spec.drivers") or []):
            before = old_drivers.get(driver.get("name"))
            if before is None:
                continue
            p = Path("spec").child("drivers").index(i)
            for name in ("nodeID", "topologyKeys"):
                if driver.get(name) != before.get(name):
                    errs.append(invalid(p.child(name), driver.get(name), "field is immutable"))
        return errs


class CSIStorageCapacityStrategy(GenericStrategy):
    group = GROUP
    kind = "CSIStorageCapacity"
    resource = "csistoragecapacities"
    singular = "csistoragecapacity"
    versions = ("v1",)
    storage_version = "v1"
    has_generation = False
    immutable_fields = ("storageClassName", "nodeTopology")
    printer = (
        NAME,
        Printed(Column("StorageClassName", description="The StorageClass this capacity "
                       "applies to."), lambda o: o.get("storageClassName", "")),
        Printed(Column("Capacity", description="Capacity reported for the StorageClass in "
                       "this topology segment."), lambda o: o.get("capacity") or "<unset>"),
    )

    def default(self, obj: Obj, version: str) -> None:
        check_quantities([v for v in (obj.get("capacity"), obj.get("maximumVolumeSize"))
                          if v is not None], self.kind, version)

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        errs: list[FieldError] = []
        name = obj.get("storageClassName") or ""
        if not name:
            errs.append(required(Path("storageClassName")))
        else:
            errs += dns_subdomain(name, Path("storageClassName"))
        if obj.get("nodeTopology") is not None:
            errs += validate_label_selector(obj["nodeTopology"], Path("nodeTopology"))
        return errs


class VolumeAttachmentStrategy(GenericStrategy):
    group = GROUP
    kind = "VolumeAttachment"
    resource = "volumeattachments"
    singular = "volumeattachment"
    namespaced = False
    versions = ("v1",)
    storage_version = "v1"
    subresources = frozenset({"status"})
    immutable_fields = ("spec",)
    printer = (
        NAME,
        Printed(Column("Attacher", format="name", description="Attacher indicates the name "
                       "of the volume driver that MUST handle this request."),
                lambda o: get_path(o, "spec.attacher", "")),
        Printed(Column("PV", description="Name of the persistent volume to attach."),
                lambda o: get_path(o, "spec.source.persistentVolumeName", "")),
        Printed(Column("Node", description="The node that the volume should be attached "
                       "to."), lambda o: get_path(o, "spec.nodeName", "")),
        Printed(Column("Attached", type="boolean", description="Indicates the volume is "
                       "successfully attached."),
                lambda o: bool(get_path(o, "status.attached"))),
        AGE_COLUMN,
    )

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        spec = obj.get("spec") or {}
        path = Path("spec")
        errs = csi_driver_name_errors(spec.get("attacher") or "", path.child("attacher"))
        node = spec.get("nodeName") or ""
        if not node:
            errs.append(required(path.child("nodeName")))
        else:
            errs += dns_subdomain(node, path.child("nodeName"))
        source = spec.get("source") or {}
        given = [k for k in ("persistentVolumeName", "inlineVolumeSpec") if source.get(k)]
        if len(given) != 1:
            errs.append(required(path.child("source"), "must specify exactly one of "
                                 "persistentVolumeName and inlineVolumeSpec"))
        return errs


class VolumeAttributesClassStrategy(GenericStrategy):
    group = GROUP
    kind = "VolumeAttributesClass"
    resource = "volumeattributesclasses"
    singular = "volumeattributesclass"
    short_names = ("vac",)
    namespaced = False
    versions = ("v1",)
    storage_version = "v1"
    has_generation = False
    immutable_fields = ("driverName",)
    printer = (
        NAME,
        Printed(Column("DriverName", description="Name of the CSI driver."),
                lambda o: o.get("driverName", "")),
        AGE_COLUMN,
    )

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        errs = csi_driver_name_errors(obj.get("driverName") or "", Path("driverName"))
        for key in obj.get("parameters") or {}:
            if not key:
                errs.append(invalid(Path("parameters"), key, "key must not be empty"))
        return errs


STRATEGIES = [StorageClassStrategy(), CSIDriverStrategy(), CSINodeStrategy(),
              CSIStorageCapacityStrategy(), VolumeAttachmentStrategy(),
              VolumeAttributesClassStrategy()]
