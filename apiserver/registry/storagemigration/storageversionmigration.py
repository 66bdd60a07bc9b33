"""storagemigration.k8s.io/v1 StorageVersionMigration (+status): a request to rewrite
every object of a resource in the current storage version. Stored and validated; the
storage-version-migrator controller does the work."""

from __future__ import annotations

from draemu.apiserver.registry.generic import GenericStrategy, Printed, get_path, name_of
from draemu.apiserver.registry.strategy import Column, Obj

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
    required_fields = ("spec.resource.resource",)
    printer = (
        Printed(Column("Name", description="Name of the migration."), name_of),
        Printed(Column("Resource", description="The resource being migrated."), _resource),
        Printed(Column("Status", description="Running, Failed, Succeeded or Unknown."), _state),
    )


STRATEGIES = [StorageVersionMigrationStrategy()]
