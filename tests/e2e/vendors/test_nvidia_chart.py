"""NVIDIA's DRA driver, unchanged, on its mock NVML: `helm install` of the driver's own
chart (kubernetes-sigs/dra-driver-nvidia-gpu `deployments/helm/dra-driver-nvidia-gpu`,
from ../shared/thirdparty/) into `draemu up --runtime process`, with the values NVIDIA's
mock-NVML CI passes (hack/ci/mock-nvml/e2e-test.sh: gpuResourcesEnabledOverride,
nvidiaDriverRoot=/var/lib/nvml-mock/driver, altProcDevices) and its node label. Each
node's /var/lib/nvml-mock is laid out as that CI lays out its kind host (the GB200
profile it uses; draemu/cmd/demo/nvidiamock.py), and its /sys is the GPUs' PCI sysfs as
the nvml-mock chart renders it; the chart's image is mapped to a folder with the image's
files (tests/e2e/vendors/build.sh).

The chart's init container finds nvidia-smi and the mock library in the driver root and
runs them; the gpus and compute-domains kubelet plugins register with each node's
kubelet and publish what the real driver computes from the mock (product name,
architecture, CUDA and driver versions, PCIe root and NUMA node, memory as a capacity,
IMEX channels); a claim
selecting a GB200 by those attributes is allocated and prepared, and its pod runs with the
CDI spec the driver wrote: its environment and the device nodes of the driver root;
`helm uninstall` takes the slices away."""

from __future__ import annotations

import base64
import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from vendorcharts import (
    SRC,
    build,
    cdi_specs,
    container_env,
    driver_slices,
    get_json,
    helm,
    node_host,
    pod_ready,
    pods_state,
    wait_for,
)

from draemu.cmd.demo.nvidiamock import ALT_PROC_DEVICES, DRIVER_ROOT, MockProfile, lay_out
from draemu.cmd.testing.process import RunningDraemu, draemu_up

IMAGE = "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu"
NAMESPACE = "dra-driver-nvidia-gpu"
RELEASE = "dra-driver-nvidia-gpu"
NODES = ("node-1", "node-2")
GPUS = 4
# What NVIDIA's mock-NVML CI passes (iupgrade_wait in tests/bats/helpers.sh, with
# TEST_NVIDIA_DRIVER_ROOT and TEST_ALT_PROC_DEVICES from hack/ci/mock-nvml/e2e-test.sh).
VALUES = ["--set", "gpuResourcesEnabledOverride=true",
          "--set", f"nvidiaDriverRoot={DRIVER_ROOT}",
          "--set", f"altProcDevices={ALT_PROC_DEVICES}"]

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(3600),
              pytest.mark.skipif(os.geteuid() != 0, reason="the process runtime needs root"),
              pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")]


def chart() -> Path:
    return SRC / "kubernetes-sigs__dra-driver-nvidia-gpu" / "deployments" / "helm" / \
        "dra-driver-nvidia-gpu"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningDraemu]:
    vendors = build("nvidia")
    with draemu_up(tmp_path_factory.mktemp("nvidia"), "--preset", "empty", "--nodes",
                   str(len(NODES)), "--runtime", "process",
                   "--image-map", f"{IMAGE}={vendors / 'nvidia' / 'image'}",
                   "--image-map", "ubuntu:24.04=/") as running:
        for node in NODES:  # what setup-mock-gpu.sh does on NVIDIA's CI host
            lay_out(node_host(running, node), MockProfile("gb200", GPUS))
        running.kubectl("label", "nodes", "--all", "nvidia.com/gpu.present=true")
        yield running


def plugin_pods(cluster: RunningDraemu) -> list[dict[str, Any]]:
    return get_json(cluster, "pods", "-n", NAMESPACE, "-l",
                    "dra-driver-nvidia-gpu-component=kubelet-plugin")["items"]


def claim_and_pod(product: str) -> str:
    return f"""
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: big-gpu
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.nvidia.com
          selectors:
          - cel:
              expression: >-
                device.attributes["gpu.nvidia.com"].productName == "{product}" &&
                device.attributes["gpu.nvidia.com"].architecture == "Blackwell" &&
                device.attributes["gpu.nvidia.com"].cudaComputeCapability
                  .isGreaterThan(semver("9.0.0")) &&
                device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("100Gi")) >= 0
---
apiVersion: v1
kind: Pod
metadata:
  name: trainer
spec:
  containers:
  - name: ctr
    image: ubuntu:24.04
    command: ["bash", "-c", "env; ls /dev/; trap 'exit 0' TERM; sleep 9999 & wait"]
    resources:
      claims:
      - name: gpu
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: big-gpu
"""


def check_published(cluster: RunningDraemu) -> list[dict[str, Any]]:
    def published() -> list[dict[str, Any]]:
        slices = driver_slices(cluster, "gpu.nvidia.com")
        nodes = sorted(s["spec"]["nodeName"] for s in slices)
        return slices if nodes == list(NODES) else []

    slices = wait_for("a gpu.nvidia.com ResourceSlice per node", published, timeout=300,
                      explain=lambda: pods_state(cluster, NAMESPACE))
    for item in slices:
        devices = item["spec"]["devices"]
        assert sorted(d["name"] for d in devices) == [f"gpu-{i}" for i in range(GPUS)]
        for device in devices:  # what the driver computed from the mock's GB200 profile
            attrs = device["attributes"]
            assert attrs["productName"] == {"string": "NVIDIA GB200"}
            assert attrs["architecture"] == {"string": "Blackwell"}
            assert attrs["type"] == {"string": "gpu"}
            assert attrs["driverVersion"] == {"version": "570.170.1"}
            assert attrs["cudaComputeCapability"] == {"version": "10.0.0"}
            assert attrs["uuid"]["string"].startswith("GPU-")
            assert re.fullmatch(r"[0-9a-f]{4}:[0-9a-f]{2}:00\.0",
                                attrs["resource.kubernetes.io/pciBusID"]["string"])
            assert device["capacity"] == {"memory": {"value": "192Gi"}}
            # From the node's PCI sysfs the mock's renderer laid out (the GB200 profile's
            # pcie_topology: GPUs 0-1 on pci0000:00, NUMA 0; 2-3 on pci0000:40, NUMA 1).
            root = attrs["resource.kubernetes.io/pcieRoot"]["string"]
            numa = attrs["resource.kubernetes.io/numaNode"]["int"]
            assert (root, numa) in {("pci0000:00", 0), ("pci0000:40", 1)}, attrs
    return slices


def check_the_claim_pod(cluster: RunningDraemu) -> float:
    """A pod whose claim selects a GB200 by the driver's attributes runs with what the
    driver's CDI spec for the claim gives it; returns the seconds to Running."""
    started = time.monotonic()
    cluster.kubectl("apply", "-f", "-", input=claim_and_pod("NVIDIA GB200"))

    def running() -> dict[str, Any] | None:
        pod = get_json(cluster, "pod", "trainer")
        return pod if pod_ready(pod) else None

    pod = wait_for("the claim's pod to run", running, timeout=120,
                   explain=lambda: cluster.kubectl("describe", "pod", "trainer").stdout)
    seconds = time.monotonic() - started
    node = pod["spec"]["nodeName"]
    claim_name = pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    claim = get_json(cluster, "resourceclaim", claim_name)
    [result] = claim["status"]["allocation"]["devices"]["results"]
    assert result["driver"] == "gpu.nvidia.com" and result["pool"] == node
    log = wait_for("the pod's log", lambda: cluster.kubectl("logs", "trainer").stdout)
    env = container_env(log)
    [spec] = cdi_specs(cluster, node, f"k8s.gpu.nvidia.com-claim_{claim['metadata']['uid']}")
    # The claim's CDI spec as the driver wrote it: its environment and its device nodes
    # (the driver root's, at /dev in the container).
    for pair in spec["containerEdits"]["env"]:
        name, _, value = pair.partition("=")
        assert env.get(name) == value, (pair, log)
    index = result["device"].removeprefix("gpu-")
    [device] = spec["devices"]
    nodes = [*spec["containerEdits"]["deviceNodes"], *device["containerEdits"]["deviceNodes"]]
    assert {n["hostPath"] for n in nodes} >= {f"{DRIVER_ROOT}/dev/nvidia{index}",
                                              f"{DRIVER_ROOT}/dev/nvidiactl"}
    listed = set(log.split())
    assert {n["path"].removeprefix("/dev/") for n in nodes} <= listed, log
    cluster.kubectl("delete", "pod", "trainer", "--wait=true", timeout=120)
    cluster.kubectl("delete", "resourceclaimtemplate", "big-gpu")
    return seconds


def test_nvidias_chart_on_the_mock_nvml_publishes_prepares_and_uninstalls(
        cluster: RunningDraemu) -> None:
    started = time.monotonic()
    helm(cluster, "install", RELEASE, str(chart()), "--namespace", NAMESPACE,
         "--create-namespace", *VALUES, "--wait", "--timeout", "5m")
    check_published(cluster)
    published = time.monotonic() - started
    # The compute-domains plugin publishes the node's IMEX channel (GB200's driver 570
    # passes its IMEXDaemonsWithDNSNames check; altProcDevices names the channels' major).
    channels = wait_for("compute-domain.nvidia.com slices", lambda: driver_slices(
        cluster, "compute-domain.nvidia.com") if len(driver_slices(
            cluster, "compute-domain.nvidia.com")) == len(NODES) else None)
    assert all({"name": "channel-0", "attributes": {"id": {"int": 0},
                                                    "type": {"string": "channel"}}}
               in s["spec"]["devices"] for s in channels)
    pods = plugin_pods(cluster)
    assert sorted(p["spec"]["nodeName"] for p in pods) == list(NODES)
    assert all(pod_ready(p) for p in pods)
    init_log = cluster.kubectl("logs", "-n", NAMESPACE, pods[0]["metadata"]["name"],
                               "-c", "init-container").stdout
    assert "nvidia-smi returned with code 0: success, leave" in init_log, init_log
    assert "DRIVER version      : 570.170.01" in init_log

    to_running = check_the_claim_pod(cluster)
    print(f"helm install -> slices published: {published:.1f}s; claim pod applied -> "
          f"Running: {to_running:.1f}s")

    helm(cluster, "uninstall", RELEASE, "--namespace", NAMESPACE, "--wait")
    wait_for("the plugin pods to go", lambda: not plugin_pods(cluster) or None)
    wait_for("the slices to go", lambda: not (
        driver_slices(cluster, "gpu.nvidia.com")
        or driver_slices(cluster, "compute-domain.nvidia.com")) or None)


def bad_and_good_claims() -> str:
    return """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: {name}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.nvidia.com
    config:
    - requests: [gpu]
      opaque:
        driver: gpu.nvidia.com
        parameters:
          apiVersion: resource.nvidia.com/v1beta1
          kind: GpuConfig
          sharing: {sharing}
"""


def test_the_charts_admission_webhook_and_metrics_serve_on_the_pod_network(
        cluster: RunningDraemu) -> None:
    """The chart's validating webhook (a Deployment behind a Service, its TLS from a
    Secret as `webhook.tls.mode=secret` takes it) judges GPU claims' opaque configuration
    through the apiserver; the kubelet plugins' and the controller's metrics answer on
    their pods' addresses."""
    from draemu.pki import make_ca, make_serving_cert

    service = f"{RELEASE}-webhook"
    ca = make_ca("nvidia-webhook-ca")
    cert = make_serving_cert(ca, "127.0.0.1", [service, f"{service}.{NAMESPACE}",
                                               f"{service}.{NAMESPACE}.svc"])
    cluster.kubectl("create", "namespace", NAMESPACE, check=False)  # kept by uninstall
    folder = cluster.kubeconfig.parent
    (folder / "tls.crt").write_bytes(cert.cert_pem)
    (folder / "tls.key").write_bytes(cert.key_pem)
    cluster.kubectl("create", "secret", "tls", "webhook-tls", "-n", NAMESPACE,
                    f"--cert={folder / 'tls.crt'}", f"--key={folder / 'tls.key'}")
    helm(cluster, "install", RELEASE, str(chart()), "--namespace", NAMESPACE, *VALUES,
         "--set", "webhook.enabled=true", "--set", "webhook.tls.mode=secret",
         "--set", "webhook.tls.secret.name=webhook-tls",
         "--set", f"webhook.tls.secret.caBundle={base64.b64encode(ca.cert_pem).decode()}",
         "--wait", "--timeout", "5m")
    try:
        refused = cluster.kubectl("apply", "-f", "-", check=False, input=bad_and_good_claims(
            ).format(name="bogus-sharing", sharing="{strategy: Bogus}"))
        assert refused.returncode == 1, refused.stdout
        assert 'admission webhook "gpu.nvidia.com" denied the request' in refused.stderr, \
            refused.stderr
        assert "spec.devices.config[0].opaque.parameters" in refused.stderr, refused.stderr
        accepted = cluster.kubectl("apply", "-f", "-", input=bad_and_good_claims().format(
            name="no-sharing", sharing="null"))
        assert accepted.stdout.strip() == "resourceclaim.resource.k8s.io/no-sharing created"
        cluster.kubectl("delete", "resourceclaim", "no-sharing")
        for pod in plugin_pods(cluster):
            metrics = cluster.kubectl("get", "--raw", f"/api/v1/namespaces/{NAMESPACE}/pods/"
                                      f"{pod['metadata']['name']}:8080/proxy/metrics").stdout
            assert "# TYPE" in metrics, metrics[:500]
    finally:
        helm(cluster, "uninstall", RELEASE, "--namespace", NAMESPACE, "--wait")
