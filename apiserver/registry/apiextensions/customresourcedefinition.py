"""apiextensions.k8s.io/v1 CustomResourceDefinition: a kind whose objects define other
kinds. What serving them means lives in `draemu.apiserver.apiextensions`; here are the
CRD's own defaults, validation, status and deletion, after upstream's
`pkg/registry/customresourcedefinition`."""

from __future__ import annotations

from typing import Any

from draemu.api.errors import FieldError
from draemu.api.meta import set_condition
from draemu.api.types import Obj
from draemu.apiserver.apiextensions.crdvalidation import (
    storage_version,
    validate_crd,
    validate_crd_update,
    validate_stored_versions,
)
from draemu.apiserver.registry.strategy import (
    CREATED_AT_COLUMN,
    NAME_COLUMN,
    Column,
    Context,
    Strategy,
)

CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"


class CustomResourceDefinitionStrategy(Strategy):
    group = "apiextensions.k8s.io"
    kind = "CustomResourceDefinition"
    resource = "customresourcedefinitions"
    singular = "customresourcedefinition"
    short_names = ("crd", "crds")
    categories = ("api-extensions",)
    namespaced = False
    versions = ("v1",)
    storage_version = "v1"
    subresources = frozenset({"status"})

    def default(self, obj: Obj, version: str) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        names = spec.get("names")
        if isinstance(names, dict):
            if not names.get("singular") and names.get("kind"):
                names["singular"] = str(names["kind"]).lower()
            if not names.get("listKind") and names.get("kind"):
                names["listKind"] = f"{names['kind']}List"
        if not spec.get("conversion"):
            spec["conversion"] = {"strategy": "None"}
        webhook = ((spec.get("conversion") or {}).get("webhook") or {}).get("clientConfig")
        service = (webhook or {}).get("service") if isinstance(webhook, dict) else None
        if isinstance(service, dict) and service.get("port") is None:
            service["port"] = 443

    def prepare_for_create(self, obj: Obj, ctx: Context) -> None:
        version = storage_version(obj)
        obj["status"] = {"storedVersions": [version] if version else []}

    def prepare_for_update(self, new: Obj, old: Obj, ctx: Context) -> None:
        super().prepare_for_update(new, old, ctx)
        version = storage_version(new)
        status = new.setdefault("status", {})
        stored = status.setdefault("storedVersions", [])
        if version and version not in stored:
            stored.append(version)

    def validate(self, obj: Obj, ctx: Context) -> list[FieldError]:
        return validate_crd(obj)

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        return validate_crd_update(new, old)

    def validate_status_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        return validate_stored_versions(new)

    def prepare_for_delete(self, obj: Obj) -> None:
        finalizers = obj["metadata"].setdefault("finalizers", [])
        if CLEANUP_FINALIZER not in finalizers:
            finalizers.append(CLEANUP_FINALIZER)
        conditions = obj.setdefault("status", {}).setdefault("conditions", [])
        set_condition(conditions, "Terminating", "True", "InstanceDeletionPending",
                      "CustomResourceDefinition marked for deletion; CustomResource deletion "
                      "will begin soon")

    def table_columns(self) -> list[Column]:
        return [NAME_COLUMN, CREATED_AT_COLUMN]

    def table_row(self, obj: Obj) -> list[Any]:
        meta = obj.get("metadata") or {}
        return [meta.get("name", ""), meta.get("creationTimestamp") or ""]


STRATEGIES = [CustomResourceDefinitionStrategy()]
