"""Shared informers: one list+watch per resource, however many components want it."""

from __future__ import annotations

import asyncio

from draemu.client.informer import Informer
from draemu.client.rest import Client


class SharedInformers:
    def __init__(self, client: Client) -> None:
        self.client = client
        self._informers: dict[tuple[str, str, str | None, str | None], Informer] = {}

    def informer(self, api_version: str, resource: str, *, namespace: str | None = None,
                 field_selector: str | None = None) -> Informer:
        key = (api_version, resource, namespace, field_selector)
        inf = self._informers.get(key)
        if inf is None:
            inf = Informer(self.client, api_version, resource, namespace,
                           field_selector=field_selector)
            self._informers[key] = inf
        return inf

    async def start(self, timeout: float | None = 30.0,
                    served: set[tuple[str, str]] | None = None) -> list[str]:
        """Start every informer asked for so far and wait until all have listed.
        With `served` (from discovery), informers of resources the server does not
        serve are not started (their caches stay empty); their names are returned."""
        informers, skipped = [], []
        for (api_version, resource, _, _), inf in self._informers.items():
            if served is not None and (api_version, resource) not in served:
                skipped.append(f"{resource}.{api_version}")
                continue
            informers.append(inf)
        for inf in informers:
            await inf.start()
        await asyncio.gather(*(inf.wait_synced(timeout) for inf in informers))
        return skipped

    async def stop(self) -> None:
        await asyncio.gather(*(inf.stop() for inf in self._informers.values()))
