"""The process runtime's pod volumes, with a stub API client: projected files and the
token refresh."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from draemu.kubelet.volumes import VolumeError, VolumeManager
from draemu.nodelayout import NodeLayout

pytestmark = pytest.mark.unit


class StubClient:
    def __init__(self) -> None:
        self.tokens = 0
        self.requests: list[dict[str, Any]] = []

    async def create(self, _version: str, _resource: str, obj: dict[str, Any],
                     **_kw: Any) -> dict[str, Any]:
        self.tokens += 1
        self.requests.append(obj)
        return {"status": {"token": f"token-{self.tokens}"}}


def pod(expiration: float) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u1", "labels": {"a": "b"}},
            "spec": {"nodeName": "n1", "serviceAccountName": "driver", "volumes": [{
                "name": "api", "projected": {"defaultMode": 0o600, "sources": [
                    {"serviceAccountToken": {"expirationSeconds": expiration,
                                             "path": "token", "audience": "vault"}},
                    {"downwardAPI": {"items": [
                        {"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}},
                        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}}]}}]}}


async def test_a_projected_volume_gets_a_bound_token_and_the_downward_api(tmp_path: Path):
    client = StubClient()
    volumes = VolumeManager(client, NodeLayout(tmp_path))  # type: ignore[arg-type]
    folder = (await volumes.setup(pod(3600), "10.0.0.1", "10.244.0.2"))["api"].location
    assert (folder / "token").read_text() == "token-1"
    assert (folder / "token").stat().st_mode & 0o777 == 0o600
    assert (folder / "namespace").read_text() == "ns"
    assert (folder / "labels").read_text() == 'a="b"'
    assert client.requests[0]["spec"] == {
        "expirationSeconds": 3600, "audiences": ["vault"],
        "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u1"}}
    volumes.teardown("u1")
    assert not folder.exists()


async def test_the_token_is_renewed_before_it_expires(tmp_path: Path):
    client = StubClient()
    volumes = VolumeManager(client, NodeLayout(tmp_path))  # type: ignore[arg-type]
    folder = (await volumes.setup(pod(0.1), "10.0.0.1", None))["api"].location
    await asyncio.sleep(0.35)
    assert client.tokens >= 3
    assert (folder / "token").read_text() == f"token-{client.tokens}"
    volumes.teardown("u1")
    renewed = client.tokens
    await asyncio.sleep(0.2)
    assert client.tokens == renewed  # no renewal after the pod is gone


async def test_an_item_path_may_not_leave_the_volume(tmp_path: Path):
    volumes = VolumeManager(StubClient(), NodeLayout(tmp_path))  # type: ignore[arg-type]
    bad = pod(3600)
    bad["spec"]["volumes"][0]["projected"]["sources"][1]["downwardAPI"]["items"][0][
        "path"] = "../../escape"
    with pytest.raises(VolumeError, match="volume item path '../../escape' leaves the volume"):
        await volumes.setup(bad, "10.0.0.1", None)
