"""Plugin registration: discover sockets in `plugins_registry/`, register, deregister.

Like the kubelet's plugin manager: the directory tree is watched (inotify) and scanned
(sockets only, dot-names ignored); a new socket — or one re-created
under the same path — is registered: GetInfo (1 s deadline), a handler by plugin type,
validation, registration, NotifyRegistrationStatus. A vanished socket is deregistered
without calling the plugin. Failed attempts are retried with exponential backoff
(0.5 s doubling, at most 2 min).
"""

from __future__ import annotations

import asyncio
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import grpc

from draemu.kubelet.inotify import DirectoryNotifier
from draemu.kubeletapi import pluginregistration as reg
from draemu.kubeletapi import rpc
from draemu.log import get_logger

log = get_logger("kubelet.pluginwatcher")

DIAL_TIMEOUT = 10.0
GET_INFO_TIMEOUT = 1.0
NOTIFY_TIMEOUT = 5.0
BACKOFF_START, BACKOFF_MAX = 0.5, 120.0


class PluginHandler(Protocol):
    def validate(self, name: str, endpoint: str, versions: list[str]) -> None: ...
    async def register(self, name: str, endpoint: str, versions: list[str]) -> None: ...
    async def deregister(self, name: str, endpoint: str) -> None: ...


@dataclass
class _Registered:
    identity: tuple[int, int]  # (inode, ctime): a re-created socket is a new plugin
    type: str
    name: str
    endpoint: str


@dataclass
class _Backoff:
    identity: tuple[int, int]
    delay: float
    not_before: float


def scan_sockets(directory: Path, subdirs: list[str] | None = None
                 ) -> dict[str, tuple[int, int]]:
    """Sockets under `directory` by path; the directories walked go into `subdirs`."""
    found: dict[str, tuple[int, int]] = {}
    for dirpath, dirnames, filenames in os.walk(directory):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        if subdirs is not None:
            subdirs.append(dirpath)
        for name in filenames:
            if name.startswith("."):
                continue
            path = os.path.join(dirpath, name)
            try:
                st = os.stat(path)
            except FileNotFoundError:
                continue
            if stat.S_ISSOCK(st.st_mode):
                found[path] = (st.st_ino, st.st_ctime_ns)
    return found


class PluginWatcher:
    """Reconciles on every change inotify reports, and every `interval` seconds (retries,
    and the only trigger where inotify is unavailable)."""

    def __init__(self, directory: Path, handlers: dict[str, PluginHandler],
                 interval: float = 1.0,
                 endpoint_path: Callable[[str], str] = lambda endpoint: endpoint) -> None:
        self.directory = directory
        # A plugin in a container names its socket as it sees it (kubelet/hostpaths.py).
        self.endpoint_path = endpoint_path
        self.handlers = handlers
        self.interval = interval
        self.registered: dict[str, _Registered] = {}
        self._backoff: dict[str, _Backoff] = {}
        self._task: asyncio.Task[None] | None = None
        self._notifier: DirectoryNotifier | None = None

    async def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o755)
        self._notifier = DirectoryNotifier.create()
        self._task = asyncio.create_task(self._run(), name="pluginwatcher")

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._notifier:
            self._notifier.close()
            self._notifier = None

    async def _run(self) -> None:
        while True:
            if self._notifier:
                self._notifier.changed.clear()
            await self.reconcile()
            if self._notifier is None:
                await asyncio.sleep(self.interval)
                continue
            try:
                await asyncio.wait_for(self._notifier.changed.wait(), self.interval)
            except TimeoutError:
                pass

    async def reconcile(self) -> None:
        if self._notifier:
            # Watch before scanning, so a socket created meanwhile is not missed; a
            # directory first seen in this scan is watched after it, so scan once more.
            self._notifier.watch(self.directory)
        subdirs: list[str] = []
        desired = scan_sockets(self.directory, subdirs)
        if self._notifier:
            self._notifier.retain(set(subdirs))
            if any([self._notifier.watch(Path(d)) for d in subdirs]):
                self._notifier.changed.set()
        for path, plugin in list(self.registered.items()):
            if desired.get(path) != plugin.identity:
                del self.registered[path]
                await self._deregister(plugin)
        now = time.monotonic()
        attempts = []
        for path, identity in desired.items():
            if path in self.registered:
                continue
            backoff = self._backoff.get(path)
            if backoff and backoff.identity == identity and now < backoff.not_before:
                continue
            attempts.append(self._attempt(path, identity))
        if attempts:
            await asyncio.gather(*attempts)

    async def _deregister(self, plugin: _Registered) -> None:
        handler = self.handlers.get(plugin.type)
        if handler is not None:
            try:
                await handler.deregister(plugin.name, plugin.endpoint)
            except Exception as err:  # a handler error must not stop the loop
                log.error("deregistration failed", plugin=plugin.name, error=str(err))

    async def _attempt(self, path: str, identity: tuple[int, int]) -> None:
        try:
            await self.register(path, identity)
            self._backoff.pop(path, None)
        except Exception as err:  # retried with backoff
            previous = self._backoff.get(path)
            delay = BACKOFF_START if previous is None or previous.identity != identity else min(
                previous.delay * 2, BACKOFF_MAX)
            self._backoff[path] = _Backoff(identity, delay, time.monotonic() + delay)
            log.warning("plugin registration failed", socket=path, error=str(err),
                        retry_in=delay)

    async def register(self, path: str, identity: tuple[int, int]) -> None:
        async with grpc.aio.insecure_channel(rpc.dial_target(path)) as channel:
            await asyncio.wait_for(channel.channel_ready(), DIAL_TIMEOUT)
            client = rpc.RegistrationClient(channel)
            info = await client.get_info(reg.InfoRequest(), timeout=GET_INFO_TIMEOUT)
            handler = self.handlers.get(info.type)
            if handler is None:
                message = (f"RegisterPlugin error -- no handler registered for plugin type: "
                           f"{info.type} at socket {path}")
                await _notify(client, False, message)
                raise RuntimeError(message)
            endpoint = self.endpoint_path(info.endpoint) if info.endpoint else path
            versions = list(info.supported_versions)
            try:
                handler.validate(info.name, endpoint, versions)
            except Exception as err:
                message = f"RegisterPlugin error -- plugin validation failed with err: {err}"
                await _notify(client, False, message)
                raise RuntimeError(message) from err
            # Recorded before the handler runs, as upstream: a handler failure is not
            # retried until the socket is re-created.
            self.registered[path] = _Registered(identity, info.type, info.name, endpoint)
            try:
                await handler.register(info.name, endpoint, versions)
            except Exception as err:  # reported to the plugin
                await _notify(client, False, f"RegisterPlugin error -- {err}")
                log.error("plugin handler rejected registration", plugin=info.name,
                          error=str(err))
                return
            await _notify(client, True, "")


async def _notify(client: rpc.RegistrationClient, ok: bool, error: str) -> None:
    try:
        await client.notify_registration_status(
            reg.RegistrationStatus(plugin_registered=ok, error=error), timeout=NOTIFY_TIMEOUT)
    except grpc.aio.AioRpcError as err:
        # Plugins answer a rejection with an error; the kubelet only logs it.
        log.debug("NotifyRegistrationStatus failed", error=err.details(), registered=ok)
