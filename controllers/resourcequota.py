"""The resource quota controller (upstream's pkg/controller/resourcequota): keeps each
ResourceQuota's `status.hard` (its spec.hard) and `status.used` (what the namespace's
objects count against those keys, draemu.api.quota) up to date. Changes to the common
kinds are seen through informers; `count/<resource>.<group>` of any other served kind
is listed at each sync and on the periodic resync (upstream's 5 minutes; 30 s here)."""

from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any

from draemu.api.meta import meta, namespace_of
from draemu.api.quantity import Quantity
from draemu.api.quota import tracked
from draemu.api.types import Obj
from draemu.client import ApiError, Informer
from draemu.controllers.base import Controller
from draemu.controllers.discovery import preferred_resources

# (apiVersion, resource) of the kinds watched for prompt replenishment.
WATCHED = [("v1", "pods"), ("v1", "services"), ("v1", "configmaps"), ("v1", "secrets"),
           ("v1", "persistentvolumeclaims"), ("v1", "replicationcontrollers"),
           ("v1", "resourcequotas"), ("resource.k8s.io/v1", "resourceclaims")]


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def _format(value: Fraction, like: str) -> str:
    """A used amount, in the format (binary or decimal) of the hard limit."""
    fmt = Quantity.parse(like).format if like else "DecimalSI"
    return Quantity(value, fmt).canonical()


class ResourceQuotaController(Controller):
    name = "resourcequota"
    workers = 2

    def component(self) -> str:
        return "resource-quota-controller"

    def setup(self) -> None:
        inf = self.ctx.informers
        self.quotas = inf.informer("v1", "resourcequotas")
        self.watched: dict[tuple[str, str], Informer] = {
            (r, _group(v)): inf.informer(v, r) for v, r in WATCHED}
        self.handlers_enqueue(self.quotas)
        for informer in self.watched.values():
            informer.add_handler(on_add=self._changed,
                                 on_update=lambda o, n: self._changed(n),
                                 on_delete=self._changed)
        self._versions: dict[tuple[str, str], str] | None = None

    def primary(self) -> Any:
        return self.quotas

    def _changed(self, obj: Obj) -> None:
        ns = namespace_of(obj)
        for q in self.quotas.list():
            if namespace_of(q) == ns:
                self.queue.add(f"{ns}/{meta(q)['name']}")

    async def _api_version(self, resource: str, group: str) -> str | None:
        if self._versions is None or (resource, group) not in self._versions:
            found = await preferred_resources(self.client, verbs={"list"})
            self._versions = {(r.resource, r.group): r.api_version for r in found
                              if r.namespaced}
        return self._versions.get((resource, group))

    async def _objects(self, namespace: str, resource: str, group: str) -> list[Obj]:
        informer = self.watched.get((resource, group))
        if informer is not None:
            return [o for o in informer.list() if namespace_of(o) == namespace]
        api_version = await self._api_version(resource, group)
        if api_version is None:
            return []
        try:
            return (await self.client.list_all(api_version, resource, namespace)).get(
                "items") or []
        except ApiError as e:
            if e.code in (403, 404, 405):
                return []
            raise

    def _resources(self, hard: dict[str, Any]) -> set[tuple[str, str]]:
        """The (resource, group) whose objects can count against these keys."""
        out = set(self.watched)
        for key in hard:
            if key.startswith("count/"):
                resource, _, group = key[len("count/"):].partition(".")
                out.add((resource, group))
        return out

    async def reconcile(self, key: str) -> float | None:
        quota = self.quotas.get(key)
        if quota is None:
            return None
        namespace = namespace_of(quota)
        hard = dict((quota.get("spec") or {}).get("hard") or {})
        used: dict[str, Fraction] = {k: Fraction(0) for k in hard}
        for resource, group in self._resources(hard):
            for obj in await self._objects(namespace, resource, group):
                for k, v in tracked(quota, resource, group, obj).items():
                    used[k] += v
        status = {"hard": hard, "used": {k: _format(v, str(hard[k])) for k, v in used.items()}}
        old = quota.get("status") or {}
        if old.get("hard") == status["hard"] and old.get("used") == status["used"]:
            return None
        fresh = copy.deepcopy(quota)
        fresh["status"] = status
        try:
            await self.client.update("v1", "resourcequotas", fresh, subresource="status")
        except ApiError as e:
            if e.code != 404:
                raise
        return None
