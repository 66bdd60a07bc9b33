"""The RBAC bootstrap policy written at start-up, as kube-apiserver's
`rbac/bootstrap-roles` post-start hook does: each missing role and binding of
`auth/rbac/bootstrappolicy.py` is created, an existing one completed (`reconciled`), a
binding whose roleRef changed deleted and created again (roleRef is immutable).
"""

from __future__ import annotations

import asyncio
import json

from draemu.api.errors import StatusError
from draemu.api.types import Obj
from draemu.apiserver.auth.rbac.bootstrappolicy import AUTOUPDATE, GROUP, KINDS, policy, reconciled
from draemu.apiserver.genericregistry.store import Store
from draemu.apiserver.registry.request import RequestContext
from draemu.apiserver.registry.resources import Resource
from draemu.apiserver.storage.storeadapter import Unchanged

_MANAGER = "kube-apiserver"


async def _ensure(store: Store, resource: Resource, expected: Obj) -> None:
    meta = expected["metadata"]
    namespace, name = meta.get("namespace", ""), meta["name"]
    existing = store.cache.get(resource.key(namespace, name))
    if existing is not None and "roleRef" in expected and \
            existing.get("roleRef") != expected["roleRef"] and \
            (existing["metadata"].get("annotations") or {}).get(AUTOUPDATE) != "false":
        await store.delete(RequestContext.system(resource, "delete", namespace, name),
                           namespace, name, {"preconditions": {
                               "resourceVersion": existing["metadata"]["resourceVersion"]}},
                           dry_run=False)
        existing = None
    if existing is None:
        try:
            await store.create(RequestContext.system(resource, "create", namespace),
                               json.loads(json.dumps(expected)), dry_run=False,
                               manager=_MANAGER)
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

    await store.update(RequestContext.system(resource, "update", namespace, name), propose,
                       dry_run=False, manager=_MANAGER, pinned=False)


async def ensure_bootstrap_policy(store: Store) -> None:
    """Create or complete every bootstrap role, then every binding."""
    objects = policy(store.gates)
    for keys in (("clusterRoles", "roles"), ("clusterRoleBindings", "roleBindings")):
        work = []
        for key in keys:
            resource = store.table.by_group_resource(GROUP, KINDS[key][0])
            if resource is None:
                return
            work += [_ensure(store, resource, obj) for obj in objects[key]]
        await asyncio.gather(*work)
    await store.storage.caught_up()
