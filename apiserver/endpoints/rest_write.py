"""create, update (PUT) and the update pipeline shared by PUT, PATCH and subresources.

Order follows kube's generic registry: decode → type meta → unknown fields →
default (request version) → convert to storage → system metadata → strategy
prepare → metadata + kind validation → admission of namespace state → field
managers → dry run or store.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Awaitable, Callable

from aiohttp import web

from draemu.api.errors import (
    FieldError,
    Path,
    StatusError,
    bad_request,
    conflict,
    forbidden_error,
    invalid_object,
    not_found_error,
)
from draemu.api.meta import time_now
from draemu.api.types import Obj
from draemu.apiserver.admission import noderestriction, quotaadmission
from draemu.apiserver.auth.authorization import Attributes
from draemu.apiserver.endpoints import fieldvalidation, managedfields
from draemu.apiserver.endpoints.scope import Scope
from draemu.apiserver.registry.meta import validate_object_meta, validate_object_meta_update
from draemu.apiserver.storage.storeadapter import MODIFIED, Storage, Unchanged
from draemu.apiserver.wire.codec import decode, read_body
from draemu.apiserver.wire.jsoncopy import clone

# Metadata only the server sets; a client's values are dropped on create.
_SYSTEM_FIELDS = ("uid", "creationTimestamp", "deletionTimestamp",
                  "deletionGracePeriodSeconds", "resourceVersion", "selfLink", "generation")
# Subresources whose writes carry the whole object (the strategy decides what they
# may change); the others (binding, scale) are custom.
WHOLE_OBJECT_SUBRESOURCES = ("status", "finalize", "approval")
# Letters of generated name suffixes: no vowels, no look-alikes (as upstream).
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
_GENERATE_ATTEMPTS = 8


class DeleteInstead(Exception):  # a signal, not an error
    """An update emptied the finalizers of an object being deleted: remove it."""

    def __init__(self, obj: Obj) -> None:
        super().__init__("delete")
        self.obj = obj


def generate_name(prefix: str) -> str:
    if len(prefix) > 58:
        prefix = prefix[:58]
    return prefix + "".join(secrets.choice(_ALPHANUMS) for _ in range(5))


async def body_object(scope: Scope) -> Obj:
    raw = await read_body(scope.request)
    obj = decode(raw, scope.request.headers.get("Content-Type"))
    if not isinstance(obj, dict):
        raise bad_request(f"Object 'Kind' is missing in '{raw[:200].decode(errors='replace')}'")
    return obj


def _meta(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    if not isinstance(meta, dict):
        raise bad_request("metadata: must be an object")
    return meta


def _invalid(scope: Scope, obj: Obj, errors: list[FieldError]) -> StatusError:
    name = (obj.get("metadata") or {}).get("name") or ""
    return invalid_object(scope.resource.kind, scope.resource.group, name, errors)


async def check_namespace_accepts(scope: Scope, storage: Storage, name: str) -> None:
    """No new objects in a missing or terminating namespace.

    A namespace the watch cache does not know yet may have been created a moment ago
    through another apiserver on the same store: as upstream's NamespaceLifecycle, a
    miss is checked against the store itself before the create is refused."""
    if not scope.resource.namespaced:
        return
    ns = scope.lookup("namespaces", "", "", scope.namespace)
    if ns is None and scope.resources is not None:
        namespaces = scope.resources.by_group_resource("", "namespaces")
        if namespaces is not None:
            ns = await storage.get_latest(namespaces, "", scope.namespace)
    if ns is None:
        raise not_found_error("namespaces", "", scope.namespace)
    if (ns.get("metadata") or {}).get("deletionTimestamp") or \
            (ns.get("status") or {}).get("phase") == "Terminating":
        qualified = scope.resource.qualified
        raise forbidden_error(
            f'{qualified} "{name}" is forbidden: unable to create new content in namespace '
            f'{scope.namespace} because it is being terminated',
            {"name": name, **({"group": scope.resource.group} if scope.resource.group else {}),
             "kind": scope.resource.name,
             "causes": [{"reason": "NamespaceTerminating",
                         "message": f"namespace {scope.namespace} is being terminated",
                         "field": "metadata.namespace"}]})


def _set_namespace(scope: Scope, meta: Obj) -> None:
    if scope.resource.namespaced:
        ns = meta.get("namespace") or ""
        if not ns:
            meta["namespace"] = scope.namespace
        elif ns != scope.namespace:
            raise bad_request("the namespace of the provided object does not match the "
                              "namespace sent on the request")
    else:
        meta.pop("namespace", None)


def to_storage(scope: Scope, obj: Obj) -> Obj:
    strategy = scope.strategy
    strategy.default(obj, scope.version)
    return strategy.to_storage(obj, scope.version)


async def create(scope: Scope, storage: Storage) -> web.Response:
    obj = await body_object(scope)
    dry_run = scope.dry_run()
    mode = fieldvalidation.directive(scope)
    manager = managedfields.manager(scope)
    scope.check_type_meta(obj)
    twice = fieldvalidation.duplicates(scope, await read_body(scope.request), mode)
    obj = fieldvalidation.check(scope, obj, mode, duplicate=twice)
    if _meta(obj).get("resourceVersion"):
        raise bad_request("resourceVersion should not be set on objects to be created")
    _set_namespace(scope, _meta(obj))
    stored = await create_object(scope, storage, obj, dry_run=dry_run, manager=manager)
    return scope.respond(scope.out(stored), 201)


async def create_object(scope: Scope, storage: Storage, obj: Obj, *, dry_run: bool,
                        manager: str, operation: str = "Update") -> Obj:
    """Create a decoded request-version object (type meta and namespace checked)."""
    strategy = scope.strategy
    obj = to_storage(scope, obj)
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
    obj = await scope.mutate("CREATE", obj, None, dry_run, subresource="")
    meta = _meta(obj)
    if operation != "Apply":  # server-side apply has set managedFields itself
        # On the decoded, defaulted object, before the strategy's admission-like
        # additions (default tolerations, service account, priority), which upstream's
        # field manager never sees either: nobody owns those. Status sent with a create
        # is dropped for kinds with /status, so it is not owned either (upstream's
        # reset fields). The copy shares `metadata`, where managedFields are written.
        owned = obj if "status" not in strategy.subresources else {
            k: v for k, v in obj.items() if k not in strategy.status_fields}
        managedfields.track(scope, None, owned, manager, operation)
    ctx = scope.context(dry_run=dry_run, subresource="")
    # As upstream's BeforeCreate: uid, creationTimestamp and the name are set by now.
    strategy.prepare_for_create(obj, ctx)
    errors = validate_object_meta(meta, strategy.namespaced, Path("metadata"),
                                  strategy.validate_name)
    errors += strategy.validate(obj, ctx)
    if errors:
        if not wanted_name:
            meta.pop("name", None)
        raise _invalid(scope, obj, errors)
    await check_namespace_accepts(scope, storage, meta["name"])
    quotaadmission.admit(scope.resource.name, scope.resource.group, meta.get("namespace", ""),
                         meta["name"], obj, scope.listing or (lambda *_: []),
                         scope.resource.qualified)
    scope.warnings.extend(strategy.warnings(obj, ctx))
    scope.admit("CREATE", obj, None, dry_run, subresource="")
    await scope.admit_webhooks("CREATE", obj, None, dry_run, subresource="")
    if dry_run:
        return obj
    for _ in range(_GENERATE_ATTEMPTS):
        try:
            return await storage.create(scope.resource, obj)
        except StatusError as e:
            if e.reason != "AlreadyExists" or wanted_name or not prefix:
                raise
            meta["name"] = generate_name(prefix)
    raise StatusError(409, "AlreadyExists",
                      f'{scope.resource.qualified} "{meta["name"]}" already exists, the server '
                      "was not able to generate a unique name for the object",
                      {"name": meta["name"], "kind": scope.resource.name})


def pending_finalizers(scope: Scope, obj: Obj) -> bool:
    """Whether something still has to finish before a deleted object may go."""
    if (obj.get("metadata") or {}).get("finalizers"):
        return True
    # A namespace also waits for its spec.finalizers (the namespace controller empties
    # them through /finalize).
    return scope.resource.group == "" and scope.resource.name == "namespaces" and \
        bool((obj.get("spec") or {}).get("finalizers"))


def _spec_part(obj: Obj, status_fields: tuple[str, ...]) -> Obj:
    return {k: v for k, v in obj.items()
            if k not in ("metadata", "apiVersion", "kind") and k not in status_fields}


def prepare_update(scope: Scope, new: Obj, old: Obj, *, dry_run: bool, manager: str,
                   operation: str = "Update") -> Obj:
    """Everything between a proposed new object (storage version) and the write.
    Raises Unchanged for no-ops and DeleteInstead when the last finalizer went."""
    strategy = scope.strategy
    if scope.user.node_name is not None:
        # NodeRestriction sees the proposed object (a PUT's body or a patch's result)
        # against the stored one, before the subresource's resets, as upstream admits it.
        info = scope.info
        noderestriction.admit_update(
            Attributes(scope.user, info.verb, info.group, info.version, info.resource,
                       info.subresource, scope.namespace, scope.name), new, old)
    ctx = scope.context(dry_run=dry_run)
    meta, old_meta = _meta(new), old.get("metadata") or {}
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
    sub = scope.subresource
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
        errors += strategy.validate_subresource_update(sub, new, old, ctx)
    elif sub == "":
        # Custom subresources (binding, scale) change only what they own, and check it
        # themselves.
        errors += strategy.validate_update(new, old, ctx)
    if errors:
        raise _invalid(scope, new, errors)
    scope.warnings.extend(strategy.warnings(new, ctx))
    scope.admit("UPDATE", new, old, dry_run)
    # A binding writes no managedFields entry: upstream's BindingREST updates the pod
    # below the field manager.
    if operation != "Apply" and scope.subresource != "binding":
        managedfields.track(scope, old, new, manager, operation)
    if _same(new, old):
        raise Unchanged()
    if meta.get("deletionTimestamp") and not pending_finalizers(scope, new) and \
            not int(meta.get("deletionGracePeriodSeconds") or 0):
        raise DeleteInstead(new)
    return new


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


Mutation = Callable[[Obj], Awaitable[Obj]]


async def run_update(scope: Scope, storage: Storage, propose: Mutation, *, dry_run: bool,
                     manager: str, pinned: bool, operation: str = "Update",
                     private: bool = True) -> Obj:
    """The read-modify-write loop: `propose(old_copy)` returns the proposed object in
    storage version; `pinned` when the client fixed the resourceVersion (no retries).
    `private=False`: `propose` only reads the stored object (it gets the shared one)."""
    # What the loop ended with when it did not write: "dry_run" holds the object that
    # would have been stored, "delete" one whose last finalizer just went.
    outcome: dict[str, Obj] = {}

    async def fn(private: Obj, old: Obj) -> Obj:
        outcome.clear()  # a try on a stale copy is tried again
        new = await scope.mutate("UPDATE", await propose(private), old, dry_run)
        try:
            prepared = prepare_update(scope, new, old, dry_run=dry_run, manager=manager,
                                      operation=operation)
        except DeleteInstead as d:
            outcome["delete"] = d.obj
            raise Unchanged() from None
        await scope.admit_webhooks("UPDATE", prepared, old, dry_run)
        if dry_run:
            outcome["dry_run"] = prepared
            raise Unchanged()
        return prepared

    new, old = await storage.update(scope.resource, scope.namespace, scope.name, fn,
                                    retry=not pinned, private=private)
    if "dry_run" in outcome:
        return outcome["dry_run"]
    if "delete" in outcome:
        if dry_run:
            return outcome["delete"]
        return await storage.delete(scope.resource, scope.namespace, scope.name,
                                    int(old["metadata"]["resourceVersion"]))
    return new


def check_resource_version(scope: Scope, proposed_rv: str, old: Obj) -> None:
    if proposed_rv and proposed_rv != old["metadata"]["resourceVersion"]:
        raise conflict(scope.resource.name, scope.resource.group, scope.name, MODIFIED)


async def update(scope: Scope, storage: Storage) -> web.Response:
    body = await body_object(scope)
    dry_run = scope.dry_run()
    mode = fieldvalidation.directive(scope)
    manager = managedfields.manager(scope)
    scope.check_type_meta(body)
    twice = fieldvalidation.duplicates(scope, await read_body(scope.request), mode)
    body = fieldvalidation.check(scope, body, mode, fieldvalidation.cached(scope, storage),
                                 twice)
    meta = _meta(body)
    if meta.get("name") and meta["name"] != scope.name:
        raise bad_request(f"the name of the object ({meta['name']}) does not match the name "
                          f"on the URL ({scope.name})")
    meta["name"] = scope.name
    _set_namespace(scope, meta)
    proposed_rv = str(meta.get("resourceVersion") or "")
    new_storage = to_storage(scope, body)

    pinned = bool(proposed_rv)

    async def propose(old: Obj) -> Obj:
        check_resource_version(scope, proposed_rv, old)
        # A pinned update is tried once (a conflict is the client's to resolve), so the
        # body itself can be changed; otherwise each retry starts from a fresh copy.
        return new_storage if pinned else clone(new_storage)

    # The body replaces the stored object: `old` is only read (no private copy of it).
    result = await run_update(scope, storage, propose, dry_run=dry_run, manager=manager,
                              pinned=pinned, private=False)
    return scope.respond(scope.out(result))
