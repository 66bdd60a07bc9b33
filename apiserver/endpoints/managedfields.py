"""Field managers: who wrote a request, and the `metadata.managedFields` bookkeeping
(delegated to the patch library's `update_managed_fields`)."""

from __future__ import annotations

from draemu.api.errors import StatusError
from draemu.api.meta import time_now
from draemu.api.types import Obj
from draemu.apiserver.endpoints.scope import Scope
from draemu.apiserver.wire.patch import manager_from_user_agent, update_managed_fields

MANAGER_MAX = 128


def manager(scope: Scope) -> str:
    """The `fieldManager` parameter, or (as upstream) the User-Agent's first word."""
    value = scope.query.get("fieldManager") or ""
    if len(value) > MANAGER_MAX:
        raise StatusError(422, "Invalid", f"fieldManager: Too long: may not be more than "
                          f"{MANAGER_MAX} bytes")
    if value:
        return value
    return manager_from_user_agent(scope.request.headers.get("User-Agent", "")) or "unknown"


def track(scope: Scope, old: Obj | None, new: Obj, manager_name: str, operation: str) -> None:
    """Record in `new` (a storage-version object, changed in place) the fields
    `manager_name` changed relative to `old`. Field paths are those of the request's
    version, as upstream tracks them, so objects are compared in that version."""
    stamp = time_now()
    strategy, version = scope.strategy, scope.version
    schema = strategy.schema_node(version)
    if scope.stored_as_served:
        update_managed_fields(old, new, manager_name, operation, scope.api_version, stamp,
                              subresource=scope.subresource, schema=schema)
        return
    served_new = strategy.from_storage(new, version)
    served_old = strategy.from_storage(old, version) if old is not None else None
    update_managed_fields(served_old, served_new, manager_name, operation, scope.api_version,
                          stamp, subresource=scope.subresource, schema=schema)
    # An object with no tracked fields (a body that sets nothing) carries no entries.
    entries = served_new["metadata"].get("managedFields")
    if entries is None:
        new["metadata"].pop("managedFields", None)
    else:
        new["metadata"]["managedFields"] = entries
