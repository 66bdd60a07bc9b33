"""delete and deletecollection over HTTP: DeleteOptions from the body and the query, and
the answers (the deleted object or a Status). Preconditions, finalizers, graceful
deletion and the propagation policy are the generic store's
(`genericregistry/deletion.py`)."""

from __future__ import annotations

from aiohttp import web

from draemu.api.errors import StatusError, bad_request
from draemu.api.types import Obj
from draemu.apiserver.endpoints.rest_read import list_options, selection
from draemu.apiserver.endpoints.scope import Scope
from draemu.apiserver.genericregistry.deletion import POLICIES
from draemu.apiserver.genericregistry.store import Store
from draemu.apiserver.wire.codec import decode, parse_int, read_body


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


def success_status(scope: Scope, obj: Obj) -> Obj:
    meta = obj.get("metadata") or {}
    details: Obj = {"name": meta.get("name", "")}
    if scope.resource.group:
        details["group"] = scope.resource.group
    details["kind"] = scope.resource.name
    details["uid"] = meta.get("uid", "")
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": details}


# Upstream registries with ReturnDeletedObject: a delete answers with the object, not a
# Status (pods, service accounts, namespaces and every resource.k8s.io kind).
_RETURNS_DELETED = frozenset({("", "pods"), ("", "serviceaccounts"), ("", "namespaces")})
_RETURNS_DELETED_GROUPS = frozenset({"resource.k8s.io"})


def _returns_object(scope: Scope) -> bool:
    r = scope.resource
    return (r.group, r.name) in _RETURNS_DELETED or r.group in _RETURNS_DELETED_GROUPS


async def delete(scope: Scope, store: Store) -> web.Response:
    opts = await options(scope)
    dry_run = scope.dry_run(opts)
    obj, removed = await store.delete(scope, scope.namespace, scope.name, opts, dry_run)
    if removed and not _returns_object(scope):
        return scope.respond(success_status(scope, obj))
    return scope.respond(scope.out(obj))


async def delete_collection(scope: Scope, store: Store) -> web.Response:
    opts = await options(scope)
    dry_run = scope.dry_run(opts)
    page = await store.list(scope, selection(scope), list_options(scope))
    items = []
    for obj in page.objects:
        meta = obj["metadata"]
        try:
            done, _ = await store.delete(scope, meta.get("namespace", ""), meta["name"], opts,
                                         dry_run)
        except StatusError as e:
            if e.code == 404:
                continue
            raise
        items.append(scope.out(done))
    return scope.respond({"kind": f"{scope.resource.kind}List", "apiVersion": scope.api_version,
                          "metadata": {"resourceVersion": str(page.revision)}, "items": items})
