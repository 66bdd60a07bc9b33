"""`kubectl logs` for pods on a kubelet in its own process: the apiserver proxies pods/log
to the kubelet's HTTPS API (the kubelet's serving certificate signed by the cluster CA,
the apiserver's kubelet-client certificate checked by the kubelet)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from draemu.client import Client
from draemu.cmd.testing.e2e import eventually

pytestmark = pytest.mark.e2e

KUBECTL = "/usr/bin/kubectl"
# Prints three lines, later a fourth, then exits: `logs -f` must see the fourth and end.
SCRIPT = "echo line-1; echo line-2; echo line-3; sleep 1; echo line-4"


class StandaloneKubelet:
    """`draemu kubelet` as a child process with the node's own credentials."""

    def __init__(self, apiserver, tmp_path: Path, node: str, data_dir: Path | None,
                 address: str = "127.0.0.1") -> None:
        self.address = address
        self.apiserver = apiserver
        self.tmp_path = tmp_path
        self.node = node
        self.data_dir = data_dir
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        kubeconfig = self.tmp_path / f"{self.node}.kubeconfig"
        self.apiserver.write_kubeconfig(kubeconfig, user=f"system:node:{self.node}",
                                        groups=["system:nodes"])
        argv = ["kubelet", "--node", self.node, "--kubeconfig", str(kubeconfig),
                "--root-dir", str(self.tmp_path / self.node), "--runtime", "process",
                "--address", self.address]
        if self.data_dir is not None:
            argv += ["--data-dir", str(self.data_dir)]
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "draemu", *argv, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), 30)
        assert b"is up" in line, line

    async def stop(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.send_signal(signal.SIGINT)
            await asyncio.wait_for(self.proc.communicate(), 20)


@pytest.fixture
async def admin(apiserver):
    async with Client.from_kubeconfig(str(apiserver.kubeconfig_path)) as client:
        yield client


@pytest.fixture
async def kubelet(apiserver, tmp_path):
    k = StandaloneKubelet(apiserver, tmp_path, "far-1", apiserver.data_dir)
    await k.start()
    yield k
    await k.stop()


async def run_pod(client: Client, name: str, node: str, script: str = SCRIPT) -> None:
    await client.create("v1", "pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
        "spec": {"nodeName": node, "restartPolicy": "Never", "containers": [{
            "name": "main", "image": "busybox", "command": ["sh", "-c", script]}]}},
        "default")

    async def started():
        pod = await client.get("v1", "pods", name, "default")
        return pod["status"].get("phase") in ("Running", "Succeeded")

    await eventually(started, timeout=30)


async def kubectl(apiserver, *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        KUBECTL, "--kubeconfig", str(apiserver.kubeconfig_path), *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_kubectl_logs_reads_a_pod_on_a_kubelet_in_its_own_process(
        apiserver, admin, kubelet):
    await run_pod(admin, "p1", "far-1", "echo hello from far-1; sleep 3600")

    async def logged():
        code, out, _ = await kubectl(apiserver, "logs", "p1")
        return code == 0 and out == "hello from far-1\n"

    await eventually(logged, timeout=30)


async def test_kubectl_logs_follow_streams_until_the_container_exits(
        apiserver, admin, kubelet):
    await run_pod(admin, "p1", "far-1")
    code, out, err = await kubectl(apiserver, "logs", "-f", "p1")
    assert (code, err) == (0, "")
    assert out.splitlines() == ["line-1", "line-2", "line-3", "line-4"]


async def test_kubectl_logs_tail_passes_through_to_the_kubelet(apiserver, admin, kubelet):
    await run_pod(admin, "p1", "far-1")

    async def finished():
        pod = await admin.get("v1", "pods", "p1", "default")
        return pod["status"].get("phase") == "Succeeded"

    await eventually(finished, timeout=30)
    code, out, _ = await kubectl(apiserver, "logs", "--tail=2", "p1")
    assert (code, out) == (0, "line-3\nline-4\n")
    code, out, _ = await kubectl(apiserver, "logs", "--limit-bytes=9", "p1")
    assert (code, out) == (0, "line-1\nli")


async def test_kubelet_errors_are_relayed_as_kube_apiserver_words_them(
        apiserver, admin, kubelet):
    await run_pod(admin, "p1", "far-1", "sleep 3600")
    code, _, err = await kubectl(apiserver, "logs", "--previous", "p1")
    assert code == 1
    assert err.strip() == ('Error from server (BadRequest): previous terminated container '
                           '"main" in pod "p1" not found')


async def test_an_unreachable_kubelet_is_reported_with_its_address(apiserver, admin, kubelet):
    await run_pod(admin, "p1", "far-1", "sleep 3600")
    node = await admin.get("v1", "nodes", "far-1")
    port = node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]
    await kubelet.stop()
    code, _, err = await kubectl(apiserver, "logs", "p1")
    assert code == 1
    assert err.strip() == (f'Error from server: Get "https://127.0.0.1:{port}/containerLogs/'
                           f'default/p1/main": dial tcp 127.0.0.1:{port}: connect: connection '
                           "refused")


async def test_a_kubelet_certificate_outside_the_cluster_ca_is_refused_unless_skipped(
        apiserver, admin, tmp_path):
    # Without the cluster's data directory the kubelet can only sign its own certificate.
    kubelet = StandaloneKubelet(apiserver, tmp_path, "far-2", tmp_path / "no-cluster-here")
    await kubelet.start()
    try:
        await run_pod(admin, "p2", "far-2", "echo hi; sleep 3600")
        code, _, err = await kubectl(apiserver, "logs", "p2")
        assert code == 1
        assert "tls: failed to verify certificate: x509:" in err

        async def logged():
            code, out, _ = await kubectl(apiserver, "logs", "p2",
                                         "--insecure-skip-tls-verify-backend")
            return code == 0 and out == "hi\n"

        await eventually(logged, timeout=30)
    finally:
        await kubelet.stop()


async def test_a_kubelet_on_every_interface_publishes_an_address_the_apiserver_reaches(
        apiserver, admin, tmp_path):
    kubelet = StandaloneKubelet(apiserver, tmp_path, "far-3", apiserver.data_dir, "0.0.0.0")
    await kubelet.start()
    try:
        node = await admin.get("v1", "nodes", "far-3")
        internal = [a["address"] for a in node["status"]["addresses"]
                    if a["type"] == "InternalIP"]
        assert internal and internal[0] != "0.0.0.0"
        await run_pod(admin, "p3", "far-3", "echo everywhere; sleep 3600")

        async def logged():
            code, out, _ = await kubectl(apiserver, "logs", "p3")
            return code == 0 and out == "everywhere\n"

        await eventually(logged, timeout=30)
    finally:
        await kubelet.stop()


async def test_the_kubelet_api_refuses_callers_without_the_apiservers_identity(
        apiserver, kubelet, tmp_path):
    import ssl

    import aiohttp

    async with Client.from_kubeconfig(str(apiserver.kubeconfig_path)) as client:
        node = await client.get("v1", "nodes", "far-1")
    port = node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]
    pair = apiserver.issue_client_certificate("system:node:far-2", ["system:nodes"])
    (tmp_path / "c.crt").write_bytes(pair.cert_pem)
    (tmp_path / "c.key").write_bytes(pair.key_pem)
    ctx = ssl.create_default_context(cadata=apiserver.pki.ca.cert_pem.decode())
    ctx.load_cert_chain(tmp_path / "c.crt", tmp_path / "c.key")
    async with aiohttp.ClientSession() as http:
        async with http.get(f"https://127.0.0.1:{port}/pods", ssl=ctx) as resp:
            assert resp.status == 403
            assert await resp.text() == ("Forbidden (user=system:node:far-2, verb=get, "
                                         "resource=nodes, subresource=proxy)")
