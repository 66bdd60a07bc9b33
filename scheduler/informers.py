"""The scheduler's informers, one per resource: asked for by the scheduler's event
handlers and by plugin factories (`Handle.watch`), started and stopped with the
scheduler. A scheduler without an apiserver (tests, `bench/dracycles.py`) may serve a
resource from a stand-in (`ObjectLister`) instead.
"""

from __future__ import annotations

from collections.abc import Iterable

from draemu.client import Client, Informer, SharedInformers, key_of
from draemu.scheduler.framework.handle import Lister


class ObjectLister:
    """A fixed set of objects, served as an informer's cache would serve them."""

    def __init__(self, objects: Iterable[dict]) -> None:
        self._objects = {key_of(obj): obj for obj in objects}

    def get(self, key: str) -> dict | None:
        return self._objects.get(key)

    def list(self) -> list[dict]:
        return list(self._objects.values())


class SchedulerInformers:
    def __init__(self, client: Client, shared: SharedInformers | None = None) -> None:
        """`shared`: list+watch through these shared informers (those of controllers in
        the same process, say) instead of informers of our own; their owner stops them."""
        self._client = client
        self._shared = shared
        self._informers: dict[str, Informer] = {}
        self._stand_ins: dict[str, Lister] = {}

    def informer(self, api_version: str, resource: str) -> Informer:
        inf = self._informers.get(resource)
        if inf is None:
            inf = self._shared.informer(api_version, resource) if self._shared is not None \
                else Informer(self._client, api_version, resource)
            self._informers[resource] = inf
        return inf

    def watch(self, api_version: str, resource: str) -> None:
        self.informer(api_version, resource)

    def lister(self, resource: str) -> Lister | None:
        stand_in = self._stand_ins.get(resource)
        return stand_in if stand_in is not None else self._informers.get(resource)

    def serve_from(self, resource: str, lister: Lister) -> None:
        """Serve `resource` from a stand-in (a scheduler without an apiserver)."""
        self._stand_ins[resource] = lister

    @property
    def owned(self) -> bool:
        """Whether the scheduler stops its informers (they are not shared)."""
        return self._shared is None

    def all(self) -> list[Informer]:
        return list(self._informers.values())
