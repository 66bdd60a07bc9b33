"""Informers: a local cache of one resource kept current by list+watch.

An informer lists, then watches from the list's resourceVersion; it resumes a broken
watch from the last resourceVersion it saw (bookmarks included) and re-lists when the
server says that version is gone (410), telling handlers about what changed in the
meantime. Handlers may be plain functions or coroutines.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

import aiohttp

from draemu.api.types import Obj
from draemu.client.rest import ApiError, Client
from draemu.log import get_logger

log = get_logger("informer")


def key_of(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


class _Handler:
    def __init__(self, on_add: Callable | None, on_update: Callable | None,
                 on_delete: Callable | None) -> None:
        self.on_add, self.on_update, self.on_delete = on_add, on_update, on_delete


async def _call(fn: Callable | None, *args: Any) -> None:
    if fn is None:
        return
    try:
        result = fn(*args)
        if inspect.isawaitable(result):
            await result
    except Exception:  # a handler's bug must not stop the informer
        log.exception("informer handler failed")


class Informer:
    def __init__(self, client: Client, api_version: str, resource: str,
                 namespace: str | None = None, *, label_selector: str | None = None,
                 field_selector: str | None = None, watch_timeout: int = 300) -> None:
        self.client = client
        self.api_version = api_version
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.watch_timeout = watch_timeout
        self._cache: dict[str, Obj] = {}
        self._handlers: list[_Handler] = []
        self._synced = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._rv: str | None = None

    # Cache ---------------------------------------------------------------------------
    def get(self, key: str) -> Obj | None:
        return self._cache.get(key)

    def list(self) -> list[Obj]:
        return list(self._cache.values())

    def keys(self) -> list[str]:
        return list(self._cache)

    @property
    def resource_version(self) -> str | None:
        return self._rv

    def add_handler(self, on_add: Callable | None = None, on_update: Callable | None = None,
                    on_delete: Callable | None = None) -> None:
        """Register handlers. Objects already in the cache are replayed as adds, as
        client-go does for handlers added to a running informer."""
        handler = _Handler(on_add, on_update, on_delete)
        self._handlers.append(handler)
        if self._synced.is_set() and on_add is not None:
            for obj in list(self._cache.values()):
                result = on_add(obj)
                if inspect.isawaitable(result):
                    asyncio.ensure_future(result)

    # Lifecycle -----------------------------------------------------------------------
    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"informer-{self.resource}")

    async def wait_synced(self, timeout: float | None = None) -> None:
        await asyncio.wait_for(self._synced.wait(), timeout)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
            self._task = None

    async def _run(self) -> None:
        backoff = 0.05
        need_list = True
        while True:
            try:
                if need_list:
                    await self._relist()
                    need_list = False
                await self._watch()
                backoff = 0.05
            except asyncio.CancelledError:
                raise
            except ApiError as e:
                if e.code == 410:
                    need_list = True
                    continue
                log.warning("informer error", resource=self.resource, error=str(e))
            except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as e:
                log.debug("informer connection lost", resource=self.resource, error=str(e))
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 5.0)

    async def _relist(self) -> None:
        result = await self.client.list_all(
            self.api_version, self.resource, self.namespace,
            label_selector=self.label_selector, field_selector=self.field_selector)
        fresh = {key_of(o): o for o in result.get("items") or []}
        kind = (result.get("kind") or "").removesuffix("List")
        for obj in fresh.values():
            obj.setdefault("kind", kind)
            obj.setdefault("apiVersion", self.api_version)
        old = self._cache
        self._cache = fresh
        self._rv = (result.get("metadata") or {}).get("resourceVersion")
        for key, obj in old.items():
            if key not in fresh:
                await self._dispatch("delete", obj, None)
        for key, obj in fresh.items():
            before = old.get(key)
            if before is None:
                await self._dispatch("add", obj, None)
            elif (before.get("metadata") or {}).get("resourceVersion") != (
                    obj.get("metadata") or {}).get("resourceVersion"):
                await self._dispatch("update", before, obj)
        self._synced.set()

    async def _watch(self) -> None:
        async for event in self.client.watch(
                self.api_version, self.resource, self.namespace, resource_version=self._rv,
                label_selector=self.label_selector, field_selector=self.field_selector,
                timeout_seconds=self.watch_timeout):
            etype = event.get("type")
            obj = event.get("object") or {}
            if etype == "ERROR":
                raise ApiError(int(obj.get("code") or 500), obj)
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            if rv:
                self._rv = rv
            if etype == "BOOKMARK":
                continue
            key = key_of(obj)
            if etype == "ADDED" or etype == "MODIFIED":
                before = self._cache.get(key)
                self._cache[key] = obj
                if before is None:
                    await self._dispatch("add", obj, None)
                else:
                    await self._dispatch("update", before, obj)
            elif etype == "DELETED":
                before = self._cache.pop(key, None)
                await self._dispatch("delete", before or obj, None)

    async def _dispatch(self, what: str, obj: Obj, new: Obj | None) -> None:
        for h in self._handlers:
            if what == "add":
                await _call(h.on_add, obj)
            elif what == "update":
                await _call(h.on_update, obj, new)
            else:
                await _call(h.on_delete, obj)
