"""Field managers: who wrote a request (the bookkeeping of `metadata.managedFields` is
the generic store's, `genericregistry/managedfields.py`)."""

from __future__ import annotations

from draemu.api.errors import StatusError
from draemu.apiserver.endpoints.scope import Scope
from draemu.apiserver.wire.patch import manager_from_user_agent

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
