"""Paged LISTs (`limit` + `continue`): every object exactly once, each page at the first
page's resourceVersion whatever was written between pages (from the watch cache's
history, or from the store once the history no longer reaches back), and 410 Expired
with upstream's message once the store has compacted that revision."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from apiclient import CM, Client, configmap, ssl_context_for

from draemu.apiserver.server.lifecycle import APIServer
from draemu.cmd.testing.apiserver import start_apiserver

pytestmark = pytest.mark.unit

TOO_OLD = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted "
    "between the time the first chunk was returned and now may show up in the list.")


async def _server(tmp_path: Path, **options: Any) -> AsyncIterator[tuple[APIServer, Client]]:
    server = await start_apiserver(tmp_path / "apiserver", **options)
    try:
        async with aiohttp.ClientSession() as session:
            yield server, Client(server.url, session, ssl_context_for(server.kubeconfig_path))
    finally:
        await server.stop()


@pytest_asyncio.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[APIServer, Client]]:
    async for pair in _server(tmp_path):
        yield pair


@pytest_asyncio.fixture
async def short_history(tmp_path: Path) -> AsyncIterator[tuple[APIServer, Client]]:
    async for pair in _server(tmp_path, watch_history=8):
        yield pair


async def _fill(client: Client, names: list[str]) -> None:
    for name in names:
        reply = await client.post(CM, configmap(name, labels={"odd": str(int(name[-1]) % 2)},
                                                v="0"))
        assert reply.status == 201, reply.body


async def _page(client: Client, limit: int, token: str = "", query: str = "") -> Any:
    path = f"{CM}?limit={limit}" + (f"&continue={token}" if token else "") + query
    reply = await client.get(path)
    assert reply.status == 200, reply.body
    return reply.json


async def _following_pages(client: Client, first: Any, limit: int,
                           query: str = "") -> list[Any]:
    """The pages after `first`, each checked to be at the first page's revision."""
    pages, body = [], first
    while token := body["metadata"].get("continue"):
        body = await _page(client, limit, token, query)
        assert body["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
        pages.append(body)
    return pages


def _state(items: list[dict[str, Any]]) -> list[tuple[str, Any, str]]:
    return [(o["metadata"]["name"], o.get("data"), o["metadata"]["resourceVersion"])
            for o in items]


async def test_pages_give_every_object_once_with_the_remaining_count(
        served: tuple[APIServer, Client]) -> None:
    _, client = served
    names = [f"cm{i:03d}" for i in range(57)]
    await _fill(client, names)
    seen: list[str] = []
    body = await _page(client, 5)
    rv = body["metadata"]["resourceVersion"]
    while True:
        seen += [o["metadata"]["name"] for o in body["items"]]
        assert body["metadata"]["resourceVersion"] == rv
        token = body["metadata"].get("continue")
        if not token:
            assert "remainingItemCount" not in body["metadata"]
            break
        assert body["metadata"]["remainingItemCount"] == len(names) - len(seen)
        body = await _page(client, 5, token)
    assert seen == names


async def test_pages_after_writes_show_the_first_page_revision(
        served: tuple[APIServer, Client]) -> None:
    _, client = served
    await _fill(client, [f"cm{i:02d}" for i in range(20)])
    full = (await client.get(CM)).json
    first = await _page(client, 6)
    rv = first["metadata"]["resourceVersion"]
    assert rv == full["metadata"]["resourceVersion"]
    # Before and after the first page's end: creations, updates, deletions.
    assert (await client.post(CM, configmap("cm00a"))).status == 201
    assert (await client.post(CM, configmap("cm10a"))).status == 201
    assert (await client.post(CM, configmap("cm16a"))).status == 201
    assert (await client.post(CM, configmap("cm16b"))).status == 201
    assert (await client.delete(f"{CM}/cm01")).status == 200
    assert (await client.delete(f"{CM}/cm12")).status == 200
    for name in ("cm02", "cm07", "cm15"):
        cur = (await client.get(f"{CM}/{name}")).json
        cur["data"] = {"v": "changed"}
        assert (await client.put(f"{CM}/{name}", cur)).status == 200
    assert (await client.delete(f"{CM}/cm07")).status == 200
    assert (await client.post(CM, configmap("cm07", v="again"))).status == 201
    items = list(first["items"])
    for body in await _following_pages(client, first, 6):
        if body["metadata"].get("continue"):
            assert body["metadata"]["remainingItemCount"] == 20 - len(items) - len(
                body["items"])
        items += body["items"]
    assert _state(items) == _state(full["items"])
    assert items == full["items"]
    # A new list sees the writes.
    now = [o["metadata"]["name"] for o in (await client.get(CM)).json["items"]]
    assert "cm00a" in now and "cm10a" in now and "cm12" not in now and "cm01" not in now


async def test_pages_with_a_selector_at_the_first_page_revision(
        served: tuple[APIServer, Client]) -> None:
    _, client = served
    await _fill(client, [f"cm{i:02d}" for i in range(15)])
    query = "&labelSelector=odd%3D1"
    first = await _page(client, 2, query=query)
    assert "remainingItemCount" not in first["metadata"]
    cur = (await client.get(f"{CM}/cm09")).json
    cur["metadata"]["labels"] = {"odd": "0"}
    assert (await client.put(f"{CM}/cm09", cur)).status == 200
    cur = (await client.get(f"{CM}/cm10")).json
    cur["metadata"]["labels"] = {"odd": "1"}
    assert (await client.put(f"{CM}/cm10", cur)).status == 200
    names = [o["metadata"]["name"] for o in first["items"]]
    for body in await _following_pages(client, first, 2, query):
        assert "remainingItemCount" not in body["metadata"]
        names += [o["metadata"]["name"] for o in body["items"]]
    assert names == [f"cm{i:02d}" for i in range(1, 15, 2)]


async def test_random_writes_between_pages(served: tuple[APIServer, Client]) -> None:
    _, client = served
    rng = random.Random(7)
    pool = [f"cm{i:02d}" for i in range(40)]
    await _fill(client, pool[::2])
    for _round in range(4):
        full = (await client.get(CM)).json
        body = await _page(client, 3)
        assert body["metadata"]["resourceVersion"] == full["metadata"]["resourceVersion"]
        items = list(body["items"])
        while token := body["metadata"].get("continue"):
            for _ in range(rng.randrange(4)):
                name = rng.choice(pool)
                cur = await client.get(f"{CM}/{name}")
                if cur.status == 404:
                    assert (await client.post(CM, configmap(name, v="n"))).status == 201
                elif rng.random() < 0.5:
                    assert (await client.delete(f"{CM}/{name}")).status == 200
                else:
                    obj = cur.json
                    obj["data"] = {"v": str(rng.random())}
                    assert (await client.put(f"{CM}/{name}", obj)).status == 200
            body = await _page(client, 3, token)
            items += body["items"]
        assert items == full["items"]


async def test_pages_from_the_store_once_the_cache_history_is_gone(
        short_history: tuple[APIServer, Client]) -> None:
    _, client = short_history
    await _fill(client, [f"cm{i:02d}" for i in range(10)])
    full = (await client.get(CM)).json
    first = await _page(client, 4)
    for i in range(12):  # more changes than the cache keeps
        cur = (await client.get(f"{CM}/cm{i % 10:02d}")).json
        cur["data"] = {"v": str(i)}
        assert (await client.put(f"{CM}/cm{i % 10:02d}", cur)).status == 200
    items = list(first["items"])
    for body in await _following_pages(client, first, 4):
        items += body["items"]
    assert items == full["items"]


async def test_a_continue_at_a_compacted_revision_is_410(
        served: tuple[APIServer, Client]) -> None:
    server, client = served
    await _fill(client, [f"cm{i:02d}" for i in range(6)])
    first = await _page(client, 2)
    assert (await client.post(CM, configmap("later"))).status == 201
    await server.store.compact(await server.store.current_revision())
    reply = await client.get(f"{CM}?limit=2&continue={first['metadata']['continue']}")
    assert reply.status == 410, reply.body
    assert reply.json["reason"] == "Expired"
    assert reply.json["message"] == TOO_OLD
    # Its continue token goes on after the same key at the latest revision (an
    # inconsistent list: "later", written after the first page, is in it).
    token = reply.json["metadata"]["continue"]
    rest = await _page(client, 2, token)
    assert [i["metadata"]["name"] for i in rest["items"]] == ["cm02", "cm03"]
    assert rest["metadata"]["resourceVersion"] != first["metadata"]["resourceVersion"]
    assert rest["metadata"]["remainingItemCount"] == 3
    names = [i["metadata"]["name"] for i in rest["items"]]
    while token := rest["metadata"].get("continue"):
        rest = await _page(client, 2, token)
        names += [i["metadata"]["name"] for i in rest["items"]]
    assert names == ["cm02", "cm03", "cm04", "cm05", "later"]
