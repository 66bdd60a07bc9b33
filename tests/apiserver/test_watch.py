"""watch: framing, resume, expiry, bookmarks, watch-list, selectors, timeouts."""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
from collections.abc import AsyncIterator
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

from draemu.cmd.testing.apiserver import start_apiserver
from draemu.store import WatchTooSlowError
from draemu.store.factory import open_store

pytestmark = pytest.mark.unit


async def test_watch_streams_newline_terminated_events_from_a_revision(client: Client) -> None:
    rv = await list_revision(client)
    resp = await client.stream(f"{CM}?watch=true&resourceVersion={rv}")
    try:
        assert resp.headers["Content-Type"] == "application/json"
        await client.post(CM, configmap("w1", a="1"))
        created = await next_event(resp)
        assert created["type"] == "ADDED"
        assert created["object"]["metadata"]["name"] == "w1"
        await client.put(f"{CM}/w1", configmap("w1", a="2"))
        assert (await next_event(resp))["type"] == "MODIFIED"
        await client.delete(f"{CM}/w1")
        deleted = await next_event(resp)
        assert deleted["type"] == "DELETED"
        assert int(deleted["object"]["metadata"]["resourceVersion"]) > int(
            created["object"]["metadata"]["resourceVersion"])
    finally:
        resp.close()


async def test_watch_resumes_with_changes_after_the_given_revision(client: Client) -> None:
    rv = await list_revision(client)
    await client.post(CM, configmap("before"))
    resp = await client.stream(f"{CM}?watch=True&resourceVersion={rv}")  # Python-style bool
    try:
        event = await next_event(resp)
        assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "before")
    finally:
        resp.close()


async def test_watch_without_revision_starts_with_synthetic_added_events(
        client: Client) -> None:
    await client.post(CM, configmap("existing"))
    resp = await client.stream(f"{CM}?watch=1")
    try:
        event = await next_event(resp)
        assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "existing")
    finally:
        resp.close()


async def test_too_old_revision_is_an_error_event_410(tmp_path) -> None:
    async with own_apiserver(tmp_path, watch_history=3) as (client, _):
        for i in range(5):
            await client.post(CM, configmap(f"h{i}"))
        resp = await client.stream(f"{CM}?watch=true&resourceVersion=1")
        try:
            event = await next_event(resp)
            assert event["type"] == "ERROR"
            assert event["object"]["code"] == 410 and event["object"]["reason"] == "Expired"
            assert event["object"]["message"].startswith("too old resource version: 1 (")
        finally:
            resp.close()


async def test_watch_list_sends_initial_events_then_annotated_bookmark(client: Client) -> None:
    await client.post(CM, configmap("init"))
    resp = await client.stream(f"{CM}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true"
                               "&resourceVersionMatch=NotOlderThan&fieldSelector=metadata.name"
                               "%3Dinit")
    try:
        added = await next_event(resp)
        assert (added["type"], added["object"]["metadata"]["name"]) == ("ADDED", "init")
        bookmark = await next_event(resp)
        assert bookmark["type"] == "BOOKMARK"
        assert bookmark["object"]["kind"] == "ConfigMap"
        assert bookmark["object"]["apiVersion"] == "v1"
        assert bookmark["object"]["metadata"]["annotations"] == {
            "k8s.io/initial-events-end": "true"}
    finally:
        resp.close()


async def test_send_initial_events_without_not_older_than_is_422(client: Client) -> None:
    reply = await client.get(f"{CM}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true")
    assert reply.status == 422


async def test_timeout_seconds_ends_the_stream_cleanly(client: Client) -> None:
    rv = await list_revision(client)
    resp = await client.stream(f"{CM}?watch=true&resourceVersion={rv}&timeoutSeconds=1")
    try:
        line = await asyncio.wait_for(resp.content.readline(), 10)
        assert line == b""  # end of stream, no error
    finally:
        resp.close()


async def test_objects_leaving_a_selector_arrive_as_deleted(client: Client) -> None:
    await client.post(CM, configmap("sel", {"app": "x"}))
    rv = await list_revision(client)
    resp = await client.stream(f"{CM}?watch=true&resourceVersion={rv}&labelSelector=app%3Dx")
    try:
        await client.put(f"{CM}/sel", configmap("sel", {"app": "y"}))
        event = await next_event(resp)
        assert event["type"] == "DELETED"
        await client.put(f"{CM}/sel", configmap("sel", {"app": "x"}))
        assert (await next_event(resp))["type"] == "ADDED"
    finally:
        resp.close()


async def test_legacy_watch_path_of_one_object(client: Client) -> None:
    await client.post(CM, configmap("one"))
    await client.post(CM, configmap("two"))
    resp = await client.stream("/api/v1/watch/namespaces/default/configmaps/two")
    try:
        event = await next_event(resp)
        assert event["object"]["metadata"]["name"] == "two"
    finally:
        resp.close()


async def test_table_watch_sends_column_definitions_only_first(client: Client) -> None:
    rv = await list_revision(client)
    resp = await client.stream(f"{CM}?watch=true&resourceVersion={rv}", headers={
        "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    try:
        await client.post(CM, configmap("t1"))
        await client.post(CM, configmap("t2"))
        first, second = await next_event(resp), await next_event(resp)
        assert first["object"]["kind"] == "Table" and first["object"]["columnDefinitions"]
        assert second["object"]["columnDefinitions"] is None
        assert second["object"]["rows"][0]["cells"][0] == "t2"
    finally:
        resp.close()


async def test_slow_watcher_is_dropped_without_blocking_writes(tmp_path) -> None:
    async with own_apiserver(tmp_path, watcher_queue=2) as (client, server):
        rv = await list_revision(client)
        assert server.api is not None
        cache = server.api.store.cache
        watcher = cache.watch("/registry/core/configmaps/", int(rv))
        for i in range(5):
            assert (await client.post(CM, configmap(f"s{i}"))).status == 201
        await cache.wait_for(int(rv) + 5)
        assert watcher.dropped
        assert watcher.queue.get_nowait() is None


async def test_send_initial_events_false_watches_from_now(client: Client) -> None:
    await client.post(CM, configmap("old"))
    resp = await client.stream(f"{CM}?watch=true&sendInitialEvents=false"
                               "&resourceVersionMatch=NotOlderThan")
    try:
        await client.post(CM, configmap("new"))
        event = await next_event(resp)
        assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "new")
    finally:
        resp.close()


async def test_cache_that_falls_behind_the_store_reloads_and_ends_watches(tmp_path) -> None:
    store = await open_store("sqlite://:memory:")
    behind = False
    original = store.watch

    async def watch(prefix: str, revision: int) -> AsyncIterator[Any]:
        # The store's watch, which gives up (as a real one does when its consumer lags)
        # on the first event after `behind` is set.
        nonlocal behind
        stream = original(prefix, revision)
        try:
            async for event in stream:
                if behind:
                    behind = False
                    raise WatchTooSlowError("behind")
                yield event
        finally:
            await stream.aclose()

    store.watch = watch
    try:
        async with own_apiserver(tmp_path, store=store) as (client, server):
            assert server.api is not None
            cache = server.api.store.cache
            watcher = cache.watch("/registry/core/configmaps/", int(await list_revision(client)))
            behind = True
            await client.post(CM, configmap("lost"))
            assert (await asyncio.wait_for(watcher.queue.get(), 10)) is None  # re-list
            await client.post(CM, configmap("after-reload"))
            assert (await client.get(f"{CM}/after-reload")).status == 200
    finally:
        await store.close()


async def test_stopping_the_server_ends_open_watches_promptly(tmp_path) -> None:
    server = await start_apiserver(tmp_path / "s")
    async with aiohttp.ClientSession() as session:
        c = Client(server.url, session, ssl_context_for(server.kubeconfig_path))
        resp = await c.stream(f"{CM}?watch=true&resourceVersion={await list_revision(c)}")
        started = time.monotonic()
        await server.stop()
        assert time.monotonic() - started < 4.5  # not the 5 s shutdown timeout
        assert await asyncio.wait_for(resp.content.read(), 5) == b""
        resp.close()


async def test_idle_watch_with_bookmarks_gets_periodic_bookmarks(client: Client,
                                                                 monkeypatch) -> None:
    from draemu.apiserver.endpoints import watch

    monkeypatch.setattr(watch, "BOOKMARK_INTERVAL", 0.2)
    rv = await list_revision(client)
    resp = await client.stream(f"{CM}?watch=true&resourceVersion={rv}&allowWatchBookmarks=true")
    try:
        event = await next_event(resp)
        assert event["type"] == "BOOKMARK"
        assert event["object"]["kind"] == "ConfigMap"
        assert int(event["object"]["metadata"]["resourceVersion"]) >= int(rv)
    finally:
        resp.close()


async def test_busy_watch_still_ends_at_its_timeout(client: Client) -> None:
    rv = await list_revision(client)
    resp = await client.stream(f"{CM}?watch=true&resourceVersion={rv}&timeoutSeconds=1")
    try:
        started = time.monotonic()
        for i in range(3):
            await client.post(CM, configmap(f"busy{i}"))
        while await asyncio.wait_for(resp.content.readline(), 10):
            pass
        assert time.monotonic() - started < 8
    finally:
        resp.close()


async def test_a_watcher_dropped_for_being_too_slow_gets_its_connection_closed(
        tmp_path) -> None:
    """Issue 15: a client that stops reading is dropped, and its connection ends (EOF),
    even though the stream was blocked writing to it."""
    async with own_apiserver(tmp_path, watcher_queue=2) as (client, server):
        ctx = ssl_context_for(server.kubeconfig_path)

        def open_watch() -> ssl.SSLSocket:
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect(("127.0.0.1", server.port))
            tls = ctx.wrap_socket(sock, server_hostname="127.0.0.1")
            tls.sendall(f"GET {CM}?watch=true HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            return tls

        tls = await asyncio.to_thread(open_watch)
        try:
            big = "x" * 100_000
            for i in range(40):  # far more than the socket buffers and the queue hold
                assert (await client.post(CM, configmap(f"big{i}", a=big))).status == 201

            def read_to_the_end() -> None:
                tls.settimeout(10)
                try:
                    while tls.recv(65536):
                        pass
                except ConnectionResetError:
                    pass  # the end, too

            await asyncio.to_thread(read_to_the_end)  # a socket.timeout fails the test
        finally:
            tls.close()
        assert server.api is not None and server.api.store.cache.watcher_count == 0
