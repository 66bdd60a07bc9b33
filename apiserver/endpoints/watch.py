"""watch: a chunked stream of newline-terminated JSON events from the watch cache.

Covers resume from a resourceVersion (410 as an ERROR event when too old), synthetic
ADDED events for RV "" / "0", watch-list (`sendInitialEvents=true`: initial ADDED
events then a BOOKMARK annotated `k8s.io/initial-events-end`), bookmarks,
`timeoutSeconds`, selectors (objects entering or leaving a selection arrive as ADDED
or DELETED, as upstream), and Table watches (column definitions on the first event).
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from typing import Any

from aiohttp import web
from aiohttp.http_writer import StreamWriter

from draemu.api.errors import StatusError
from draemu.api.types import Obj
from draemu.apiserver.endpoints import tables
from draemu.apiserver.endpoints.rest_read import selection
from draemu.apiserver.endpoints.scope import Scope
from draemu.apiserver.genericregistry.store import Store
from draemu.apiserver.storage.watchcache import Change, TooOld, WatchCache, event_type
from draemu.apiserver.wire.codec import JSON, dumps, parse_int
from draemu.apiserver.wire.queryselectors import FieldRequirement, FieldSelector

# Upstream's --min-request-timeout: watches without timeoutSeconds last 30-60 minutes.
MIN_REQUEST_TIMEOUT = 1800.0
BOOKMARK_INTERVAL = 60.0
# How often an idle stream checks that its client is still connected (a busy one finds
# out when it writes).
LIVENESS_INTERVAL = 30.0
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
# Events joined into one write at most (a client reads them as they come all the same).
WRITE_EVENTS = 256
WRITE_BYTES = 256 * 1024


def _watch_params(scope: Scope) -> tuple[str, bool, bool | None, float]:
    q = scope.query
    rv = q.get("resourceVersion") or ""
    bookmarks = scope.flag("allowWatchBookmarks")
    send_initial = None
    if q.get("sendInitialEvents") not in (None, ""):
        send_initial = scope.flag("sendInitialEvents")
    match = q.get("resourceVersionMatch") or ""
    if send_initial is not None:
        if match != "NotOlderThan":
            raise StatusError(422, "Invalid", "resourceVersionMatch: Forbidden: "
                              "sendInitialEvents requires setting resourceVersionMatch to "
                              "NotOlderThan")
        if send_initial and not bookmarks:
            raise StatusError(422, "Invalid", "allowWatchBookmarks: Required value: "
                              "sendInitialEvents requires setting allowWatchBookmarks to true")
    elif match:
        raise StatusError(422, "Invalid", f'resourceVersionMatch: Forbidden: '
                          f'resourceVersionMatch "{match}" is not allowed for watch')
    timeout = parse_int(q.get("timeoutSeconds"), "timeoutSeconds")
    seconds = float(timeout) if timeout and timeout > 0 else \
        MIN_REQUEST_TIMEOUT * (1 + random.random())  # spreading, not secrecy
    return rv, bookmarks, send_initial, seconds


class _Stream:
    def __init__(self, scope: Scope, resp: web.StreamResponse, cache: WatchCache) -> None:
        self.scope = scope
        self.cache = cache
        self.resp = resp
        self.table = scope.accept.table
        self.shared_lines = scope.storage_shape
        self.include = tables.include_object(scope.query.get("includeObject")) \
            if self.table else ""
        self.headers_sent = False

    def render(self, obj: Obj) -> Obj:
        if self.scope.accept.partial_metadata:
            return self.scope.partial(obj)
        if not self.table:
            return self.scope.out(obj)
        body = tables.table(self.scope.strategy, [obj], include=self.include,
                            out=self.scope.out, table_version=self.table,
                            metadata={"resourceVersion": obj["metadata"]["resourceVersion"]},
                            headers=not self.headers_sent)
        self.headers_sent = True
        return body

    async def send(self, type_: str, obj: Obj) -> None:
        await self.resp.write(dumps({"type": type_, "object": obj}) + b"\n")

    def change_line(self, type_: str, change: Change) -> bytes:
        if not self.shared_lines:
            return dumps({"type": type_, "object": self.render(change.obj)}) + b"\n"
        # Every watcher in the storage version writes the same line: encode it once.
        return self.cache.event_line(change, type_)

    async def bookmark(self, revision: int, initial_end: bool = False) -> None:
        meta: Obj = {"resourceVersion": str(revision)}
        if initial_end:
            meta["annotations"] = {INITIAL_EVENTS_END: "true"}
        await self.send("BOOKMARK", {"kind": self.scope.resource.kind,
                                     "apiVersion": self.scope.api_version, "metadata": meta})


async def watch(scope: Scope, store: Store) -> web.StreamResponse:
    rv, bookmarks, send_initial, seconds = _watch_params(scope)
    sel = selection(scope)
    if scope.name:  # legacy /watch/.../name: a watch of one object
        sel = type(sel)(sel.labels, FieldSelector(
            (*sel.fields.requirements, FieldRequirement("metadata.name", scope.name, False))),
            sel.fields_of)
    cache = store.cache
    initial = send_initial if send_initial is not None else rv in ("", "0")
    snapshot, start, found = await store.watch(scope, sel, rv, initial)
    resp = web.StreamResponse(status=200)
    resp.headers["Content-Type"] = JSON
    resp.headers["Cache-Control"] = "no-cache, private"
    resp.enable_chunked_encoding()
    scope.add_warnings(resp)
    await resp.prepare(scope.request)
    stream = _Stream(scope, resp, cache)
    if isinstance(found, TooOld):
        await stream.send("ERROR", StatusError(410, "Expired", str(found)).status())
        return resp
    watcher = found
    deadline = time.monotonic() + seconds
    watcher.on_too_slow = lambda: _hang_up(scope.request)
    try:
        lines: list[bytes] = []
        size = 0
        for obj in snapshot:
            line = dumps({"type": "ADDED", "object": stream.render(obj)}) + b"\n"
            lines.append(line)
            size += len(line)
            if size >= WRITE_BYTES:
                await resp.write(b"".join(lines))
                lines, size = [], 0
        if lines:
            await resp.write(b"".join(lines))
        if send_initial:
            await stream.bookmark(start, initial_end=True)
        await _pump(stream, watcher, None if sel.everything else sel.matches, bookmarks,
                    deadline, cache)
    except ConnectionResetError:
        pass  # the client went away
    finally:
        cache.unwatch(watcher)
    return resp


def _hang_up(request: web.Request) -> None:
    """End the connection of a stream dropped for being too slow, at once: its client
    sees EOF (and re-lists, as after upstream's cacher closes a slow watch) even when it
    has stopped reading and the stream is blocked writing to it."""
    transport = request.transport
    if transport is not None:
        transport.abort()


_TICK: Any = object()  # a timer's wake-up call: check the deadline, bookmarks, the client


class _Alarm:
    """One timer per stream, re-armed for the nearest of its deadline, its next
    bookmark and a liveness check; it wakes the stream through its queue, so waiting
    for changes costs no timer per event."""

    def __init__(self, queue: asyncio.Queue[Any]) -> None:
        self.queue = queue
        self.handle: asyncio.TimerHandle | None = None
        self.missed = False

    def arm(self, delay: float) -> None:
        self.handle = asyncio.get_running_loop().call_later(max(delay, 0.0), self._ring)

    def _ring(self) -> None:
        try:
            self.queue.put_nowait(_TICK)
        except asyncio.QueueFull:
            self.missed = True  # a busy stream: it looks at the clock on its next change

    def cancel(self) -> None:
        if self.handle is not None:
            self.handle.cancel()


def _plain_chunks(request: web.Request) -> bool:
    """Whether the body of the response to `request` goes to its transport as plain
    HTTP/1.1 chunks, its headers sent: then the watch cache may write event chunks to the
    transport itself. (The writer's compression, chunk callback and pending headers have
    no public accessors: a writer that lacks those attributes is not written to.)"""
    writer = request.writer
    return (type(writer) is StreamWriter and writer.chunked
            and getattr(writer, "_compress", True) is None
            and getattr(writer, "_on_chunk_sent", True) is None
            and getattr(writer, "_headers_buf", True) is None and writer.length is None)


async def _pump(stream: _Stream, watcher: Any, matches: Any, bookmarks: bool, deadline: float,
                cache: Any) -> None:
    """Send the watcher's changes until the deadline, the client leaves or the watcher
    is dropped. While nothing is queued or unsent, a stream in the storage version has
    the cache write its events straight to the connection (WatchCache.write_directly):
    it then wakes only for its timer, or when its client falls behind and events come
    through the queue again."""
    next_bookmark = time.monotonic() + BOOKMARK_INTERVAL if bookmarks else math.inf
    bookmark_due = False
    request = stream.scope.request
    queue = watcher.queue
    alarm = _Alarm(queue)
    direct = stream.shared_lines and _plain_chunks(request)

    def rearm() -> None:
        now = time.monotonic()
        alarm.arm(min(deadline, next_bookmark, now + LIVENESS_INTERVAL) - now)

    rearm()
    # The events waiting in the queue go out in one write (one TLS record and one
    # system call for all of them, instead of one each).
    lines: list[bytes] = []
    try:
        while True:
            if queue.empty():
                if lines:
                    await stream.resp.write(b"".join(lines))
                    lines.clear()
                    continue  # more may have come meanwhile
                if bookmark_due:
                    # Everything up to the cache's revision is sent first: a bookmark
                    # promises that.
                    cache.flush(watcher)
                    if queue.empty():
                        bookmark_due = False
                        await stream.bookmark(cache.revision)
                    continue
                if direct and watcher.direct is None:
                    transport = request.transport
                    if transport is not None:
                        cache.write_directly(watcher, transport, matches)
            change = await queue.get()
            # Chunks the cache has for this stream but not written yet go out first.
            cache.flush(watcher)
            if change is None:  # dropped: too slow, or the server is stopping
                if lines:
                    await stream.resp.write(b"".join(lines))
                return
            if change is _TICK or alarm.missed:
                alarm.missed = False
                now = time.monotonic()
                if now >= deadline:
                    if lines:
                        await stream.resp.write(b"".join(lines))
                    return
                transport = request.transport
                if transport is None or transport.is_closing():
                    return
                if now >= next_bookmark:
                    bookmark_due = True  # sent once the queue is empty
                    next_bookmark = now + BOOKMARK_INTERVAL
                rearm()
                if change is _TICK:
                    continue
            type_ = event_type(change, matches)
            if type_ is not None:
                lines.append(stream.change_line(type_, change))
                if len(lines) >= WRITE_EVENTS:
                    await stream.resp.write(b"".join(lines))
                    lines.clear()
    finally:
        alarm.cancel()
