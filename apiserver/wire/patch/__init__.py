"""Every patch type of the Kubernetes API, and field ownership (`managedFields`).

    apply_json_patch(obj, ops)                      application/json-patch+json
    apply_merge_patch(obj, patch)                   application/merge-patch+json
    apply_strategic_merge_patch(obj, patch, schema) application/strategic-merge-patch+json
    server_side_apply(live, applied, manager, force, schema, *, api_version, time,
                      subresource, reset_fields) -> (merged, conflicts)
        conflicts are returned only when nothing was applied; raise conflict_error(them)
    conflict_error(conflicts) -> StatusError        the 409 of a conflicting apply
    update_managed_fields(old, new, manager, operation, api_version, time, *, subresource)
    manager_from_user_agent(user_agent) -> str      the manager when fieldManager is unset

`schema` is the kind's schema root, `draemu.openapi.schemas.patch_meta(group, version,
kind)`; where it is optional it is found from the object's apiVersion and kind. Errors are
`draemu.api.errors.StatusError`s with upstream's codes and messages.
"""

from draemu.apiserver.wire.patch.apply import Conflict, conflict_error, server_side_apply
from draemu.apiserver.wire.patch.json_patch import apply_json_patch
from draemu.apiserver.wire.patch.managed import manager_from_user_agent, update_managed_fields
from draemu.apiserver.wire.patch.merge_patch import apply_merge_patch
from draemu.apiserver.wire.patch.strategic import apply_strategic_merge_patch

__all__ = ["Conflict", "apply_json_patch", "apply_merge_patch", "apply_strategic_merge_patch",
           "conflict_error", "manager_from_user_agent", "server_side_apply",
           "update_managed_fields"]
