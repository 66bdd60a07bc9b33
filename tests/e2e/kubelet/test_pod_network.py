"""The process runtime's pod network (draemu/podnetwork.py) in `draemu up`: nodes with
their InternalIP and a podCIDR from node-ipam, pods with addresses of it that pods on
other nodes reach, hostNetwork pods in their node's namespace, the kubelet API on the
node network (kubectl logs goes through it), and nothing left of any of it after draemu
is killed."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from draemu.cmd.testing.process import RunningDraemu, draemu_up

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(300),
              pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")]

SERVER = ["python3", "-c", "import http.server as h, socketserver as s\n"
          "class H(h.BaseHTTPRequestHandler):\n"
          "    def do_GET(self):\n"
          "        self.send_response(200); self.end_headers()\n"
          "        self.wfile.write(f'{self.client_address[0]}'.encode())\n"
          "s.TCPServer(('', 8080), H).serve_forever()"]


def _pod(name: str, node: str, command: list[str], **spec: object) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                       "spec": {"nodeName": node, "containers": [
                           {"name": "c", "image": "python", "command": command}], **spec}})


def _wait(up: RunningDraemu, *args: str) -> None:
    up.kubectl("wait", "--timeout=60s", *args)


def _get(up: RunningDraemu, kind: str, name: str) -> dict:
    return json.loads(up.kubectl("get", kind, name, "-o", "json").stdout)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("podnet")
    # Without kube-proxy and CoreDNS (nowhere to be found): the pod network alone.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DRAEMU_REALK8S_BIN", str(folder / "no-programs"))
        patch.setenv("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        with draemu_up(folder, "--runtime", "process", "--preset", "example", "--nodes",
                       "2", "--no-ui", "--pod-cidr", "10.250.0.0/16", timeout=120) as up:
            yield up


def test_nodes_have_internal_ips_and_pod_cidrs_from_node_ipam(cluster) -> None:
    nodes = {n["metadata"]["name"]: n for n in
             json.loads(cluster.kubectl("get", "nodes", "-o", "json").stdout)["items"]}
    ips = {name: [a["address"] for a in n["status"]["addresses"]
                  if a["type"] == "InternalIP"] for name, n in nodes.items()}
    assert ips == {"node-1": ["172.18.0.2"], "node-2": ["172.18.0.3"]}
    cidrs = sorted(n["spec"].get("podCIDR", "") for n in nodes.values())
    assert cidrs == ["10.250.0.0/24", "10.250.1.0/24"]


def test_a_pod_on_another_node_reaches_a_pod_by_its_ip(cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=_pod("server", "node-1", SERVER))
    _wait(cluster, "--for=condition=Ready", "pod/server")
    server = _get(cluster, "pod", "server")
    node = _get(cluster, "node", "node-1")
    ip = server["status"]["podIP"]
    assert ipaddress.ip_address(ip) in ipaddress.ip_network(node["spec"]["podCIDR"])
    assert server["status"]["podIPs"] == [{"ip": ip}]
    assert server["status"]["hostIP"] == "172.18.0.2"
    fetch = ["python3", "-c", f"import urllib.request as u; print(u.urlopen("
                              f"'http://{ip}:8080/', timeout=5).read().decode())"]
    cluster.kubectl("apply", "-f", "-",
                    input=_pod("client", "node-2", fetch, restartPolicy="Never"))
    _wait(cluster, "--for=jsonpath={.status.phase}=Succeeded", "pod/client")
    client = _get(cluster, "pod", "client")
    # The server saw the client's own address: no NAT between pods.
    assert cluster.kubectl("logs", "client").stdout.strip() == client["status"]["podIP"]


def test_a_host_network_pod_runs_in_its_nodes_namespace(cluster) -> None:
    show = ["python3", "-c", "import socket; s = socket.socket(socket.AF_INET, "
                             "socket.SOCK_DGRAM); s.connect(('172.18.0.1', 9)); "
                             "print(s.getsockname()[0], socket.gethostname())"]
    cluster.kubectl("apply", "-f", "-", input=_pod("hostnet", "node-2", show,
                                                   hostNetwork=True, restartPolicy="Never"))
    _wait(cluster, "--for=jsonpath={.status.phase}=Succeeded", "pod/hostnet")
    assert _get(cluster, "pod", "hostnet")["status"]["podIP"] == "172.18.0.3"
    assert cluster.kubectl("logs", "hostnet").stdout.split() == ["172.18.0.3", "node-2"]


def test_without_kube_proxy_pods_reach_the_apiserver_forwarded_in(cluster) -> None:
    ask = ["python3", "-c", "import os, ssl, urllib.request as u\n"
           "d = '/var/run/secrets/kubernetes.io/serviceaccount/'\n"
           "host, port = os.environ['KUBERNETES_SERVICE_HOST'], "
           "os.environ['KUBERNETES_SERVICE_PORT']\n"
           "r = u.Request(f'https://{host}:{port}/api', headers={'Authorization': "
           "'Bearer ' + open(d + 'token').read()})\n"
           "print(host, u.urlopen(r, context=ssl.create_default_context(cafile=d + 'ca.crt'))"
           ".status)"]
    cluster.kubectl("apply", "-f", "-", input=_pod("api", "node-1", ask,
                                                   restartPolicy="Never"))
    _wait(cluster, "--for=jsonpath={.status.phase}=Succeeded", "pod/api")
    assert cluster.kubectl("logs", "api").stdout.split() == ["127.0.0.1", "200"]


def _ours(root_pid: int) -> set[int]:
    """The processes below `root_pid`."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [root_pid]
    while todo:
        pid = todo.pop()
        for child in children.get(pid, []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _netns(pids: set[int]) -> set[str]:
    out = set()
    for pid in pids:
        try:
            out.add(os.readlink(f"/proc/{pid}/ns/net"))
        except OSError:
            pass
    return out


def _root_links() -> str:
    return re.sub(r"\s+", " ", subprocess.run(["ip", "-o", "link"], capture_output=True,
                                              text=True, check=True).stdout)


def test_sigkill_leaves_no_namespace_link_or_process(tmp_path: Path) -> None:
    links_before = {line.split(":")[1] for line in _root_links().split("\n") if line}
    with draemu_up(tmp_path, "--runtime", "process", "--preset", "example", "--nodes", "2",
                   "--no-ui", timeout=120) as up:
        up.kubectl("apply", "-f", "-", input=_pod("server", "node-1", SERVER))
        _wait(up, "--for=condition=Ready", "pod/server")
        pids = _ours(up.process.pid)
        namespaces = _netns(pids) - {os.readlink("/proc/self/ns/net")}
        assert len(namespaces) >= 4  # the cluster's, two nodes', the pod's
        os.kill(up.process.pid, signal.SIGKILL)
        up.process.wait()
        deadline = time.monotonic() + 20
        while any(Path(f"/proc/{p}").exists() for p in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
    assert not [p for p in pids if Path(f"/proc/{p}").exists()]
    live = _netns({int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()})
    assert not namespaces & live
    links_after = {line.split(":")[1] for line in _root_links().split("\n") if line}
    assert links_after <= links_before
