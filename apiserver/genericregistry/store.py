"""The generic registry store: create, update, delete, get, list and watch of every kind,
with the kind's strategy hooks and the admission chain, below the HTTP layer (upstream's
genericregistry.Store). The HTTP handlers call it with their request's scope, the
apiserver's start-up writers with a `RequestContext.system(...)`.

A create: type meta and system metadata → the mutating admission phase → managed fields
→ `prepare_for_create` → metadata and kind validation → the validating admission phase →
the store (generated names retried). An update (a read-modify-write loop): the proposed
object → the mutating phase → system metadata kept → `prepare_for_update` (or the
subresource's) → generation → validation → managed fields → the validating phase → no
write when nothing changed; an object being deleted whose last finalizer went is
deleted instead. A delete: preconditions → both admission phases → finalizers and grace
→ removed, or marked with its deletionTimestamp.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from draemu.api.errors import (
    FieldError,
    Path,
    StatusError,
    bad_request,
    conflict,
    invalid_object,
    not_found_error,
)
from draemu.api.meta import time_now
from draemu.api.types import Obj
from draemu.apiserver.admission.chain import AdmissionChain, Attributes
from draemu.apiserver.auth.authorization import Authorizer
from draemu.apiserver.genericregistry import deletion
from draemu.apiserver.genericregistry.listing import (
    ListOptions,
    Page,
    Selection,
    list_page,
    parse_revision,
)
from draemu.apiserver.genericregistry.managedfields import track
from draemu.apiserver.registry.meta import validate_object_meta, validate_object_meta_update
from draemu.apiserver.registry.request import RequestContext
from draemu.apiserver.registry.resources import ResourceTable
from draemu.apiserver.registry.strategy import Context, Strategy
from draemu.apiserver.storage.cachedobjects import CachedObjects
from draemu.apiserver.storage.storeadapter import MODIFIED, Storage, Unchanged
from draemu.apiserver.storage.watchcache import TooOld, WatchCache, Watcher
from draemu.apiserver.wire.jsoncopy import clone
from draemu.cel.offload import run_off_loop
from draemu.features import FeatureGates

# Metadata only the server sets; a client's values are dropped on create.
_SYSTEM_FIELDS = ("uid", "creationTimestamp", "deletionTimestamp",
                  "deletionGracePeriodSeconds", "resourceVersion", "selfLink", "generation")
# Subresources whose writes carry the whole object (the strategy decides what they
# may change); the others (binding, scale) are custom.
WHOLE_OBJECT_SUBRESOURCES = ("status", "finalize", "approval")
# Letters of generated name suffixes: no vowels, no look-alikes (as upstream).
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
_GENERATE_ATTEMPTS = 8

# propose(old_copy) -> the proposed object, in the storage version.
Mutation = Callable[[Obj], Awaitable[Obj]]


class DeleteInstead(Exception):  # a signal, not an error
    """An update emptied the finalizers of an object being deleted: remove it."""

    def __init__(self, obj: Obj) -> None:
        super().__init__("delete")
        self.obj = obj


class _DeleteNow(Exception):
    """The latest object has no pending finalizers and no grace: marking it would leave
    it for ever, so the caller deletes it instead (upstream decides on the latest object
    inside its retrying update, too)."""


def generate_name(prefix: str) -> str:
    if len(prefix) > 58:
        prefix = prefix[:58]
    return prefix + "".join(secrets.choice(_ALPHANUMS) for _ in range(5))


def _meta(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    if not isinstance(meta, dict):
        raise bad_request("metadata: must be an object")
    return meta


def _invalid(req: RequestContext, obj: Obj, errors: list[FieldError]) -> StatusError:
    name = (obj.get("metadata") or {}).get("name") or ""
    return invalid_object(req.resource.kind, req.resource.group, name, errors)


def _spec_part(obj: Obj, status_fields: tuple[str, ...]) -> Obj:
    return {k: v for k, v in obj.items()
            if k not in ("metadata", "apiVersion", "kind") and k not in status_fields}


def _same(new: Obj, old: Obj) -> bool:
    """No change but managedFields timestamps: upstream skips such writes."""
    def strip(obj: Obj) -> Obj:
        meta = dict(obj.get("metadata") or {})
        meta.pop("managedFields", None)
        meta.pop("resourceVersion", None)
        return {**obj, "metadata": meta}

    if strip(new) != strip(old):
        return False
    managers_new = [(m.get("manager"), m.get("operation"), m.get("fieldsV1"))
                    for m in (new.get("metadata") or {}).get("managedFields") or []]
    managers_old = [(m.get("manager"), m.get("operation"), m.get("fieldsV1"))
                    for m in (old.get("metadata") or {}).get("managedFields") or []]
    return managers_new == managers_old


class Store:
    """One per apiserver: its resources, storage, feature gates, admission chain,
    authorizer and the state strategies keep between requests."""

    def __init__(self, table: ResourceTable, storage: Storage, gates: FeatureGates,
                 admission: AdmissionChain, authorizer: Authorizer) -> None:
        self.table = table
        self.storage = storage
        self.objects = CachedObjects(table, storage.cache)
        self.gates = gates
        self.admission = admission
        self.authorizer = authorizer
        # What strategies keep between requests (Context.state), e.g. the service
        # address reservations.
        self.state: dict[str, Any] = {}

    @property
    def cache(self) -> WatchCache:
        return self.storage.cache

    def context(self, req: RequestContext, dry_run: bool = False,
                subresource: str | None = None) -> Context:
        """What the strategy knows of the request."""
        user = req.user
        return Context(gates=self.gates, user=user.name, groups=user.groups, dry_run=dry_run,
                       subresource=req.subresource if subresource is None else subresource,
                       lookup=self.objects.lookup, listing=self.objects.list_objects,
                       resource_of_kind=self.objects.resource_of_kind, version=req.version,
                       verb=req.verb, state=self.state, user_info=user,
                       authorizer=self.authorizer)

    # Reads -----------------------------------------------------------------------------
    async def get(self, req: RequestContext, resource_version: str = "") -> Obj | None:
        """The object as a GET sees it: consistent ("" resourceVersion), any cached
        state ("0"), or one at least as new as the revision asked for."""
        key = req.resource.key(req.namespace, req.name)
        if resource_version == "":
            return await self.storage.get(req.resource, req.namespace, req.name)
        if resource_version != "0":
            await self.storage.caught_up(parse_revision(resource_version))
        return self.cache.get(key)

    async def list(self, req: RequestContext, sel: Selection, opts: ListOptions) -> Page:
        return await list_page(self.storage, req.resource.namespace_prefix(req.namespace),
                               sel, opts)

    async def watch(self, req: RequestContext, sel: Selection, resource_version: str,
                    initial: bool) -> tuple[list[Obj], int, Watcher | TooOld]:
        """(initial objects, the revision they are at, the watcher of changes after it
        or why there is none). With `initial`, the objects selected now; else none, and
        changes after `resource_version` ("" or "0": from now on)."""
        cache = self.cache
        prefix = req.resource.namespace_prefix(req.namespace)
        if resource_version == "":
            await self.storage.caught_up()
        elif resource_version != "0":
            await self.storage.caught_up(parse_revision(resource_version))
        # Snapshot and registration happen without an await in between, so no change is
        # lost or seen twice.
        if initial:
            snapshot = [obj for _, obj in cache.list(prefix) if sel.matches(obj)]
            return snapshot, cache.revision, cache.watch(prefix, cache.revision)
        start = cache.revision if resource_version in ("", "0") else \
            parse_revision(resource_version)
        try:
            return [], start, cache.watch(prefix, start)
        except TooOld as e:
            return [], start, e

    # Create ----------------------------------------------------------------------------
    async def create(self, req: RequestContext, obj: Obj, *, dry_run: bool, manager: str,
                     operation: str = "Update") -> Obj:
        """Create a decoded request-version object (type meta and namespace checked)."""
        strategy = req.strategy
        obj = req.to_storage(obj)
        meta = _meta(obj)
        for name in _SYSTEM_FIELDS:
            meta.pop(name, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = time_now()
        if strategy.has_generation:
            meta["generation"] = 1
        wanted_name = meta.get("name") or ""
        prefix = meta.get("generateName") or ""
        if not wanted_name and prefix:
            meta["name"] = generate_name(prefix)
        attrs = Attributes("CREATE", req, obj, None, dry_run, "")
        await self.admission.admit(attrs)
        obj = attrs.obj
        assert obj is not None
        await self._before_create(req, obj, manager, operation, dry_run, wanted_name)
        await self.admission.validate(attrs)
        if dry_run:
            return obj
        return await self._store_new(req, obj, wanted_name, prefix)

    async def _validated(self, strategy: Strategy, ctx: Context,
                         check: Callable[[], list[FieldError]]) -> list[FieldError]:
        """A strategy's validation: off the event loop when it may evaluate CEL for
        seconds (custom resources' rules), so other requests go on meanwhile."""
        if not strategy.long_validation(ctx):
            return check()

        def run(deadline: float) -> list[FieldError]:
            ctx.cel_deadline = deadline
            return check()
        return await run_off_loop(run)

    async def _before_create(self, req: RequestContext, obj: Obj, manager: str,
                             operation: str, dry_run: bool, wanted_name: str) -> None:
        """Managed fields, the strategy's preparation and validation (upstream's
        BeforeCreate)."""
        strategy = req.strategy
        meta = _meta(obj)
        if operation != "Apply":  # server-side apply has set managedFields itself
            # On the decoded, defaulted object, before the strategy's admission-like
            # additions (default tolerations, service account, priority), which upstream's
            # field manager never sees either: nobody owns those. Status sent with a create
            # is dropped for kinds with /status, so it is not owned either (upstream's
            # reset fields). The copy shares `metadata`, where managedFields are written.
            owned = obj if "status" not in strategy.subresources else {
                k: v for k, v in obj.items() if k not in strategy.status_fields}
            track(req, None, owned, manager, operation)
        ctx = self.context(req, dry_run=dry_run, subresource="")
        # As upstream's BeforeCreate: uid, creationTimestamp and the name are set by now.
        strategy.prepare_for_create(obj, ctx)
        errors = validate_object_meta(meta, strategy.namespaced, Path("metadata"),
                                      strategy.validate_name)
        errors += await self._validated(strategy, ctx, lambda: strategy.validate(obj, ctx))
        if errors:
            if not wanted_name:
                meta.pop("name", None)
            raise _invalid(req, obj, errors)
        req.warnings.extend(strategy.warnings(obj, ctx))

    async def _store_new(self, req: RequestContext, obj: Obj, wanted_name: str,
                         prefix: str) -> Obj:
        meta = obj["metadata"]
        for _ in range(_GENERATE_ATTEMPTS):
            try:
                return await self.storage.create(req.resource, obj)
            except StatusError as e:
                if e.reason != "AlreadyExists" or wanted_name or not prefix:
                    raise
                meta["name"] = generate_name(prefix)
        raise StatusError(409, "AlreadyExists",
                          f'{req.resource.qualified} "{meta["name"]}" already exists, the '
                          "server was not able to generate a unique name for the object",
                          {"name": meta["name"], "kind": req.resource.name})

    # Update ----------------------------------------------------------------------------
    async def update(self, req: RequestContext, propose: Mutation, *, dry_run: bool,
                     manager: str, pinned: bool, operation: str = "Update",
                     private: bool = True) -> Obj:
        """The read-modify-write loop: `propose(old_copy)` returns the proposed object in
        storage version; `pinned` when the client fixed the resourceVersion (no retries).
        `private=False`: `propose` only reads the stored object (it gets the shared one)."""
        # What the loop ended with when it did not write: "dry_run" holds the object that
        # would have been stored, "delete" one whose last finalizer just went.
        outcome: dict[str, Obj] = {}

        async def fn(private_copy: Obj, old: Obj) -> Obj:
            outcome.clear()  # a try on a stale copy is tried again
            attrs = Attributes("UPDATE", req, await propose(private_copy), old, dry_run,
                               req.subresource)
            await self.admission.admit(attrs)
            assert attrs.obj is not None
            try:
                prepared = await self._prepare_update(req, attrs, dry_run, manager, operation)
            except DeleteInstead as d:
                outcome["delete"] = d.obj
                raise Unchanged() from None
            if dry_run:
                outcome["dry_run"] = prepared
                raise Unchanged()
            return prepared

        new, old = await self.storage.update(req.resource, req.namespace, req.name, fn,
                                             retry=not pinned, private=private)
        if "dry_run" in outcome:
            return outcome["dry_run"]
        if "delete" in outcome:
            if dry_run:
                return outcome["delete"]
            return await self.storage.delete(req.resource, req.namespace, req.name,
                                             int(old["metadata"]["resourceVersion"]))
        return new

    async def _prepare_update(self, req: RequestContext, attrs: Attributes, dry_run: bool,
                              manager: str, operation: str) -> Obj:
        """Everything between a proposed new object (storage version, admitted) and the
        write. Raises Unchanged for no-ops and DeleteInstead when the last finalizer
        went."""
        new, old = attrs.obj, attrs.old
        assert new is not None and old is not None
        strategy = req.strategy
        ctx = self.context(req, dry_run=dry_run)
        meta, old_meta = _meta(new), old.get("metadata") or {}
        _keep_system_metadata(meta, old_meta)
        sub = req.subresource
        whole_object_sub = sub in WHOLE_OBJECT_SUBRESOURCES
        if whole_object_sub:
            # Status-like writes cannot change what the main resource owns.
            for name in strategy.status_meta_reset:
                if name in old_meta:
                    meta[name] = clone(old_meta[name])
                else:
                    meta.pop(name, None)
            strategy.prepare_for_subresource_update(sub, new, old, ctx)
        elif sub == "":
            strategy.prepare_for_update(new, old, ctx)
        if strategy.has_generation and _spec_part(new, strategy.status_fields) != \
                _spec_part(old, strategy.status_fields):
            meta["generation"] = int(old_meta.get("generation") or 0) + 1
        errors = validate_object_meta_update(meta, old_meta, Path("metadata"))
        if whole_object_sub:
            errors += await self._validated(strategy, ctx, lambda: (
                strategy.validate_subresource_update(sub, new, old, ctx)))
        elif sub == "":
            # Custom subresources (binding, scale) change only what they own, and check it
            # themselves.
            errors += await self._validated(strategy, ctx, lambda: (
                strategy.validate_update(new, old, ctx)))
        if errors:
            raise _invalid(req, new, errors)
        req.warnings.extend(strategy.warnings(new, ctx))
        # A binding writes no managedFields entry: upstream's BindingREST updates the pod
        # below the field manager.
        if operation != "Apply" and sub != "binding":
            track(req, old, new, manager, operation)
        await self.admission.validate(attrs)
        if _same(new, old):
            raise Unchanged()
        if meta.get("deletionTimestamp") and not deletion.pending_finalizers(req.resource, new) \
                and not int(meta.get("deletionGracePeriodSeconds") or 0):
            raise DeleteInstead(new)
        return new

    # Delete ----------------------------------------------------------------------------
    async def delete(self, req: RequestContext, namespace: str, name: str, opts: Obj,
                     dry_run: bool) -> tuple[Obj, bool]:
        """Delete with DeleteOptions `opts`. Returns (object, removed): the last state
        when removed, else the object now marked for deletion."""
        resource = req.resource
        while True:
            obj = await self.storage.get_latest(resource, namespace, name)
            if obj is None:
                raise not_found_error(resource.name, resource.group, name)
            deletion.check_preconditions(resource, opts, obj)
            meta = obj["metadata"]
            attrs = Attributes("DELETE", req, None, obj, dry_run, req.subresource)
            await self.admission.admit(attrs)
            await self.admission.validate(attrs)
            grace = deletion.grace_seconds(resource, opts, obj)
            marked = clone(obj)
            if not meta.get("deletionTimestamp"):
                req.strategy.prepare_for_delete(marked)
            deletion.apply_finalizers(opts, marked)
            if not deletion.pending_finalizers(resource, marked) and grace == 0:
                if dry_run:
                    return obj, True
                try:
                    gone = await self.storage.delete(resource, namespace, name,
                                                     int(meta["resourceVersion"]))
                except StatusError as e:
                    if e.reason == "Conflict":
                        continue  # changed under us: decide again on the new state
                    raise
                return gone, True
            if deletion.is_namespace(resource) and meta.get("deletionTimestamp"):
                raise conflict("namespaces", "", name, deletion.NAMESPACE_TERMINATING)
            try:
                return await self._mark(req, namespace, name, opts, grace, dry_run), False
            except _DeleteNow:
                continue  # the last finalizer went meanwhile: delete at once instead

    async def _mark(self, req: RequestContext, namespace: str, name: str, opts: Obj,
                    grace: int, dry_run: bool) -> Obj:
        """Set deletionTimestamp (or shorten a pending grace period) and the finalizers."""
        resource = req.resource
        marked: dict[str, Obj] = {}

        async def fn(obj: Obj, before: Obj) -> Obj:
            marked.clear()  # a try on a stale copy is tried again
            deletion.check_preconditions(resource, opts, obj)
            if not obj["metadata"].get("deletionTimestamp"):
                req.strategy.prepare_for_delete(obj)
            deletion.apply_finalizers(opts, obj)
            if grace == 0 and not deletion.pending_finalizers(resource, obj):
                raise _DeleteNow()
            deletion.mark_deleted(resource, obj, grace)
            if obj == before or dry_run:
                marked["obj"] = obj
                raise Unchanged()
            return obj

        new, _ = await self.storage.update(resource, namespace, name, fn)
        return marked.get("obj", new)


def _keep_system_metadata(meta: Obj, old_meta: Obj) -> None:
    """What an update may not change of the metadata the server set."""
    if not meta.get("uid"):
        meta["uid"] = old_meta.get("uid")
    for name in ("creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                 "generation"):
        if name in old_meta:
            meta[name] = old_meta[name]
        else:
            meta.pop(name, None)
    if not meta.get("resourceVersion"):
        meta["resourceVersion"] = old_meta.get("resourceVersion")
    if "managedFields" not in meta and "managedFields" in old_meta:
        meta["managedFields"] = clone(old_meta["managedFields"])


def check_resource_version(req: RequestContext, proposed_rv: str, old: Obj) -> None:
    """A write that names a resourceVersion is refused when the object moved on."""
    if proposed_rv and proposed_rv != old["metadata"]["resourceVersion"]:
        raise conflict(req.resource.name, req.resource.group, req.name, MODIFIED)
