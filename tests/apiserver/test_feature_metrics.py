"""/metrics lists the feature gates of the emulated release as kube-apiserver does:
kubernetes_feature_enabled{name, stage} 1 or 0, GA with an empty stage, gates the release
does not have (not yet introduced, removed) left out."""

from __future__ import annotations

import re
from pathlib import Path

import aiohttp
import pytest
from apiclient import Client, ssl_context_for

from draemu.cmd.testing.apiserver import start_apiserver
from draemu.features import FeatureGates

pytestmark = pytest.mark.unit

_ROW = re.compile(r'^kubernetes_feature_enabled\{name="([^"]*)",stage="([^"]*)"\} (\d)$', re.M)


async def _feature_rows(tmp_path: Path, gates: FeatureGates) -> dict[str, tuple[str, int]]:
    server = await start_apiserver(tmp_path / "apiserver", feature_gates=gates)
    try:
        async with aiohttp.ClientSession() as session:
            client = Client(server.url, session, ssl_context_for(server.kubeconfig_path))
            text = (await client.get("/metrics")).body.decode()
    finally:
        await server.stop()
    return {name: (stage, int(value)) for name, stage, value in _ROW.findall(text)}


async def test_1_38_lists_its_gates_and_not_the_removed_ones(tmp_path: Path) -> None:
    rows = await _feature_rows(tmp_path, FeatureGates.parse(
        "DRAResourcePoolStatus=true", emulated_version="1.38"))
    assert rows["DRAPartitionableDevices"] == ("", 1)
    assert rows["DRAResourcePoolStatus"] == ("ALPHA", 1)
    assert rows["GenericWorkload"] == ("BETA", 0)
    assert rows["KubeletPodResourcesListUseActivePods"] == ("DEPRECATED", 1)
    assert "DynamicResourceAllocation" not in rows
    assert "PodGroupPreemptionPolicy" not in rows


async def test_1_36_leaves_out_gates_introduced_later(tmp_path: Path) -> None:
    rows = await _feature_rows(tmp_path, FeatureGates(emulated_version="1.36"))
    assert rows["DynamicResourceAllocation"] == ("", 1)
    assert rows["DRAPartitionableDevices"] == ("BETA", 1)
    assert "DRADerivedAttributes" not in rows
