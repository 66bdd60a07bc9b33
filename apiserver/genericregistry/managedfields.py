"""`metadata.managedFields` of a write (the patch library's `update_managed_fields`)."""

from __future__ import annotations

from draemu.api.meta import time_now
from draemu.api.types import Obj
from draemu.apiserver.registry.request import RequestContext
from draemu.apiserver.wire.patch import update_managed_fields


def track(req: RequestContext, old: Obj | None, new: Obj, manager_name: str,
          operation: str) -> None:
    """Record in `new` (a storage-version object, changed in place) the fields
    `manager_name` changed relative to `old`. Field paths are those of the request's
    version, as upstream tracks them, so objects are compared in that version."""
    stamp = time_now()
    strategy, version = req.strategy, req.version
    schema = strategy.schema_node(version)
    if req.stored_as_served:
        update_managed_fields(old, new, manager_name, operation, req.api_version, stamp,
                              subresource=req.subresource, schema=schema)
        return
    served_new = strategy.from_storage(new, version)
    served_old = strategy.from_storage(old, version) if old is not None else None
    update_managed_fields(served_old, served_new, manager_name, operation, req.api_version,
                          stamp, subresource=req.subresource, schema=schema)
    # An object with no tracked fields (a body that sets nothing) carries no entries.
    entries = served_new["metadata"].get("managedFields")
    if entries is None:
        new["metadata"].pop("managedFields", None)
    else:
        new["metadata"]["managedFields"] = entries
