"""The garbage collector: owner references with background, foreground and orphan
propagation, for every kind the apiserver serves.

- An object all of whose owners are gone is deleted (background propagation).
- An owner deleted with `propagationPolicy=Foreground` carries the
  `foregroundDeletion` finalizer: its dependents are deleted first (a dependent that
  has another owner still there only loses its reference to it), and the finalizer is
  lifted once no dependent with `blockOwnerDeletion` is left. A cycle of such owners is
  broken by lifting the blocking references of the dependent that closes it.
- An owner deleted with `propagationPolicy=Orphan` carries the `orphan` finalizer: its
  dependents lose their owner reference to it, then the finalizer is lifted.
"""

from __future__ import annotations

import asyncio
import copy
from collections import defaultdict

from draemu.api.meta import meta, name_of, namespace_of, uid_of
from draemu.api.types import Obj
from draemu.client import ApiError, Informer
from draemu.controllers.base import Controller, ControllerContext
from draemu.controllers.discovery import APIResource, preferred_resources

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"


class GarbageCollector(Controller):
    name = "garbagecollector"
    workers = 2
    resync_seconds = 60.0

    def __init__(self, ctx: ControllerContext, resources: list[APIResource]) -> None:
        self.resources = resources
        self.by_kind: dict[tuple[str, str], APIResource] = {}
        self.informers: dict[str, Informer] = {}
        self.objects: dict[str, tuple[APIResource, str]] = {}  # uid -> (resource, cache key)
        self.dependents: dict[str, set[str]] = defaultdict(set)  # owner uid -> item ids
        super().__init__(ctx)

    @classmethod
    async def create(cls, ctx: ControllerContext) -> GarbageCollector:
        resources = await preferred_resources(ctx.client, verbs={"list", "watch", "delete"})
        return cls(ctx, resources)

    def setup(self) -> None:
        for res in self.resources:
            self.by_kind[(res.api_version, res.kind)] = res
            inf = self.ctx.informers.informer(res.api_version, res.resource)
            self.informers[res.api_version + "|" + res.resource] = inf
            inf.add_handler(on_add=lambda o, r=res: self._observe(r, None, o),
                            on_update=lambda old, new, r=res: self._observe(r, old, new),
                            on_delete=lambda o, r=res: self._forget(r, o))

    # Items are named "<apiVersion>|<resource>|<cache key>".
    @staticmethod
    def _item(res: APIResource, obj: Obj) -> str:
        ns = namespace_of(obj)
        key = f"{ns}/{name_of(obj)}" if ns else name_of(obj)
        return f"{res.api_version}|{res.resource}|{key}"

    def _observe(self, res: APIResource, old: Obj | None, obj: Obj) -> None:
        item = self._item(res, obj)
        self.objects[uid_of(obj)] = (res, item)
        refs = meta(obj).get("ownerReferences") or []
        if old is not None:
            for ref in meta(old).get("ownerReferences") or []:
                self.dependents[ref.get("uid", "")].discard(item)
            self._enqueue_unblocked_owners(meta(old).get("ownerReferences") or [], refs)
            if _deleting_dependents(obj) and not _deleting_dependents(old):
                # Deleted in the foreground now: every dependent decides again.
                for dep in self.dependents.get(uid_of(obj), ()):
                    self.queue.add(dep)
        for ref in refs:
            self.dependents[ref.get("uid", "")].add(item)
        if refs or meta(obj).get("deletionTimestamp"):
            self.queue.add(item)

    def _enqueue_unblocked_owners(self, old_refs: list[Obj], refs: list[Obj]) -> None:
        """Owners a dependent stopped blocking (a reference removed, or its
        blockOwnerDeletion lifted) may finish their foreground deletion now."""
        now = {r.get("uid"): r for r in refs}
        for ref in old_refs:
            if ref.get("blockOwnerDeletion") and not (now.get(ref.get("uid")) or {}).get(
                    "blockOwnerDeletion"):
                owner = self.objects.get(ref.get("uid", ""))
                if owner is not None:
                    self.queue.add(owner[1])

    def _forget(self, res: APIResource, obj: Obj) -> None:
        item = self._item(res, obj)
        uid = uid_of(obj)
        if self.objects.get(uid, (None, ""))[1] == item:
            del self.objects[uid]
        for ref in meta(obj).get("ownerReferences") or []:
            self.dependents[ref.get("uid", "")].discard(item)
        # Dependents of a vanished owner (and owners waiting for this dependent).
        for dep in list(self.dependents.get(uid, ())):
            self.queue.add(dep)
        for ref in meta(obj).get("ownerReferences") or []:
            owner = self.objects.get(ref.get("uid", ""))
            if owner:
                self.queue.add(owner[1])

    def _lookup(self, item: str) -> tuple[APIResource, Obj] | None:
        api_version, resource, key = item.split("|", 2)
        inf = self.informers.get(api_version + "|" + resource)
        if inf is None:
            return None
        obj = inf.get(key)
        if obj is None:
            return None
        res = self.by_kind.get((api_version, obj.get("kind", ""))) or next(
            r for r in self.resources if r.api_version == api_version and r.resource == resource)
        return res, obj

    async def start(self) -> None:
        await super().start()
        for inf_key, inf in self.informers.items():
            api_version, resource = inf_key.split("|")
            res = next(r for r in self.resources
                       if r.api_version == api_version and r.resource == resource)
            for obj in inf.list():
                if meta(obj).get("ownerReferences") or meta(obj).get("deletionTimestamp"):
                    self.queue.add(self._item(res, obj))

    async def _resync(self) -> None:
        while True:
            await asyncio.sleep(self.resync_seconds)
            for _res, item in list(self.objects.values()):
                self.queue.add(item)

    # Reconcile -------------------------------------------------------------------------
    async def reconcile(self, item: str) -> float | None:
        found = self._lookup(item)
        if found is None:
            return None
        res, obj = found
        finalizers = meta(obj).get("finalizers") or []
        if meta(obj).get("deletionTimestamp"):
            if ORPHAN in finalizers:
                await self._orphan_dependents(res, obj)
                return None
            if FOREGROUND in finalizers:
                return await self._process_deleting_dependents(res, obj)
            return None  # being deleted already, and waiting for no dependent
        if meta(obj).get("ownerReferences"):
            await self._attempt_to_delete(res, obj)
        return None

    def _dependents_of(self, obj: Obj) -> list[tuple[APIResource, Obj]]:
        out = []
        for dep in list(self.dependents.get(uid_of(obj), ())):
            found = self._lookup(dep)
            if found is not None:
                out.append(found)
        return out

    async def _orphan_dependents(self, res: APIResource, owner: Obj) -> None:
        uid = uid_of(owner)
        for dres, dep in self._dependents_of(owner):
            refs = [r for r in meta(dep).get("ownerReferences") or [] if r.get("uid") != uid]
            await self._patch_owner_refs(dres, dep, refs)
        await self._remove_finalizer(res, owner, ORPHAN)

    async def _process_deleting_dependents(self, res: APIResource, owner: Obj
                                           ) -> float | None:
        """An owner deleted in the foreground: its finalizer goes once no dependent
        blocks it (a reference with blockOwnerDeletion); each blocking dependent is
        looked at, deciding by all its owners whether it goes (upstream's
        processDeletingDependentsItem)."""
        uid = uid_of(owner)
        blocking = [(dres, dep) for dres, dep in self._dependents_of(owner)
                    if any(r.get("uid") == uid and r.get("blockOwnerDeletion")
                           for r in meta(dep).get("ownerReferences") or [])]
        if not blocking:
            await self._remove_finalizer(res, owner, FOREGROUND)
            return None
        for dres, dep in blocking:
            if not _deleting_dependents(dep):
                self.queue.add(self._item(dres, dep))
        return 1.0  # dependents still there; look again

    async def _attempt_to_delete(self, res: APIResource, obj: Obj) -> None:
        """Upstream's attemptToDeleteItem for an object not being deleted: kept while an
        owner is there (its references to owners that are gone or deleted in the
        foreground are removed), deleted in the foreground when an owner waits for it and
        it has dependents of its own (its blocking references lifted first when one of
        those waits too: an ownership cycle), deleted otherwise."""
        refs = meta(obj).get("ownerReferences") or []
        solid, dangling, waiting = [], [], []
        for ref in refs:
            state = await self._owner_state(obj, ref)
            {"absent": dangling, "foreground": waiting}.get(state, solid).append(ref)
        if solid:
            gone = {r.get("uid") for r in dangling + waiting}
            if gone:
                await self._patch_owner_refs(res, obj, [r for r in refs
                                                        if r.get("uid") not in gone])
            return
        dependents = self._dependents_of(obj)
        if waiting and dependents:
            if any(_deleting_dependents(dep) for _, dep in dependents):
                await self._patch_owner_refs(res, obj, [
                    {**r, "blockOwnerDeletion": False} if r.get("blockOwnerDeletion") else r
                    for r in refs])
            await self._delete(res, obj, "Foreground")
            return
        finalizers = meta(obj).get("finalizers") or []
        policy = "Orphan" if ORPHAN in finalizers else \
            "Foreground" if FOREGROUND in finalizers else "Background"
        await self._delete(res, obj, policy)

    async def _owner_state(self, obj: Obj, ref: Obj) -> str:
        uid = ref.get("uid", "")
        known = self.objects.get(uid)
        if known is not None:
            found = self._lookup(known[1])
            if found is not None:
                owner = found[1]
                fins = meta(owner).get("finalizers") or []
                if meta(owner).get("deletionTimestamp") and FOREGROUND in fins:
                    return "foreground"
                return "present"
        # Not in our caches (perhaps not yet): ask the API before concluding anything.
        group_version = ref.get("apiVersion", "")
        res = self.by_kind.get((group_version, ref.get("kind", "")))
        if res is None:
            res = next((r for r in self.resources if r.kind == ref.get("kind") and
                        r.group == group_version.rpartition("/")[0]), None)
        if res is None:
            return "present"  # a kind we cannot look up: never delete on a guess
        try:
            owner = await self.client.get(res.api_version, res.resource, ref.get("name", ""),
                                          namespace_of(obj) if res.namespaced else None)
        except ApiError as e:
            if e.code == 404:
                return "absent"
            raise
        return "present" if uid_of(owner) == uid else "absent"

    async def _delete(self, res: APIResource, obj: Obj, policy: str) -> None:
        try:
            await self.client.delete(res.api_version, res.resource, name_of(obj),
                                     namespace_of(obj) or None, propagation_policy=policy,
                                     preconditions={"uid": uid_of(obj)})
            self.log.info("deleted dependent", kind=obj.get("kind"), name=name_of(obj),
                          namespace=namespace_of(obj), propagation=policy)
        except ApiError as e:
            if e.code not in (404, 409):
                raise

    async def _patch_owner_refs(self, res: APIResource, obj: Obj, refs: list[Obj]) -> None:
        """The object's ownerReferences become `refs`, if it did not change meanwhile
        (uid and resourceVersion preconditions: a conflict is retried on fresh state)."""
        try:
            await self.client.patch(res.api_version, res.resource, name_of(obj),
                                    {"metadata": {"ownerReferences": refs or None,
                                                  "uid": uid_of(obj),
                                                  "resourceVersion": meta(obj).get(
                                                      "resourceVersion")}},
                                    namespace=namespace_of(obj) or None)
        except ApiError as e:
            if e.code != 404:
                raise

    async def _remove_finalizer(self, res: APIResource, obj: Obj, finalizer: str) -> None:
        fresh = copy.deepcopy(obj)
        fresh["metadata"]["finalizers"] = [f for f in meta(obj).get("finalizers") or []
                                           if f != finalizer]
        try:
            await self.client.update(res.api_version, res.resource, fresh,
                                     namespace=namespace_of(obj) or None)
        except ApiError as e:
            if e.code != 404:
                raise


def _deleting_dependents(obj: Obj) -> bool:
    """Deleted in the foreground, waiting for its dependents."""
    return bool(meta(obj).get("deletionTimestamp")) and \
        FOREGROUND in (meta(obj).get("finalizers") or [])
