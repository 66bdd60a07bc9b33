"""The RBAC bootstrap policy written at start-up, as kube-apiserver's
`rbac/bootstrap-roles` post-start hook does: each missing role and binding of
`auth/rbac/bootstrappolicy.py` is created, an existing one completed (`reconciled`), a
binding whose roleRef changed deleted and created again (roleRef is immutable).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from draemu.api.errors import StatusError
from draemu.api.types import Obj
from draemu.apiserver.auth.rbac.bootstrappolicy import AUTOUPDATE, GROUP, KINDS, policy, reconciled
from draemu.apiserver.endpoints.requestinfo import RequestInfo
from draemu.apiserver.endpoints.rest_write import create_object, run_update
from draemu.apiserver.endpoints.scope import Scope
from draemu.apiserver.registry.resources import Resource, ResourceTable
from draemu.apiserver.storage.storeadapter import Storage, Unchanged
from draemu.apiserver.wire.codec import Accept
from draemu.features import FeatureGates
from draemu.identity import MASTERS, UserInfo

_SYSTEM_USER = UserInfo("system:apiserver", groups=(MASTERS,))


def _scope(table: ResourceTable, storage: Storage, resource: Resource, verb: str,
           namespace: str, name: str, gates: FeatureGates) -> Scope:
    def lookup(resource: str, group: str, namespace: str, name: str) -> Any:
        r = table.by_group_resource(group, resource)
        return storage.cache.get(r.key(namespace, name)) if r is not None else None

    version = resource.strategy.storage_version
    info = RequestInfo(f"/apis/{GROUP}/{version}/{resource.name}", verb, True, GROUP, version,
                       namespace, resource.name, name)
    return Scope(None, info, resource, version, namespace, _SYSTEM_USER,  # type: ignore[arg-type]
                 Accept(), gates, lookup)


async def _ensure(table: ResourceTable, storage: Storage, gates: FeatureGates,
                  resource: Resource, expected: Obj) -> None:
    meta = expected["metadata"]
    namespace, name = meta.get("namespace", ""), meta["name"]
    existing = storage.cache.get(resource.key(namespace, name))
    if existing is not None and "roleRef" in expected and \
            existing.get("roleRef") != expected["roleRef"] and \
            (existing["metadata"].get("annotations") or {}).get(AUTOUPDATE) != "false":
        await storage.delete(resource, namespace, name,
                             int(existing["metadata"]["resourceVersion"]))
        existing = None
    if existing is None:
        scope = _scope(table, storage, resource, "create", namespace, "", gates)
        try:
            await create_object(scope, storage, json.loads(json.dumps(expected)),
                                dry_run=False, manager="kube-apiserver")
        except StatusError as e:
            if e.reason != "AlreadyExists":  # another apiserver on the same store was first
                raise
        return
    if reconciled(expected, existing) is None:
        return

    async def propose(current: Obj) -> Obj:
        new = reconciled(expected, current)
        if new is None:
            raise Unchanged()
        return new

    scope = _scope(table, storage, resource, "update", namespace, name, gates)
    await run_update(scope, storage, propose,
                     dry_run=False, manager="kube-apiserver", pinned=False)


async def ensure_bootstrap_policy(table: ResourceTable, storage: Storage,
                                  gates: FeatureGates) -> None:
    """Create or complete every bootstrap role, then every binding."""
    objects = policy(gates)
    for keys in (("clusterRoles", "roles"), ("clusterRoleBindings", "roleBindings")):
        work = []
        for key in keys:
            resource = table.by_group_resource(GROUP, KINDS[key][0])
            if resource is None:
                return
            work += [_ensure(table, storage, gates, resource, obj) for obj in objects[key]]
        await asyncio.gather(*work)
    await storage.caught_up()
