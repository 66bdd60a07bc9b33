"""`draemu nodes`: N emulated nodes in one process against an apiserver it only knows by
a kubeconfig (and, for the nodes' own identities, the cluster CA)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import pytest

from draemu.client import Client
from draemu.cmd.cli import build_parser
from draemu.cmd.testing.apiserver import start_apiserver
from draemu.cmd.testing.e2e import allocate, create_claim, create_pod, eventually

pytestmark = pytest.mark.unit


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    return args._run(args)


def test_a_preset_without_a_node_template_is_refused(tmp_path: Path, capsys) -> None:
    assert main(["nodes", "--count", "3", "--preset", "seed"]) == 2
    assert "has no node template" in capsys.readouterr().err


def test_a_folder_without_the_ca_is_refused(tmp_path: Path, capsys) -> None:
    assert main(["nodes", "--count", "1", "--ca-dir", str(tmp_path)]) == 2
    assert "no ca.crt and ca.key" in capsys.readouterr().err


@pytest.mark.e2e  # a real process
@pytest.mark.slow
async def test_nodes_with_their_own_identities_run_pods_and_serve_their_logs(
        tmp_path: Path) -> None:
    audit = tmp_path / "audit.log"
    server = await start_apiserver(tmp_path / "api", audit_log=audit)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "draemu", "nodes", "--kubeconfig", str(server.kubeconfig_path),
        "--count", "4", "--first", "11", "--ca-dir", str(server.data_dir / "pki"),
        "--root-dir", str(tmp_path / "nodes"), "--log-format", "json",
        env={**os.environ, "PYTHONUNBUFFERED": "1"}, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL)
    try:
        async with Client.from_kubeconfig(str(server.kubeconfig_path)) as client:
            async def ready() -> list[dict]:
                nodes = (await client.list("v1", "nodes"))["items"]
                return nodes if len(nodes) == 4 and all(
                    c["status"] == "True" for n in nodes for c in n["status"]["conditions"]
                    if c["type"] == "Ready") else []

            nodes = {n["metadata"]["name"]: n for n in await eventually(ready, timeout=60)}
            assert sorted(nodes) == ["node-11", "node-12", "node-13", "node-14"]
            # Their places among all nodes: 10..13 (what a second process with
            # --first 15 continues from).
            assert sorted(n["spec"]["podCIDR"] for n in nodes.values()) == [
                f"10.244.{i}.0/24" for i in range(10, 14)]
            addresses = {a["address"] for n in nodes.values()
                         for a in n["status"]["addresses"] if a["type"] == "InternalIP"}
            assert len(addresses) == 4
            await _run_a_pod(client, "node-12")
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = await asyncio.wait_for(proc.communicate(), 30)
        await server.stop()
    assert proc.returncode == 0
    assert "4 nodes up" in out.decode()
    # Each node registered itself with its own credentials, as a real kubelet does.
    creators = sorted(event["user"]["username"]
                      for event in map(json.loads, audit.read_text().splitlines())
                      if event["verb"] == "create"
                      and event["objectRef"].get("resource") == "nodes")
    assert creators == [f"system:node:node-{i}" for i in range(11, 15)]


async def _run_a_pod(client: Client, node: str) -> None:
    claim = await create_claim(client, "gpu")
    pod = await create_pod(client, "p1", node, "gpu")
    await allocate(client, claim, pod, "gpu.example.com", node, "gpu-0")

    async def running() -> bool:
        got = await client.get("v1", "pods", "p1", "default")
        return got["status"].get("phase") == "Running"

    await eventually(running, timeout=30)
    # The apiserver fetches the log from the node's kubelet API (HTTPS, its serving
    # certificate signed by the cluster CA).
    status, _, body = await client.request("GET", "/api/v1/namespaces/default/pods/p1/log")
    assert status == 200, body
    assert b'GPU_DEVICE_0="gpu-0"' in body
