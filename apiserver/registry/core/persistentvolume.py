"""core/v1 PersistentVolume and PersistentVolumeClaim (+status): defaults, the spec
validation that matters for binding (access modes, capacity, one volume source, reclaim
policy, volume mode, class names) and what may change after creation, with upstream's
messages (without the Go struct diff upstream appends to the immutability errors)."""

from __future__ import annotations

from typing import Any

from draemu.api.errors import FieldError, Path, forbidden, invalid, not_supported, required
from draemu.api.meta import time_now
from draemu.apiserver.registry.core import limitranger
from draemu.apiserver.registry.core.common import (
    check_quantities,
    dns_subdomain,
    parse_quantity,
)
from draemu.apiserver.registry.core.labelselector import validate_label_selector
from draemu.apiserver.registry.generic import AGE_COLUMN, NAME, GenericStrategy, Printed, get_path
from draemu.apiserver.registry.storage.volumes import csi_driver_name_errors
from draemu.apiserver.registry.strategy import Column, Context, Obj

ACCESS_MODES = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"]
RECLAIM_POLICIES = ["Delete", "Recycle", "Retain"]
VOLUME_MODES = ["Block", "Filesystem"]
VOLUME_SOURCES = ("awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "csi",
                  "fc", "flexVolume", "flocker", "gcePersistentDisk", "glusterfs", "hostPath",
                  "iscsi", "local", "nfs", "photonPersistentDisk", "portworxVolume",
                  "quobyte", "rbd", "scaleIO", "storageos", "vsphereVolume")
_MODE_ABBREVIATIONS = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"),
                       ("ReadWriteMany", "RWX"), ("ReadWriteOncePod", "RWOP"))
BETA_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
PVC_SPEC_IMMUTABLE = ("spec is immutable after creation except resources.requests and "
                      "volumeAttributesClassName for bound claims")


def access_modes_cell(modes: list[str] | None) -> str:
    """GetAccessModesAsString: RWO,ROX,RWX,RWOP in that order, once each."""
    modes = modes or []
    return ",".join(short for mode, short in _MODE_ABBREVIATIONS if mode in modes)


def _phase(obj: Obj) -> str:
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    return get_path(obj, "status.phase") or ""


def _class(obj: Obj) -> str:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if BETA_CLASS_ANNOTATION in annotations:
        return annotations[BETA_CLASS_ANNOTATION]
    return get_path(obj, "spec.storageClassName") or ""


def _unset(value: Any) -> str:
    return "<unset>" if value is None else value


def _access_mode_errors(modes: list[str], path: Path, detail: str = "") -> list[FieldError]:
    errs: list[FieldError] = []
    if not modes:
        errs.append(required(path, detail))
    for mode in modes:
        if mode not in ACCESS_MODES:
            errs.append(not_supported(path, mode, ACCESS_MODES))
    if "ReadWriteOncePod" in modes and any(m in ACCESS_MODES and m != "ReadWriteOncePod"
                                           for m in modes):
        errs.append(forbidden(path, "may not use ReadWriteOncePod with other access modes"))
    return errs


def _positive_quantity(value: Any, path: Path) -> list[FieldError]:
    try:
        quantity = parse_quantity(value)
    except (ValueError, TypeError):
        return [invalid(path, value, "must be a valid quantity")]
    if quantity.value <= 0:
        return [invalid(path, value, "must be greater than zero")]
    return []


def _class_name_errors(value: str | None, path: Path) -> list[FieldError]:
    return dns_subdomain(value, path) if value else []


def _no_backsteps(value: str, path: Path) -> list[FieldError]:
    if ".." in value.replace("\\", "/").split("/"):
        return [invalid(path, value, "must not contain '..'")]
    return []


def source_errors(spec: Obj, path: Path) -> list[FieldError]:
    """The checks of the volume sources a PersistentVolume most often has."""
    errs: list[FieldError] = []
    for name in ("hostPath", "local"):
        source = spec.get(name)
        if source is not None:
            p = path.child(name, "path")
            errs += [required(p)] if not source.get("path") else _no_backsteps(source["path"], p)
    nfs = spec.get("nfs")
    if nfs is not None:
        p = path.child("nfs")
        if not nfs.get("server"):
            errs.append(required(p.child("server")))
        if not nfs.get("path"):
            errs.append(required(p.child("path")))
        if not str(nfs.get("path") or "").startswith("/"):
            errs.append(invalid(p.child("path"), nfs.get("path") or "", "must be an absolute "
                                "path"))
    csi = spec.get("csi")
    if csi is not None:
        errs += csi_driver_name_errors(csi.get("driver") or "", path.child("csi", "driver"))
        if not csi.get("volumeHandle"):
            errs.append(required(path.child("csi", "volumeHandle")))
    return errs


def path_segment_name(name: str, prefix: bool) -> list[str]:
    """ValidatePathSegmentName, the name rule of PersistentVolumes."""
    if not prefix and name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in "/%" if c in name]


class PersistentVolumeStrategy(GenericStrategy):
    kind = "PersistentVolume"
    resource = "persistentvolumes"
    singular = "persistentvolume"
    short_names = ("pv",)
    namespaced = False
    versions = ("v1",)
    storage_version = "v1"
    subresources = frozenset({"status"})
    status_meta_reset = ()
    has_generation = False
    field_selectors = {"name": lambda o: (o.get("metadata") or {}).get("name", "")}
    printer = (
        NAME,
        Printed(Column("Capacity", description="capacity is the description of the "
                       "persistent volume's resources and capacity."),
                lambda o: (get_path(o, "spec.capacity") or {}).get("storage", "")),
        Printed(Column("Access Modes", description="accessModes contains all ways the volume "
                       "can be mounted."),
                lambda o: access_modes_cell(get_path(o, "spec.accessModes"))),
        Printed(Column("Reclaim Policy", description="persistentVolumeReclaimPolicy defines "
                       "what happens to a persistent volume when released from its claim."),
                lambda o: get_path(o, "spec.persistentVolumeReclaimPolicy") or ""),
        Printed(Column("Status", description="phase indicates if a volume is available, bound "
                       "to a claim, or released by a claim."), _phase),
        Printed(Column("Claim", description="claimRef is part of a bi-directional binding "
                       "between PersistentVolume and PersistentVolumeClaim."),
                lambda o: "" if get_path(o, "spec.claimRef") is None else
                f"{get_path(o, 'spec.claimRef.namespace') or ''}/"
                f"{get_path(o, 'spec.claimRef.name') or ''}"),
        Printed(Column("StorageClass", description="storageClassName is the name of "
                       "StorageClass to which this persistent volume belongs."), _class),
        Printed(Column("VolumeAttributesClass", description="Name of VolumeAttributesClass "
                       "to which this persistent volume belongs."),
                lambda o: _unset(get_path(o, "spec.volumeAttributesClassName"))),
        Printed(Column("Reason", description="reason is a brief CamelCase string that "
                       "describes any failure."), lambda o: get_path(o, "status.reason") or ""),
        AGE_COLUMN,
        Printed(Column("VolumeMode", priority=1, description="volumeMode defines if a volume "
                       "is intended to be used with a formatted filesystem or to remain in "
                       "raw block state."), lambda o: _unset(get_path(o, "spec.volumeMode"))),
    )

    def validate_name(self, name: str, prefix: bool) -> list[str]:
        return path_segment_name(name, prefix)

    def default(self, obj: Obj, version: str) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            obj["spec"] = spec = {}
        if not spec.get("persistentVolumeReclaimPolicy"):
            spec["persistentVolumeReclaimPolicy"] = "Retain"
        if spec.get("volumeMode") is None:
            spec["volumeMode"] = "Filesystem"
        check_quantities((spec.get("capacity") or {}).values(), self.kind, version)
        status = obj.setdefault("status", {})
        if isinstance(status, dict) and not status.get("phase"):
            status["phase"] = "Pending"

    def prepare_for_create(self, obj: Obj, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        obj["status"] = {"phase": "Pending", "lastPhaseTransitionTime": time_now()}

    def prepare_for_status_update(self, new: Obj, old: Obj, ctx: Context) -> None:
        super().prepare_for_status_update(new, old, ctx)
        phase = get_path(new, "status.phase")
        if phase != get_path(old, "status.phase") and isinstance(new.get("status"), dict):
            if get_path(new, "status.lastPhaseTransitionTime") == get_path(
                    old, "status.lastPhaseTransitionTime"):
                new["status"]["lastPhaseTransitionTime"] = time_now()

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        spec = obj.get("spec") or {}
        path = Path("spec")
        errs = _access_mode_errors(spec.get("accessModes") or [], path.child("accessModes"))
        capacity = spec.get("capacity") or {}
        if not capacity:
            errs.append(required(path.child("capacity")))
        if "storage" not in capacity or len(capacity) > 1:
            errs.append(not_supported(path.child("capacity"), capacity, ["storage"]))
        for name, value in capacity.items():
            errs += _positive_quantity(value, path.child("capacity").key(name))
        policy = spec.get("persistentVolumeReclaimPolicy")
        if policy and policy not in RECLAIM_POLICIES:
            errs.append(not_supported(path.child("persistentVolumeReclaimPolicy"), policy,
                                      RECLAIM_POLICIES))
        sources = [name for name in VOLUME_SOURCES if spec.get(name) is not None]
        if not sources:
            errs.append(required(path, "must specify a volume type"))
        for name in sources[1:]:
            errs.append(forbidden(path.child(name), "may not specify more than 1 volume type"))
        errs += source_errors(spec, path)
        if spec.get("local") is not None and spec.get("nodeAffinity") is None:
            errs.append(required(path.child("nodeAffinity"), "Local volume requires node "
                                 "affinity"))
        errs += _class_name_errors(spec.get("storageClassName"), path.child("storageClassName"))
        mode = spec.get("volumeMode")
        if mode is not None and mode not in VOLUME_MODES:
            errs.append(not_supported(path.child("volumeMode"), mode, VOLUME_MODES))
        return errs

    def validate_object_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        spec, before = new.get("spec") or {}, old.get("spec") or {}
        errs: list[FieldError] = []
        now = {k: spec.get(k) for k in VOLUME_SOURCES if spec.get(k) is not None}
        then = {k: before.get(k) for k in VOLUME_SOURCES if before.get(k) is not None}
        # Setting a CSI volume's controllerExpandSecretRef later is allowed.
        if "csi" in now and "csi" in then and "controllerExpandSecretRef" not in then["csi"]:
            now["csi"] = {k: v for k, v in now["csi"].items() if k != "controllerExpandSecretRef"}
        if now != then:
            errs.append(forbidden(Path("spec").child("persistentvolumesource"),
                                  "spec.persistentvolumesource is immutable after creation"))
        if spec.get("volumeMode") != before.get("volumeMode"):
            errs.append(invalid(Path("volumeMode"), spec.get("volumeMode"),
                                "field is immutable"))
        if before.get("volumeAttributesClassName") is not None and \
                spec.get("volumeAttributesClassName") is None:
            errs.append(forbidden(Path("spec").child("volumeAttributesClassName"),
                                  "update from non-nil value to nil is forbidden"))
        return errs

    def validate_status_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        phase = get_path(new, "status.phase")
        phases = ["Available", "Bound", "Failed", "Pending", "Released"]
        if phase and phase not in phases:
            return [not_supported(Path("status").child("phase"), phase, phases)]
        return []


class PersistentVolumeClaimStrategy(GenericStrategy):
    kind = "PersistentVolumeClaim"
    resource = "persistentvolumeclaims"
    singular = "persistentvolumeclaim"
    short_names = ("pvc",)
    versions = ("v1",)
    storage_version = "v1"
    subresources = frozenset({"status"})
    status_meta_reset = ()
    has_generation = False
    field_selectors = {"name": lambda o: (o.get("metadata") or {}).get("name", "")}
    printer = (
        NAME,
        Printed(Column("Status", description="phase represents the current phase of "
                       "PersistentVolumeClaim."), _phase),
        Printed(Column("Volume", description="volumeName is the binding reference to the "
                       "PersistentVolume backing this claim."),
                lambda o: get_path(o, "spec.volumeName") or ""),
        Printed(Column("Capacity", description="capacity represents the actual resources of "
                       "the underlying volume."),
                lambda o: (get_path(o, "status.capacity") or {}).get("storage", "")
                if get_path(o, "spec.volumeName") else ""),
        Printed(Column("Access Modes", description="accessModes contains the actual access "
                       "modes the volume backing the PVC has."),
                lambda o: access_modes_cell(get_path(o, "status.accessModes"))
                if get_path(o, "spec.volumeName") else ""),
        Printed(Column("StorageClass", description="storageClassName is the name of the "
                       "StorageClass required by the claim."), _class),
        Printed(Column("VolumeAttributesClass", description="volumeAttributesClassName may "
                       "be used to set the VolumeAttributesClass used by this claim."),
                lambda o: _unset(get_path(o, "spec.volumeAttributesClassName"))),
        AGE_COLUMN,
        Printed(Column("VolumeMode", priority=1, description="volumeMode defines what type of "
                       "volume is required by the claim."),
                lambda o: _unset(get_path(o, "spec.volumeMode"))),
    )

    def default(self, obj: Obj, version: str) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            obj["spec"] = spec = {}
        if spec.get("volumeMode") is None:
            spec["volumeMode"] = "Filesystem"
        resources = spec.get("resources") or {}
        check_quantities([*(resources.get("requests") or {}).values(),
                          *(resources.get("limits") or {}).values()], self.kind, version)

    def prepare_for_create(self, obj: Obj, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        obj["status"] = {"phase": "Pending"}
        self._limit_ranges(obj, ctx)

    def prepare_for_update(self, new: Obj, old: Obj, ctx: Context) -> None:
        super().prepare_for_update(new, old, ctx)
        if not (old.get("metadata") or {}).get("deletionTimestamp"):
            self._limit_ranges(new, ctx)

    @staticmethod
    def _limit_ranges(obj: Obj, ctx: Context) -> None:
        ranges = limitranger.limit_ranges(ctx, (obj.get("metadata") or {}).get("namespace", ""))
        limitranger.refuse("persistentvolumeclaims", obj,
                           limitranger.claim_violations(obj, ranges))

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        return validate_claim_spec(obj.get("spec") or {}, Path("spec"))

    def validate_status_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        phase = get_path(new, "status.phase")
        phases = ["Bound", "Lost", "Pending"]
        errs: list[FieldError] = []
        if phase and phase not in phases:
            errs.append(not_supported(Path("status").child("phase"), phase, phases))
        for name, value in (get_path(new, "status.capacity") or {}).items():
            errs += _positive_quantity(value, Path("status").child("capacity").key(name))
        return errs

    def validate_object_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        spec, before = dict(new.get("spec") or {}), dict(old.get("spec") or {})
        errs: list[FieldError] = []
        if not before.get("volumeName"):
            before["volumeName"] = spec.get("volumeName")  # binding sets it once
        if before.get("storageClassName") is None and spec.get("storageClassName") and \
                BETA_CLASS_ANNOTATION not in ((old.get("metadata") or {}).get("annotations")
                                              or {}):
            before["storageClassName"] = spec["storageClassName"]  # set once from nil
        bound = get_path(new, "status.phase") == "Bound"
        if bound:
            for name in ("resources", "volumeAttributesClassName"):
                spec.pop(name, None)
                before.pop(name, None)
        if spec != before:
            errs.append(forbidden(Path("spec"), PVC_SPEC_IMMUTABLE))
        old_size = get_path(old, "spec.resources.requests.storage")
        new_size = get_path(new, "spec.resources.requests.storage")
        if old_size is not None and new_size is not None:
            try:
                smaller = parse_quantity(new_size).value < parse_quantity(old_size).value
            except (ValueError, TypeError):
                smaller = False
            capacity = get_path(old, "status.capacity.storage")
            if smaller and (capacity is None or parse_quantity(new_size).value <=
                            parse_quantity(capacity).value):
                errs.append(forbidden(Path("spec").child("resources", "requests", "storage"),
                                      "field can not be less than status.capacity"))
        if get_path(new, "spec.volumeMode") != get_path(old, "spec.volumeMode"):
            errs.append(invalid(Path("volumeMode"), get_path(new, "spec.volumeMode"),
                                "field is immutable"))
        return errs


def validate_claim_spec(spec: Obj, path: Path) -> list[FieldError]:
    """ValidatePersistentVolumeClaimSpec (also for StatefulSet volumeClaimTemplates)."""
    errs = _access_mode_errors(spec.get("accessModes") or [], path.child("accessModes"),
                               "at least 1 access mode is required")
    if spec.get("selector") is not None:
        errs += validate_label_selector(spec["selector"], path.child("selector"))
    storage = get_path(spec, "resources.requests.storage")
    storage_path = path.child("resources").key("storage")
    if storage is None:
        errs.append(required(storage_path))
    else:
        errs += _positive_quantity(storage, storage_path)
    errs += _class_name_errors(spec.get("storageClassName"), path.child("storageClassName"))
    mode = spec.get("volumeMode")
    if mode is not None and mode not in VOLUME_MODES:
        errs.append(not_supported(path.child("volumeMode"), mode, VOLUME_MODES))
    errs += _class_name_errors(spec.get("volumeAttributesClassName"),
                               path.child("volumeAttributesClassName"))
    return errs


STRATEGIES = [PersistentVolumeStrategy(), PersistentVolumeClaimStrategy()]
