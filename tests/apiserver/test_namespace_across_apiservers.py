"""Two apiservers on one PostgreSQL or etcd store, each with its own connection and watch cache:
an object may be created in a namespace the very moment after the namespace was created
through the other apiserver, before this apiserver's watch cache has heard of it (as
upstream's NamespaceLifecycle, a cache miss is checked against the store)."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest
from apiclient import Client, configmap, ssl_context_for

from draemu.cmd.testing.apiserver import start_apiserver
from draemu.store import open_store

pytestmark = pytest.mark.e2e


@pytest.mark.backends("postgresql", "etcd")
async def test_create_in_a_namespace_just_created_through_another_apiserver(
        store_url: str, tmp_path: Path) -> None:
    first = await open_store(store_url, compaction_interval=0)
    second = await open_store(store_url, compaction_interval=0)
    a = await start_apiserver(tmp_path / "a", store=first)
    b = await start_apiserver(tmp_path / "b", store=second)
    try:
        async with aiohttp.ClientSession() as session:
            ca = Client(a.url, session, ssl_context_for(a.kubeconfig_path))
            cb = Client(b.url, session, ssl_context_for(b.kubeconfig_path))
            for i in range(20):
                ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"n{i}"}}
                assert (await ca.post("/api/v1/namespaces", ns)).status == 201
                created = await cb.post(f"/api/v1/namespaces/n{i}/configmaps",
                                        configmap("right-away"))
                assert created.status == 201, created.json
            missing = await cb.post("/api/v1/namespaces/nowhere/configmaps",
                                    configmap("lost"))
            assert missing.status == 404
            assert missing.json["message"] == 'namespaces "nowhere" not found'
    finally:
        await b.stop()
        await a.stop()
        await second.close()
        await first.close()
