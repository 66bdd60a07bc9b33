"""Publishing a driver's ResourceSlices for one node and keeping them in sync.

The Python counterpart of upstream's ResourceSlice controller: one pool per name, split
into slices within the API's limits; a change bumps the pool generation and updates the
existing slices in place (PUT) rather than recreating them; slices nobody wants any more
are deleted with UID and resourceVersion preconditions. A watch on the node's slices of
this driver triggers a resync, so slices deleted by someone else (a restarting kubelet
wipes its node's slices) come back.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

from draemu.api.types import Obj
from draemu.client import ApiError, Client, Informer
from draemu.drivers.sdk.types import DriverResources, Pool
from draemu.log import get_logger

API = "resource.k8s.io/v1"
MAX_DEVICES = 128
# A slice with any device using taints, consumesCounters or a list attribute holds at most 64.
MAX_DEVICES_ADVANCED = 64
MAX_COUNTER_SETS = 8
_INDEX = re.compile(r"^([0-9a-f]{5,})-")

log = get_logger("resourceslices")


def _advanced(device: Obj) -> bool:
    if device.get("taints") or device.get("consumesCounters"):
        return True
    return any(isinstance(v, dict) and any(isinstance(x, list) for x in v.values())
               for v in (device.get("attributes") or {}).values())


def split_pool(pool: Pool) -> list[Obj]:
    """The slice contents of a pool: counter sets first, then devices in chunks."""
    parts: list[Obj] = []
    for i in range(0, len(pool.shared_counters), MAX_COUNTER_SETS):
        parts.append({"sharedCounters": pool.shared_counters[i:i + MAX_COUNTER_SETS]})
    chunk: list[Obj] = []
    chunk_advanced = False
    for device in pool.devices:
        advanced = _advanced(device)
        limit = MAX_DEVICES_ADVANCED if (chunk_advanced or advanced) else MAX_DEVICES
        if len(chunk) >= limit:
            parts.append({"devices": chunk})
            chunk, chunk_advanced = [], False
        chunk.append(device)
        chunk_advanced = chunk_advanced or advanced
    if chunk or not parts:
        parts.append({"devices": chunk})
    return parts


def _contains(actual: Any, wanted: Any) -> bool:
    """Whether the server's copy holds everything we sent (it may add defaults)."""
    if isinstance(wanted, dict):
        return isinstance(actual, dict) and all(_contains(actual.get(k), v)
                                                for k, v in wanted.items())
    if isinstance(wanted, list):
        return (isinstance(actual, list) and len(actual) == len(wanted)
                and all(_contains(a, w) for a, w in zip(actual, wanted, strict=True)))
    return actual == wanted


class ResourceSliceController:
    def __init__(self, client: Client, driver_name: str, node_name: str,
                 on_error: Callable[[Exception], None] | None = None) -> None:
        self.client = client
        self.driver_name = driver_name
        self.node_name = node_name
        self.on_error = on_error
        self._resources = DriverResources()
        self._owner: Obj | None = None
        self._wake = asyncio.Event()
        self._synced = asyncio.Event()
        self._generation = 0  # of the desired resources; a pass syncs the one it started with
        self._task: asyncio.Task[None] | None = None
        self._informer = Informer(
            client, API, "resourceslices",
            field_selector=f"spec.driver={driver_name},spec.nodeName={node_name}")
        self._informer.add_handler(on_add=self._poke, on_update=lambda _o, _n: self._poke(),
                                   on_delete=self._poke)

    def _poke(self, *_: Any) -> None:
        self._wake.set()

    async def start(self) -> None:
        await self._informer.start()
        self._task = asyncio.create_task(self._run(), name=f"slices-{self.driver_name}")

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self._informer.stop()

    def update(self, resources: DriverResources) -> None:
        self._resources = resources
        self._generation += 1
        self._synced.clear()
        self._wake.set()

    async def wait_synced(self, timeout: float = 30.0) -> None:
        await asyncio.wait_for(self._synced.wait(), timeout)

    async def _run(self) -> None:
        delay = 0.1
        while True:
            await self._wake.wait()
            self._wake.clear()
            generation = self._generation
            try:
                await self.sync()
            except asyncio.CancelledError:
                raise
            except Exception as err:  # reported, then retried with backoff
                log.warning("resourceslice sync failed", driver=self.driver_name,
                            node=self.node_name, error=str(err))
                if self.on_error:
                    self.on_error(err)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30.0)
                self._wake.set()
                continue
            delay = 0.1
            if generation == self._generation:
                self._synced.set()

    async def _node_owner(self) -> Obj:
        if self._owner is None:
            node = await self.client.get("v1", "nodes", self.node_name)
            self._owner = {"apiVersion": "v1", "kind": "Node", "name": self.node_name,
                           "uid": node["metadata"]["uid"], "controller": True}
        return self._owner

    async def sync(self) -> None:
        """One pass: make the API's slices match the desired pools."""
        # The Node's UID is looked up again on each pass that creates slices: a re-created
        # Node has a new one, and slices owned by the old one would be garbage collected.
        self._owner = None
        listed = await self.client.list(
            API, "resourceslices",
            field_selector=f"spec.driver={self.driver_name},spec.nodeName={self.node_name}")
        by_pool: dict[str, list[Obj]] = {}
        for item in listed.get("items", []):
            by_pool.setdefault(item["spec"]["pool"]["name"], []).append(item)
        for name, pool in self._resources.pools.items():
            await self._sync_pool(name, pool, by_pool.pop(name, []))
        for stale in by_pool.values():
            for item in stale:
                await self._delete(item)

    async def _sync_pool(self, name: str, pool: Pool, existing: list[Obj]) -> None:
        parts = split_pool(pool)
        by_index: dict[int, Obj] = {}
        obsolete: list[Obj] = []
        for item in existing:
            m = _INDEX.match(item["metadata"]["name"])
            index = int(m.group(1), 16) if m else -1
            if 0 <= index < len(parts) and index not in by_index:
                by_index[index] = item
            else:
                obsolete.append(item)
        generation = max((i["spec"]["pool"].get("generation", 0) for i in existing), default=0)
        wanted = [self._spec(name, part, generation, len(parts)) for part in parts]
        unchanged = not obsolete and len(by_index) == len(parts) and all(
            _contains(by_index[i]["spec"], wanted[i]) for i in range(len(parts)))
        if unchanged:
            return
        if existing:
            generation += 1
        for index, part in enumerate(parts):
            spec = self._spec(name, part, generation, len(parts))
            current = by_index.get(index)
            if current is None:
                await self._create(index, spec)
            else:
                body = {"apiVersion": API, "kind": "ResourceSlice",
                        "metadata": current["metadata"], "spec": spec}
                await self.client.update(API, "resourceslices", body)
        for item in obsolete:
            await self._delete(item)

    def _spec(self, pool_name: str, part: Obj, generation: int, count: int) -> Obj:
        spec: Obj = {"driver": self.driver_name, "nodeName": self.node_name,
                     "pool": {"name": pool_name, "generation": generation,
                              "resourceSliceCount": count}}
        spec.update(part)
        return spec

    async def _create(self, index: int, spec: Obj) -> None:
        body = {"apiVersion": API, "kind": "ResourceSlice",
                "metadata": {"generateName": f"{index:05x}-{self.driver_name}-{self.node_name}-",
                             "ownerReferences": [await self._node_owner()]},
                "spec": spec}
        await self.client.create(API, "resourceslices", body)

    async def _delete(self, item: Obj) -> None:
        meta = item["metadata"]
        try:
            await self.client.delete(API, "resourceslices", meta["name"], preconditions={
                "uid": meta["uid"], "resourceVersion": meta["resourceVersion"]})
        except ApiError as err:
            if err.code not in (404, 409):
                raise
