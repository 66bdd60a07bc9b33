"""create and update (PUT) over HTTP: the body, its type meta, unknown and duplicate
fields (fieldValidation), the name and namespace against the URL; the write itself is
the generic registry store's (`genericregistry.store`).
"""

from __future__ import annotations

from aiohttp import web

from draemu.api.errors import bad_request
from draemu.api.types import Obj
from draemu.apiserver.endpoints import fieldvalidation, managedfields
from draemu.apiserver.endpoints.scope import Scope
from draemu.apiserver.genericregistry.store import Store, check_resource_version
from draemu.apiserver.wire.codec import decode, read_body
from draemu.apiserver.wire.jsoncopy import clone


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


async def create(scope: Scope, store: Store) -> web.Response:
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
    stored = await store.create(scope, obj, dry_run=dry_run, manager=manager)
    return scope.respond(scope.out(stored), 201)


async def update(scope: Scope, store: Store) -> web.Response:
    body = await body_object(scope)
    dry_run = scope.dry_run()
    mode = fieldvalidation.directive(scope)
    manager = managedfields.manager(scope)
    scope.check_type_meta(body)
    twice = fieldvalidation.duplicates(scope, await read_body(scope.request), mode)
    body = fieldvalidation.check(scope, body, mode, fieldvalidation.cached(scope, store),
                                 twice)
    meta = _meta(body)
    if meta.get("name") and meta["name"] != scope.name:
        raise bad_request(f"the name of the object ({meta['name']}) does not match the name "
                          f"on the URL ({scope.name})")
    meta["name"] = scope.name
    _set_namespace(scope, meta)
    proposed_rv = str(meta.get("resourceVersion") or "")
    new_storage = scope.to_storage(body)

    pinned = bool(proposed_rv)

    async def propose(old: Obj) -> Obj:
        check_resource_version(scope, proposed_rv, old)
        # A pinned update is tried once (a conflict is the client's to resolve), so the
        # body itself can be changed; otherwise each retry starts from a fresh copy.
        return new_storage if pinned else clone(new_storage)

    # The body replaces the stored object: `old` is only read (no private copy of it).
    result = await store.update(scope, propose, dry_run=dry_run, manager=manager,
                                pinned=pinned, private=False)
    return scope.respond(scope.out(result))
