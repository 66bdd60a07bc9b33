"""The `draemu kubeconfig --node` and `draemu kubelet` commands against a real apiserver."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

import pytest

from draemu.client import Client
from draemu.cmd.cli import build_parser
from draemu.cmd.testing.e2e import eventually

pytestmark = pytest.mark.unit


def main(argv: list[str]) -> int:
    """Run a sub-command in process without reconfiguring logging (cli.main does that)."""
    args = build_parser().parse_args(argv)
    return args._run(args)


async def test_node_kubeconfig_authenticates_as_the_node(apiserver, tmp_path):
    out = tmp_path / "node.kubeconfig"
    assert main(["kubeconfig", "--node", "node-7", "--data-dir", str(apiserver.data_dir),
                 "-o", str(out)]) == 0
    async with Client.from_kubeconfig(str(out)) as client:
        review = await client.create("authentication.k8s.io/v1", "selfsubjectreviews", {
            "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    info = review["status"]["userInfo"]
    assert info["username"] == "system:node:node-7"
    assert "system:nodes" in info["groups"]


def test_node_kubeconfig_without_a_cluster_says_how_to_get_one(tmp_path, capsys):
    assert main(["kubeconfig", "--node", "n", "--data-dir", str(tmp_path)]) == 1
    assert "draemu up" in capsys.readouterr().err


@pytest.mark.e2e  # a real process
async def test_kubelet_command_runs_a_node_with_its_preset_drivers(apiserver, tmp_path):
    kubeconfig = tmp_path / "node-1.kubeconfig"
    apiserver.write_kubeconfig(kubeconfig, user="system:node:node-1", groups=["system:nodes"])
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "draemu", "kubelet", "--node", "node-1", "--kubeconfig",
        str(kubeconfig), "--root-dir", str(tmp_path / "node-1"), "--preset", "example",
        env={**os.environ, "PYTHONUNBUFFERED": "1"}, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL)
    try:
        async with Client.from_kubeconfig(str(apiserver.kubeconfig_path)) as client:
            async def published():
                slices = await client.list("resource.k8s.io/v1", "resourceslices",
                                           field_selector="spec.nodeName=node-1")
                return [d["name"] for s in slices["items"] for d in s["spec"]["devices"]]

            devices = await eventually(published, timeout=30)
            assert devices == [f"gpu-{i}" for i in range(8)]
            node = await client.get("v1", "nodes", "node-1")
            port = node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]
            assert port > 0
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 0
    assert "registration dir:" in out.decode()


def test_node_dirs_are_printed_for_a_drivers_flags(tmp_path, capsys):
    assert main(["kubeconfig", "--node", "n1", "--data-dir", str(tmp_path), "--dirs"]) == 0
    lines = dict(line.split("=", 1) for line in capsys.readouterr().out.splitlines())
    assert lines["KUBELET_REGISTRAR_DIRECTORY_PATH"].endswith("/plugins_registry")
    assert len(lines["KUBELET_PLUGINS_DIRECTORY_PATH"]) < 60
    assert lines["CDI_ROOT"] == str(tmp_path / "nodes" / "n1" / "cdi")


def test_kubelet_command_refuses_labels_a_kubelet_may_not_set(tmp_path, capsys):
    code = main(["kubelet", "--node", "n1", "--labels", "node-role.kubernetes.io/worker=,a=b",
                 "--root-dir", str(tmp_path)])
    assert code == 2
    assert "unknown 'kubernetes.io' or 'k8s.io' labels specified with --labels: " \
           "['node-role.kubernetes.io/worker']" in capsys.readouterr().err
