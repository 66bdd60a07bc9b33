"""`draemu demo seed-nvidia`: the DRA introduction's three scenarios served by NVIDIA's
real DRA driver on its mock NVML.

The cluster is the seed-nvidia preset (drivers/presets/seed-nvidia.yaml) on the process
runtime: each node's `nvidiaMock` is laid out as NVIDIA's mock-NVML CI lays out its host
(nvidiamock.py), then the driver's own Helm chart is installed unchanged, with the values
that CI passes plus ConsumableShares for scenario 2b and without ComputeDomains (the
A100, H100 and T4 have no IMEX). The scenarios are examples/seed_nvidia: the seed's,
rewritten for the attributes and capacities the driver publishes.

What it needs, besides root: tests/e2e/vendors/build.sh nvidia (the driver's image as a
folder, the mock and the chart's source, in ~/.cache/draemu/vendors) and helm
(tests/e2e/helm/build.sh, or on PATH).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from draemu.client import Client
from draemu.cmd.demo import nvidiamock
from draemu.cmd.demo.seed import Demo, DemoError

DRIVER_IMAGE = "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu"
WORKLOAD_IMAGE = "ubuntu:24.04"
NAMESPACE = "dra-driver-nvidia-gpu"
RELEASE = "dra-driver-nvidia-gpu"
DRIVER = "gpu.nvidia.com"
CHART = "src/kubernetes-sigs__dra-driver-nvidia-gpu/deployments/helm/dra-driver-nvidia-gpu"
# NVIDIA's mock-NVML CI's values (tests/bats/helpers.sh iupgrade_wait), ConsumableShares
# in memory mode (scenario 2b's consumable capacity), no ComputeDomains.
VALUES = ("--set", "gpuResourcesEnabledOverride=true",
          "--set", f"nvidiaDriverRoot={nvidiamock.DRIVER_ROOT}",
          "--set", "resources.computeDomains.enabled=false",
          "--set", "featureGates.ConsumableShares=true",
          "--set", "consumableShares=memory")


def manifests() -> Path:
    return Path(str(resources.files("draemu.examples.seed_nvidia")))


def preset_file() -> Path:
    return Path(str(resources.files("draemu.drivers.presets"))) / "seed-nvidia.yaml"


@dataclass(frozen=True)
class VendorFiles:
    vendors: Path
    helm: str
    chart: Path
    image: Path


def vendor_files() -> VendorFiles:
    """What tests/e2e/vendors/build.sh nvidia and helm's build left, or why not."""
    vendors = Path(os.environ.get("DRAEMU_VENDORS_CACHE")
                   or Path.home() / ".cache" / "draemu" / "vendors")
    try:
        nvidiamock.mock_files(vendors)
    except nvidiamock.MockError as err:
        raise DemoError(str(err)) from None
    go_cache = Path(os.environ.get("DRAEMU_GO_CACHE") or Path.home() / ".cache/draemu/go")
    helm = shutil.which("helm") or str(go_cache / "bin" / "helm")
    if not Path(helm).exists():
        raise DemoError("helm not found (on PATH or in $DRAEMU_GO_CACHE/bin): build it with "
                        "tests/e2e/helm/build.sh")
    files = VendorFiles(vendors, helm, vendors / CHART, vendors / "nvidia" / "image")
    for path in (files.chart, files.image):
        if not path.exists():
            raise DemoError(f"{path} is missing: build it with tests/e2e/vendors/build.sh "
                            "nvidia")
    return files


def image_map_entries(files: VendorFiles) -> dict[str, Path]:
    """The chart's image is the driver's image folder; the workloads' image is this
    machine's file system (read as an unprivileged user, as the README's chart demo)."""
    return {DRIVER_IMAGE: files.image, WORKLOAD_IMAGE: Path("/")}


async def install_driver(demo: Demo, files: VendorFiles, data_dir: Path,
                         timeout: float = 240) -> float:
    """Lay out the nodes' mocks, `helm install` the chart, wait until every node with a
    mock publishes its GPUs; the seconds from helm install to the last slice."""
    nodes = nvidiamock.lay_out_preset(preset_file(), data_dir, files.vendors / "nvidia" /
                                      "mock")
    demo.say(f"NVIDIA's mock NVML laid out on {', '.join(sorted(nodes))} "
             f"(/var/lib/nvml-mock and /sys of each node)")
    args = ["install", RELEASE, str(files.chart), "--namespace", NAMESPACE,
            "--create-namespace", *VALUES, "--wait", "--timeout", "4m"]
    loop = asyncio.get_running_loop()
    started = loop.time()
    demo.out(f"\n$ helm {' '.join(shlex.quote(a) for a in args)}")
    proc = await asyncio.create_subprocess_exec(
        files.helm, *args, env={**demo.env, "HELM_CACHE_HOME": str(data_dir / "helm")},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    demo.out(out.decode().rstrip())
    if proc.returncode != 0:
        raise DemoError("helm install of NVIDIA's chart failed")
    async with Client.from_kubeconfig(demo.kubeconfig, user_agent="draemu-demo") as client:
        while True:
            slices = (await client.list("resource.k8s.io/v1", "resourceslices")
                      ).get("items") or []
            published = {s["spec"].get("nodeName") for s in slices
                         if s["spec"].get("driver") == DRIVER and s["spec"].get("devices")}
            if set(nodes) <= published:
                return loop.time() - started
            if loop.time() - started > timeout:
                raise DemoError(f"NVIDIA's driver published GPUs on {sorted(published)} "
                                f"only after {timeout:.0f} s (kubectl get pods -n "
                                f"{NAMESPACE} says why)")
            await asyncio.sleep(0.5)


async def driver_installed(kubeconfig: Path) -> bool:
    """Whether NVIDIA's driver (not draemu's example driver) publishes the seed nodes'
    GPUs: its devices carry `productName`."""
    async with Client.from_kubeconfig(kubeconfig, user_agent="draemu-demo") as client:
        slices = (await client.list("resource.k8s.io/v1", "resourceslices")
                  ).get("items") or []
    return any(s["spec"].get("driver") == DRIVER and any(
        f"{DRIVER}/productName" in (d.get("attributes") or {}) or "productName" in
        (d.get("attributes") or {}) for d in s["spec"].get("devices") or [])
        for s in slices)
