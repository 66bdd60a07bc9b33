"""core/v1 Namespace: `spec.finalizers` holds `kubernetes` from creation until the
namespace controller removes it through /finalize; `status.phase` is Active until
deletion starts, then Terminating."""

from __future__ import annotations

from typing import Any

from draemu.api.errors import FieldError, Path, invalid
from draemu.api.types import Obj
from draemu.apiserver.registry.core.common import copy_or_drop
from draemu.apiserver.registry.meta import name_is_dns_label, validate_finalizer_name
from draemu.apiserver.registry.strategy import (
    AGE,
    AGE_COLUMN,
    NAME_COLUMN,
    Column,
    Context,
    Strategy,
)
from draemu.apiserver.wire.jsoncopy import clone

FINALIZER_KUBERNETES = "kubernetes"
# Every namespace carries its own name as a label, so selectors can pick namespaces by name.
NAME_LABEL = "kubernetes.io/metadata.name"


def _ensure_name_label(obj: Obj) -> None:
    meta = obj.setdefault("metadata", {})
    name = meta.get("name")
    if name:
        meta.setdefault("labels", {})[NAME_LABEL] = name


class NamespaceStrategy(Strategy):
    kind = "Namespace"
    resource = "namespaces"
    singular = "namespace"
    short_names = ("ns",)
    namespaced = False
    versions = ("v1",)
    storage_version = "v1"
    subresources = frozenset({"status", "finalize"})
    status_meta_reset = ()  # upstream resets only the spec (status) or status (finalize)
    has_generation = False

    def validate_name(self, name: str, prefix: bool) -> list[str]:
        return name_is_dns_label(name, prefix)

    def default(self, obj: Obj, version: str) -> None:
        _ensure_name_label(obj)

    def prepare_for_create(self, obj: Obj, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        obj["status"] = {"phase": "Active"}
        # Not a default: /finalize may remove it later, and defaulting would add it back.
        finalizers = obj.setdefault("spec", {}).setdefault("finalizers", [])
        if FINALIZER_KUBERNETES not in finalizers:
            finalizers.append(FINALIZER_KUBERNETES)
        _ensure_name_label(obj)

    def prepare_for_update(self, new: Obj, old: Obj, ctx: Context) -> None:
        super().prepare_for_update(new, old, ctx)
        # Finalizers change only through /finalize.
        new["spec"] = clone(old.get("spec") or {})
        _ensure_name_label(new)

    def prepare_for_subresource_update(self, subresource: str, new: Obj, old: Obj,
                                       ctx: Context) -> None:
        if subresource == "finalize":
            copy_or_drop(new, old, "status")
            _ensure_name_label(new)
            return
        super().prepare_for_subresource_update(subresource, new, old, ctx)

    def validate(self, obj: Obj, ctx: Context) -> list[FieldError]:
        errs: list[FieldError] = []
        for name in (obj.get("spec") or {}).get("finalizers") or []:
            errs += validate_finalizer_name(name, Path("spec").child("finalizers"))
        return errs

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        return []

    def validate_status_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        phase = (new.get("status") or {}).get("phase") or ""
        path = Path("status").child("Phase")  # sic: upstream's capital P
        if not (new.get("metadata") or {}).get("deletionTimestamp"):
            if phase != "Active":
                return [invalid(path, phase, "may only be 'Active' if `deletionTimestamp` is "
                                "empty")]
        elif phase != "Terminating":
            return [invalid(path, phase, "may only be 'Terminating' if `deletionTimestamp` is "
                            "not empty")]
        return []

    def validate_subresource_update(self, subresource: str, new: Obj, old: Obj,
                                    ctx: Context) -> list[FieldError]:
        if subresource == "finalize":
            path = Path("spec").child("finalizers")
            errs: list[FieldError] = []
            for i, name in enumerate((new.get("spec") or {}).get("finalizers") or []):
                errs += validate_finalizer_name(name, path.index(i))
            return errs
        return super().validate_subresource_update(subresource, new, old, ctx)

    def selectable_fields(self, obj: Obj) -> dict[str, str]:
        # "name" is a historical alias upstream keeps for compatibility.
        return {"status.phase": (obj.get("status") or {}).get("phase") or "",
                "name": (obj.get("metadata") or {}).get("name") or ""}

    def table_columns(self) -> list[Column]:
        return [NAME_COLUMN,
                Column("Status", description="The status of the namespace"),
                AGE_COLUMN]

    def table_row(self, obj: Obj) -> list[Any]:
        return [(obj.get("metadata") or {}).get("name", ""),
                (obj.get("status") or {}).get("phase") or "", AGE]


STRATEGIES = [NamespaceStrategy()]
