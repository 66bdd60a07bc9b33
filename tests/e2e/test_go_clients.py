"""Real Go clients against draemu, unchanged (issue 10 §2).

- `conformance`: client-go's informers (watch-list on and off), typed writes, every patch
  type, server-side apply, ResourceSlice round trips, status updates, field selectors and
  conflicts, with protobuf and JSON request bodies (tests/e2e/go/cmd/conformance).
- `minidriver`: a DRA driver built on the upstream kubeletplugin helper
  (tests/e2e/go/cmd/minidriver), registered with a draemu node, serving a pod's claim.
- `dra-example-kubeletplugin`: the upstream example driver at a released version
  (tests/e2e/go/exampledriver/go.mod), running its own demo manifests.

The programs are built by tests/e2e/go/build.sh with every Go cache under .cache/go.
Without Go the tests skip, except under CI=true, where a missing Go is a failure.
"""

from __future__ import annotations

import importlib.util
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from draemu.cmd.testing.process import RunningDraemu, draemu_up

GO_DIR = Path(__file__).parent / "go"
REPO = Path(__file__).resolve().parents[2]
# build.sh's cache folder; DRAEMU_GO_CACHE moves it (e.g. to keep it across fresh clones).
GO_CACHE = Path(os.environ.get("DRAEMU_GO_CACHE") or REPO / ".cache" / "go")
BIN = GO_CACHE / "bin"
EXAMPLE_DRIVER_VERSION = "v0.4.0"
# The demo manifests ship in the driver's module, as downloaded for the build.
EXAMPLE_DEMOS = (GO_CACHE / "mod" / "sigs.k8s.io"
                 / f"dra-example-driver@{EXAMPLE_DRIVER_VERSION}" / "demo" / "examples")
NODE = "n1"
MINI = "mini.draemu.example.com"
GPU = "gpu.example.com"
PROTOBUF = "application/vnd.kubernetes.protobuf"
JSON = "application/json"

# A cold build downloads ~200 modules and compiles client-go twice (two k8s versions);
# warm, build.sh takes a couple of seconds.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def go_bin() -> Path:
    if shutil.which("go") is None and not Path("/usr/local/go/bin/go").exists():
        if os.environ.get("CI") == "true":
            pytest.fail("Go is required under CI=true (issue 10): no `go` on PATH")
        pytest.skip("Go is not installed (needed to build the Go client programs)")
    result = subprocess.run(["bash", str(GO_DIR / "build.sh")], capture_output=True,
                            text=True, timeout=850, check=False)
    if result.returncode != 0:
        pytest.fail(f"tests/e2e/go/build.sh failed:\n{result.stdout}\n{result.stderr}")
    return BIN


# --- client-go conformance -----------------------------------------------------------------


@pytest.fixture(scope="module")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningDraemu]:
    # The whole control plane runs, as in a real cluster: controllers see the nodes
    # without kubelets and the hand-allocated claim the program creates, and must leave
    # alone what upstream's leave alone.
    with draemu_up(tmp_path_factory.mktemp("conformance"), "--preset", "empty") as cluster:
        yield cluster


def protobuf_decoder_missing() -> bool:
    return importlib.util.find_spec("draemu.apiserver.wire.protobuf") is None


@pytest.mark.parametrize("watch_list", [True, False], ids=["watchlist", "list-watch"])
@pytest.mark.parametrize("content_type", [PROTOBUF, JSON], ids=["protobuf", "json"])
def test_client_go_conformance_passes(go_bin: Path, control_plane: RunningDraemu, watch_list: bool,
                                      content_type: str) -> None:
    if content_type == PROTOBUF and protobuf_decoder_missing():
        pytest.skip("draemu does not decode protobuf request bodies yet "
                    "(apiserver/wire/protobuf/ is not there)")
    env = {**os.environ, "KUBE_FEATURE_WatchListClient": str(watch_list).lower()}
    result = subprocess.run(
        [str(go_bin / "conformance"), "--kubeconfig", str(control_plane.kubeconfig),
         "--content-type", content_type, "--timeout", "60s"],
        capture_output=True, text=True, timeout=90, env=env, check=False)
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr[-6000:]}"
    assert f"content-type={content_type} watch-list={str(watch_list).lower()}" in result.stdout
    assert re.search(r"^\d+ passed, 0 failed$", result.stdout, re.M), result.stdout


# --- drivers on a draemu node ------------------------------------------------------------


class DriverProcess:
    """A driver binary running as its own process; its output lines are collected by
    threads so a test can wait for one without blocking on a pipe."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                     text=True)
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self._lines: queue.Queue[str] = queue.Queue()
        for stream, sink in ((self.proc.stdout, self.stdout), (self.proc.stderr, self.stderr)):
            threading.Thread(target=self._pump, args=(stream, sink), daemon=True).start()

    def _pump(self, stream: Any, sink: list[str]) -> None:
        for line in stream:
            sink.append(line.rstrip("\n"))
            self._lines.put(line)

    def wait_for_line(self, pattern: str, timeout: float = 30) -> str:
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            for line in self.stdout + self.stderr:
                if regex.search(line):
                    return line
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.proc.poll() is not None and self._lines.empty():
                raise AssertionError(f"no line matching {pattern!r}; exit "
                                     f"{self.proc.poll()}; output:\n" + self.output())
            try:
                self._lines.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                pass

    def output(self) -> str:
        return "\n".join(self.stdout + ["--- stderr ---"] + self.stderr[-200:])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Node:
    """What an external driver needs to join a draemu node: its directories and
    credentials, from `draemu kubeconfig --node`."""

    def __init__(self, cluster: RunningDraemu, name: str) -> None:
        data_dir = cluster.kubeconfig.parent / "data"
        base = [sys.executable, "-m", "draemu", "kubeconfig", "--node", name,
                "--data-dir", str(data_dir)]
        dirs = subprocess.run([*base, "--dirs"], capture_output=True, text=True, check=True)
        self.dirs = dict(line.split("=", 1) for line in dirs.stdout.split())
        self.kubeconfig = cluster.kubeconfig.parent / f"{name}.kubeconfig"
        subprocess.run([*base, "--output", str(self.kubeconfig)], check=True)
        self.name = name

    def driver_flags(self) -> list[str]:
        return ["--node-name", self.name, "--kubeconfig", str(self.kubeconfig),
                "--cdi-root", self.dirs["CDI_ROOT"],
                "--kubelet-registrar-directory-path",
                self.dirs["KUBELET_REGISTRAR_DIRECTORY_PATH"],
                "--kubelet-plugins-directory-path", self.dirs["KUBELET_PLUGINS_DIRECTORY_PATH"]]


@contextmanager
def cluster_with_a_bare_node(folder: Path) -> Iterator[RunningDraemu]:
    preset = folder / "preset.yaml"
    preset.write_text(yaml.safe_dump({
        "apiVersion": "draemu.io/v1alpha1", "kind": "Preset",
        "deviceClasses": [{"name": MINI, "driver": MINI}, {"name": GPU, "driver": GPU}],
        # A node without built-in drivers: the Go drivers below are its only ones.
        "nodes": [{"name": NODE}],
    }))
    with draemu_up(folder, "--preset", str(preset)) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def node_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningDraemu]:
    with cluster_with_a_bare_node(tmp_path_factory.mktemp("drivers")) as cluster:
        yield cluster


def driver_env() -> dict[str, str]:
    # The drivers read KUBECONFIG if set; they must use the node credentials we pass.
    return {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}


@pytest.fixture(scope="module")
def minidriver(go_bin: Path, node_cluster: RunningDraemu) -> Iterator[DriverProcess]:
    node = Node(node_cluster, NODE)
    driver = DriverProcess([str(go_bin / "minidriver"), *node.driver_flags()], driver_env())
    try:
        driver.wait_for_line(r"^registered$")
        yield driver
    finally:
        driver.stop()


def slices_of(cluster: RunningDraemu, driver: str, timeout: float = 30) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        out = cluster.kubectl("get", "resourceslices", "-o", "json", "--field-selector",
                              f"spec.driver={driver},spec.nodeName={NODE}").stdout
        items: list[dict[str, Any]] = json.loads(out)["items"]
        if items or time.monotonic() > deadline:
            return items
        time.sleep(0.1)


def pod_claim_manifest(namespace: str, pod: str, device_class: str) -> str:
    return yaml.safe_dump_all([
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
         "metadata": {"name": "one-device", "namespace": namespace},
         "spec": {"spec": {"devices": {"requests": [
             {"name": "dev", "exactly": {"deviceClassName": device_class}}]}}}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod, "namespace": namespace},
         "spec": {"containers": [{"name": "ctr0", "image": "ubuntu:22.04",
                                  "command": ["bash", "-c"],
                                  "args": ["export; trap 'exit 0' TERM; sleep 9999 & wait"],
                                  "resources": {"claims": [{"name": "dev"}]}}],
                  "resourceClaims": [{"name": "dev",
                                      "resourceClaimTemplateName": "one-device"}]}},
    ])


def claim_of(cluster: RunningDraemu, namespace: str, pod: str) -> dict[str, Any]:
    pod_obj = json.loads(cluster.kubectl("get", "pod", "-n", namespace, pod, "-o",
                                         "json").stdout)
    [pod_claim] = pod_obj["spec"]["resourceClaims"]
    name = pod_claim.get("resourceClaimName") or (
        pod_obj["status"]["resourceClaimStatuses"][0]["resourceClaimName"])
    claim: dict[str, Any] = json.loads(cluster.kubectl("get", "resourceclaim", "-n", namespace,
                                                       name, "-o", "json").stdout)
    return claim


def test_minidriver_publishes_its_slices_through_the_helper(
        minidriver: DriverProcess, node_cluster: RunningDraemu) -> None:
    [resource_slice] = slices_of(node_cluster, MINI)
    assert resource_slice["metadata"]["generateName"] == f"00000-{MINI}-{NODE}-"
    [owner] = resource_slice["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Node", NODE, True)
    assert [d["name"] for d in resource_slice["spec"]["devices"]] == ["dev-0", "dev-1"]
    assert resource_slice["spec"]["pool"] == {"name": NODE, "generation": 1,
                                              "resourceSliceCount": 1}
    assert not [line for line in minidriver.stderr if line.startswith("ERROR")]


def test_pod_with_a_minidriver_claim_runs_with_the_cdi_environment(
        minidriver: DriverProcess, node_cluster: RunningDraemu) -> None:
    node_cluster.kubectl("apply", "-f", "-", input=pod_claim_manifest("mini-run", "pod0", MINI))
    node_cluster.kubectl("wait", "-n", "mini-run", "--for=condition=Ready", "pod/pod0",
                         "--timeout=60s")
    claim = claim_of(node_cluster, "mini-run", "pod0")
    [result] = claim["status"]["allocation"]["devices"]["results"]
    assert (result["driver"], result["pool"]) == (MINI, NODE)
    minidriver.wait_for_line(rf"^prepared {claim['metadata']['uid']} ")
    logs = node_cluster.kubectl("logs", "-n", "mini-run", "pod0").stdout
    index = result["device"].removeprefix("dev-")
    assert f'declare -x MINI_DEVICE_{index}="{result["device"]}"' in logs
    assert f'declare -x MINI_CLAIM="mini-run/{claim["metadata"]["name"]}"' in logs


def test_deleting_the_pod_unprepares_its_minidriver_claim(
        minidriver: DriverProcess, node_cluster: RunningDraemu) -> None:
    node_cluster.kubectl("apply", "-f", "-", input=pod_claim_manifest("mini-del", "pod0", MINI))
    node_cluster.kubectl("wait", "-n", "mini-del", "--for=condition=Ready", "pod/pod0",
                         "--timeout=60s")
    uid = claim_of(node_cluster, "mini-del", "pod0")["metadata"]["uid"]
    node_cluster.kubectl("delete", "-n", "mini-del", "pod", "pod0", "--wait", "--timeout=60s")
    minidriver.wait_for_line(rf"^unprepared {uid} mini-del/")


# --- the upstream example driver ---------------------------------------------------------


@contextmanager
def running_example_driver(go_bin: Path, cluster: RunningDraemu,
                           *flags: str) -> Iterator[DriverProcess]:
    driver = start_example_driver(go_bin, cluster, *flags)
    try:
        yield driver
    finally:
        driver.stop()


def start_example_driver(go_bin: Path, cluster: RunningDraemu, *flags: str) -> DriverProcess:
    node = Node(cluster, NODE)
    # As its Helm chart runs it: NODE_NAME from the downward API (the driver puts it in
    # the CDI spec), CDI specs where the runtime reads them.
    env = {**driver_env(), "NODE_NAME": NODE}
    driver = DriverProcess([str(go_bin / "dra-example-kubeletplugin"), *node.driver_flags(),
                            "-v", "4", *flags], env)
    try:
        driver.wait_for_line(r"GRPC server started.*logger=\"registrar\"")
    except AssertionError:
        driver.stop()
        raise
    return driver


@pytest.fixture(scope="module")
def example_driver(go_bin: Path, node_cluster: RunningDraemu) -> Iterator[DriverProcess]:
    with running_example_driver(go_bin, node_cluster) as driver:
        yield driver


def klog_errors(driver: DriverProcess) -> list[str]:
    return [line for line in driver.stderr if re.match(r"^E\d{4} ", line)]


def test_example_driver_publishes_its_gpus(example_driver: DriverProcess,
                                           node_cluster: RunningDraemu) -> None:
    [resource_slice] = slices_of(node_cluster, GPU)
    devices = resource_slice["spec"]["devices"]
    assert [d["name"] for d in devices] == [f"gpu-{i}" for i in range(8)]
    assert devices[0]["attributes"]["model"] == {"string": "LATEST-GPU-MODEL"}
    assert devices[0]["capacity"]["memory"] == {"value": "80Gi"}
    # The helper compares what it wrote with what came back; any difference (a dropped
    # or normalized field) would be logged as an error.
    assert not klog_errors(example_driver), example_driver.output()


def run_demo(cluster: RunningDraemu, name: str) -> None:
    manifest = EXAMPLE_DEMOS / name / f"{name}.yaml"
    cluster.kubectl("apply", "-f", str(manifest))
    cluster.kubectl("wait", "-n", name, "--for=condition=Ready", "pod", "--all",
                    "--timeout=60s")


def test_example_driver_demo_pods_get_distinct_gpus_in_their_environment(
        example_driver: DriverProcess, node_cluster: RunningDraemu) -> None:
    run_demo(node_cluster, "basic-resourceclaimtemplate")
    seen = []
    for pod in ("pod0", "pod1"):
        claim = claim_of(node_cluster, "basic-resourceclaimtemplate", pod)
        [result] = claim["status"]["allocation"]["devices"]["results"]
        device = result["device"]
        n = device.removeprefix("gpu-")
        logs = node_cluster.kubectl("logs", "-n", "basic-resourceclaimtemplate", pod).stdout
        assert f'declare -x GPU_DEVICE_{n}="{device}"' in logs
        assert f'declare -x GPU_DEVICE_{n}_SHARING_STRATEGY="TimeSlicing"' in logs
        assert f'declare -x GPU_DEVICE_{n}_TIMESLICE_INTERVAL="Default"' in logs
        assert f'declare -x KUBERNETES_NODE_NAME="{NODE}"' in logs
        seen.append(device)
    assert len(set(seen)) == 2


def test_example_driver_applies_opaque_configs_per_request(
        example_driver: DriverProcess, node_cluster: RunningDraemu) -> None:
    name = "basic-resourceclaim-opaque-config"
    run_demo(node_cluster, name)
    claim = claim_of(node_cluster, name, "pod0")
    gpus = {r["request"]: r["device"].removeprefix("gpu-")
            for r in claim["status"]["allocation"]["devices"]["results"]}
    ts = node_cluster.kubectl("logs", "-n", name, "pod0", "-c", "ts-ctr0").stdout
    sp = node_cluster.kubectl("logs", "-n", name, "pod0", "-c", "sp-ctr0").stdout
    assert f'declare -x GPU_DEVICE_{gpus["ts-gpu"]}_TIMESLICE_INTERVAL="Long"' in ts
    assert f'declare -x GPU_DEVICE_{gpus["sp-gpu"]}_PARTITION_COUNT="10"' in sp
    assert f'declare -x GPU_DEVICE_{gpus["sp-gpu"]}_SHARING_STRATEGY="SpacePartitioning"' in sp


@pytest.fixture(scope="module")
def partitioned_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningDraemu]:
    with cluster_with_a_bare_node(tmp_path_factory.mktemp("partitions")) as cluster:
        yield cluster


NODES_WRITE_GPU_DEVICE_STATUS = f"""
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: gpu-device-status}}
rules:
- apiGroups: [resource.k8s.io]
  resources: [resourceclaims/status]
  verbs: [update, patch]
- apiGroups: [resource.k8s.io]
  resources: [resourceclaims/driver]
  resourceNames: [{GPU}]
  verbs: ["arbitrary-node:update", "arbitrary-node:patch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: gpu-device-status}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: gpu-device-status}}
subjects:
- {{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:nodes"}}
"""


@pytest.fixture(scope="module")
def partitioning_example_driver(go_bin: Path, partitioned_cluster: RunningDraemu
                                ) -> Iterator[DriverProcess]:
    # Partitionable GPUs (a counters slice and a devices slice per pool) and device
    # status written by the driver into claims with the node's credentials. Since 1.36
    # (granular claim status authorization) nodes may only get claims: the administrator
    # grants the nodes this driver's device status, as on a cluster.
    partitioned_cluster.kubectl("apply", "-f", "-", input=NODES_WRITE_GPU_DEVICE_STATUS)
    with running_example_driver(go_bin, partitioned_cluster, "--gpu-partitions", "2",
                                "--gpu-device-status") as driver:
        yield driver


def test_example_driver_partitions_share_counters_and_report_device_status(
        partitioning_example_driver: DriverProcess, partitioned_cluster: RunningDraemu) -> None:
    published = slices_of(partitioned_cluster, GPU)
    deadline = time.monotonic() + 30
    while len(published) < 2 and time.monotonic() < deadline:
        published = slices_of(partitioned_cluster, GPU)
    assert sorted(bool(s["spec"].get("sharedCounters")) for s in published) == [False, True]
    name = "partitionable-devices"
    run_demo(partitioned_cluster, name)
    claim = claim_of(partitioned_cluster, name, "pod0")
    allocated = [r["device"] for r in claim["status"]["allocation"]["devices"]["results"]]
    assert len(allocated) == 2
    deadline = time.monotonic() + 30
    while len(claim["status"].get("devices", [])) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
        claim = claim_of(partitioned_cluster, name, "pod0")
    assert sorted(d["device"] for d in claim["status"]["devices"]) == sorted(allocated)
    assert all(d["data"]["model"] == {"string": "LATEST-GPU-MODEL"}
               for d in claim["status"]["devices"])
    logs = partitioned_cluster.kubectl("logs", "-n", name, "pod0").stdout
    for device in allocated:
        n = device.removeprefix("gpu-").upper().replace("-", "_")
        assert f'declare -x GPU_DEVICE_{n}="{device}"' in logs
    assert not klog_errors(partitioning_example_driver), partitioning_example_driver.output()


def wait_for_registration(cluster: RunningDraemu, socket_name: str, timeout: float = 30) -> None:
    """Until the node's kubelet logs that it registered the DRA socket `socket_name`."""
    log = cluster.kubeconfig.parent / "draemu.log"
    deadline = time.monotonic() + timeout
    while not any(socket_name in line and "DRA plugin registered" in line
                  for line in log.read_text().splitlines()):
        assert time.monotonic() < deadline, f"{socket_name} was not registered in {timeout}s"
        time.sleep(0.1)


def test_example_driver_rolling_update_hands_claims_to_the_new_instance(
        go_bin: Path, tmp_path: Path) -> None:
    # As the Helm chart's DaemonSet updates it: each instance names its sockets after its
    # pod UID; the new one starts before the old one stops, and takes over every call.
    old_uid = "00000000-0000-4000-8000-000000000001"
    new_uid = "00000000-0000-4000-8000-000000000002"
    with cluster_with_a_bare_node(tmp_path) as cluster:
        old = start_example_driver(go_bin, cluster, "--pod-uid", old_uid)
        new = None
        try:
            run_demo(cluster, "basic-shared-claim-across-pods")
            shared = claim_of(cluster, "basic-shared-claim-across-pods", "pod0")
            new = start_example_driver(go_bin, cluster, "--pod-uid", new_uid)
            wait_for_registration(cluster, f"dra-{new_uid}.sock")
            old.stop()
            run_demo(cluster, "basic-resourceclaimtemplate")
            fresh = claim_of(cluster, "basic-resourceclaimtemplate", "pod0")
            new.wait_for_line(rf'"Preparing claim".*uid="{fresh["metadata"]["uid"]}"')
            # A claim the old instance prepared is unprepared by the new one.
            cluster.kubectl("delete", "pods", "--all", "-n", "basic-shared-claim-across-pods",
                            "--wait", "--timeout=60s")
            new.wait_for_line(r'"UnprepareResourceClaims is called"')
            assert not any(shared["metadata"]["uid"] in line for line in new.stderr
                           if "Preparing claim" in line)
        finally:
            old.stop()
            if new is not None:
                new.stop()
