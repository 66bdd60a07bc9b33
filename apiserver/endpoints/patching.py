"""PATCH: JSON patch, JSON merge patch, strategic merge patch and server-side apply.

The patch algorithms are the patch library's (`draemu.apiserver.wire.patch`); this module
is the HTTP side: content types, options, the read-patch-write loop, preconditions,
unknown fields and SSA's create-on-apply and conflicts.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from draemu.api.errors import StatusError, bad_request, conflict
from draemu.api.types import Obj
from draemu.apiserver.endpoints import fieldvalidation, managedfields
from draemu.apiserver.endpoints.scope import Scope
from draemu.apiserver.genericregistry.store import Store
from draemu.apiserver.storage.storeadapter import MODIFIED
from draemu.apiserver.wire import patch as patch_library
from draemu.apiserver.wire.codec import decode, media_type, read_body

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
PATCH_TYPES = [JSON_PATCH, MERGE_PATCH, APPLY, STRATEGIC]


def _unsupported(types: list[str]) -> StatusError:
    return StatusError(415, "UnsupportedMediaType",
                       f'the body of the request was in an unknown format - accepted media '
                       f'types include: {", ".join(types)}')


def patch_types(scope: Scope) -> list[str]:
    """Custom resources take no strategic merge patch (no patch strategies), as upstream."""
    if scope.strategy.schema_node(scope.version) is not None:
        return PATCH_TYPES[:3]
    return PATCH_TYPES


def _schema_ref(scope: Scope) -> Any:
    from draemu.openapi import schemas

    own = scope.strategy.schema_node(scope.version)
    if own is not None:
        return own
    return schemas.patch_meta(scope.resource.group, scope.version, scope.resource.kind)


def apply_patch(scope: Scope, ctype: str, current: Obj, patch: Any) -> Obj:
    lib = patch_library
    if ctype == JSON_PATCH:
        if not isinstance(patch, list):
            raise bad_request("json: cannot unmarshal object into Go value of type "
                              "jsonpatch.Patch")
        return lib.apply_json_patch(current, patch)
    if not isinstance(patch, dict):
        raise bad_request("json: cannot unmarshal array into Go value of type "
                          "map[string]interface {}")
    if ctype == MERGE_PATCH:
        return lib.apply_merge_patch(current, patch)
    return lib.apply_strategic_merge_patch(current, patch, _schema_ref(scope))


def _check_precondition(scope: Scope, patched: Obj, old: Obj) -> None:
    rv = str((patched.get("metadata") or {}).get("resourceVersion") or "")
    if rv and rv != old["metadata"]["resourceVersion"]:
        raise conflict(scope.resource.name, scope.resource.group, scope.name, MODIFIED)


def _check_identity(scope: Scope, patched: Obj) -> None:
    """A patch may not rename the object or move it to another namespace (upstream's
    checkName and BeforeCreate/BeforeUpdate, with their messages)."""
    meta = patched.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    name = meta.get("name") or ""
    if not name:
        raise bad_request(f"the name of the object ({scope.name} based on URL) was "
                          "undeterminable: name must be provided")
    if name != scope.name:
        raise bad_request(f"the name of the object ({name}) does not match the name on the "
                          f"URL ({scope.name})")
    if scope.resource.namespaced and meta.get("namespace") not in (None, "",
                                                                   scope.namespace):
        raise bad_request("the namespace of the provided object does not match the "
                          "namespace sent on the request")


def _patch_pins_rv(patch: Any) -> bool:
    if isinstance(patch, dict):
        meta = patch.get("metadata")
        return isinstance(meta, dict) and bool(meta.get("resourceVersion"))
    if isinstance(patch, list):
        return any(isinstance(op, dict) and op.get("path") == "/metadata/resourceVersion"
                   for op in patch)
    return False


def _ssa(scope: Scope, live: Obj | None, applied: Obj, manager: str, force: bool) -> Obj:
    lib = patch_library
    obj, conflicts = lib.server_side_apply(live, applied, manager, force, _schema_ref(scope),
                                           api_version=scope.api_version,
                                           subresource=scope.subresource)
    if conflicts and not force:
        error = lib.conflict_error(conflicts)
        details = {"name": scope.name}
        if scope.resource.group:
            details["group"] = scope.resource.group
        details["kind"] = scope.resource.name
        error.details = {**details, **error.details}
        raise error
    return obj


async def patch(scope: Scope, store: Store) -> web.Response:
    ctype = media_type(scope.request.headers.get("Content-Type"))
    accepted = patch_types(scope)
    if ctype not in accepted:
        raise _unsupported(accepted)
    raw = await read_body(scope.request)
    body = decode(raw, APPLY if ctype == APPLY else "application/json",
                  accepted=["application/json", APPLY])
    dry_run = scope.dry_run()
    mode = fieldvalidation.directive(scope)
    is_apply = ctype == APPLY
    if is_apply and not scope.query.get("fieldManager"):
        raise StatusError(422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: '
                          "fieldManager: Required value: is required for apply patch")
    if not is_apply and scope.query.get("force") not in (None, ""):
        raise StatusError(422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: force: '
                          "Forbidden: may not be specified for non-apply patch")
    force = scope.flag("force")
    manager = managedfields.manager(scope)
    if is_apply:
        # Upstream applies the patch as decoded (undeclared fields fail the typed apply,
        # whatever the mode), then decodes it strictly for keys given twice.
        twice = fieldvalidation.apply_duplicates(raw, mode)
        if not isinstance(body, dict):
            raise bad_request("apply patch must be an object")
        scope.check_applied_type_meta(body)
        body = fieldvalidation.check(scope, body, mode, keep_unknown=True)
        existing = await store.storage.get_latest(scope.resource, scope.namespace, scope.name)
        if existing is None and scope.subresource == "":
            # Applied over nothing: the configuration names the object (as upstream), the
            # request's namespace is the object's, owned by nobody.
            obj = _ssa(scope, None, body, manager, force)
            fieldvalidation.check_applied(scope, twice, mode)
            _check_identity(scope, obj)
            if scope.resource.namespaced:
                obj["metadata"]["namespace"] = scope.namespace
            created = await store.create(scope, obj, dry_run=dry_run, manager=manager,
                                         operation="Apply")
            return scope.respond(scope.out(created), 201)
    else:
        twice = fieldvalidation.duplicates(scope, raw, mode)

    async def propose(old: Obj) -> Obj:
        current = scope.out(old)  # the patch functions leave their input alone
        if is_apply:
            patched = _ssa(scope, current, body, manager, force)
            fieldvalidation.check_applied(scope, twice, mode)
        else:
            patched = apply_patch(scope, ctype, current, body)
            if not isinstance(patched, dict):
                raise bad_request("the patched object is not an object")
            patched = fieldvalidation.check(scope, patched, mode, old, twice)
        _check_precondition(scope, patched, old)
        _check_identity(scope, patched)
        scope.check_type_meta(patched)
        return scope.to_storage(patched)

    # JSON, merge and strategic merge patches start from a deep copy of what they patch,
    # so `propose` needs no private copy of the stored object, when it is patched as
    # stored (a conversion could share parts with its input).
    result = await store.update(scope, propose, dry_run=dry_run, manager=manager,
                                pinned=_patch_pins_rv(body),
                                operation="Apply" if is_apply else "Update",
                                private=is_apply or not scope.stored_as_served)
    return scope.respond(scope.out(result))
