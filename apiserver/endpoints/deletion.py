"""delete and deletecollection: preconditions, finalizers, graceful deletion and the
propagation policy, which is recorded as the `orphan` / `foregroundDeletion`
finalizers for the garbage collector, as upstream does."""

from __future__ import annotations

import datetime

from aiohttp import web

from draemu.api.errors import StatusError, bad_request, conflict, not_found_error
from draemu.api.meta import format_time, now
from draemu.api.types import Obj
from draemu.apiserver.endpoints.rest_read import list_objects, selection
from draemu.apiserver.endpoints.rest_write import pending_finalizers
from draemu.apiserver.endpoints.scope import Scope
from draemu.apiserver.storage.storeadapter import Storage, Unchanged
from draemu.apiserver.wire.codec import decode, parse_int, read_body
from draemu.apiserver.wire.jsoncopy import clone

ORPHAN = "orphan"
FOREGROUND = "foregroundDeletion"
POLICIES = ("Orphan", "Background", "Foreground")
POD_DEFAULT_GRACE = 30
_NAMESPACE_TERMINATING = ("The system is ensuring all content is removed from this namespace.  "
                          "Upon completion, this namespace will automatically be purged by the "
                          "system.")


def _is_namespace(scope: Scope) -> bool:
    return scope.resource.group == "" and scope.resource.name == "namespaces"


async def options(scope: Scope) -> Obj:
    """DeleteOptions from the body (optional) and the query (query wins, as upstream
    merges them)."""
    raw = await read_body(scope.request)
    opts: Obj = {}
    if raw.strip():
        body = decode(raw, scope.request.headers.get("Content-Type"))
        if not isinstance(body, dict):
            raise bad_request("DeleteOptions must be an object")
        opts = body
    q = scope.query
    grace = parse_int(q.get("gracePeriodSeconds"), "gracePeriodSeconds")
    if grace is not None:
        opts["gracePeriodSeconds"] = grace
    if q.get("propagationPolicy"):
        opts["propagationPolicy"] = q["propagationPolicy"]
    if q.get("orphanDependents"):
        opts["orphanDependents"] = scope.flag("orphanDependents")
    policy = opts.get("propagationPolicy")
    if policy is not None and policy not in POLICIES:
        raise StatusError(422, "Invalid", f'propagationPolicy: Unsupported value: "{policy}": '
                          'supported values: "Background", "Foreground", "Orphan"')
    if policy is not None and opts.get("orphanDependents") is not None:
        raise StatusError(422, "Invalid", "orphanDependents: Invalid value: "
                          f"{str(opts['orphanDependents']).lower()}: orphanDependents and "
                          "deletionPropagation cannot be both set")
    return opts


def _check_preconditions(scope: Scope, opts: Obj, obj: Obj) -> None:
    pre = opts.get("preconditions") or {}
    meta = obj["metadata"]
    if pre.get("uid") and pre["uid"] != meta.get("uid"):
        raise conflict(scope.resource.name, scope.resource.group, meta["name"],
                       f"Precondition failed: UID in precondition: {pre['uid']}, UID in object "
                       f"meta: {meta.get('uid')}")
    if pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion"):
        raise conflict(scope.resource.name, scope.resource.group, meta["name"],
                       f"Precondition failed: ResourceVersion in precondition: "
                       f"{pre['resourceVersion']}, ResourceVersion in object meta: "
                       f"{meta.get('resourceVersion')}")


def _finalizers(opts: Obj, current: list[str]) -> list[str]:
    policy = opts.get("propagationPolicy")
    if policy is None and opts.get("orphanDependents") is not None:
        policy = "Orphan" if opts["orphanDependents"] else "Background"
    out = list(current)
    if policy == "Orphan":
        out = [f for f in out if f != FOREGROUND]
        if ORPHAN not in out:
            out.append(ORPHAN)
    elif policy == "Foreground":
        out = [f for f in out if f != ORPHAN]
        if FOREGROUND not in out:
            out.append(FOREGROUND)
    elif policy == "Background":
        out = [f for f in out if f not in (ORPHAN, FOREGROUND)]
    return out


def _grace_seconds(scope: Scope, opts: Obj, obj: Obj) -> int:
    """Pods on a node get their grace period (the kubelet finishes the deletion);
    everything else goes at once."""
    asked = opts.get("gracePeriodSeconds")
    if not (scope.resource.group == "" and scope.resource.name == "pods"):
        return 0
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
        return 0
    if asked is not None:
        return max(int(asked), 0)
    value = spec.get("terminationGracePeriodSeconds")
    return int(value) if value is not None else POD_DEFAULT_GRACE


def success_status(scope: Scope, obj: Obj) -> Obj:
    meta = obj.get("metadata") or {}
    details: Obj = {"name": meta.get("name", "")}
    if scope.resource.group:
        details["group"] = scope.resource.group
    details["kind"] = scope.resource.name
    details["uid"] = meta.get("uid", "")
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": details}


async def delete_one(scope: Scope, storage: Storage, namespace: str, name: str, opts: Obj,
                     dry_run: bool) -> tuple[Obj, bool]:
    """Returns (object, removed): the last state when removed, else the object now
    marked for deletion."""
    resource = scope.resource
    while True:
        obj = await storage.get_latest(resource, namespace, name)
        if obj is None:
            raise not_found_error(resource.name, resource.group, name)
        _check_preconditions(scope, opts, obj)
        meta = obj["metadata"]
        scope.admit("DELETE", None, obj, dry_run)
        await scope.admit_webhooks("DELETE", None, obj, dry_run)
        grace = _grace_seconds(scope, opts, obj)
        marked = clone(obj)
        if not meta.get("deletionTimestamp"):
            scope.strategy.prepare_for_delete(marked)
        finalizers = _finalizers(opts, marked["metadata"].get("finalizers") or [])
        marked["metadata"]["finalizers"] = finalizers
        if not finalizers:
            marked["metadata"].pop("finalizers", None)
        if not pending_finalizers(scope, marked) and grace == 0:
            if dry_run:
                return obj, True
            try:
                gone = await storage.delete(resource, namespace, name,
                                            int(meta["resourceVersion"]))
            except StatusError as e:
                if e.reason == "Conflict":
                    continue  # changed under us: decide again on the new state
                raise
            return gone, True
        if _is_namespace(scope) and meta.get("deletionTimestamp"):
            raise conflict("namespaces", "", name, _NAMESPACE_TERMINATING)
        try:
            return await _mark(scope, storage, namespace, name, opts, grace, dry_run), False
        except _DeleteNow:
            continue  # the last finalizer went meanwhile: delete at once instead


class _DeleteNow(Exception):
    """The latest object has no pending finalizers and no grace: marking it would leave
    it for ever, so the caller deletes it instead (upstream decides on the latest object
    inside its retrying update, too)."""


async def _mark(scope: Scope, storage: Storage, namespace: str, name: str, opts: Obj,
                grace: int, dry_run: bool) -> Obj:
    """Set deletionTimestamp (or shorten a pending grace period) and the finalizers."""
    marked: dict[str, Obj] = {}

    async def fn(obj: Obj, before: Obj) -> Obj:
        marked.clear()  # a try on a stale copy is tried again
        _check_preconditions(scope, opts, obj)
        meta = obj["metadata"]
        if not meta.get("deletionTimestamp"):
            scope.strategy.prepare_for_delete(obj)
        finalizers = _finalizers(opts, meta.get("finalizers") or [])
        if finalizers:
            meta["finalizers"] = finalizers
        else:
            meta.pop("finalizers", None)
        if grace == 0 and not pending_finalizers(scope, obj):
            raise _DeleteNow()
        deadline = now() + datetime.timedelta(seconds=grace)
        current = meta.get("deletionGracePeriodSeconds")
        if not meta.get("deletionTimestamp"):
            meta["deletionTimestamp"] = format_time(deadline)
            meta["deletionGracePeriodSeconds"] = grace
            if meta.get("generation"):
                meta["generation"] = int(meta["generation"]) + 1
        elif current is not None and grace < int(current):
            meta["deletionTimestamp"] = format_time(deadline)
            meta["deletionGracePeriodSeconds"] = grace
        if _is_namespace(scope):
            obj.setdefault("status", {})["phase"] = "Terminating"
        if obj == before or dry_run:
            marked["obj"] = obj
            raise Unchanged()
        return obj

    new, _ = await storage.update(scope.resource, namespace, name, fn)
    return marked.get("obj", new)


# Upstream registries with ReturnDeletedObject: a delete answers with the object, not a
# Status (pods, service accounts, namespaces and every resource.k8s.io kind).
_RETURNS_DELETED = frozenset({("", "pods"), ("", "serviceaccounts"), ("", "namespaces")})
_RETURNS_DELETED_GROUPS = frozenset({"resource.k8s.io"})


def _returns_object(scope: Scope) -> bool:
    r = scope.resource
    return (r.group, r.name) in _RETURNS_DELETED or r.group in _RETURNS_DELETED_GROUPS


async def delete(scope: Scope, storage: Storage) -> web.Response:
    opts = await options(scope)
    dry_run = scope.dry_run(opts)
    obj, removed = await delete_one(scope, storage, scope.namespace, scope.name, opts,
                                    dry_run)
    if removed and not _returns_object(scope):
        return scope.respond(success_status(scope, obj))
    return scope.respond(scope.out(obj))


async def delete_collection(scope: Scope, storage: Storage) -> web.Response:
    opts = await options(scope)
    dry_run = scope.dry_run(opts)
    sel = selection(scope)
    page = await list_objects(scope, storage, sel)
    items = []
    for obj in page.objects:
        meta = obj["metadata"]
        try:
            done, _ = await delete_one(scope, storage, meta.get("namespace", ""), meta["name"],
                                       opts, dry_run)
        except StatusError as e:
            if e.code == 404:
                continue
            raise
        items.append(scope.out(done))
    return scope.respond({"kind": f"{scope.resource.kind}List", "apiVersion": scope.api_version,
                          "metadata": {"resourceVersion": str(page.revision)}, "items": items})
