"""ValidatingAdmissionPolicy status, as upstream's type-checking controller writes it:
`status.observedGeneration` follows the policy's generation, `status.typeChecking` is
set (no expression warnings: draemu's CEL checks expressions when they are written and
types the objects dynamically, so it has no schema-based warnings to give).

Every apiserver of a store follows the policies in its watch cache; the writes are
compare-and-swap updates of the latest object and idempotent.
"""

from __future__ import annotations

import asyncio
import contextlib

from draemu.api.errors import StatusError
from draemu.api.types import Obj
from draemu.apiserver.admission.policies import GROUP, POLICIES
from draemu.apiserver.registry.resources import ResourceTable
from draemu.apiserver.storage.storeadapter import Storage, Unchanged
from draemu.apiserver.storage.watchcache import Change
from draemu.log import get_logger

log = get_logger("apiserver.policystatus")


class PolicyStatus:
    def __init__(self, table: ResourceTable, storage: Storage) -> None:
        self.storage = storage
        self.policies = table.by_group_resource(GROUP, POLICIES)
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self.policies is None:
            return
        self.storage.cache.listen(self.policies.prefix, self._on_change)
        for _key, policy in self.storage.cache.list(self.policies.prefix):
            self._consider(policy)
        self._task = asyncio.create_task(self._work(), name="policy-status")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def _on_change(self, change: Change | None) -> None:
        if change is None:
            assert self.policies is not None
            for _key, policy in self.storage.cache.list(self.policies.prefix):
                self._consider(policy)
        elif change.type == "put":
            self._consider(change.obj)

    def _consider(self, policy: Obj) -> None:
        if _stale(policy):
            self._queue.put_nowait(policy["metadata"]["name"])

    async def _work(self) -> None:
        assert self.policies is not None
        while True:
            name = await self._queue.get()

            async def fn(policy: Obj, current: Obj) -> Obj:
                if not _stale(policy):
                    raise Unchanged()
                policy["status"] = {**(policy.get("status") or {}),
                                    "observedGeneration": policy["metadata"].get("generation"),
                                    "typeChecking": {}}
                return policy

            try:
                await self.storage.update(self.policies, "", name, fn)
            except asyncio.CancelledError:
                raise
            except StatusError as e:
                if e.reason != "NotFound":
                    log.warning("policy status not written", policy=name, error=e.message)
            except Exception:  # keep following the other policies
                log.exception("policy status not written", policy=name)


def _stale(policy: Obj) -> bool:
    meta = policy.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return False
    status = policy.get("status") or {}
    return status.get("observedGeneration") != meta.get("generation") or \
        "typeChecking" not in status
