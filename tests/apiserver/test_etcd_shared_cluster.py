"""Two clusters on one etcd, each under a prefix of its own: the other's writes take
revisions of the same etcd, and a consistent read of one must not wait for them to come
through its own watch (they never do)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import aiohttp
import pytest
from apiclient import CM, Client, configmap, ssl_context_for

from draemu.cmd.testing.apiserver import start_apiserver
from draemu.store import open_store

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.backends("etcd")]


async def test_reads_are_not_held_up_by_another_clusters_writes(
        store_url: str, tmp_path: Path) -> None:
    server = await start_apiserver(tmp_path, store_url=store_url)
    other = await open_store(store_url.replace("/t-", "/other-t-"), compaction_interval=0)
    try:
        async with aiohttp.ClientSession() as session:
            client = Client(server.url, session, ssl_context_for(server.kubeconfig_path))
            assert (await client.post(CM, configmap("ours"))).status == 201
            for i in range(5):
                await other.create(f"/registry/configmaps/default/theirs-{i}", b"{}")
                started = time.perf_counter()
                listed = await client.get(CM)
                assert listed.status == 200, listed.body
                assert [o["metadata"]["name"] for o in listed.json["items"]] == ["ours"]
                assert time.perf_counter() - started < 2
            # The list's resourceVersion is this cluster's own newest; a watch from it
            # sees the next write.
            rv = listed.json["metadata"]["resourceVersion"]
            watch = await client.stream(f"{CM}?watch=true&resourceVersion={rv}")
            try:
                assert (await client.post(CM, configmap("next"))).status == 201
                line = await asyncio.wait_for(watch.content.readline(), 10)
                assert b'"name":"next"' in line
            finally:
                watch.close()
    finally:
        await other.close()
        await server.stop()
