"""Device health as a driver reports it, streamed to the kubelet (KEP-4680).

The driver sets a device's health; every open `NodeWatchResources` stream gets the
complete list after each change, as the protocol asks.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from draemu.kubeletapi import health as proto


@dataclass
class DeviceHealth:
    pool_name: str
    device_name: str
    health: int  # proto.HEALTHY / UNHEALTHY / UNKNOWN
    message: str = ""
    timeout_seconds: int = 0
    last_updated: int = 0


class HealthReporter:
    def __init__(self) -> None:
        self._devices: dict[tuple[str, str], DeviceHealth] = {}
        self._changed = asyncio.Condition()
        self._version = 0  # bumped on every change; streams compare, so none is missed

    async def set(self, pool_name: str, device_name: str, healthy: bool | None,
                  message: str = "", timeout_seconds: int = 0) -> None:
        """Record a device's health (None = unknown) and push the list to the kubelet."""
        status = proto.UNKNOWN if healthy is None else (
            proto.HEALTHY if healthy else proto.UNHEALTHY)
        self._devices[(pool_name, device_name)] = DeviceHealth(
            pool_name, device_name, status, message, timeout_seconds, int(time.time()))
        self._version += 1
        async with self._changed:
            self._changed.notify_all()

    def _response(self, version: proto.HealthVersion) -> Any:
        resp = version.NodeWatchResourcesResponse()
        for d in self._devices.values():
            item = resp.devices.add(health=d.health, last_updated_time=d.last_updated,
                                    health_check_timeout_seconds=d.timeout_seconds,
                                    message=d.message)
            item.device.pool_name = d.pool_name
            item.device.device_name = d.device_name
        return resp

    def watcher(self, version: proto.HealthVersion) -> Any:
        async def watch(_request: Any, _context: Any) -> AsyncIterator[Any]:
            while True:
                sent = self._version
                yield self._response(version)
                async with self._changed:
                    while self._version == sent:
                        await self._changed.wait()
        return watch
