"""Field managers: who wrote a request, and the `metadata.managedFields` bookkeeping
(delegated to the patch library's `update_managed_fields`)."""

from __future__ import annotations

from typing import Any

from draemu.api.errors import StatusError
from draemu.apiserver.codec import format_time, now
from draemu.apiserver.patch import manager_from_user_agent, update_managed_fields
from draemu.apiserver.scope import Scope

Obj = dict[str, Any]

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


def track(old: Obj | None, new: Obj, manager_name: str, operation: str,
          api_version: str, subresource: str = "") -> None:
    """Record in `new` (in place) the fields `manager_name` changed relative to `old`."""
    update_managed_fields(old, new, manager_name, operation, api_version, format_time(now()),
                          subresource=subresource)
