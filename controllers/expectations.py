"""What a controller is waiting to see in its informer after its own writes (upstream's
ControllerExpectations): the pods it created or deleted in the last sync. Until the
informer shows them, the cached pod list is stale and a sync would create or delete
again; such a sync only refreshes status. Expectations lapse after `ttl` seconds, as
upstream's do after 5 minutes, so a lost event cannot block a controller for good."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from draemu.api.types import Obj


@dataclass
class _Pending:
    adds: set[str] = field(default_factory=set)
    deletes: set[str] = field(default_factory=set)
    since: float = field(default_factory=time.monotonic)


class Expectations:
    def __init__(self, ttl: float = 300.0) -> None:
        self.ttl = ttl
        self._pending: dict[str, _Pending] = {}

    def expect_add(self, key: str, name: str) -> None:
        self._pending.setdefault(key, _Pending()).adds.add(name)

    def expect_delete(self, key: str, name: str) -> None:
        self._pending.setdefault(key, _Pending()).deletes.add(name)

    def satisfied(self, key: str, lookup: Callable[[str], Obj | None]) -> bool:
        """Whether the cache (`lookup(name)`) shows every add and delete of `key`."""
        pending = self._pending.get(key)
        if pending is None:
            return True
        pending.adds = {n for n in pending.adds if lookup(n) is None}
        pending.deletes = {n for n in pending.deletes if (found := lookup(n)) is not None
                           and not (found.get("metadata") or {}).get("deletionTimestamp")}
        if (pending.adds or pending.deletes) and time.monotonic() - pending.since < self.ttl:
            return False
        del self._pending[key]
        return True

    def forget(self, key: str) -> None:
        self._pending.pop(key, None)
