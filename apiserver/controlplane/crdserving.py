"""Following CustomResourceDefinitions: every apiserver of a store serves the resources
its watch cache's CRDs define, so a CRD created through one apiserver is served by all.

A watch-cache listener (synchronous, so the resource is served as soon as the cache
holds the CRD) adds, replaces and removes custom resources in the resource table.
A worker then does what upstream's naming, establishing and finalizer controllers do:
`NamesAccepted` and `Established` conditions with the accepted names, and, once a CRD is
deleted, the deletion of all its objects before its cleanup finalizer goes. Several
apiservers may do the same work at once: every write is a compare-and-swap of the
latest object and idempotent.
"""

from __future__ import annotations

import asyncio
import functools

from draemu.api.errors import StatusError
from draemu.api.meta import format_time, now, set_condition
from draemu.api.types import Obj
from draemu.apiserver.controlplane.crdconversion import ConversionWebhooks
from draemu.apiserver.registry.apiextensions.customresource import CustomResourceStrategy
from draemu.apiserver.registry.apiextensions.customresourcedefinition import CLEANUP_FINALIZER
from draemu.apiserver.registry.resources import Resource, ResourceTable
from draemu.apiserver.storage.cachelistener import CacheListener
from draemu.apiserver.storage.storeadapter import Storage, Unchanged
from draemu.apiserver.storage.watchcache import Change
from draemu.log import get_logger

log = get_logger("apiserver.crds")

GROUP = "apiextensions.k8s.io"
RESOURCE = "customresourcedefinitions"
CLEANUP_POLL = 0.2


class CRDServing(CacheListener):
    name = "crd-serving"
    failure = "reconciling a CustomResourceDefinition failed"
    retry_after = CLEANUP_POLL

    def __init__(self, table: ResourceTable, storage: Storage,
                 conversions: ConversionWebhooks | None = None) -> None:
        self.table = table
        self.storage = storage
        self.conversions = conversions
        crds = table.by_group_resource(GROUP, RESOURCE)
        assert crds is not None, "the CustomResourceDefinition kind is not served"
        self.crds: Resource = crds
        # CRD name -> (group, plural) it serves.
        self._served: dict[str, tuple[str, str]] = {}
        super().__init__(storage.cache, [crds.prefix])

    # Serving -------------------------------------------------------------------------------
    def changed(self, change: Change) -> None:
        name = change.key[len(self.crds.prefix):]
        if change.type == "delete":
            self._unserve(name)
        else:
            self._serve(change.obj)
            self.enqueue(name)

    def resynced(self) -> None:
        present = {}
        for key, crd in self.cache.list(self.crds.prefix):
            present[key[len(self.crds.prefix):]] = crd
        for name in list(self._served):
            if name not in present:
                self._unserve(name)
        for name, crd in present.items():
            self._serve(crd)
            self.enqueue(name)

    def _conflict(self, crd: Obj) -> str:
        """Why the CRD's names cannot be served ("" when they can)."""
        return self._conflict_of(crd)[1]

    def _conflict_of(self, crd: Obj) -> tuple[str, str]:
        """(reason, message) of upstream's naming controller ("" when none)."""
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        group, name = spec.get("group", ""), crd["metadata"]["name"]
        for r in self.table.resources:
            if r.group != group or getattr(r.strategy, "crd_name", None) == name:
                continue
            if r.name == names.get("plural"):
                return "PluralConflict", f'"{r.name}" is already in use'
            if names.get("singular") and (r.strategy.singular or "") == names["singular"]:
                return "SingularConflict", f'"{names["singular"]}" is already in use'
            if r.kind == names.get("kind"):
                return "KindConflict", f'"{r.kind}" is already in use'
            if names.get("listKind") and getattr(r.strategy, "list_kind", "") == \
                    names["listKind"]:
                return "ListKindConflict", f'"{names["listKind"]}" is already in use'
        return "", ""

    def _serve(self, crd: Obj) -> None:
        name = crd["metadata"]["name"]
        try:
            strategy = CustomResourceStrategy(crd)
        except (KeyError, TypeError, IndexError, StopIteration) as e:
            log.warning("not serving an incomplete CustomResourceDefinition", crd=name,
                        error=repr(e))
            self._unserve(name)
            return
        if self._conflict(crd):
            self._unserve(name)
            return
        if self.conversions is not None:
            strategy.converter = functools.partial(self.conversions.convert,
                                                   strategy.conversion, strategy.kind)
        before = self._served.get(name)
        if before is not None and before != (strategy.group, strategy.resource):
            self.table.remove(*before)
        self.table.add(strategy)
        self._served[name] = (strategy.group, strategy.resource)

    def _unserve(self, name: str) -> None:
        served = self._served.pop(name, None)
        if served is None:
            return
        resource = self.table.by_group_resource(*served)
        self.table.remove(*served)
        if resource is not None:
            # As upstream, whose storage for the resource goes: its watches end.
            self.cache.end_watches_under(resource.prefix)

    def resource_of(self, crd_name: str) -> Resource | None:
        served = self._served.get(crd_name)
        return self.table.by_group_resource(*served) if served else None

    # Conditions and cleanup ----------------------------------------------------------------
    async def reconcile(self, key: str) -> None:
        name = key
        crd = self.cache.get(self.crds.key("", name))
        if crd is None:
            return
        meta = crd["metadata"]
        if meta.get("deletionTimestamp"):
            if CLEANUP_FINALIZER in (meta.get("finalizers") or []):
                await self._cleanup(crd)
            return
        await self._update_status(name)

    async def _update_status(self, name: str) -> None:
        async def fn(crd: Obj, current: Obj) -> Obj:
            if crd["metadata"].get("deletionTimestamp"):
                raise Unchanged()
            status = crd.setdefault("status", {})
            conditions = status.setdefault("conditions", [])
            reason, conflict = self._conflict_of(crd)
            names = (crd.get("spec") or {}).get("names") or {}
            if conflict:
                set_condition(conditions, "NamesAccepted", "False", reason, conflict)
                set_condition(conditions, "Established", "False", "NotAccepted",
                              "not all names are accepted")
            else:
                accepted = {k: v for k, v in names.items() if v not in (None, "", [])}
                if status.get("acceptedNames") != accepted:
                    status["acceptedNames"] = accepted
                set_condition(conditions, "NamesAccepted", "True", "NoConflicts",
                              "no conflicts found")
                set_condition(conditions, "Established", "True", "InitialNamesAccepted",
                              "the initial names have been accepted")
            status.setdefault("acceptedNames", {"kind": "", "plural": ""})
            if crd == current:
                raise Unchanged()
            return crd

        try:
            await self.storage.update(self.crds, "", name, fn)
        except StatusError as e:
            if e.reason != "NotFound":
                raise

    async def _cleanup(self, crd: Obj) -> None:
        """Delete every object of the CRD, wait until they are gone (objects with
        finalizers wait for their controllers), then drop the cleanup finalizer."""
        name = crd["metadata"]["name"]
        resource = self.resource_of(name)
        if resource is None:
            spec = crd.get("spec") or {}
            resource = Resource(CustomResourceStrategy(crd)) if spec.get("versions") else None
        if resource is not None:
            await self._set_terminating(name, "InstanceDeletionInProgress",
                                        "CustomResource deletion is in progress")
            while True:
                remaining = self.cache.list(resource.prefix)
                if not remaining:
                    break
                for _key, obj in remaining:
                    await self._delete_object(resource, obj)
                await asyncio.sleep(CLEANUP_POLL)
                await self.storage.caught_up()
        await self._finish(name)

    async def _delete_object(self, resource: Resource, obj: Obj) -> None:
        meta = obj["metadata"]
        namespace, obj_name = meta.get("namespace", ""), meta["name"]
        try:
            if meta.get("finalizers"):
                if meta.get("deletionTimestamp"):
                    return

                async def mark(private: Obj, current: Obj) -> Obj:
                    if private["metadata"].get("deletionTimestamp"):
                        raise Unchanged()
                    private["metadata"]["deletionTimestamp"] = format_time(now())
                    private["metadata"]["deletionGracePeriodSeconds"] = 0
                    return private

                await self.storage.update(resource, namespace, obj_name, mark)
            else:
                await self.storage.delete(resource, namespace, obj_name,
                                          int(meta["resourceVersion"]))
        except StatusError as e:
            if e.reason not in ("NotFound", "Conflict"):
                raise

    async def _set_terminating(self, name: str, reason: str, message: str) -> None:
        async def fn(crd: Obj, current: Obj) -> Obj:
            conditions = crd.setdefault("status", {}).setdefault("conditions", [])
            if not set_condition(conditions, "Terminating", "True", reason, message):
                raise Unchanged()
            return crd

        try:
            await self.storage.update(self.crds, "", name, fn)
        except StatusError as e:
            if e.reason != "NotFound":
                raise

    async def _finish(self, name: str) -> None:
        gone: dict[str, bool] = {}

        async def fn(crd: Obj, current: Obj) -> Obj:
            gone.clear()  # a try on a stale copy is tried again
            finalizers = [f for f in crd["metadata"].get("finalizers") or []
                          if f != CLEANUP_FINALIZER]
            if finalizers == (crd["metadata"].get("finalizers") or []):
                raise Unchanged()
            if finalizers:
                crd["metadata"]["finalizers"] = finalizers
            else:
                crd["metadata"].pop("finalizers", None)
                gone["last"] = True
            return crd

        try:
            new, _ = await self.storage.update(self.crds, "", name, fn)
            if gone:
                await self.storage.delete(self.crds, "", name,
                                          int(new["metadata"]["resourceVersion"]))
        except StatusError as e:
            if e.reason not in ("NotFound", "Conflict"):
                raise
            if e.reason == "Conflict":
                self.enqueue(name)

