"""`draemu up`'s scheduler, controllers and nodes run in a child process (issue 15), as
API clients over the apiserver's loopback socket, each as its upstream identity: they
schedule and reconcile from there, the kubelets serve logs and exec on their own API
(which the apiserver calls, as it calls a real kubelet), the controllers' metrics show
on the apiserver's /metrics, and all stop with the cluster."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from draemu.client import Client
from draemu.cmd.cluster import Cluster, ClusterOptions
from draemu.cmd.testing.e2e import eventually
from draemu.drivers.presets import NodeSpec, Preset

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

WEB = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
       "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                             "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}


def _listening_inodes(port: int) -> set[str]:
    """The socket inodes listening on TCP `port` (any address)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":
                found.add(fields[9])
    return found


def _socket_inodes(pid: int) -> set[str]:
    out = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            out.add(target[len("socket:["):-1])
    return out


async def _pods(client: Client) -> list[dict]:
    return (await client.list("v1", "pods", "default"))["items"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_the_scheduler_controllers_and_kubelets_run_in_a_child_process(
        tmp_path: Path) -> None:
    preset = Preset("test", "one node", [], [NodeSpec("node-1")])
    audit = tmp_path / "audit.log"
    cluster = Cluster(ClusterOptions(data_dir=tmp_path / "d", port=0,
                                     store_url="sqlite://:memory:", preset=preset,
                                     control_plane_process=True, audit_log=audit))
    await cluster.start()
    try:
        child = cluster.control_plane.process
        assert child.pid != os.getpid() and child.returncode is None
        assert cluster.scheduler is None and cluster.controllers is None
        assert cluster.node_names == ["node-1"]
        # The node keeps its data dir where tools look for it.
        assert (tmp_path / "d" / "nodes" / "node-1" / "kubeconfig").exists()
        async with Client.from_kubeconfig(str(cluster.kubeconfig_path)) as client:
            node = await client.get("v1", "nodes", "node-1")
            port = node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]
            inodes = _listening_inodes(port)
            # The kubelet's API listens in the child, not in the apiserver's process.
            assert inodes and inodes <= _socket_inodes(child.pid)
            assert not inodes & _socket_inodes(os.getpid())

            # A Deployment: the controllers make its ReplicaSet and pod, the scheduler
            # binds the pod, the kubelet in the child runs it.
            await client.create("apps/v1", "deployments", WEB, "default")

            async def running() -> dict | None:
                pods = await _pods(client)
                return pods[0] if pods and pods[0]["status"].get("phase") == "Running" \
                    else None

            pod = await eventually(running)
            assert pod["spec"]["nodeName"] == "node-1"
            name = pod["metadata"]["name"]
            # pods/log through the kubelet's HTTPS API (no provider in this process).
            assert not cluster.apiserver.log_providers.get("node-1")
            code, _h, body = await client.request(
                "GET", f"/api/v1/namespaces/default/pods/{name}/log")
            assert code == 200 and body
            # pods/exec too: the fake runtime's refusal is the kubelet's own answer.
            code, _h, body = await client.request(
                "GET", f"/api/v1/namespaces/default/pods/{name}/exec",
                params={"command": "true", "stdout": "true"})
            status = json.loads(body)
            assert (code, status["reason"]) == (400, "BadRequest")
            assert status["message"].endswith(
                "does not execute: this node runs the fake runtime (draemu up --runtime "
                "process runs containers as local processes, which exec reaches)")

            async def root_ca_published() -> bool:
                # The root CA publisher needs the cluster CA, handed to the child too.
                cm = await client.get("v1", "configmaps", "kube-root-ca.crt", "default")
                return "BEGIN CERTIFICATE" in cm["data"]["ca.crt"]

            await eventually(root_ca_published)

            async def claim_metric() -> bool:
                # The controllers' metrics, from the child, on the apiserver's /metrics.
                code, _h, body = await client.request("GET", "/metrics")
                return code == 200 and \
                    'resourceclaim_controller_creates_total{status="success"}' in body.decode()

            await eventually(claim_metric)
        # Each as its upstream identity (none in system:masters): the scheduler binds,
        # the ReplicaSet controller creates pods as its ServiceAccount, the kubelet
        # updates pod status as its node.
        users: dict[tuple[str, str], set[str]] = {}
        for line in audit.read_text().splitlines():
            event = json.loads(line)
            ref = event.get("objectRef") or {}
            key = (event["verb"], ref.get("resource", "") + "/" + ref.get("subresource", ""))
            user = event.get("user") or {}
            users.setdefault(key, set()).add(user.get("username", ""))
            if user.get("username", "").startswith(("system:kube-", "system:serviceaccount:",
                                                     "system:node:")):
                assert "system:masters" not in user.get("groups", []), event
        assert users[("create", "pods/binding")] == {"system:kube-scheduler"}
        assert users[("create", "pods/")] == {
            "system:serviceaccount:kube-system:replicaset-controller"}
        assert "system:node:node-1" in users[("patch", "pods/status")] | \
            users.get(("update", "pods/status"), set())
        # The scheduler reads through the controllers' informers: one list+watch of each
        # kind for both (watches are not audited; their lists are).
        for resource in ("pods/", "nodes/", "resourceclaims/", "resourceslices/"):
            listers = users[("list", resource)]
            assert "system:kube-controller-manager" in listers, resource
            assert "system:kube-scheduler" not in listers, resource
    finally:
        await cluster.stop()
    assert child.returncode is not None


async def test_plain_http_kubelets_and_metrics_when_the_child_is_gone(
        tmp_path: Path) -> None:
    """Beside an --insecure-http apiserver the kubelets serve plain HTTP; once the child
    is gone, /metrics still answers (without its figures)."""
    cluster = Cluster(ClusterOptions(data_dir=tmp_path / "d", port=0, insecure_http=True,
                                     store_url="sqlite://:memory:",
                                     preset=Preset("test", "one node", [],
                                                   [NodeSpec("node-1")]),
                                     control_plane_process=True))
    await cluster.start()
    try:
        async with Client.from_kubeconfig(str(cluster.kubeconfig_path)) as client:
            await client.create("apps/v1", "deployments", WEB, "default")

            async def logged() -> bool:
                pods = await _pods(client)
                if not pods or pods[0]["status"].get("phase") != "Running":
                    return False
                code, _h, body = await client.request(
                    "GET", f"/api/v1/namespaces/default/pods/{pods[0]['metadata']['name']}"
                    "/log")
                return code == 200 and bool(body)

            await eventually(logged)

            async def shown() -> bool:
                return "resourceclaim_controller_creates_total" in (
                    await client.request("GET", "/metrics"))[2].decode()

            await eventually(shown)
            cluster.control_plane.process.kill()
            await cluster.control_plane.process.wait()
            await asyncio.sleep(0.1)
            code, _h, body = await client.request("GET", "/metrics")
            assert code == 200 and "apiserver_request_total" in body.decode()
            assert 'resourceclaim_controller_creates_total{' not in body.decode()
    finally:
        await cluster.stop()


@pytest.mark.skipif(os.geteuid() != 0, reason="the process runtime needs root")
@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
async def test_kubectl_logs_and_exec_reach_a_kubelet_in_the_child(tmp_path: Path) -> None:
    """Output, stdin and exit codes relayed through the kubelet's API."""
    from draemu.kubelet.runtime import ImageMap

    preset = Preset("test", "one node", [], [NodeSpec("node-1")])
    cluster = Cluster(ClusterOptions(data_dir=tmp_path / "d", port=0,
                                     store_url="sqlite://:memory:", preset=preset,
                                     control_plane_process=True, runtime="process",
                                     image_map=ImageMap({"registry.example/host": Path("/")})))
    await cluster.start()

    async def kubectl(*args: str, stdin: bytes = b"") -> tuple[int, str, str]:
        proc = await asyncio.create_subprocess_exec(
            "kubectl", "--kubeconfig", str(cluster.kubeconfig_path), *args,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(stdin), 60)
        return proc.returncode or 0, out.decode(), err.decode()

    try:
        async with Client.from_kubeconfig(str(cluster.kubeconfig_path)) as client:
            await client.create("v1", "pods", {
                "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "shell"},
                "spec": {"terminationGracePeriodSeconds": 1, "containers": [{
                    "name": "main", "image": "registry.example/host",
                    "command": ["sh", "-c", "echo started; exec sleep 600"]}]}}, "default")

            async def ready() -> bool:
                obj = await client.get("v1", "pods", "shell", "default")
                return any(c["type"] == "Ready" and c["status"] == "True"
                           for c in obj["status"].get("conditions") or [])

            await eventually(ready)
            code, out, err = await kubectl("exec", "shell", "--", "sh", "-c",
                                           "echo out; echo err >&2; exit 3")
            assert (code, out) == (3, "out\n"), err
            assert err == "err\ncommand terminated with exit code 3\n"
            code, out, err = await kubectl("exec", "-i", "shell", "--", "cat",
                                           stdin=b"through the kubelet\n")
            assert (code, out) == (0, "through the kubelet\n"), err
            code, out, err = await kubectl("logs", "shell")
            assert (code, out) == (0, "started\n"), err
            code, out, err = await kubectl("logs", "shell", "-c", "nope")
            assert code == 1 and "container nope is not valid for pod shell" in err
    finally:
        await cluster.stop()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
def test_draemu_up_forks_one_child_that_runs_the_kubelets(tmp_path: Path) -> None:
    """`draemu up` itself (the forked child): the kubelets listen in the child, the
    controllers' metrics are on the apiserver's /metrics, logs reach the kubelets."""
    from draemu.cmd.testing.process import draemu_up

    with draemu_up(tmp_path, "--preset", "seed", "--no-ui") as running:
        parent = running.process.pid
        children = [int(c) for task in Path(f"/proc/{parent}/task").iterdir()
                    for c in (task / "children").read_text().split()]
        assert len(children) == 1
        nodes = json.loads(running.kubectl("get", "nodes", "-o", "json").stdout)["items"]
        assert len(nodes) == 3
        child_sockets, parent_sockets = _socket_inodes(children[0]), _socket_inodes(parent)
        for node in nodes:
            inodes = _listening_inodes(
                node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"])
            assert inodes and inodes <= child_sockets and not inodes & parent_sockets
        assert "resourceclaim_controller_creates_total" in running.kubectl(
            "get", "--raw", "/metrics").stdout
        running.kubectl("run", "p", "--image=busybox", "--restart=Never")
        running.kubectl("wait", "--for=condition=Ready", "pod/p", "--timeout=60s")
        assert running.kubectl("logs", "p").stdout


async def test_a_stalled_child_does_not_stall_the_apiserver(tmp_path: Path) -> None:
    """The kubelets, drivers, scheduler and controllers frozen (SIGSTOP, as a busy or
    hung loop there would be): the apiserver still answers at once; resumed, they catch
    up and the pod runs. In one process the same stall would stop the API too."""
    import signal
    import time

    preset = Preset("test", "one node", [], [NodeSpec("node-1")])
    cluster = Cluster(ClusterOptions(data_dir=tmp_path / "d", port=0,
                                     store_url="sqlite://:memory:", preset=preset,
                                     control_plane_process=True))
    await cluster.start()
    child = cluster.control_plane.process
    try:
        async with Client.from_kubeconfig(str(cluster.kubeconfig_path)) as client:
            os.kill(child.pid, signal.SIGSTOP)
            try:
                started = time.monotonic()
                code, _h, _b = await client.request("GET", "/readyz")
                await client.create("v1", "pods", {
                    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                    "spec": {"containers": [{"name": "c", "image": "busybox"}]}},
                    "default")
                pods = await _pods(client)
                assert code == 200 and time.monotonic() - started < 2.0
                assert pods[0]["status"].get("phase") == "Pending"
            finally:
                os.kill(child.pid, signal.SIGCONT)

            async def running() -> bool:
                return (await client.get("v1", "pods", "p", "default"))["status"].get(
                    "phase") == "Running"

            await eventually(running)
    finally:
        await cluster.stop()


@pytest.mark.parametrize("child", [True, False], ids=["child", "one-process"])
async def test_controllers_left_out_do_not_run(tmp_path: Path, child: bool) -> None:
    """`draemu up --controllers '*,-serviceaccount'`: the others run (the root CA
    publisher fills a new namespace's kube-root-ca.crt), the serviceaccount controller
    does not (no `default` ServiceAccount appears in it)."""
    from draemu.controllers.registry import select

    cluster = Cluster(ClusterOptions(
        data_dir=tmp_path / "d", port=0, store_url="sqlite://:memory:", preset="empty",
        control_plane_process=child, enabled_controllers=select("*,-serviceaccount")))
    await cluster.start()
    try:
        async with Client.from_kubeconfig(str(cluster.kubeconfig_path)) as client:
            await client.create("v1", "namespaces", {"metadata": {"name": "a"}})

            async def root_ca_published() -> bool:
                found = await client.list("v1", "configmaps", "a",
                                          field_selector="metadata.name=kube-root-ca.crt")
                return bool(found["items"])

            await eventually(root_ca_published)
            await asyncio.sleep(1.0)  # the serviceaccount controller would have acted
            assert (await client.list("v1", "serviceaccounts", "a"))["items"] == []
    finally:
        await cluster.stop()
