"""rbac.authorization.k8s.io/v1 Role and ClusterRole: rules validated as upstream; a
write that grants more than its author holds is refused (`apiserver.rbac.escalation`).
A ClusterRole's aggregationRule is filled in by the clusterrole-aggregation controller."""

from __future__ import annotations

from draemu.api.errors import FieldError, Path, invalid, required
from draemu.api.types import Obj
from draemu.apiserver.auth.rbac.escalation import check_role_write, only_gc_fields_changed
from draemu.apiserver.registry.core.labelselector import convertible, validate_label_selector
from draemu.apiserver.registry.rbac.common import (
    RBACStrategy,
    RoleTable,
    requester,
    validate_rules,
)
from draemu.apiserver.registry.strategy import Context


class _RoleStrategy(RoleTable, RBACStrategy):
    def _check_escalation(self, obj: Obj, ctx: Context, request_name: str) -> None:
        meta = obj.get("metadata") or {}
        check_role_write(ctx.authorizer, requester(ctx), self.resource,
                         meta.get("namespace", "") if self.namespaced else "",
                         meta.get("name", ""), obj, request_name=request_name)

    def prepare_for_create(self, obj: Obj, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        self._check_escalation(obj, ctx, request_name="")

    def prepare_for_update(self, new: Obj, old: Obj, ctx: Context) -> None:
        super().prepare_for_update(new, old, ctx)
        if not only_gc_fields_changed(new, old):
            self._check_escalation(new, ctx, (new.get("metadata") or {}).get("name", ""))


class RoleStrategy(_RoleStrategy):
    kind = "Role"
    resource = "roles"
    singular = "role"

    def validate(self, obj: Obj, ctx: Context) -> list[FieldError]:
        return validate_rules(obj, namespaced=True)


class ClusterRoleStrategy(_RoleStrategy):
    kind = "ClusterRole"
    resource = "clusterroles"
    singular = "clusterrole"
    namespaced = False

    def validate(self, obj: Obj, ctx: Context) -> list[FieldError]:
        errs = validate_rules(obj, namespaced=False)
        rule = obj.get("aggregationRule")
        if rule is not None:
            path = Path("aggregationRule").child("clusterRoleSelectors")
            selectors = (rule or {}).get("clusterRoleSelectors") or []
            if not selectors:
                errs.append(required(path, "at least one clusterRoleSelector required if "
                                           "aggregationRule is non-nil"))
            for i, selector in enumerate(selectors):
                errs += validate_label_selector(selector, path.index(i))
                if not convertible(selector):
                    errs.append(invalid(path.index(i), selector, "invalid label selector."))
        return errs


STRATEGIES = [RoleStrategy(), ClusterRoleStrategy()]
