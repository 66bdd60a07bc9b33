"""The DRA introduction served by NVIDIA's real driver: `draemu up --preset seed-nvidia
--runtime process`, each node's mock NVML laid out from the preset (A100 80GB/40GB, H100
80GB, T4 16GB), NVIDIA's chart installed unchanged (draemu/cmd/demo/seed_nvidia.py's
values), then the introduction's scenarios as examples/seed_nvidia writes them for what
the driver publishes, applied with kubectl and checked exactly; `draemu why` and the web
view explain them with the driver's attributes and capacities; and `draemu demo
seed-nvidia` runs them all in a cluster of its own."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from vendorcharts import (
    HELM,
    REPO,
    build,
    driver_slices,
    get_json,
    helm,
    pods_state,
    wait_for,
)

from draemu.cmd.demo import seed_nvidia
from draemu.cmd.demo.nvidiamock import lay_out_preset
from draemu.cmd.testing.process import RunningDraemu, draemu_up

EXAMPLES = REPO / "examples" / "seed_nvidia"
NODES = ("gpu-node-01", "gpu-node-02", "gpu-node-03")
NUMA = "resource.kubernetes.io/numaNode"

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(3600),
              pytest.mark.skipif(os.geteuid() != 0, reason="the process runtime needs root"),
              pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")]


def _web_view(up: RunningDraemu) -> tuple[str, str]:
    """The web view's base URL and token, from the banner draemu up prints."""
    deadline = time.monotonic() + 30
    assert up.process.stdout is not None
    while time.monotonic() < deadline:
        match = re.match(r"\s+web view:\s+(http://\S+)/\?token=(\S+)",
                         up.process.stdout.readline())
        if match:
            return match.group(1), match.group(2)
    raise AssertionError("draemu up printed no web view address")


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningDraemu, tuple]]:
    vendors = build("nvidia")
    files = seed_nvidia.VendorFiles(vendors, str(HELM), vendors / seed_nvidia.CHART,
                                    vendors / "nvidia" / "image")
    maps = [a for image, path in seed_nvidia.image_map_entries(files).items()
            for a in ("--image-map", f"{image}={path}")]
    with draemu_up(tmp_path_factory.mktemp("seed-nvidia"), "--preset", "seed-nvidia",
                   "--runtime", "process", *maps) as up:
        web = _web_view(up)
        lay_out_preset(seed_nvidia.preset_file(), up.kubeconfig.parent / "data")
        started = time.monotonic()
        helm(up, "install", seed_nvidia.RELEASE, str(files.chart), "--namespace",
             seed_nvidia.NAMESPACE, "--create-namespace", *seed_nvidia.VALUES, "--wait",
             "--timeout", "5m")
        wait_for("every node's GPUs", lambda: {s["spec"]["nodeName"] for s in driver_slices(
            up, "gpu.nvidia.com")} == set(NODES), timeout=300,
            explain=lambda: pods_state(up, seed_nvidia.NAMESPACE))
        print(f"seed-nvidia: helm install -> slices published: "
              f"{time.monotonic() - started:.1f}s")
        yield up, web


def gpus(up: RunningDraemu) -> dict[tuple[str, str], dict[str, Any]]:
    """(node, device) -> the device as NVIDIA's driver published it."""
    return {(s["spec"]["nodeName"], d["name"]): d for s in driver_slices(up, "gpu.nvidia.com")
            for d in s["spec"]["devices"]}


def numa_of(up: RunningDraemu, driver: str, node: str, device: str) -> int:
    [dev] = [d for s in driver_slices(up, driver) if s["spec"]["nodeName"] == node
             for d in s["spec"]["devices"] if d["name"] == device]
    return int(dev["attributes"][NUMA]["int"])


def apply_and_wait(up: RunningDraemu, name: str, *pods: str) -> None:
    up.kubectl("apply", "-f", str(EXAMPLES / name))
    if pods == ("-l", "job-name=llm-training-80gb"):
        wait_for("the Job's pod", lambda: up.kubectl("get", "pods", *pods, "-o", "name"
                                                     ).stdout.strip())
    up.kubectl("wait", "--for=condition=Ready", *pods, "--timeout=120s", timeout=150)


def results(up: RunningDraemu, claim: str) -> list[dict[str, Any]]:
    return get_json(up, "resourceclaim", claim)["status"]["allocation"]["devices"]["results"]


def why(up: RunningDraemu, pod: str) -> str:
    return subprocess.run([sys.executable, "-m", "draemu", "why", f"pod/{pod}",
                           "--kubeconfig", str(up.kubeconfig)], capture_output=True,
                          text=True, timeout=120, check=True).stdout


def web_explanation(web: tuple[str, str], pod: str) -> str:
    base, token = web
    request = urllib.request.Request(f"{base}/explain?namespace=default&name={pod}",
                                     headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=120) as answer:
        return answer.read().decode()


def test_the_nodes_publish_the_introductions_gpus_as_nvidias_driver_computes_them(seed):
    up, _ = seed
    found = {key: (d["attributes"]["productName"]["string"], d["capacity"]["memory"]["value"],
                   d["attributes"][NUMA]["int"],
                   d["attributes"]["cudaDriverVersion"]["version"])
             for key, d in gpus(up).items()}
    assert found == {
        ("gpu-node-01", "gpu-0"): ("NVIDIA A100-SXM4-80GB", "80Gi", 0, "11.8.0"),
        ("gpu-node-01", "gpu-1"): ("NVIDIA A100-SXM4-80GB", "80Gi", 1, "11.8.0"),
        ("gpu-node-01", "gpu-2"): ("NVIDIA A100-SXM4-40GB", "40Gi", 0, "11.8.0"),
        ("gpu-node-01", "gpu-3"): ("NVIDIA A100-SXM4-40GB", "40Gi", 1, "11.8.0"),
        ("gpu-node-02", "gpu-0"): ("NVIDIA H100 80GB HBM3", "80Gi", 0, "12.0.0"),
        ("gpu-node-02", "gpu-1"): ("NVIDIA H100 80GB HBM3", "80Gi", 0, "12.0.0"),
        ("gpu-node-02", "gpu-2"): ("NVIDIA H100 80GB HBM3", "80Gi", 1, "12.0.0"),
        ("gpu-node-03", "gpu-0"): ("NVIDIA T4", "16Gi", 0, "11.4.0"),
        ("gpu-node-03", "gpu-1"): ("NVIDIA T4", "16Gi", 0, "11.4.0"),
        ("gpu-node-03", "gpu-2"): ("NVIDIA T4", "16Gi", 1, "11.4.0"),
        ("gpu-node-03", "gpu-3"): ("NVIDIA T4", "16Gi", 1, "11.4.0")}
    # ConsumableShares in memory mode: every GPU is shareable by memory.
    assert all(d["allowMultipleAllocations"] for d in gpus(up).values())


def test_scenario_1_training_gets_an_80gb_gpu_and_why_says_why_not_the_others(seed):
    up, web = seed
    apply_and_wait(up, "1-large-model-training.yaml", "pod", "-l", "job-name=llm-training-80gb")
    try:
        [res] = results(up, "large-model-gpu-claim")
        product = gpus(up)[(res["pool"], res["device"])]["attributes"]["productName"]
        assert (res["pool"], product["string"]) in {
            ("gpu-node-01", "NVIDIA A100-SXM4-80GB"), ("gpu-node-02", "NVIDIA H100 80GB HBM3")}
        pod = get_json(up, "pods", "-l", "job-name=llm-training-80gb")["items"][0]
        assert pod["spec"]["nodeName"] == res["pool"]
        log = up.kubectl("logs", "job/llm-training-80gb").stdout
        assert f"/dev/nvidia{res['device'].removeprefix('gpu-')}" in log.split()
        assert "NVIDIA_VISIBLE_DEVICES=void" in log.split()
        text = why(up, pod["metadata"]["name"])
        assert "(NVIDIA T4) — memory 16Gi, too small (needs >= 80Gi)" in text, text
        assert "(NVIDIA A100-SXM4-40GB) — memory 40Gi, too small (needs >= 80Gi)" in text
        page = web_explanation(web, pod["metadata"]["name"])
        assert "NVIDIA T4" in page and "memory 16Gi, too small (needs &gt;= 80Gi)" in page
    finally:
        up.kubectl("delete", "-f", str(EXAMPLES / "1-large-model-training.yaml"),
                   "--wait=true", timeout=150)


def test_scenario_2a_two_pods_share_one_a100_80gb_through_one_claim(seed):
    up, _ = seed
    apply_and_wait(up, "2a-shared-gpu-claim.yaml", "pod/inference-pod-a", "pod/inference-pod-b")
    try:
        claim = get_json(up, "resourceclaim", "shared-gpu-claim")
        [res] = claim["status"]["allocation"]["devices"]["results"]
        assert res["pool"] == "gpu-node-01" and res["device"] in ("gpu-0", "gpu-1")
        assert sorted(r["name"] for r in claim["status"]["reservedFor"]) == [
            "inference-pod-a", "inference-pod-b"]
        text = why(up, "inference-pod-a")
        assert 'productName "NVIDIA T4", not "NVIDIA A100-SXM4-80GB"' in text
    finally:
        up.kubectl("delete", "-f", str(EXAMPLES / "2a-shared-gpu-claim.yaml"), "--wait=true",
                   timeout=150)


def test_scenario_2b_two_claims_consume_10gi_each_of_one_gpu(seed):
    up, _ = seed
    apply_and_wait(up, "2b-consumable-capacity.yaml", "pod/inference-share-a",
                   "pod/inference-share-b")
    try:
        claims = [c for c in get_json(up, "resourceclaims")["items"]
                  if c["metadata"]["name"].startswith("inference-share-")]
        got = [c["status"]["allocation"]["devices"]["results"][0] for c in claims]
        assert len({(r["pool"], r["device"]) for r in got}) == 1
        assert got[0]["pool"] == "gpu-node-01"
        assert len({r["shareID"] for r in got}) == 2
        assert all(r["consumedCapacity"] == {"memory": "10Gi"} for r in got)
    finally:
        up.kubectl("delete", "-f", str(EXAMPLES / "2b-consumable-capacity.yaml"),
                   "--wait=true", timeout=150)


def test_scenario_3_nvidias_gpu_and_a_400g_nic_on_one_numa_node(seed):
    up, _ = seed
    apply_and_wait(up, "3-gpu-plus-nic.yaml", "pod/distributed-training-pod")
    try:
        by_request = {r["request"]: r for r in results(up, "gpu-plus-nic-claim")}
        gpu, nic = by_request["training-gpu"], by_request["fast-nic"]
        assert gpu["pool"] == nic["pool"]
        assert numa_of(up, "gpu.nvidia.com", gpu["pool"], gpu["device"]) == \
            numa_of(up, "nic.mellanox.com", nic["pool"], nic["device"]) == 1
        log = up.kubectl("logs", "distributed-training-pod").stdout
        assert "NIC_DEVICE_0_SPEED=400" in log.split()
    finally:
        up.kubectl("delete", "-f", str(EXAMPLES / "3-gpu-plus-nic.yaml"), "--wait=true",
                   timeout=150)


def test_draemu_demo_seed_nvidia_runs_every_scenario() -> None:
    result = subprocess.run([sys.executable, "-m", "draemu", "demo", "seed-nvidia"],
                            capture_output=True, text=True, timeout=900, check=False,
                            env={**os.environ, "DRAEMU_GO_CACHE": str(HELM.parents[1])})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    assert "helm install -> every node's GPUs published" in out
    for title in ("Scenario 1:", "Scenario 2a:", "Scenario 2b:", "Scenario 3:",
                  "Done: every object the demo created has been deleted."):
        assert title in out, out[-3000:]
