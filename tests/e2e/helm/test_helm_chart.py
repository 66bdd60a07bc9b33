"""A driver's Helm chart on draemu: the upstream dra-example-driver chart (the module
version tests/e2e/go/exampledriver pins), unchanged, installed by a real helm
(tests/e2e/helm/build.sh) into `draemu up --preset empty --nodes 2 --runtime process`
with the chart's image mapped to the plugin binary tests/e2e/go/build.sh built. Its
DaemonSet's pods register with each node's kubelet and publish ResourceSlices with their
ServiceAccount's token (RBAC and the chart's ValidatingAdmissionPolicy enforced); the
upstream demo pods (`demo/examples`, image ubuntu:22.04 mapped to this machine's own file
system) get GPUs and print their environment; upgrade rolls the DaemonSet; uninstall
removes everything and the slices go."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from draemu.cmd.testing.process import RunningDraemu, draemu_up

HERE = Path(__file__).parent
REPO = HERE.parents[2]
GO_DIR = REPO / "tests" / "e2e" / "go"
GO_CACHE = Path(os.environ.get("DRAEMU_GO_CACHE") or REPO / ".cache" / "go")
BIN = GO_CACHE / "bin"
CHART_IMAGE = "registry.k8s.io/dra-example-driver/dra-example-driver"
NAMESPACE = "dra-example-driver"
RELEASE = "dra-example-driver"
DRIVER = "gpu.example.com"
NODES = ("node-1", "node-2")

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900),
              pytest.mark.skipif(os.geteuid() != 0, reason="the process runtime needs root")]


def example_driver_version() -> str:
    text = (GO_DIR / "exampledriver" / "go.mod").read_text()
    match = re.search(r"^\s*sigs\.k8s\.io/dra-example-driver (v\S+)", text, re.MULTILINE)
    assert match, "exampledriver/go.mod pins no sigs.k8s.io/dra-example-driver version"
    return match.group(1)


def module_dir() -> Path:
    return GO_CACHE / "mod" / "sigs.k8s.io" / f"dra-example-driver@{example_driver_version()}"


@pytest.fixture(scope="module")
def go_bin() -> Path:
    if shutil.which("go") is None and not Path("/usr/local/go/bin/go").exists():
        if os.environ.get("CI") == "true":
            pytest.fail("Go is required under CI=true: no `go` on PATH")
        pytest.skip("Go is not installed (needed to build helm and the example driver)")
    for script in (GO_DIR / "build.sh", HERE / "build.sh"):
        result = subprocess.run(["bash", str(script)], capture_output=True, text=True,
                                timeout=850, check=False)
        if result.returncode != 0:
            pytest.fail(f"{script} failed:\n{result.stdout}\n{result.stderr}")
    return BIN


@pytest.fixture(scope="module")
def chart() -> Path:
    path = module_dir() / "deployments" / "helm" / "dra-example-driver"
    assert (path / "Chart.yaml").exists(), f"the chart is not in the module cache: {path}"
    return path


@pytest.fixture(scope="module")
def cluster(go_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningDraemu]:
    with draemu_up(tmp_path_factory.mktemp("helm"), "--preset", "empty", "--nodes", "2",
                   "--runtime", "process",
                   "--image-map", f"{CHART_IMAGE}={go_bin / 'dra-example-kubeletplugin'}",
                   "--image-map", "ubuntu:22.04=/") as running:
        yield running


def helm(cluster: RunningDraemu, *args: str, check: bool = True
         ) -> subprocess.CompletedProcess[str]:
    home = cluster.kubeconfig.parent / "helm-home"
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig), "HOME": str(home),
           "HELM_CACHE_HOME": str(home / "cache"), "HELM_CONFIG_HOME": str(home / "config"),
           "HELM_DATA_HOME": str(home / "data")}
    result = subprocess.run([str(BIN / "helm"), *args], env=env, capture_output=True,
                            text=True, timeout=300, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} exited {result.returncode}:\n"
                             f"{result.stdout}\n{result.stderr}")
    return result


def get_json(cluster: RunningDraemu, *args: str) -> dict[str, Any]:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def wait_for(what: str, check: Callable[[], Any], timeout: float = 90) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def driver_slices(cluster: RunningDraemu) -> list[dict[str, Any]]:
    return [s for s in get_json(cluster, "resourceslices")["items"]
            if s["spec"]["driver"] == DRIVER]


def pod_ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def plugin_pods(cluster: RunningDraemu) -> list[dict[str, Any]]:
    return [p for p in get_json(cluster, "pods", "-n", NAMESPACE)["items"]
            if p["metadata"].get("labels", {}).get("app.kubernetes.io/component") ==
            "kubeletplugin"]


def run_the_demo(cluster: RunningDraemu) -> None:
    """The upstream demo's two pods, one GPU each, print their environment (bash's own
    `export`: ubuntu:22.04 is mapped to this machine's file system)."""
    demo = module_dir() / "demo" / "examples" / "basic-resourceclaimtemplate" / \
        "basic-resourceclaimtemplate.yaml"
    cluster.kubectl("apply", "-f", str(demo))
    demo_ns = "basic-resourceclaimtemplate"

    def demo_running() -> list[dict[str, Any]]:
        items = get_json(cluster, "pods", "-n", demo_ns)["items"]
        return items if len(items) == 2 and all(pod_ready(p) for p in items) else []

    gpus = set()
    for pod in wait_for("the demo pods to run", demo_running):
        name = pod["metadata"]["name"]
        log = wait_for(f"{name}'s log", lambda n=name: cluster.kubectl(
            "logs", "-n", demo_ns, n).stdout)
        found = re.findall(r'declare -x GPU_DEVICE_\d+="(gpu-\d+)"', log)
        assert len(found) == 1, log
        assert "# CDI device" not in log  # bash's own `export`, not the fake runtime's
        gpus.add((pod["spec"]["nodeName"], found[0]))
    assert len(gpus) == 2  # each pod got a GPU of its own
    cluster.kubectl("delete", "-f", str(demo), "--wait=true", timeout=120)


def test_helm_install_upgrade_and_uninstall_of_the_unchanged_chart(
        cluster: RunningDraemu, chart: Path) -> None:
    started = time.monotonic()
    helm(cluster, "install", RELEASE, str(chart), "--namespace", NAMESPACE,
         "--create-namespace", "--wait", "--timeout", "3m")

    def published() -> list[dict[str, Any]]:
        slices = driver_slices(cluster)
        return slices if sorted(s["spec"]["nodeName"] for s in slices) == list(NODES) else []

    slices = wait_for("one ResourceSlice per node", published)
    print(f"helm install -> slices published: {time.monotonic() - started:.1f}s")
    assert all(len(s["spec"]["devices"]) == 8 for s in slices)
    pods = plugin_pods(cluster)
    assert sorted(p["spec"]["nodeName"] for p in pods) == list(NODES)
    assert all(pod_ready(p) for p in pods)
    for pod in pods:  # the plugin's only credentials are its ServiceAccount's token
        assert pod["spec"]["serviceAccountName"] == f"{RELEASE}-service-account"
        env = {e["name"] for e in pod["spec"]["containers"][0].get("env") or []}
        assert "KUBECONFIG" not in env

    # The plugin wrote its CDI specs to /var/run/cdi, which is its node's CDI folder.
    data = cluster.kubeconfig.parent / "data" / "nodes"
    for node in NODES:
        assert list((data / node / "cdi").glob("k8s.gpu.example.com-*")), node

    run_the_demo(cluster)

    old = {p["metadata"]["uid"] for p in pods}
    started = time.monotonic()
    helm(cluster, "upgrade", RELEASE, str(chart), "--namespace", NAMESPACE,
         "--set", "kubeletPlugin.numDevices=4", "--wait", "--timeout", "3m")

    def rolled() -> list[dict[str, Any]]:
        now = plugin_pods(cluster)
        fresh = [p for p in now if p["metadata"]["uid"] not in old and pod_ready(p)]
        slices = driver_slices(cluster)
        done = len(fresh) == len(now) == len(NODES) and len(slices) == len(NODES) and \
            all(len(s["spec"]["devices"]) == 4 for s in slices)
        return fresh if done else []

    wait_for("the DaemonSet to roll to 4 devices per node", rolled, timeout=180)
    print(f"helm upgrade -> new slices published: {time.monotonic() - started:.1f}s")

    # A driver that crashes (here: a value it cannot parse) restarts with back-off, its
    # last log readable. (Whether the rolling update keeps the old pods depends on how long
    # the new one looked Ready before it crashed, on draemu as on a real cluster.)
    working = {p["metadata"]["uid"] for p in plugin_pods(cluster)}
    helm(cluster, "upgrade", RELEASE, str(chart), "--namespace", NAMESPACE,
         "--set", "kubeletPlugin.numDevices=many")

    def crashing() -> dict[str, Any] | None:
        for pod in plugin_pods(cluster):
            for status in (pod.get("status") or {}).get("containerStatuses") or []:
                waiting = (status.get("state") or {}).get("waiting") or {}
                if status["restartCount"] >= 1 and waiting.get("reason") == "CrashLoopBackOff":
                    return pod
        return None

    broken = wait_for("the new plugin pod to crash-loop", crashing)
    assert broken["metadata"]["uid"] not in working
    last = cluster.kubectl("logs", "-n", NAMESPACE, broken["metadata"]["name"],
                           "--previous").stdout
    assert 'could not parse "many" as int value from environment variable "NUM_DEVICES"' \
        in last, last

    helm(cluster, "uninstall", RELEASE, "--namespace", NAMESPACE, "--wait")
    wait_for("the plugin pods to go", lambda: not plugin_pods(cluster) or None, timeout=120)
    wait_for("the slices to go", lambda: not driver_slices(cluster) or None, timeout=120)
    assert not get_json(cluster, "daemonsets", "-n", NAMESPACE)["items"]
