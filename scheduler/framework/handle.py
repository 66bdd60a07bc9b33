"""What a plugin gets from the scheduler (upstream's framework.Handle): built with
`factory(args, handle)`, a plugin reaches the API client, the feature gates, the node
snapshot (the scheduler's cache of NodeInfos), informers' listers, the event recorder,
the shared DRA manager and its profile's framework through it, and nothing else of the
scheduler.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from draemu.scheduler.framework.interface import Plugin

if TYPE_CHECKING:
    from draemu.client import Client
    from draemu.features import FeatureGates
    from draemu.scheduler.cache import Cache
    from draemu.scheduler.dra.manager import DRAManager
    from draemu.scheduler.framework.runtime import Framework


class Lister(Protocol):
    """An informer's cache (or a stand-in): objects by key ("namespace/name" or "name")."""

    def get(self, key: str) -> dict | None: ...

    def list(self) -> list[dict]: ...


class InformerSource(Protocol):
    """The scheduler's informers, one per resource."""

    def watch(self, api_version: str, resource: str) -> None:
        """List and watch the resource from the scheduler's start on."""

    def lister(self, resource: str) -> Lister | None:
        """The cache of a watched resource (None: not watched)."""


# Records an event about an object: (object, type, reason, message, action); best effort.
Recorder = Callable[[dict, str, str, str, str], Awaitable[None]]


class Handle:
    def __init__(self, *, client: Client, gates: FeatureGates, snapshot: Cache,
                 informers: InformerSource, recorder: Recorder, dra: DRAManager,
                 frameworks: Mapping[str, Framework], profile: str) -> None:
        self.client = client
        self.gates = gates
        self.snapshot = snapshot  # the nodes and the pods on them, assumed ones included
        self.dra = dra
        self._informers = informers
        self._recorder = recorder
        self._frameworks = frameworks
        self._profile = profile

    @property
    def framework(self) -> Framework:
        """The framework of the plugin's profile (preemption runs its Filter plugins)."""
        return self._frameworks[self._profile]

    def watch(self, api_version: str, resource: str) -> None:
        """Ask the scheduler to list and watch a resource (a plugin's factory does)."""
        self._informers.watch(api_version, resource)

    def lister(self, resource: str) -> Lister | None:
        """The cache of a resource asked for with `watch` (read it when needed: a
        stand-in may replace it)."""
        return self._informers.lister(resource)

    async def record(self, obj: dict, type_: str, reason: str, message: str,
                     action: str = "") -> None:
        """An event about `obj`, best effort (a lost event stops nothing)."""
        await self._recorder(obj, type_, reason, message, action)


# A plugin's factory (upstream's PluginFactory): (its args, None for a plugin without
# args; the handle) -> the plugin.
Factory = Callable[[Any, Handle], Plugin]
