"""rbac.authorization.k8s.io/v1 RoleBinding and ClusterRoleBinding: roleRef and subjects
defaulted and validated as upstream, roleRef immutable; a binding to a role whose
permissions its author does not hold (and may not `bind`) is refused
(`apiserver.rbac.escalation`)."""

from __future__ import annotations

from draemu.api.errors import FieldError, Path, go_quote, invalid_no_value
from draemu.api.types import Obj
from draemu.apiserver.auth.rbac.authorizer import role_rules
from draemu.apiserver.auth.rbac.escalation import check_binding_write, only_gc_fields_changed
from draemu.apiserver.registry.rbac.common import (
    BindingTable,
    RBACStrategy,
    default_binding,
    requester,
    validate_binding,
)
from draemu.apiserver.registry.strategy import Context


class _BindingStrategy(BindingTable, RBACStrategy):
    def default(self, obj: Obj, version: str) -> None:
        default_binding(obj)

    def _check_escalation(self, obj: Obj, ctx: Context) -> None:
        access = ctx.authorizer
        if access is None:
            return
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace", "") if self.namespaced else ""
        check_binding_write(access, requester(ctx), self.resource, namespace,
                            meta.get("name", ""), obj,
                            lambda ref, ns: role_rules(ctx.lookup, ref, ns))

    def prepare_for_create(self, obj: Obj, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        self._check_escalation(obj, ctx)

    def prepare_for_update(self, new: Obj, old: Obj, ctx: Context) -> None:
        super().prepare_for_update(new, old, ctx)
        if not only_gc_fields_changed(new, old):
            self._check_escalation(new, ctx)

    def validate(self, obj: Obj, ctx: Context) -> list[FieldError]:
        return validate_binding(obj, self.namespaced)

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        errs = self.validate(new, ctx)
        if (new.get("roleRef") or {}) != (old.get("roleRef") or {}):
            ref = new.get("roleRef") or {}
            shown = (f'rbac.RoleRef{{APIGroup:{go_quote(ref.get("apiGroup") or "")}, '
                     f'Kind:{go_quote(ref.get("kind") or "")}, '
                     f'Name:{go_quote(ref.get("name") or "")}}}')
            errs.append(invalid_no_value(Path("roleRef"), f"{shown}: field is immutable"))
        return errs


class RoleBindingStrategy(_BindingStrategy):
    kind = "RoleBinding"
    resource = "rolebindings"
    singular = "rolebinding"


class ClusterRoleBindingStrategy(_BindingStrategy):
    kind = "ClusterRoleBinding"
    resource = "clusterrolebindings"
    singular = "clusterrolebinding"
    namespaced = False


STRATEGIES = [RoleBindingStrategy(), ClusterRoleBindingStrategy()]
