"""An object larger than etcd takes, as kube-apiserver answers it: written again without
its managedFields when they make the difference, else a 500 carrying etcd's message. Every
backend keeps etcd's limit (issue 35: a 3 MB custom resource was accepted on SQLite)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from apiclient import CM, Client, configmap, ssl_context_for

from draemu.cmd.testing.apiserver import start_apiserver

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.backends("sqlite-file", "etcd")]

KEYS = 30_000
PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture
async def client(store_url: str, tmp_path: Path) -> AsyncIterator[Client]:
    server = await start_apiserver(tmp_path, store_url=store_url)
    try:
        async with aiohttp.ClientSession() as session:
            yield Client(server.url, session, ssl_context_for(server.kubeconfig_path))
    finally:
        await server.stop()


async def test_object_over_etcds_limit_is_a_500_with_etcds_message(client: Client) -> None:
    # A ConfigMap's data stops at 1 MiB: a container's arguments do not.
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big"},
           "spec": {"containers": [
               {"name": "c", "image": "busybox", "args": ["x" * (1600 * 1024)]}]}}
    reply = await client.post(PODS, pod)
    assert reply.status == 500, reply.body[:300]
    status = reply.json
    assert status["message"] == "etcdserver: request is too large"
    assert "reason" not in status and status["code"] == 500
    assert (await client.get(f"{PODS}/big")).status == 404


async def test_object_whose_managed_fields_make_it_too_large_is_stored_without_them(
        client: Client) -> None:
    # Under a ConfigMap's 1 MiB of data, ~1.2 MB stored; the field manager's entry,
    # which lists every key, adds ~0.4 MB: over etcd's 1.5 MiB.
    data = {f"k{i:05}": "v" * 28 for i in range(KEYS)}
    reply = await client.post(CM, configmap("managed", **data))
    assert reply.status == 201, reply.body[:300]
    assert "managedFields" not in reply.json["metadata"]
    stored = (await client.get(f"{CM}/managed")).json
    assert len(stored["data"]) == KEYS and "managedFields" not in stored["metadata"]
