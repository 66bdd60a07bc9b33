"""Registered DRA plugins: the kubelet's handler for `DRAPlugin` registrations.

Several instances of one driver may be registered at once (rolling updates); calls go to
the newest instance. When the last instance of a driver goes away, the node's slices of
that driver are deleted after a grace period, unless an instance comes back first.
Where a plugin offers the health stream (and the ResourceHealthStatus gate is on), its
reports are kept per device and passed to `on_health`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import grpc

from draemu.client import ApiError, Client
from draemu.kubeletapi import dra, health, rpc
from draemu.log import get_logger

log = get_logger("kubelet.dra")

SLICE_WIPE_DELAY = 30.0
HEALTH_RETRY = 5.0
HEALTH_DEFAULT_TIMEOUT = 30.0


class PluginValidationError(Exception):
    pass


@dataclass
class DeviceHealthEntry:
    health: str  # Healthy / Unhealthy / Unknown
    message: str
    received: float
    timeout: float


@dataclass
class PluginInstance:
    driver: str
    endpoint: str
    version: dra.DRAVersion
    health_version: health.HealthVersion | None
    channel: grpc.aio.Channel
    client: rpc.DRAClient
    registered_at: float = field(default_factory=time.monotonic)
    health_task: asyncio.Task[None] | None = None
    # Other DRA versions the plugin advertised, in its order: used when the chosen one
    # turns out not to be served (UNIMPLEMENTED).
    fallbacks: list[dra.DRAVersion] = field(default_factory=list)

    def fall_back(self) -> bool:
        """Switch to the next advertised version; False when there is none."""
        if not self.fallbacks:
            return False
        self.version = self.fallbacks.pop(0)
        self.client = rpc.DRAClient(self.channel, self.version)
        log.warning("DRA plugin does not serve its first advertised version, falling back",
                    driver=self.driver, version=self.version.registration_name)
        return True


def choose_version(versions: list[str]) -> dra.DRAVersion:
    """The first service in the plugin's list that the kubelet supports."""
    if not versions:
        raise PluginValidationError("empty list of supported gRPC services (aka supported "
                                    "versions)")
    for name in versions:
        if name in dra.VERSIONS:
            return dra.VERSIONS[name]
    raise PluginValidationError(
        f"none of services supported by the plugin ({', '.join(versions)}) are supported "
        f"by the kubelet ({', '.join(dra.SUPPORTED_BY_KUBELET)})")


def choose_health_version(versions: list[str]) -> health.HealthVersion | None:
    for name in health.KUBELET_PREFERENCE:
        if name in versions:
            return health.VERSIONS[name]
    return None


class DRAPluginManager:
    def __init__(self, client: Client, node_name: str, *, health_enabled: bool = False,
                 wipe_delay: float = SLICE_WIPE_DELAY,
                 on_health: Callable[[str], Awaitable[None]] | None = None,
                 on_register: Callable[[str], None] | None = None) -> None:
        self.client = client
        self.node_name = node_name
        self.health_enabled = health_enabled
        self.wipe_delay = wipe_delay
        self.on_health = on_health
        self.on_register = on_register
        self.instances: dict[str, list[PluginInstance]] = {}
        self.health: dict[str, dict[tuple[str, str], DeviceHealthEntry]] = {}
        self._wipes: dict[str, asyncio.Task[None]] = {}

    # ---- the registration handler contract

    def validate(self, name: str, endpoint: str, versions: list[str]) -> None:
        choose_version(list(versions))
        if any(i.endpoint == endpoint for i in self.instances.get(name, [])):
            raise PluginValidationError(
                f"endpoint {endpoint} already registered for DRA driver plugin {name}")

    async def register(self, name: str, endpoint: str, versions: list[str]) -> None:
        version = choose_version(list(versions))
        channel = grpc.aio.insecure_channel(rpc.dial_target(endpoint))
        others = [dra.VERSIONS[v] for v in versions if v in dra.VERSIONS]
        instance = PluginInstance(name, endpoint, version, choose_health_version(list(versions)),
                                  channel, rpc.DRAClient(channel, version),
                                  fallbacks=[v for v in others if v is not version])
        self.instances.setdefault(name, []).append(instance)
        wipe = self._wipes.pop(name, None)
        if wipe:
            wipe.cancel()
        if self.health_enabled and instance.health_version is not None:
            instance.health_task = asyncio.create_task(self._watch_health(instance))
        log.info("DRA plugin registered", driver=name, endpoint=endpoint,
                 version=version.registration_name)
        if self.on_register:
            self.on_register(name)

    async def deregister(self, name: str, endpoint: str) -> None:
        kept = []
        for instance in self.instances.get(name, []):
            if instance.endpoint == endpoint:
                await self._close(instance)
            else:
                kept.append(instance)
        if kept:
            self.instances[name] = kept
            return
        self.instances.pop(name, None)
        self.health.pop(name, None)
        log.info("DRA plugin deregistered", driver=name, endpoint=endpoint)
        if name not in self._wipes:
            self._wipes[name] = asyncio.create_task(self._wipe_later(name))

    async def _close(self, instance: PluginInstance) -> None:
        if instance.health_task:
            instance.health_task.cancel()
            await asyncio.gather(instance.health_task, return_exceptions=True)
        await instance.channel.close()

    async def stop(self) -> None:
        for task in self._wipes.values():
            task.cancel()
        await asyncio.gather(*self._wipes.values(), return_exceptions=True)
        self._wipes.clear()
        for instances in self.instances.values():
            for instance in instances:
                await self._close(instance)
        self.instances.clear()

    # ---- lookups

    def get(self, driver: str) -> PluginInstance | None:
        instances = self.instances.get(driver)
        if not instances:
            return None
        return max(instances, key=lambda i: i.registered_at)

    def registered(self, driver: str) -> bool:
        return bool(self.instances.get(driver))

    def device_health(self, driver: str, pool: str, device: str) -> DeviceHealthEntry | None:
        entry = self.health.get(driver, {}).get((pool, device))
        if entry and time.monotonic() - entry.received > entry.timeout:
            return DeviceHealthEntry("Unknown", entry.message, entry.received, entry.timeout)
        return entry

    # ---- slices of drivers that went away

    async def _wipe_later(self, driver: str) -> None:
        await asyncio.sleep(self.wipe_delay)
        try:
            await wipe_slices(self.client, self.node_name, driver)
        finally:
            self._wipes.pop(driver, None)

    # ---- health stream

    async def _watch_health(self, instance: PluginInstance) -> None:
        assert instance.health_version is not None
        client = rpc.HealthClient(instance.channel, instance.health_version)
        while True:
            try:
                call = client.node_watch_resources(
                    instance.health_version.NodeWatchResourcesRequest())
                async for response in call:
                    await self._record_health(instance.driver, response)
            except grpc.aio.AioRpcError as err:
                log.debug("health stream ended", driver=instance.driver, error=err.details())
            self.health.pop(instance.driver, None)
            if self.on_health:
                await self.on_health(instance.driver)
            await asyncio.sleep(HEALTH_RETRY)

    async def _record_health(self, driver: str, response: object) -> None:
        now = time.monotonic()
        entries: dict[tuple[str, str], DeviceHealthEntry] = {}
        for d in response.devices:  # type: ignore[attr-defined]
            message = d.message if len(d.message) <= 1024 else d.message[:1021] + "..."
            timeout = float(d.health_check_timeout_seconds) or HEALTH_DEFAULT_TIMEOUT
            entries[(d.device.pool_name, d.device.device_name)] = DeviceHealthEntry(
                health.HEALTH_NAMES.get(d.health, "Unknown"), message, now, timeout)
        old = self.health.get(driver) or {}
        self.health[driver] = entries
        changed = {k: (e.health, e.message) for k, e in entries.items()} != {
            k: (e.health, e.message) for k, e in old.items()}
        if changed and self.on_health:
            await self.on_health(driver)


async def wipe_slices(client: Client, node_name: str, driver: str | None = None) -> int:
    """Delete the node's ResourceSlices (of one driver, or all); returns how many."""
    selector = f"spec.nodeName={node_name}"
    if driver:
        selector += f",spec.driver={driver}"
    listed = await client.list("resource.k8s.io/v1", "resourceslices", field_selector=selector)
    count = 0
    for item in listed.get("items", []):
        try:
            await client.delete("resource.k8s.io/v1", "resourceslices", item["metadata"]["name"])
            count += 1
        except ApiError as err:
            if err.code != 404:
                raise
    if count:
        log.info("deleted ResourceSlices", node=node_name, driver=driver or "*", count=count)
    return count
