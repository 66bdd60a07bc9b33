"""storagemigration.k8s.io/v1 StorageVersionMigration (+status): a request to rewrite
every object of a resource in the current storage version. Stored and validated as
upstream's strategy does (its status is always there, `{}` until the controllers write
it, as Go serializes the empty struct); the storage version migrator controllers
(`draemu.controllers.storageversionmigrator`) do the work."""

from __future__ import annotations

import dataclasses

from draemu.api.errors import FieldError, Path, invalid, required
from draemu.api.names import is_dns1035_label, is_dns1123_subdomain
from draemu.apiserver.registry.generic import GenericStrategy, Printed, get_path, name_of
from draemu.apiserver.registry.resource.fields import conditions
from draemu.apiserver.registry.strategy import NAME_COLUMN, Column, Context, Obj

_STATES = ("Running", "Failed", "Succeeded")


def _resource(obj: Obj) -> str:
    ref = get_path(obj, "spec.resource") or {}
    group = ref.get("group") or ""
    return f"{ref.get('resource', '')}.{group}" if group else ref.get("resource", "")


def _state(obj: Obj) -> str:
    state = "Unknown"
    for condition in get_path(obj, "status.conditions") or []:
        if condition.get("status") == "True" and condition.get("type") in _STATES:
            state = condition["type"]
    return state


def _true(obj: Obj, kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in get_path(obj, "status.conditions") or [] if isinstance(c, dict))


def well_formed_resource_version(rv: str) -> bool:
    """What upstream's CompareResourceVersion takes: digits, no leading zero."""
    return rv.isdigit() and rv.isascii() and not rv.startswith("0")


class StorageVersionMigrationStrategy(GenericStrategy):
    group = "storagemigration.k8s.io"
    kind = "StorageVersionMigration"
    resource = "storageversionmigrations"
    singular = "storageversionmigration"
    namespaced = False
    versions = ("v1",)
    storage_version = "v1"
    subresources = frozenset({"status"})
    immutable_fields = ("spec",)
    printer = (
        # Upstream's column is Name without the `name` format.
        Printed(dataclasses.replace(NAME_COLUMN, format=""), name_of),
        Printed(Column("Resource", description="GroupResource to migrate"), _resource),
        Printed(Column("Status", description="Status of the migration"), _state),
    )

    def prepare_for_create(self, obj: Obj, ctx: Context) -> None:
        obj["status"] = {}

    def prepare_for_status_update(self, new: Obj, old: Obj, ctx: Context) -> None:
        super().prepare_for_status_update(new, old, ctx)
        if not isinstance(new.get("status"), dict):
            new["status"] = {}

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        errs: list[FieldError] = []
        ref = get_path(obj, "spec.resource") or {}
        path = Path("spec").child("resource")
        resource = ref.get("resource") or ""
        if not resource:
            errs.append(required(path.child("resource"), "resource is required to be set"))
        elif is_dns1035_label(resource):
            errs.append(invalid(path.child("resource"), resource,
                                ",".join(is_dns1035_label(resource))))
        group = ref.get("group") or ""
        if group and is_dns1123_subdomain(group):
            errs.append(invalid(path.child("group"), group,
                                ",".join(is_dns1123_subdomain(group))))
        return errs

    def validate_status_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        path = Path("status")
        status = new.get("status") or {}
        errs: list[FieldError] = []
        rv = status.get("resourceVersion") or ""
        if rv and not well_formed_resource_version(rv):
            errs.append(invalid(path.child("resourceVersion"), rv,
                                f"resource version is not well formed: {rv}"))
        errs += conditions(status.get("conditions"), path.child("conditions"))
        old_rv = (old.get("status") or {}).get("resourceVersion") or ""
        if old_rv and old_rv != rv:
            errs.append(invalid(path.child("resourceVersion"), rv, "field is immutable"))
        listed = status.get("conditions")
        if _true(new, "Succeeded") and _true(new, "Failed"):
            errs.append(invalid(path.child("conditions"), listed, "Both success and failed "
                                "conditions cannot be true at the same time"))
        if _true(old, "Succeeded") and not _true(new, "Succeeded"):
            errs.append(invalid(path.child("conditions"), listed, "Success condition cannot "
                                "be set to false once it is true"))
        if _true(old, "Failed") and not _true(new, "Failed"):
            errs.append(invalid(path.child("conditions"), listed, "Failed condition cannot be "
                                "set to false once it is true"))
        return errs


STRATEGIES = [StorageVersionMigrationStrategy()]
