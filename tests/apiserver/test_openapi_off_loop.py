"""The OpenAPI documents of a very large CRD are built off the event loop (issue 35,
defect 8: a CRD with 10,000 properties took 2.1-2.4 s on its first GET, and /readyz
stalled as long)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from apiclient import Client, ssl_context_for

from draemu.cmd.testing.apiserver import start_apiserver

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
PROPERTIES = 10_000


def wide_crd() -> dict:
    props = {f"field{i:05}": {"type": "string", "maxLength": 64} for i in range(PROPERTIES)}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "wides.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "wides", "kind": "Wide"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {
                                       "type": "object", "properties": {"spec": {
                                           "type": "object", "properties": props}}}}}]}}


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    server = await start_apiserver(tmp_path)
    try:
        async with aiohttp.ClientSession() as session:
            yield Client(server.url, session, ssl_context_for(server.kubeconfig_path))
    finally:
        await server.stop()


async def test_readyz_answers_while_a_wide_crds_openapi_is_built(client: Client) -> None:
    assert (await client.post(CRDS, wide_crd())).status == 201
    for _ in range(200):  # served once established
        if (await client.get("/apis/example.com/v1")).status == 200:
            break
        await asyncio.sleep(0.05)
    ready_latencies: list[float] = []
    done = asyncio.Event()

    async def poll_readyz() -> None:
        while not done.is_set():
            started = time.monotonic()
            assert (await client.get("/readyz")).status == 200
            ready_latencies.append(time.monotonic() - started)
            await asyncio.sleep(0.01)

    poller = asyncio.create_task(poll_readyz())
    started = time.monotonic()
    replies = await asyncio.gather(*[client.get("/openapi/v3/apis/example.com/v1")
                                     for _ in range(3)])
    build = time.monotonic() - started
    done.set()
    await poller
    assert all(r.status == 200 for r in replies)
    assert len(replies[0].json["components"]["schemas"]) >= 1
    assert ready_latencies, "readyz was never answered"
    if build > 0.5:  # long enough to tell: /readyz answered meanwhile, not after it
        assert max(ready_latencies) < build / 2, (max(ready_latencies), build)
