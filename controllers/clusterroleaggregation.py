"""ClusterRole aggregation: a ClusterRole with an aggregationRule gets the rules of every
other ClusterRole its selectors match (admin, edit and view gather the
`rbac.authorization.k8s.io/aggregate-to-*` roles), as kube-controller-manager's
clusterrole-aggregation controller does: matching roles in name order, each rule once."""

from __future__ import annotations

from typing import Any

from draemu.api.labels import matches
from draemu.api.meta import meta
from draemu.api.types import Obj
from draemu.controllers.base import Controller

RBAC = "rbac.authorization.k8s.io/v1"


class ClusterRoleAggregationController(Controller):
    name = "clusterrole-aggregation"

    def component(self) -> str:
        return "clusterrole-aggregation-controller"

    def setup(self) -> None:
        self.roles = self.ctx.informers.informer(RBAC, "clusterroles")
        # Any role's change may change what an aggregated role gathers: look at them all.
        self.roles.add_handler(on_add=self._changed, on_update=lambda _o, n: self._changed(n),
                               on_delete=self._changed)

    def primary(self) -> Any:
        return self.roles

    def _changed(self, _role: Obj) -> None:
        for key in self.roles.keys():
            role = self.roles.get(key)
            if role is not None and role.get("aggregationRule") is not None:
                self.queue.add(key)

    def aggregated_rules(self, role: Obj) -> list[Obj]:
        selectors = (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or []
        name = meta(role).get("name")
        sources = sorted(
            (other for other in (self.roles.get(k) for k in self.roles.keys())
             if other is not None and meta(other).get("name") != name
             and any(matches(s, meta(other).get("labels")) for s in selectors)),
            key=lambda r: meta(r).get("name", ""))
        rules: list[Obj] = []
        for source in sources:
            for rule in source.get("rules") or []:
                if rule not in rules:
                    rules.append(rule)
        return rules

    async def reconcile(self, key: str) -> float | None:
        role = self.roles.get(key)
        if role is None or role.get("aggregationRule") is None:
            return None
        rules = self.aggregated_rules(role)
        if rules == (role.get("rules") or []):
            return None
        # A merge patch replaces the list whole.
        await self.client.patch(RBAC, "clusterroles", meta(role)["name"], {"rules": rules},
                                field_manager="clusterrole-aggregation-controller")
        return None
