"""ValidatingAdmissionPolicy status, as upstream's type-checking controller writes it:
`status.observedGeneration` follows the policy's generation, `status.typeChecking` is
set (no expression warnings: draemu's CEL checks expressions when they are written and
types the objects dynamically, so it has no schema-based warnings to give).

Every apiserver of a store follows the policies in its watch cache; the writes are
compare-and-swap updates of the latest object and idempotent.
"""

from __future__ import annotations

from draemu.api.errors import StatusError
from draemu.api.types import Obj
from draemu.apiserver.admission.policies import GROUP, POLICIES
from draemu.apiserver.registry.resources import ResourceTable
from draemu.apiserver.storage.cachelistener import CacheListener
from draemu.apiserver.storage.storeadapter import Storage, Unchanged
from draemu.apiserver.storage.watchcache import Change


class PolicyStatus(CacheListener):
    name = "policy-status"
    failure = "policy status not written"

    def __init__(self, table: ResourceTable, storage: Storage) -> None:
        self.storage = storage
        self.policies = table.by_group_resource(GROUP, POLICIES)
        super().__init__(storage.cache, [self.policies.prefix] if self.policies else [])

    def start(self) -> None:
        if self.policies is not None:
            super().start()

    def changed(self, change: Change) -> None:
        if change.type == "put":
            self._consider(change.obj)

    def resynced(self) -> None:
        assert self.policies is not None
        for _key, policy in self.cache.list(self.policies.prefix):
            self._consider(policy)

    def _consider(self, policy: Obj) -> None:
        if _stale(policy):
            self.enqueue(policy["metadata"]["name"])

    async def reconcile(self, key: str) -> None:
        assert self.policies is not None

        async def fn(policy: Obj, current: Obj) -> Obj:
            if not _stale(policy):
                raise Unchanged()
            policy["status"] = {**(policy.get("status") or {}),
                                "observedGeneration": policy["metadata"].get("generation"),
                                "typeChecking": {}}
            return policy

        try:
            await self.storage.update(self.policies, "", key, fn)
        except StatusError as e:
            if e.reason != "NotFound":
                raise


def _stale(policy: Obj) -> bool:
    meta = policy.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return False
    status = policy.get("status") or {}
    return status.get("observedGeneration") != meta.get("generation") or \
        "typeChecking" not in status
