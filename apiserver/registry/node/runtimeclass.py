"""node.k8s.io/v1 RuntimeClass: a named container runtime configuration (GPU stacks ship
one, e.g. `nvidia`). Stored and validated; the emulated kubelets do not run a handler."""

from __future__ import annotations

from draemu.api.errors import FieldError, Path, required
from draemu.apiserver.registry.core.common import check_quantities, dns_label
from draemu.apiserver.registry.generic import AGE_COLUMN, NAME, GenericStrategy, Printed
from draemu.apiserver.registry.meta import validate_labels
from draemu.apiserver.registry.strategy import Column, Context, Obj


class RuntimeClassStrategy(GenericStrategy):
    group = "node.k8s.io"
    kind = "RuntimeClass"
    resource = "runtimeclasses"
    singular = "runtimeclass"
    namespaced = False
    versions = ("v1",)
    storage_version = "v1"
    has_generation = False
    immutable_fields = ("handler",)
    printer = (
        NAME,
        Printed(Column("Handler", description="handler specifies the underlying runtime and "
                       "configuration that the CRI implementation will use to handle pods of "
                       "this class."), lambda o: o.get("handler", "")),
        AGE_COLUMN,
    )

    def default(self, obj: Obj, version: str) -> None:
        overhead = obj.get("overhead") or {}
        if isinstance(overhead, dict):
            check_quantities((overhead.get("podFixed") or {}).values(), self.kind, version)

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        handler = obj.get("handler") or ""
        errs = dns_label(handler, Path("handler")) if handler else [required(Path("handler"))]
        scheduling = obj.get("scheduling") or {}
        errs += validate_labels(scheduling.get("nodeSelector"),
                                Path("scheduling").child("nodeSelector"))
        return errs


STRATEGIES = [RuntimeClassStrategy()]
