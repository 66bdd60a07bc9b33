"""A request that is not long-running has a time budget (upstream's --request-timeout,
issue 15): past it the client gets a 504 Status and the server moves on."""

from __future__ import annotations

import time

import pytest
from apiclient import CM, Client

from draemu.apiserver.server.lifecycle import APIServer

pytestmark = pytest.mark.unit


async def test_a_request_past_its_budget_is_a_504_status(apiserver: APIServer,
                                                         client: Client) -> None:
    assert apiserver.api is not None
    apiserver.api.request_timeout = 0.3
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
