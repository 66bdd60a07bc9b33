"""A request that is not long-running has a time budget (upstream's --request-timeout,
issue 15): past it the client gets a 504 Status and the server moves on."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
import pytest_asyncio
from apiclient import CM, Client, ssl_context_for

from draemu.cmd.testing.apiserver import start_apiserver

pytestmark = pytest.mark.unit


@pytest_asyncio.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    """A client of an apiserver whose requests have 0.3 s (--request-timeout)."""
    server = await start_apiserver(tmp_path, request_timeout=0.3)
    try:
        async with aiohttp.ClientSession() as session:
            yield Client(server.url, session, ssl_context_for(server.kubeconfig_path))
    finally:
        await server.stop()


async def test_a_request_past_its_budget_is_a_504_status(client: Client) -> None:
    started = time.perf_counter()
    # A list at a revision the cache has not reached waits for it (5 s at most).
    reply = await client.get(f"{CM}?resourceVersion=999999999"
                             "&resourceVersionMatch=NotOlderThan")
    assert time.perf_counter() - started < 2.0
    assert reply.status == 504
    status = reply.json
    assert (status["kind"], status["reason"], status["code"]) == ("Status", "Timeout", 504)
    assert "context deadline exceeded" in status["message"]
    assert (await client.get("/readyz")).status == 200
