"""The process runtime against the real apiserver: images mapped to small local programs
(shell scripts), each container in its own mount namespace with the pod's volumes, each
pod in its own network namespace, probes, restarts, and what it refuses."""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
import subprocess
import tempfile
from collections.abc import Awaitable
from pathlib import Path

import pytest

from draemu.client import Client
from draemu.cmd.nodes import node_kubeconfig, start_node
from draemu.cmd.testing.e2e import eventually
from draemu.drivers.presets import NodeSpec
from draemu.kubelet.runtime import ImageMap
from draemu.kubelet.runtime.netns import LAUNCHER

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(os.geteuid() != 0, reason="the process runtime needs root")]

DRIVER_SCRIPT = """#!/bin/sh
echo "args: $*"
echo "node=$NODE_NAME pod=$POD_NAME ns=$NAMESPACE mode=$MODE secret=$PASSWORD cpu=$CPU_M"
echo "config: $(cat /etc/demo/config/mode)"
echo "secret file: $(cat /etc/demo/secret/password)"
echo "labels: $(cat /etc/podinfo/labels)"
echo "scratch: $(ls /scratch)"
echo "registry: $(ls /var/lib/kubelet/plugins_registry)"
echo hello > /var/lib/kubelet/plugins/demo.example.com/written-by-pod
echo "cwd: $(pwd)"
echo "api: $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"
exec sleep 600
"""

SERVER_SCRIPT = """#!/bin/sh
exec python3 -c '
import http.server, socketserver
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
    def log_message(self, *a): pass
socketserver.TCPServer(("127.0.0.1", 8080), H).serve_forever()'
"""


@pytest.fixture
async def client(apiserver):
    async with Client.from_kubeconfig(str(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.fixture
def images(tmp_path: Path) -> ImageMap:
    bin_dir = tmp_path / "images"
    bin_dir.mkdir()
    for name, text in (("demo-driver", DRIVER_SCRIPT), ("demo-server", SERVER_SCRIPT)):
        path = bin_dir / name
        path.write_text(text)
        path.chmod(0o755)
    return ImageMap({"registry.example/demo-driver": bin_dir / "demo-driver",
                     "registry.example/demo-server:v1": bin_dir / "demo-server",
                     "registry.example/host": Path("/")})


@pytest.fixture
async def node(apiserver, tmp_path, images):
    path = node_kubeconfig(apiserver, tmp_path, "node-1")
    started = await start_node(NodeSpec("node-1"), kubeconfig=path, data_dir=tmp_path,
                               server=apiserver, runtime="process", crash_loop_backoff=0.2,
                               image_map=images)
    yield started
    await started.stop()


def pod(name: str, containers: list[dict], **spec) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "demo"}},
            "spec": {"nodeName": "node-1", "terminationGracePeriodSeconds": 2,
                     "containers": containers, **spec}}


async def log_of(client, name: str, **params) -> str:
    code, _h, body = await client.request(
        "GET", f"/api/v1/namespaces/default/pods/{name}/log", params=params)
    return body.decode() if code == 200 else ""


async def events_of(client, name: str, reason: str) -> list[dict]:
    events = await client.list("v1", "events", "default",
                               field_selector=f"involvedObject.name={name}")
    return [e for e in events["items"] if e["reason"] == reason]


async def ready(client, name: str) -> dict | None:
    obj = await client.get("v1", "pods", name, "default")
    conditions = {c["type"]: c["status"] for c in obj["status"].get("conditions") or []}
    return obj if conditions.get("Ready") == "True" else None


async def test_a_mapped_image_runs_with_the_pods_volumes_and_environment(
        client, node, tmp_path):
    await client.create("v1", "configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "demo"},
        "data": {"mode": "fast"}}, "default")
    await client.create("v1", "secrets", {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "demo"},
        "data": {"password": base64.b64encode(b"s3cret").decode()}}, "default")
    await client.create("v1", "pods", pod("driver", [{
        "name": "plugin", "image": "registry.example/demo-driver:v0.4.0",
        "command": ["demo-driver"], "args": ["--verbose"], "workingDir": "/scratch",
        "resources": {"requests": {"cpu": "250m"}},
        "env": [
            {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "NAMESPACE",
             "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "demo", "key": "mode"}}},
            {"name": "PASSWORD",
             "valueFrom": {"secretKeyRef": {"name": "demo", "key": "password"}}},
            {"name": "CPU_M", "valueFrom": {"resourceFieldRef": {
                "resource": "requests.cpu", "divisor": "1m"}}}],
        "volumeMounts": [
            {"name": "registry", "mountPath": "/var/lib/kubelet/plugins_registry"},
            {"name": "plugins", "mountPath": "/var/lib/kubelet/plugins"},
            {"name": "config", "mountPath": "/etc/demo/config", "readOnly": True},
            {"name": "secret", "mountPath": "/etc/demo/secret"},
            {"name": "podinfo", "mountPath": "/etc/podinfo"},
            {"name": "scratch", "mountPath": "/scratch"}]}],
        volumes=[
            {"name": "registry", "hostPath": {"path": "/var/lib/kubelet/plugins_registry"}},
            {"name": "plugins", "hostPath": {"path": "/var/lib/kubelet/plugins",
                                             "type": "DirectoryOrCreate"}},
            {"name": "config", "configMap": {"name": "demo"}},
            {"name": "secret", "secret": {"secretName": "demo"}},
            {"name": "podinfo", "downwardAPI": {"items": [
                {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
            {"name": "scratch", "emptyDir": {}}]), "default")
    (node.kubelet.layout.root / "plugins" / "demo.example.com").mkdir(parents=True)

    async def logged():
        text = await log_of(client, "driver")
        return text if "api:" in text else None

    text = await eventually(logged)
    port = node.kubelet.runtime.api_server[1]
    assert text.splitlines() == [
        "args: --verbose",
        "node=node-1 pod=driver ns=default mode=fast secret=s3cret cpu=250",
        "config: fast",
        "secret file: s3cret",
        'labels: app="demo"',
        "scratch: ",
        "registry: ",
        "cwd: /scratch",
        f"api: 127.0.0.1:{port}"]
    written = node.kubelet.layout.root / "plugins" / "demo.example.com" / "written-by-pod"
    assert written.read_text() == "hello\n"
    assert not Path("/var/lib/kubelet/plugins/demo.example.com").exists()
    assert not Path("/scratch").exists()


async def test_an_unmapped_image_does_not_execute_and_the_events_say_why(client, node):
    await client.create("v1", "pods", pod("other", [{
        "name": "main", "image": "docker.io/library/ubuntu:22.04",
        "command": ["sh", "-c", "echo ran"],
        "env": [{"name": "WHO", "value": "draemu"}]}]), "default")
    (event,) = await eventually(lambda: events_of(client, "other", "ImageNotMapped"))
    assert event["type"] == "Warning"
    assert event["message"] == (
        'image "docker.io/library/ubuntu:22.04" is not in the image map (--image-map): '
        "container main does not execute and behaves as on the fake runtime")
    assert await eventually(lambda: ready(client, "other"))
    assert 'declare -x WHO="draemu"' in await log_of(client, "other")


async def test_each_pod_has_its_own_network_and_readiness_probes_reach_it(client, node):
    probe = {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 1}
    for name in ("web-1", "web-2"):
        await client.create("v1", "pods", pod(name, [{
            "name": "web", "image": "registry.example/demo-server:v1",
            "ports": [{"containerPort": 8080}], "readinessProbe": probe}]), "default")
    for name in ("web-1", "web-2"):
        ok = await eventually(lambda n=name: ready(client, n))
        assert ok["status"]["containerStatuses"][0]["restartCount"] == 0


async def test_the_apiserver_is_reachable_inside_the_pods_network(client, node):
    script = ("import os, socket, ssl; ctx = ssl._create_unverified_context(); "
              "s = ctx.wrap_socket(socket.create_connection((os.environ['KUBERNETES_SERVICE_HOST'],"
              " int(os.environ['KUBERNETES_SERVICE_PORT'])))); "
              "s.sendall(b'GET /livez HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n'); "
              "print(s.recv(100).split(b'\\r\\n')[0].decode())")
    await client.create("v1", "pods", pod("caller", [{
        "name": "main", "image": "registry.example/host",
        "command": ["python3", "-c", script]}], restartPolicy="Never"), "default")

    async def answered():
        text = await log_of(client, "caller")
        return text if text else None

    assert (await eventually(answered)).startswith("HTTP/1.1 ")


async def test_a_failing_liveness_probe_restarts_the_container_and_keeps_its_last_log(
        client, node, tmp_path):
    marker = tmp_path / "alive"
    await client.create("v1", "pods", pod("flaky", [{
        "name": "main", "image": "registry.example/host",
        "command": ["sh", "-c", "echo run $(date +%N); exec sleep 600"],
        "livenessProbe": {"exec": {"command": ["test", "-e", str(marker)]},
                          "initialDelaySeconds": 1, "periodSeconds": 1,
                          "failureThreshold": 1}}]), "default")

    async def restarted():
        obj = await client.get("v1", "pods", "flaky", "default")
        statuses = obj["status"].get("containerStatuses") or []
        return statuses[0] if statuses and statuses[0]["restartCount"] >= 1 else None

    status = await eventually(restarted)
    assert status["lastState"]["terminated"]["exitCode"] == 143  # SIGTERM
    (event, *_) = await eventually(lambda: events_of(client, "flaky", "Unhealthy"))
    assert event["message"].startswith("Liveness probe failed: command ['test', '-e',")
    killing = await events_of(client, "flaky", "Killing")
    assert any(e["message"] == "Container main failed liveness probe, will be restarted"
               for e in killing)
    assert (await log_of(client, "flaky", previous="true")).startswith("run ")


async def test_a_command_missing_from_the_image_is_a_start_error(client, node):
    await client.create("v1", "pods", pod("broken", [{
        "name": "main", "image": "registry.example/host",
        "command": ["no-such-program-here"]}], restartPolicy="Never"), "default")

    async def failed():
        obj = await client.get("v1", "pods", "broken", "default")
        return obj if obj["status"].get("phase") == "Failed" else None

    obj = await eventually(failed)
    term = obj["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (128, "StartError")
    assert term["message"] == 'exec "no-such-program-here": No such file or directory'


async def test_unsupported_volumes_and_host_ports_taken_are_pod_events(client, node):
    await client.create("v1", "pods", pod("claims", [{
        "name": "main", "image": "registry.example/host", "command": ["true"]}],
        volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]),
        "default")
    (event, *_) = await eventually(lambda: events_of(client, "claims", "FailedMount"))
    assert event["message"] == (
        'volume "data": persistentVolumeClaim volumes are not supported by the process '
        "runtime (supported: hostPath, emptyDir, configMap, secret, downwardAPI, projected)")

    import socket
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        await client.create("v1", "pods", pod("hostnet", [{
            "name": "main", "image": "registry.example/host", "command": ["true"],
            "ports": [{"containerPort": port}]}], hostNetwork=True), "default")
        (event, *_) = await eventually(lambda: events_of(client, "hostnet", "Failed"))
    assert event["message"] == (
        f"Error: host port(s) {port}/TCP of container main already in use on this machine "
        "(hostNetwork pods of every emulated node share its ports)")


def test_without_root_the_runtime_refuses_to_start():
    # The launcher needs only the standard library: any Python the user may run does.
    folder = Path(tempfile.mkdtemp())
    launcher = folder / "launch.py"
    shutil.copy(LAUNCHER, launcher)
    shutil.copytree(LAUNCHER.with_name("confine"), folder / "confine",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    python = next((p for p in ("/usr/bin/python3", "/usr/local/bin/python3")
                   if os.access(p, os.X_OK)), None)
    if python is None:
        pytest.skip("no system Python that another user may run")
    result = subprocess.run([python, "-I", "-S", str(launcher)], input=b'{"mode": "check"}',
                            capture_output=True, user=65534, check=False)
    shutil.rmtree(folder)
    assert result.returncode == 127
    assert result.stderr.decode() == (
        "draemu-launch: the process runtime runs containers in their own user, mount, PID "
        "and network namespaces and needs root (running as uid 65534)\n")


async def kubectl(apiserver, *args: str, stdin: bytes = b"") -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        "kubectl", "--kubeconfig", str(apiserver.kubeconfig_path), *args,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(stdin), 60)
    return proc.returncode or 0, out.decode(), err.decode()


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
async def test_kubectl_exec_runs_in_the_containers_namespaces(client, node, apiserver):
    await client.create("v1", "pods", pod("shell", [{
        "name": "main", "image": "registry.example/host", "command": ["sleep", "600"],
        "env": [{"name": "WHO", "value": "draemu"}],
        "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
        volumes=[{"name": "data", "emptyDir": {}}]), "default")
    await eventually(lambda: ready(client, "shell"))
    code, out, err = await kubectl(apiserver, "exec", "shell", "--", "sh", "-c",
                                   "echo $WHO; ls -d /data; ip -o link | wc -l; exit 3")
    assert (code, out) == (3, "draemu\n/data\n1\n")
    assert err == "command terminated with exit code 3\n"
    code, out, _ = await kubectl(apiserver, "exec", "-i", "shell", "--", "cat",
                                 stdin=b"through stdin\n")
    assert (code, out) == (0, "through stdin\n")


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
async def test_kubectl_exec_into_a_container_that_does_not_run_is_refused(
        client, node, apiserver):
    await client.create("v1", "pods", pod("faked", [{
        "name": "main", "image": "docker.io/library/ubuntu:22.04"}]), "default")
    await eventually(lambda: ready(client, "faked"))
    code, _out, err = await kubectl(apiserver, "exec", "faked", "--", "true")
    assert code == 1
    assert err == ('Error from server (BadRequest): container "main" of pod "faked" does not '
                   "execute (its image is not in --image-map, so it runs as on the fake "
                   "runtime): nothing to exec into\n")


async def test_a_container_reads_its_devices_metadata_file(apiserver, tmp_path, images,
                                                           client):
    """KEP-5304: the built-in GPU driver writes the device metadata file and its CDI spec
    mounts it where 1.37 puts it."""
    from draemu.cmd.testing.e2e import allocate, create_claim
    from draemu.drivers.presets import DriverSpec

    path = node_kubeconfig(apiserver, tmp_path, "node-2")
    spec = NodeSpec("node-2", drivers=[DriverSpec("gpu.example.com", "gpu", {"gpus": [
        {"count": 1, "model": "A100", "numaNode": 1}]})])
    started = await start_node(spec, kubeconfig=path, data_dir=tmp_path, server=apiserver,
                               runtime="process", image_map=images)
    try:
        claim = await create_claim(client, "meta")
        file = ("/var/run/kubernetes.io/dra-device-attributes/resourceclaims/meta/gpu/"
                "gpu.example.com-metadata.json")
        created = await client.create("v1", "pods", pod("meta", [{
            "name": "main", "image": "registry.example/host",
            "command": ["sh", "-c", f"cat {file}; exec sleep 600"],
            "resources": {"claims": [{"name": "gpu"}]}}], nodeName="node-2",
            resourceClaims=[{"name": "gpu", "resourceClaimName": "meta"}]), "default")
        await allocate(client, claim, created, "gpu.example.com", "node-2", "gpu-0")
        text = await eventually(lambda: _nonempty(log_of(client, "meta")), timeout=30)
        assert '"apiVersion": "metadata.resource.k8s.io/v1beta1"' in text
        assert '"resource.kubernetes.io/numaNode": {' in text and '"int": 1' in text
    finally:
        await client.delete("v1", "pods", "meta", "default")
        await started.stop()


async def _nonempty(text: Awaitable[str]) -> str | None:
    value = await text
    return value or None


async def test_a_host_port_reaches_the_pod_and_a_second_claim_on_it_is_an_event(client, node):
    import socket
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    for name in ("published", "second"):
        await client.create("v1", "pods", pod(name, [{
            "name": "web", "image": "registry.example/demo-server:v1",
            "ports": [{"containerPort": 8080, "hostPort": port, "hostIP": "127.0.0.1"}],
            "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1}}]),
            "default")
        if name == "published":
            await eventually(lambda: ready(client, "published"))

    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET / HTTP/1.0\r\n\r\n")
    answer = await reader.read()
    writer.close()
    assert answer.startswith(b"HTTP/1.0 200") and answer.endswith(b"ok")
    (event, *_) = await eventually(lambda: events_of(client, "second", "Failed"))
    assert event["message"] == (
        f"Error: hostPort {port}/TCP of container web cannot be published on 127.0.0.1: "
        "Address already in use (another pod or program on this machine listens there)")


async def test_security_settings_the_runtime_does_not_enforce_are_named_in_an_event(
        client, node):
    await client.create("v1", "pods", pod("locked", [{
        "name": "main", "image": "registry.example/host", "command": ["sleep", "600"],
        "securityContext": {"readOnlyRootFilesystem": True,
                            "appArmorProfile": {"type": "RuntimeDefault"},
                            "capabilities": {"drop": ["ALL"]}}}],
        securityContext={"seccompProfile": {"type": "RuntimeDefault"}}), "default")
    (event,) = await eventually(lambda: events_of(client, "locked",
                                                  "SecurityContextNotEnforced"))
    assert event["type"] == "Warning"
    assert event["message"] == (
        "not enforced by the process runtime: securityContext.seccompProfile, "
        "containers[main].securityContext.appArmorProfile")


async def test_run_as_non_root_without_a_user_is_refused_as_the_kubelet_refuses_it(
        client, node):
    created = await client.create("v1", "pods", pod("nonroot", [{
        "name": "main", "image": "registry.example/host", "command": ["id", "-u"]}],
        securityContext={"runAsNonRoot": True}), "default")

    async def refused():
        obj = await client.get("v1", "pods", "nonroot", "default")
        statuses = obj["status"].get("containerStatuses") or []
        waiting = (statuses[0]["state"].get("waiting") or {}) if statuses else {}
        return waiting if waiting.get("reason") == "CreateContainerConfigError" else None

    waiting = await eventually(refused)
    assert waiting["message"] == (
        'container has runAsNonRoot and image will run as root (pod: '
        f'"nonroot_default({created["metadata"]["uid"]})", container: main)')
