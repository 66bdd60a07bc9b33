"""The base of the apiserver's own controllers that follow objects in the watch cache
(CRD serving, ValidatingAdmissionPolicy status, Services' IPAddresses), as an upstream
controller follows an informer.

`changed(change)` runs synchronously for each change the cache applies under the
listener's prefixes (so what it serves is current as soon as the cache is), `resynced()`
at start and after each reload of the cache; both queue keys (`enqueue`). One worker task
reconciles them (`reconcile(key)`): each pending key once, in the order queued, after
`settle` seconds when changes arriving together should be one pass. A failed key is
logged and, with `retry_after` set, queued again after that long.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import ClassVar

from draemu.api.errors import StatusError
from draemu.apiserver.storage.watchcache import Change, WatchCache
from draemu.log import get_logger

log = get_logger("apiserver.cachelistener")


class CacheListener:
    # The worker task's name, and what its log lines say of a failed key.
    name: ClassVar[str]
    failure: ClassVar[str] = "reconciling failed"
    # Seconds between a key's queuing and its reconciling: keys queued meanwhile join.
    settle: ClassVar[float] = 0.0
    # Seconds after which a failed key is reconciled again; None: it is dropped.
    retry_after: ClassVar[float | None] = None

    def __init__(self, cache: WatchCache, prefixes: Sequence[str]) -> None:
        self.cache = cache
        self.prefixes = tuple(prefixes)
        # Pending keys in the order queued (a dict: a key queued twice is one entry).
        self._pending: dict[str, None] = {}
        self._ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # What a listener defines -----------------------------------------------------------
    def changed(self, change: Change) -> None:
        """A change the cache applied under one of the prefixes (default: queue its key)."""
        self.enqueue(change.key)

    def resynced(self) -> None:
        """At start and after the cache reloaded: look at everything again."""

    async def reconcile(self, key: str) -> None:
        raise NotImplementedError

    # The machinery ---------------------------------------------------------------------
    def start(self) -> None:
        for prefix in self.prefixes:
            self.cache.listen(prefix, self._on_change)
        self.resynced()
        self._task = asyncio.create_task(self._work(), name=self.name)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def enqueue(self, key: str) -> None:
        self._pending[key] = None
        self._ready.set()

    def _on_change(self, change: Change | None) -> None:
        if change is None:
            self.resynced()
        else:
            self.changed(change)

    async def _next(self) -> str:
        await self._ready.wait()
        if self.settle:
            await asyncio.sleep(self.settle)
        key = next(iter(self._pending))
        del self._pending[key]
        if not self._pending:
            self._ready.clear()
        return key

    async def _work(self) -> None:
        while True:
            key = await self._next()
            try:
                await self.reconcile(key)
            except asyncio.CancelledError:
                raise
            except StatusError as e:
                log.warning(self.failure, listener=self.name, key=key, error=e.message)
            except Exception:  # keep following the other keys
                log.exception(self.failure, listener=self.name, key=key)
            else:
                continue
            if self.retry_after is not None:
                await asyncio.sleep(self.retry_after)
                self.enqueue(key)
