"""The namespace lifecycle controller: deleting a namespace deletes everything in it,
its pods first (the rest only once no pod is left, upstream's OrderedNamespaceDeletion),
then lifts the namespace's `kubernetes` finalizer so the apiserver can remove it.
While content remains, the namespace's status conditions say what is left."""

from __future__ import annotations

import copy
from typing import Any

from draemu.api.meta import meta, set_condition
from draemu.api.types import Obj
from draemu.client import ApiError
from draemu.controllers.base import Controller, ControllerContext
from draemu.controllers.discovery import APIResource, preferred_resources

FINALIZER = "kubernetes"


class NamespaceController(Controller):
    name = "namespace"
    workers = 2

    def __init__(self, ctx: ControllerContext, resources: list[APIResource]) -> None:
        self.resources = [r for r in resources if r.namespaced]
        super().__init__(ctx)

    @classmethod
    async def create(cls, ctx: ControllerContext) -> NamespaceController:
        return cls(ctx, await preferred_resources(ctx.client, verbs={"list", "delete"}))

    def setup(self) -> None:
        self.namespaces = self.ctx.informers.informer("v1", "namespaces")
        self.handlers_enqueue(self.namespaces)

    def primary(self) -> Any:
        return self.namespaces

    async def reconcile(self, key: str) -> float | None:
        ns = self.namespaces.get(key)
        if ns is None or not meta(ns).get("deletionTimestamp"):
            return None
        if FINALIZER not in ((ns.get("spec") or {}).get("finalizers") or []):
            return None
        remaining: dict[str, int] = {}
        finalizers: dict[str, int] = {}
        failures: list[str] = []
        # Pods first, and nothing else until they are gone (OrderedNamespaceDeletion,
        # always on since 1.34): a pod's finalizers or its kubelet may still need the
        # Secrets, ConfigMaps and ServiceAccounts it uses.
        pods = [r for r in self.resources if r.group == "" and r.resource == "pods"]
        others = [r for r in self.resources if r not in pods]
        for group in (pods, others):
            for res in group:
                await self._delete_content(key, res, remaining, finalizers, failures)
            if remaining:
                break
        await self._update_conditions(ns, remaining, finalizers, failures)
        if remaining or failures:
            return 1.0
        fresh = copy.deepcopy(ns)
        fresh["spec"]["finalizers"] = [f for f in ns["spec"]["finalizers"] if f != FINALIZER]
        try:
            await self.client.update("v1", "namespaces", fresh, subresource="finalize")
        except ApiError as e:
            if e.code != 404:
                raise
        self.log.info("namespace content removed", namespace=key)
        return None

    async def _delete_content(self, namespace: str, res: APIResource,
                              remaining: dict[str, int], finalizers: dict[str, int],
                              failures: list[str]) -> None:
        """Delete what is left of one resource in the namespace; count what remains (by
        `<resource>.<group>`, as upstream names it) and the finalizers holding it."""
        try:
            listed = await self.client.list(res.api_version, res.resource, namespace)
        except ApiError as e:
            if e.code not in (404, 405):
                failures.append(f"{res.resource}.{res.group or 'core'}: {e.message}")
            return
        items = listed.get("items") or []
        if not items:
            return
        label = f"{res.resource}.{res.group}"
        remaining[label] = len(items)
        for item in items:
            for fin in meta(item).get("finalizers") or []:
                finalizers[fin] = finalizers.get(fin, 0) + 1
        if all(meta(i).get("deletionTimestamp") for i in items):
            return
        try:
            await self.client.request(
                "DELETE", f"/{'apis' if res.group else 'api'}/{res.api_version}"
                f"/namespaces/{namespace}/{res.resource}",
                json={"kind": "DeleteOptions", "apiVersion": "v1",
                      "propagationPolicy": "Background"})
        except (ApiError, OSError) as e:
            failures.append(f"{label}: {e}")

    async def _update_conditions(self, ns: Obj, remaining: dict[str, int],
                                 finalizers: dict[str, int], failures: list[str]) -> None:
        conditions = copy.deepcopy((ns.get("status") or {}).get("conditions") or [])
        set_condition(conditions, "NamespaceDeletionDiscoveryFailure", "False",
                      "ResourcesDiscovered", "All resources successfully discovered")
        set_condition(conditions, "NamespaceDeletionGroupVersionParsingFailure", "False",
                      "ParsedGroupVersions", "All legacy kube types successfully parsed")
        if failures:
            set_condition(conditions, "NamespaceDeletionContentFailure", "True",
                          "ContentDeletionFailed",
                          "Failed to delete all resource types, " + str(len(failures))
                          + " remaining: " + ", ".join(failures))
        else:
            set_condition(conditions, "NamespaceDeletionContentFailure", "False",
                          "ContentDeleted", "All content successfully deleted, may be waiting "
                          "on finalization")
        if remaining:
            set_condition(conditions, "NamespaceContentRemaining", "True", "SomeResourcesRemain",
                          "Some resources are remaining: " + ", ".join(
                              f"{k} has {v} resource instances" for k, v in sorted(
                                  remaining.items())))
        else:
            set_condition(conditions, "NamespaceContentRemaining", "False", "ContentRemoved",
                          "All content successfully removed")
        if finalizers:
            set_condition(conditions, "NamespaceFinalizersRemaining", "True",
                          "SomeFinalizersRemain", "Some content in the namespace has "
                          "finalizers remaining: " + ", ".join(
                              f"{k} in {v} resource instances" for k, v in sorted(
                                  finalizers.items())))
        else:
            set_condition(conditions, "NamespaceFinalizersRemaining", "False",
                          "ContentHasNoFinalizers", "All content-preserving finalizers finished")
        if conditions != ((ns.get("status") or {}).get("conditions") or []):
            # An update, as upstream's UpdateStatus: the namespace controller's role
            # grants update (not patch) on namespaces/status.
            fresh = {**ns, "status": {**(ns.get("status") or {}), "conditions": conditions}}
            try:
                await self.client.update("v1", "namespaces", fresh, subresource="status")
            except ApiError as e:
                if e.code != 404:
                    raise
