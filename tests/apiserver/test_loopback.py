"""The loopback socket: components in the apiserver's process talk plain HTTP over a
unix socket, authenticated by a token that exists only in memory."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest

from draemu.apiserver.server.lifecycle import APIServer
from draemu.client import ApiError, Client

pytestmark = pytest.mark.unit


async def test_loopback_client_is_the_apiserver_identity_in_system_masters(
        apiserver: APIServer) -> None:
    async with apiserver.loopback_client("test") as client:
        review = await client.create(
            "authentication.k8s.io/v1", "selfsubjectreviews",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    user = review["status"]["userInfo"]
    assert user["username"] == "system:apiserver"
    assert user["groups"] == ["system:masters", "system:authenticated"]


async def test_loopback_client_can_have_another_identity(apiserver: APIServer) -> None:
    async with apiserver.loopback_client("test", "someone", ["team-a"]) as client:
        with pytest.raises(ApiError) as raised:
            await client.list("v1", "secrets", "default")
    assert raised.value.code == 403
    assert 'User "someone" cannot list resource "secrets"' in raised.value.message


async def test_loopback_socket_without_token_is_unauthorized(apiserver: APIServer) -> None:
    connector = aiohttp.UnixConnector(path=apiserver.loopback_path)
    async with aiohttp.ClientSession(connector=connector) as session, \
            session.get("http://localhost/api/v1/namespaces") as resp:
        assert resp.status == 401
        assert (await resp.json())["reason"] == "Unauthorized"


async def test_loopback_client_watches_what_others_write(apiserver: APIServer) -> None:
    outside = Client.from_kubeconfig(apiserver.kubeconfig_path)
    inside = apiserver.loopback_client("test")
    try:
        listed = await inside.list("v1", "configmaps", "default")
        events = inside.watch("v1", "configmaps", "default",
                              resource_version=listed["metadata"]["resourceVersion"])
        await outside.create("v1", "configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                                  "metadata": {"name": "seen"}}, "default")
        event = await asyncio.wait_for(anext(aiter(events)), 10)
        assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "seen")
    finally:
        await inside.close()
        await outside.close()


def test_loopback_client_needs_a_started_server(tmp_path: Path) -> None:
    from draemu.apiserver.server.lifecycle import APIServerOptions

    with pytest.raises(RuntimeError, match="not started"):
        APIServer(APIServerOptions(data_dir=tmp_path)).loopback_client("test")


async def test_loopback_socket_is_private_and_removed_on_stop(apiserver: APIServer) -> None:
    path = Path(apiserver.loopback_path)
    assert path.stat().st_mode & 0o777 == 0o600
    await apiserver.stop()
    assert not path.exists()
