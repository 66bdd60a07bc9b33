"""Services and cluster DNS on the process runtime's pod network, by the real kube-proxy
(nftables, a DaemonSet pod on each node) and the real CoreDNS (kubeadm's Deployment and
kube-dns Service): agnhost netexec backends called from a pod on another node by DNS name
and ClusterIP, a NodePort on a node's address, session affinity, a headless Service's
records, a deleted backend leaving the answers, kubectl exec into a networked pod,
kubectl port-forward to a Service and a pod (WebSocket-tunnelled SPDY and plain SPDY),
and pods/proxy and services/proxy.

Needs root and tests/e2e/realk8s/build.sh's kube-proxy, coredns and agnhost."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator

import pytest

from draemu.cmd.addons import build_cache
from draemu.cmd.testing.process import RunningDraemu, draemu_up

BIN = build_cache()
PROGRAMS = ("kube-proxy", "coredns", "agnhost")
AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.56"

pytestmark = [
    pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(400),
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
    pytest.mark.skipif(not all((BIN / p).exists() for p in PROGRAMS),
                       reason=f"needs {', '.join(PROGRAMS)} in {BIN} "
                              "(tests/e2e/realk8s/build.sh network agnhost)")]

# Asks a URL N times from inside the client pod and prints each answer (or the error).
ASK = """import sys, urllib.request
for _ in range(int(sys.argv[2])):
    try:
        print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())
    except OSError as err:
        print("error", err)
"""


def _apply(up: RunningDraemu, *objects: dict) -> None:
    up.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                     "items": list(objects)}))


def _backends(replicas: int = 2) -> dict:
    labels = {"app": "backend"}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "backend"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": {
                "metadata": {"labels": labels},
                "spec": {"affinity": {
                    "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [{
                            "key": "kubernetes.io/hostname", "operator": "NotIn",
                            "values": ["node-3"]}]}]}},
                    "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                        "labelSelector": {"matchLabels": labels},
                        "topologyKey": "kubernetes.io/hostname"}]}},
                    "containers": [{"name": "netexec", "image": AGNHOST,
                                    "args": ["netexec", "--http-port=8080"],
                                    "readinessProbe": {"httpGet": {"path": "/healthz",
                                                                   "port": 8080}}}]}}}}


def _service(name: str, **spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"selector": {"app": "backend"},
                     "ports": [{"port": 80, "targetPort": 8080}], **spec}}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningDraemu]:
    folder = tmp_path_factory.mktemp("services")
    with draemu_up(folder, "--runtime", "process", "--preset", "example", "--nodes", "3",
                   "--no-ui", "--image-map",
                   f"registry.k8s.io/e2e-test-images/agnhost={BIN / 'agnhost'}",
                   "--image-map", "python=/usr/bin/python3", timeout=180) as up:
        up.kubectl("-n", "kube-system", "rollout", "status", "deployment/coredns",
                   "--timeout=120s", timeout=150)
        up.kubectl("-n", "kube-system", "rollout", "status", "daemonset/kube-proxy",
                   "--timeout=120s", timeout=150)
        _apply(up, _backends(), _service("backend"), _service("backend-np", type="NodePort"),
               _service("backend-sticky", sessionAffinity="ClientIP"),
               _service("backend-headless", clusterIP="None"),
               {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "client"},
                "spec": {"nodeName": "node-3", "containers": [{
                    "name": "client", "image": "python",
                    "command": ["python3", "-c", "import time; time.sleep(100000)"]}]}})
        up.kubectl("rollout", "status", "deployment/backend", "--timeout=120s", timeout=150)
        up.kubectl("wait", "--for=condition=Ready", "pod/client", "--timeout=60s")
        yield up


def _ask(up: RunningDraemu, url: str, times: int = 12) -> list[str]:
    out = up.kubectl("exec", "client", "--", "python3", "-c", ASK, url, str(times)).stdout
    return out.split("\n")[:-1]


def _settled(up: RunningDraemu, url: str, wanted: set[str], times: int = 20,
             timeout: float = 30) -> set[str]:
    """The answers of `times` asks, again until they are `wanted` (kube-proxy programs a
    change within a second or so of the EndpointSlice's) or `timeout` passes."""
    deadline = time.monotonic() + timeout
    while True:
        answers = set(_ask(up, url, times))
        if answers == wanted or time.monotonic() > deadline:
            return answers
        time.sleep(1)


def _backend_pods(up: RunningDraemu) -> dict[str, dict]:
    pods = json.loads(up.kubectl("get", "pods", "-l", "app=backend", "-o", "json").stdout)
    return {p["metadata"]["name"]: p for p in pods["items"]
            if not p["metadata"].get("deletionTimestamp")}


def test_both_backends_answer_by_dns_name_and_cluster_ip_from_another_node(cluster) -> None:
    pods = _backend_pods(cluster)
    assert {p["spec"]["nodeName"] for p in pods.values()} == {"node-1", "node-2"}
    cluster_ip = json.loads(cluster.kubectl("get", "svc", "backend", "-o", "json").stdout)[
        "spec"]["clusterIP"]
    for url in ("http://backend/hostname", "http://backend.default.svc.cluster.local/hostname",
                f"http://{cluster_ip}/hostname"):
        assert _settled(cluster, url, set(pods)) == set(pods), url


def test_a_node_port_answers_on_a_nodes_address(cluster) -> None:
    svc = json.loads(cluster.kubectl("get", "svc", "backend-np", "-o", "json").stdout)
    port = svc["spec"]["ports"][0]["nodePort"]
    for node_ip in ("172.18.0.2", "172.18.0.4"):  # a backend's node, and the client's
        assert set(_ask(cluster, f"http://{node_ip}:{port}/hostname")) <= \
            set(_backend_pods(cluster)), node_ip


def test_session_affinity_keeps_a_client_on_one_backend(cluster) -> None:
    answers = _ask(cluster, "http://backend-sticky/hostname", 10)
    assert len(set(answers)) == 1 and answers[0] in _backend_pods(cluster)


def test_a_headless_service_resolves_to_the_pods_addresses(cluster) -> None:
    lookup = ("import socket; print(' '.join(sorted({a[4][0] for a in socket.getaddrinfo("
              "'backend-headless.default.svc.cluster.local', 80, socket.AF_INET)})))")
    found = cluster.kubectl("exec", "client", "--", "python3", "-c", lookup).stdout.split()
    assert sorted(found) == sorted(p["status"]["podIP"] for p in _backend_pods(cluster).values())


def test_kubectl_exec_runs_in_the_pods_network(cluster) -> None:
    show = ("import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
            "s.connect(('10.96.0.10', 53)); print(s.getsockname()[0])")
    pod = json.loads(cluster.kubectl("get", "pod", "client", "-o", "json").stdout)
    assert cluster.kubectl("exec", "client", "--", "python3", "-c", show).stdout.strip() == \
        pod["status"]["podIP"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _forwarded(up: RunningDraemu, target: str, remote: int, websockets: bool,
               path: str = "/hostname") -> str:
    """What `kubectl port-forward TARGET LOCAL:REMOTE` answers on the local port."""
    local = _free_port()
    env = {**os.environ, "KUBECONFIG": str(up.kubeconfig),
           "KUBECTL_PORT_FORWARD_WEBSOCKETS": "true" if websockets else "false"}
    proc = subprocess.Popen(["kubectl", "port-forward", target, f"{local}:{remote}"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert re.match(rf"Forwarding from 127\.0\.0\.1:{local} -> ", line), line
        return urllib.request.urlopen(f"http://127.0.0.1:{local}{path}", timeout=10
                                      ).read().decode()
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize("websockets", [True, False], ids=["websocket", "spdy"])
def test_kubectl_port_forward_reaches_a_service_and_a_pod(cluster, websockets) -> None:
    pods = _backend_pods(cluster)
    assert _forwarded(cluster, "svc/backend", 80, websockets) in pods
    name = sorted(pods)[0]
    assert _forwarded(cluster, f"pod/{name}", 8080, websockets) == name


def test_the_apiserver_proxies_to_a_pod_and_a_service(cluster) -> None:
    pods = _backend_pods(cluster)
    name = sorted(pods)[0]
    base = "/api/v1/namespaces/default"
    assert cluster.kubectl("get", "--raw", f"{base}/pods/{name}:8080/proxy/hostname"
                           ).stdout == name
    assert cluster.kubectl("get", "--raw", f"{base}/pods/http:{name}:8080/proxy/hostname"
                           ).stdout == name
    answers = {cluster.kubectl("get", "--raw", f"{base}/services/backend:80/proxy/hostname"
                               ).stdout for _ in range(12)}
    assert answers <= set(pods) and answers
    refused = cluster.kubectl("get", "--raw", f"{base}/pods/{name}:9/proxy/", check=False)
    ip = pods[name]["status"]["podIP"]
    assert f"error trying to reach service: dial tcp {ip}:9: connect: connection refused" \
        in refused.stderr


def test_a_deleted_backend_leaves_the_answers(cluster) -> None:
    before = _backend_pods(cluster)
    gone = sorted(before)[0]
    cluster.kubectl("delete", "pod", gone, "--wait=true", "--timeout=60s")
    cluster.kubectl("rollout", "status", "deployment/backend", "--timeout=120s", timeout=150)
    after = set(_backend_pods(cluster))
    assert gone not in after and len(after) == 2
    assert _settled(cluster, "http://backend/hostname", after) == after
