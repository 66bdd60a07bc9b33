"""`draemu scheduler` as its own process against an apiserver."""

from __future__ import annotations

import asyncio
import signal
import sys

import pytest
from sched_helpers import node, pod

from draemu.client import Client
from draemu.cmd.testing.apiserver import apiserver  # noqa: F401  (fixture)

pytestmark = pytest.mark.e2e


async def test_scheduler_command_binds_pods_and_stops_on_sigterm(apiserver):  # noqa: F811
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "draemu", "--log-format", "json", "scheduler",
        "--kubeconfig", str(apiserver.kubeconfig_path),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    client = Client.from_kubeconfig(str(apiserver.kubeconfig_path))
    try:
        await client.create("v1", "nodes", node("n1"))
        p = pod("p1")
        del p["metadata"]["uid"]
        await client.create("v1", "pods", p)
        deadline = asyncio.get_running_loop().time() + 60
        while not (await client.get("v1", "pods", "p1", "default"))["spec"].get("nodeName"):
            assert asyncio.get_running_loop().time() < deadline, "pod not bound"
            await asyncio.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGTERM)
        output, _ = await asyncio.wait_for(proc.communicate(), 30)
        await client.close()
    assert proc.returncode == 0, output.decode()
    assert b"scheduler started" in output
