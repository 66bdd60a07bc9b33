"""Intel's GPU DRA driver, unchanged, on its device faker: `helm install` of the driver's
own chart (intel/intel-resource-drivers-for-kubernetes `charts/intel-gpu-resource-driver`,
from ../shared/thirdparty/) into `draemu up --runtime process`, the chart's image mapped
to a folder with the plugin (tests/e2e/vendors/build.sh intel).

Each node gets the fake sysfs and devfs Intel's `device-faker` makes from its image's GPU
template (`device-faker gpu -t ... -r`: a PCI sysfs of an i915 and an xe GPU, and their
DRM device nodes as null devices), laid out as the node's own `/sys` and `/dev`: the
chart mounts the node's /sys (hostPath) where the plugin reads it (SYSFS_ROOT), and the
devices its CDI specs name are the node's. The plugin registers with each node's
kubelet and publishes what it discovers there; a claim selecting a GPU by the driver's
attributes runs its pod with the DRM devices of the CDI spec the driver wrote; `helm
uninstall` takes the slices away. Health monitoring (`-m`) needs Intel's xpumd, which
the faker does not provide: the chart's value turns it off."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from vendorcharts import (
    SRC,
    build,
    cdi_specs,
    driver_slices,
    get_json,
    helm,
    node_host,
    pod_ready,
    pods_state,
    wait_for,
)

from draemu.cmd.testing.process import RunningDraemu, draemu_up

IMAGE = "ghcr.io/intel/intel-resource-drivers-for-kubernetes/intel-gpu-resource-driver"
NAMESPACE = "intel-gpu-resource-driver"
RELEASE = "intel-gpu-resource-driver"
DRIVER = "gpu.intel.com"
NODES = ("node-1", "node-2")
VALUES = ["--set", "kubeletPlugin.healthMonitoring.enabled=false"]

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(3600),
              pytest.mark.skipif(os.geteuid() != 0, reason="the process runtime needs root"),
              pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")]


def chart(folder: Path) -> Path:
    """The chart as Intel's release packages it, less its two optional dependencies
    (node-feature-discovery and xpumd, both off by default: `nfd.enabled` and
    `xpumdEnabled`), which helm insists on finding in charts/ before it evaluates their
    conditions and which cannot be fetched offline: a copy of the chart folder with
    empty stand-ins of the pinned names and versions there. Being disabled, neither the
    real ones nor the stand-ins render anything; the chart's own files are unchanged."""
    source = SRC / "intel__intel-resource-drivers-for-kubernetes" / "charts" / \
        "intel-gpu-resource-driver"
    copy = folder / "intel-gpu-resource-driver"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(source, copy)
    for dep in yaml.safe_load((source / "Chart.yaml").read_text())["dependencies"]:
        stand_in = copy / "charts" / dep["name"]
        stand_in.mkdir(parents=True)
        (stand_in / "Chart.yaml").write_text(yaml.safe_dump(
            {"apiVersion": "v2", "name": dep["name"], "version": dep["version"],
             "description": "stand-in: the real chart is not fetched offline"}))
    return copy


def fake_devices(vendors: Path, host: Path) -> None:
    """device-faker's fake sysfs and devfs as the node's own /sys and /dev. The faker
    writes under /tmp only, and links class/drm/* by absolute path to where it wrote:
    those links are pointed at the node's /sys, where the tree now is."""
    faker = vendors / "intel" / "bin" / "device-faker"
    template = vendors / "intel" / "image-faker" / "opt" / "templates" / "gpu-template.json"
    with tempfile.TemporaryDirectory(dir="/tmp") as scratch:
        target = Path(scratch) / "fake-root"
        subprocess.run([str(faker), "gpu", "-t", str(template), "-d", str(target), "-r"],
                       check=True, capture_output=True, timeout=60)
        for name, where in (("sysfs", "sys"), ("dev", "dev")):
            dest = host / where
            shutil.rmtree(dest, ignore_errors=True)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(target / name), dest)
        for link in (host / "sys").rglob("*"):
            if link.is_symlink() and os.readlink(link).startswith(f"{target}/sysfs/"):
                moved = "/sys/" + os.readlink(link).removeprefix(f"{target}/sysfs/")
                link.unlink()
                link.symlink_to(moved)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningDraemu]:
    vendors = build("intel")
    with draemu_up(tmp_path_factory.mktemp("intel"), "--preset", "empty", "--nodes",
                   str(len(NODES)), "--runtime", "process",
                   "--image-map", f"{IMAGE}={vendors / 'intel' / 'image-gpu'}",
                   "--image-map", "busybox=/") as running:
        for node in NODES:
            fake_devices(vendors, node_host(running, node))
        yield running


def plugin_pods(cluster: RunningDraemu) -> list[dict[str, Any]]:
    return get_json(cluster, "pods", "-n", NAMESPACE, "-l", "app=intel-gpu-resource-driver"
                    )["items"]


CLAIM_AND_POD = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: xe-gpu
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.intel.com
          selectors:
          - cel:
              expression: >-
                device.attributes["gpu.intel.com"].driver == "xe" &&
                device.attributes["gpu.intel.com"].model == "{model}"
---
apiVersion: v1
kind: Pod
metadata:
  name: render
spec:
  containers:
  - name: ctr
    image: busybox
    command: ["sh", "-c", "ls /dev/dri/; env; trap 'exit 0' TERM; sleep 9999 & wait"]
    resources:
      claims:
      - name: gpu
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: xe-gpu
"""


def test_intels_chart_on_the_device_faker_publishes_prepares_and_uninstalls(
        cluster: RunningDraemu) -> None:
    started = time.monotonic()
    helm(cluster, "install", RELEASE, str(chart(cluster.kubeconfig.parent)),
         "--namespace", NAMESPACE,
         "--create-namespace", *VALUES, "--wait", "--timeout", "5m")

    def published() -> list[dict[str, Any]]:
        slices = driver_slices(cluster, DRIVER)
        return slices if sorted(s["spec"]["nodeName"] for s in slices) == list(NODES) else []

    slices = wait_for("a gpu.intel.com ResourceSlice per node", published, timeout=300,
                      explain=lambda: pods_state(cluster, NAMESPACE))
    published_in = time.monotonic() - started
    for item in slices:  # what the plugin discovered in the node's fake sysfs
        devices = {d["name"]: d for d in item["spec"]["devices"]}
        assert sorted(devices) == ["0000-03-00-0-0x56c0", "0000-04-00-0-0xe20b"]
        xe = devices["0000-04-00-0-0xe20b"]["attributes"]
        assert xe["driver"] == {"string": "xe"} and xe["model"] == {"string": "B580"}
        assert xe["family"] == {"string": "Arc B-Series"}
        assert xe["resource.kubernetes.io/pcieRoot"] == {"string": "pci0000:02"}
        assert xe["resource.kubernetes.io/pciBusID"] == {"string": "0000:04:00.0"}
    assert all(pod_ready(p) for p in plugin_pods(cluster))

    to_running = check_the_claim_pod(cluster)
    print(f"helm install -> slices published: {published_in:.1f}s; claim pod applied -> "
          f"Running: {to_running:.1f}s")

    helm(cluster, "uninstall", RELEASE, "--namespace", NAMESPACE, "--wait")
    wait_for("the plugin pods to go", lambda: not plugin_pods(cluster) or None)
    wait_for("the slices to go", lambda: not driver_slices(cluster, DRIVER) or None)


def check_the_claim_pod(cluster: RunningDraemu) -> float:
    """A pod whose claim selects the B580 by the driver's attributes runs with the DRM
    devices of the CDI spec the driver wrote; returns the seconds to Running."""
    started = time.monotonic()
    cluster.kubectl("apply", "-f", "-", input=CLAIM_AND_POD.replace("{model}", "B580"))

    def running() -> dict[str, Any] | None:
        pod = get_json(cluster, "pod", "render")
        return pod if pod_ready(pod) else None

    pod = wait_for("the claim's pod to run", running, timeout=120,
                   explain=lambda: cluster.kubectl("describe", "pod", "render").stdout)
    seconds = time.monotonic() - started
    node = pod["spec"]["nodeName"]
    claim_name = pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    claim = get_json(cluster, "resourceclaim", claim_name)
    [result] = claim["status"]["allocation"]["devices"]["results"]
    assert (result["driver"], result["pool"], result["device"]) == (
        DRIVER, node, "0000-04-00-0-0xe20b")
    log = wait_for("the pod's log", lambda: cluster.kubectl("logs", "render").stdout)
    specs = [s for s in cdi_specs(cluster, node, "intel.com-gpu")
             if any(d["name"] == result["device"] for d in s.get("devices") or [])]
    assert specs, "no CDI spec of the driver names the device"
    [device] = [d for d in specs[0]["devices"] if d["name"] == result["device"]]
    paths = [n["path"] for n in device["containerEdits"]["deviceNodes"]]
    assert paths and all(p.startswith("/dev/dri/") for p in paths), paths
    listed = set(log.split())
    assert {p.removeprefix("/dev/dri/") for p in paths} <= listed, log
    cluster.kubectl("delete", "pod", "render", "--wait=true", timeout=120)
    cluster.kubectl("delete", "resourceclaimtemplate", "xe-gpu")
    return seconds
