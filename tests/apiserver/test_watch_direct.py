"""Watch events written by the watch cache straight to the connections of the streams
that have nothing queued (WatchCache.write_directly): one write per connection and loop
turn with the same chunk bytes for every watcher, the queue again for a connection that
holds too much unsent, the same bound; and over HTTPS: every watcher gets every event in
order during bursts, one that joins mid-burst gets no gap and no duplicate, a stalled
client is dropped without holding back the others, bookmarks never overtake events."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from apiclient import (
    CM,
    Client,
    configmap,
    list_revision,
    next_event,
    own_apiserver,
    ssl_context_for,
)

from draemu.apiserver.server.lifecycle import APIServer
from draemu.apiserver.storage import watchcache
from draemu.apiserver.storage.watchcache import Change, WatchCache
from draemu.store.factory import open_store

pytestmark = pytest.mark.unit

PREFIX = "/registry/core/configmaps/default/"


class _Transport:
    """What the cache needs of a connection: what it was written, how much it holds."""

    def __init__(self, buffered: int = 0) -> None:
        self.writes: list[bytes] = []
        self.buffered = buffered
        self.closing = False

    def is_closing(self) -> bool:
        return self.closing

    def get_write_buffer_size(self) -> int:
        return self.buffered

    def write(self, data: bytes) -> None:
        self.writes.append(data)


def _change(name: str, revision: int, prev: dict[str, Any] | None = None,
            labels: dict[str, str] | None = None) -> Change:
    obj = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "default", "labels": labels or {},
                        "resourceVersion": str(revision)}}
    return Change("put", PREFIX + name, obj, prev, revision)


def _chunks(data: bytes) -> list[dict[str, Any]]:
    """The events of HTTP/1.1 chunks, each chunk one or more event lines."""
    events = []
    while data:
        size, _, rest = data.partition(b"\r\n")
        n = int(size, 16)
        body, data = rest[:n], rest[n:]
        assert data[:2] == b"\r\n"
        data = data[2:]
        events += [json.loads(line) for line in body.splitlines()]
    return events


@asynccontextmanager
async def _cache(**options: Any) -> AsyncIterator[WatchCache]:
    store = await open_store("sqlite://:memory:")
    cache = WatchCache(store, **options)
    await cache.start()
    try:
        yield cache
    finally:
        await cache.stop()
        await store.close()


async def test_changes_of_one_loop_turn_go_out_in_one_write_the_same_for_every_watcher(
        ) -> None:
    async with _cache() as cache:
        ts = [_Transport(), _Transport()]
        ws = [cache.watch(PREFIX, cache.revision) for _ in ts]
        for w, t in zip(ws, ts, strict=True):
            assert cache.write_directly(w, t, None)
        base = cache.revision
        cache._dispatch(_change("a", base + 1))
        cache._dispatch(_change("b", base + 2))
        assert ts[0].writes == []  # at the end of the loop turn
        await asyncio.sleep(0)
        assert [len(t.writes) for t in ts] == [1, 1]
        assert ts[0].writes == ts[1].writes
        events = _chunks(ts[0].writes[0])
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
            ("ADDED", "a"), ("ADDED", "b")]
        cache._dispatch(_change("a", base + 3, prev={}))
        await asyncio.sleep(0)
        assert ts[0].writes[1] is ts[1].writes[1]  # one event: the very same bytes
        assert _chunks(ts[1].writes[1])[0]["type"] == "MODIFIED"
        assert all(w.queue.empty() for w in ws)  # no stream woken


async def test_a_watcher_whose_connection_holds_too_much_gets_its_changes_queued_in_order(
        ) -> None:
    async with _cache() as cache:
        t = _Transport()
        w = cache.watch(PREFIX, cache.revision)
        assert cache.write_directly(w, t, None)
        base = cache.revision
        cache._dispatch(_change("a", base + 1))
        t.buffered = watchcache.DIRECT_BUFFER + 1  # the client stopped reading
        cache._dispatch(_change("b", base + 2))
        await asyncio.sleep(0)
        assert t.writes == [] and w.direct is None
        cache._dispatch(_change("c", base + 3))  # after the others, in the queue too
        queued = [w.queue.get_nowait() for _ in range(3)]
        assert [c.key.rsplit("/", 1)[1] for c in queued] == ["a", "b", "c"]
        assert not cache.write_directly(w, t, None)  # not while it holds that much
        t.buffered = 0
        assert cache.write_directly(w, t, None)


async def test_a_direct_watcher_further_behind_than_its_queue_holds_is_dropped() -> None:
    async with _cache(watcher_queue=2) as cache:
        t = _Transport()
        w = cache.watch(PREFIX, cache.revision)
        hung_up = []
        w.on_too_slow = lambda: hung_up.append(True)
        assert cache.write_directly(w, t, None)
        base = cache.revision
        for i in range(3):
            cache._dispatch(_change(f"x{i}", base + 1 + i))
        await asyncio.sleep(0)
        assert w.dropped and hung_up and t.writes == []
        assert w.queue.get_nowait() is None
        assert cache.watcher_count == 0


async def test_a_closing_connection_gets_its_changes_through_the_queue() -> None:
    async with _cache() as cache:
        t = _Transport()
        w = cache.watch(PREFIX, cache.revision)
        assert cache.write_directly(w, t, None)
        cache._dispatch(_change("a", cache.revision + 1))
        t.closing = True
        await asyncio.sleep(0)
        assert t.writes == [] and w.queue.qsize() == 1  # the stream finds it gone


async def test_unwatched_watchers_write_nothing_more() -> None:
    async with _cache() as cache:
        t = _Transport()
        w = cache.watch(PREFIX, cache.revision)
        assert cache.write_directly(w, t, None)
        cache._dispatch(_change("a", cache.revision + 1))
        cache.unwatch(w)
        await asyncio.sleep(0)
        assert t.writes == []


async def test_direct_watchers_with_a_selector_see_objects_enter_and_leave() -> None:
    async with _cache() as cache:
        t = _Transport()
        w = cache.watch(PREFIX, cache.revision)

        def matches(obj: dict[str, Any]) -> bool:
            return obj["metadata"].get("labels", {}).get("app") == "x"

        assert cache.write_directly(w, t, matches)
        base = cache.revision
        cache._dispatch(_change("a", base + 1, labels={"app": "y"}))
        in_ = _change("a", base + 2, labels={"app": "x"})
        cache._dispatch(in_)
        cache._dispatch(_change("a", base + 3, prev=in_.obj, labels={"app": "y"}))
        await asyncio.sleep(0)
        assert [e["type"] for e in _chunks(b"".join(t.writes))] == ["ADDED", "DELETED"]


# Over HTTPS ---------------------------------------------------------------------------------

async def _direct_watchers(server: APIServer, n: int) -> None:
    """Until `n` watchers of ConfigMaps are written directly by the cache."""
    assert server.api is not None
    cache = server.api.store.cache
    for _ in range(500):
        ws = cache._watchers.get("/registry/core/configmaps/", set())
        if sum(1 for w in ws if w.direct is not None) >= n:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the watchers are not written directly")


async def _read(resp: aiohttp.ClientResponse, n: int) -> list[dict[str, Any]]:
    return [await next_event(resp) for _ in range(n)]


def _seq(events: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    return [(e["type"], e["object"]["metadata"]["name"],
             int(e["object"]["metadata"]["resourceVersion"])) for e in events]


async def test_every_watcher_gets_every_event_of_a_burst_in_order(client: Client,
                                                                  apiserver: APIServer) -> None:
    rv = await list_revision(client)
    streams = [await client.stream(f"{CM}?watch=true&resourceVersion={rv}") for _ in range(6)]
    try:
        await _direct_watchers(apiserver, 6)
        await asyncio.gather(*(client.post(CM, configmap(f"burst{i}")) for i in range(120)))
        seen = [await _read(s, 120) for s in streams]
        first = _seq(seen[0])
        assert sorted(name for _, name, _ in first) == sorted(f"burst{i}" for i in range(120))
        assert [rv for _, _, rv in first] == sorted({rv for _, _, rv in first})  # increasing
        assert all(_seq(s) == first for s in seen[1:])
    finally:
        for s in streams:
            s.close()


async def test_a_watcher_that_joins_during_a_burst_gets_no_gap_and_no_duplicate(
        client: Client, apiserver: APIServer) -> None:
    rv = await list_revision(client)
    early = await client.stream(f"{CM}?watch=true&resourceVersion={rv}")
    try:
        await _direct_watchers(apiserver, 1)
        burst = asyncio.create_task(asyncio.wait([asyncio.ensure_future(
            client.post(CM, configmap(f"j{i}"))) for i in range(150)]))
        head = await _read(early, 40)
        mid = head[-1]["object"]["metadata"]["resourceVersion"]
        # From a revision seen mid-burst, and with initial events (a list, then changes).
        late = await client.stream(f"{CM}?watch=true&resourceVersion={mid}")
        listed = await client.stream(f"{CM}?watch=true")
        await burst
        rest = await _read(early, 110)
        after = _seq(head + rest)[40:]
        assert _seq(await _read(late, len(after))) == after
        names = {f"j{i}" for i in range(150)}
        got: list[str] = []
        while len(got) < 150:
            e = await next_event(listed)
            if e["object"]["metadata"]["name"] in names:
                got.append(e["object"]["metadata"]["name"])
        assert sorted(got) == sorted(names)  # each once: in the list or as a change
        for s in (late, listed):
            s.close()
    finally:
        early.close()


async def test_a_stalled_client_never_holds_back_the_directly_written_watchers(
        tmp_path: Path) -> None:
    async with own_apiserver(tmp_path, watcher_queue=4) as (client, server):
        rv = await list_revision(client)
        ctx = ssl_context_for(server.kubeconfig_path)

        def open_stalled() -> ssl.SSLSocket:
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect(("127.0.0.1", server.port))
            tls = ctx.wrap_socket(sock, server_hostname="127.0.0.1")
            tls.sendall(f"GET {CM}?watch=true&resourceVersion={rv} HTTP/1.1\r\n"
                        "Host: x\r\n\r\n".encode())
            return tls

        stalled = await asyncio.to_thread(open_stalled)
        streams = [await client.stream(f"{CM}?watch=true&resourceVersion={rv}")
                   for _ in range(3)]
        try:
            await _direct_watchers(server, 4)
            big = "x" * 100_000
            # Far more than the stalled client's socket buffers (up to 4 MB) and queue hold.
            for i in range(60):
                assert (await client.post(CM, configmap(f"big{i}", a=big))).status == 201
            for s in streams:
                events = await _read(s, 60)
                assert [e["object"]["metadata"]["name"] for e in events] == [
                    f"big{i}" for i in range(60)]

            def read_to_the_end() -> None:
                stalled.settimeout(10)
                try:
                    while stalled.recv(65536):
                        pass
                except ConnectionResetError:
                    pass

            await asyncio.to_thread(read_to_the_end)  # dropped: its connection ends
            assert server.api is not None
            assert server.api.store.cache.watcher_count == 3
        finally:
            stalled.close()
            for s in streams:
                s.close()


async def test_bookmarks_of_a_directly_written_watch_never_overtake_its_events(
        client: Client, apiserver: APIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from draemu.apiserver.endpoints import watch

    monkeypatch.setattr(watch, "BOOKMARK_INTERVAL", 0.05)
    rv = await list_revision(client)
    resp = await client.stream(f"{CM}?watch=true&resourceVersion={rv}&allowWatchBookmarks=true")
    try:
        await _direct_watchers(apiserver, 1)
        for i in range(30):
            await client.post(CM, configmap(f"bm{i}"))
            if i % 3 == 0:
                await asyncio.sleep(0.06)
        last, bookmarks, names = int(rv), 0, []
        while len(names) < 30:
            e = await next_event(resp)
            revision = int(e["object"]["metadata"]["resourceVersion"])
            if e["type"] == "BOOKMARK":
                bookmarks += 1
                assert revision >= last
            else:
                assert revision > last
                names.append(e["object"]["metadata"]["name"])
            last = revision
        assert names == [f"bm{i}" for i in range(30)] and bookmarks
    finally:
        resp.close()


async def test_handshakes_issue_no_session_tickets(apiserver: APIServer) -> None:
    """Nobody resumes them; making them was a good part of each handshake's cost."""
    ctx = ssl_context_for(apiserver.kubeconfig_path)

    def handshake() -> bool:
        with socket.create_connection(("127.0.0.1", apiserver.port)) as sock, \
                ctx.wrap_socket(sock, server_hostname="127.0.0.1") as tls:
            tls.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            while tls.recv(65536):  # tickets come after the handshake, before the answer
                pass
            session = tls.session
            return session is not None and session.has_ticket

    assert not await asyncio.to_thread(handshake)
