"""NVIDIA's mock NVML laid out on an emulated node, as NVIDIA's mock-NVML CI lays it out
on its kind host (the driver's hack/ci/mock-nvml/setup-mock-gpu.sh, steps 2 to 7b):

    <node>/var/lib/nvml-mock/driver/            the driver root (nvidiaDriverRoot)
        usr/lib64/libnvidia-ml.so.<version>     the mock library, with its .so.1/.so links
        usr/bin/nvidia-smi                      NVIDIA's nvidia-smi (the chart's init
                                                container runs it against the mock)
        config/config.yaml                      the GPU profile the library reads
        dev/nvidia<i>, nvidiactl, nvidia-uvm*   character devices (195:i, 195:255, 510:*)
        proc/driver/nvidia/{version,params,capabilities/fabric-imex-mgmt}
    <node>/var/lib/nvml-mock/dev/               the same devices (the CI's DEV_ROOT)
    <node>/var/lib/nvml-mock/imex/proc-devices  /proc/devices with nvidia-caps-imex-channels
                                                (the chart's altProcDevices)
    <node>/sys/bus/pci/devices/<bus id> ...     the GPUs' PCI sysfs, rendered from the
                                                profile by the nvml-mock chart's renderer
                                                (its setup.sh step 10): the node's /sys,
                                                where the driver finds each GPU's PCIe root
                                                and NUMA node
    <node>/dev/nvidia<i>                        links to the mock's devices, and
    <node>/dev/nvidia-caps-imex-channels/       the IMEX channels (235:i), as the CI
                                                makes them in its kind node's /dev
                                                (e2e-test.sh, after the cluster is up)

The files come from tests/e2e/vendors/build.sh nvidia (its `nvidia/mock` folder: the
library, nvidia-smi, render-pci-sysfs and the mock's profiles). A node's profile is one
of the mock's (a100, h100, t4, l40s, b200, gb200, gb300) with a GPU count and, optionally,
per-GPU overrides in the profile's own schema (`devices[i]` fields: name, memory, pci, ...) and
system overrides (driver and CUDA versions): what the seed-nvidia preset's nodes use to
come as close to the DRA introduction's GPUs as the mock can describe.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

MOCK_ROOT = "/var/lib/nvml-mock"
DRIVER_ROOT = f"{MOCK_ROOT}/driver"
ALT_PROC_DEVICES = f"{MOCK_ROOT}/imex/proc-devices"
# The driver versions NVIDIA's CI gives each profile (common.sh): Blackwell at 570.x.
DRIVER_VERSIONS = {"b200": "570.170.01", "gb200": "570.170.01", "gb300": "570.170.01"}
DEFAULT_DRIVER_VERSION = "550.163.01"
NVIDIA_MAJOR, UVM_MAJOR, IMEX_MAJOR = 195, 510, 235
IMEX_CHANNELS = 2048  # getImexChannelCount() of the compute-domain kubelet plugin
MAX_GPUS = 8  # the mock's maximum


class MockError(RuntimeError):
    pass


@dataclass
class MockProfile:
    """What one node's mock reports: a profile of the mock, how many GPUs, and overrides."""

    profile: str
    count: int = 8
    system: dict[str, Any] = field(default_factory=dict)
    # index -> fields of the profile's `devices[index]` entry to set (merged into it)
    devices: dict[int, dict[str, Any]] = field(default_factory=dict)
    # The profile's `pcie_topology` replaced (root complexes, their NUMA nodes and GPUs).
    topology: dict[str, Any] | None = None

    @property
    def driver_version(self) -> str:
        version = self.system.get("driver_version")
        return str(version or DRIVER_VERSIONS.get(self.profile, DEFAULT_DRIVER_VERSION))


def mock_files(cache: Path | None = None) -> Path:
    """The folder build.sh fills with the mock's files (the library, nvidia-smi, profiles)."""
    base = cache or Path(os.environ.get("DRAEMU_VENDORS_CACHE")
                         or Path.home() / ".cache" / "draemu" / "vendors")
    folder = base / "nvidia" / "mock"
    missing = [n for n in ("libnvidia-ml.so", "nvidia-smi", "render-pci-sysfs", "profiles")
               if not (folder / n).exists()]
    if missing:
        raise MockError(f"{folder} lacks {', '.join(missing)}: build it with "
                        "tests/e2e/vendors/build.sh nvidia")
    return folder


def _merge(into: dict[str, Any], extra: dict[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def profile_config(files: Path, mock: MockProfile) -> dict[str, Any]:
    """The profile's YAML with the GPU count, versions and per-GPU overrides applied
    (setup-mock-gpu.sh step 4 sets num_devices and the versions the same way)."""
    source = files / "profiles" / f"mock-nvml-config-{mock.profile}.yaml"
    if not source.is_file():
        known = sorted(p.stem.removeprefix("mock-nvml-config-")
                       for p in (files / "profiles").glob("mock-nvml-config-*.yaml"))
        raise MockError(f"mock NVML has no profile {mock.profile!r} (it has: "
                        f"{', '.join(known)})")
    if not 1 <= mock.count <= MAX_GPUS:
        raise MockError(f"mock NVML emulates 1 to {MAX_GPUS} GPUs, not {mock.count}")
    config = yaml.safe_load(source.read_text())
    system = config.setdefault("system", {})
    system["num_devices"] = mock.count
    system["driver_version"] = mock.driver_version
    system["nvml_version"] = f"12.{mock.driver_version}"
    _merge(system, {k: v for k, v in mock.system.items() if k != "driver_version"})
    entries = {int(d["index"]): d for d in config.get("devices") or []}
    for index, overrides in mock.devices.items():
        if index >= mock.count:
            raise MockError(f"GPU {index} is overridden but the node has {mock.count}")
        entry = entries.setdefault(index, {"index": index})
        _merge(entry, overrides)
    config["devices"] = [entries[i] for i in sorted(entries)]
    if mock.topology is not None:
        config["pcie_topology"] = mock.topology
    return config


def preset_mocks(preset: Path) -> dict[str, MockProfile]:
    """The `nvidiaMock` of each node of a preset file (drivers/presets/seed-nvidia.yaml)."""
    data = yaml.safe_load(preset.read_text())
    out: dict[str, MockProfile] = {}
    for node in data.get("nodes") or []:
        spec = node.get("nvidiaMock")
        if not spec:
            continue
        try:
            out[node["name"]] = MockProfile(
                str(spec["profile"]), int(spec.get("count", 8)), dict(spec.get("system") or {}),
                {int(k): dict(v) for k, v in (spec.get("devices") or {}).items()},
                spec.get("topology"))
        except (KeyError, TypeError, ValueError) as err:
            raise MockError(f"{preset}: node {node.get('name')}: nvidiaMock: {err}") from None
    return out


def _device(path: Path, major: int, minor: int) -> None:
    if path.exists() or path.is_symlink():
        if stat.S_ISCHR(path.lstat().st_mode):
            return
        path.unlink()
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
    os.chmod(path, 0o666)  # the umask must not narrow it


def _devices(dev: Path, count: int) -> None:
    dev.mkdir(parents=True, exist_ok=True)
    for old in dev.glob("nvidia[0-9]*"):
        if int(old.name.removeprefix("nvidia")) >= count:
            old.unlink()  # a node laid out again with fewer GPUs
    for i in range(count):
        _device(dev / f"nvidia{i}", NVIDIA_MAJOR, i)
    _device(dev / "nvidiactl", NVIDIA_MAJOR, 255)
    _device(dev / "nvidia-uvm", UVM_MAJOR, 0)
    _device(dev / "nvidia-uvm-tools", UVM_MAJOR, 1)
    channels = dev / "nvidia-caps-imex-channels"
    channels.mkdir(exist_ok=True)
    for i in range(IMEX_CHANNELS):
        _device(channels / f"channel{i}", IMEX_MAJOR, i)


def _node_dev(dev: Path, count: int) -> None:
    """The node's own /dev as the CI's kind node has it: /dev/nvidia<i> links to the
    mock's devices (NVIDIA's tests count them) and the IMEX channel devices."""
    dev.mkdir(parents=True, exist_ok=True)
    for old in dev.glob("nvidia[0-9]*"):
        old.unlink()
    for i in range(count):
        (dev / f"nvidia{i}").symlink_to(f"{MOCK_ROOT}/dev/nvidia{i}")
    channels = dev / "nvidia-caps-imex-channels"
    channels.mkdir(exist_ok=True)
    for i in range(IMEX_CHANNELS):
        _device(channels / f"channel{i}", IMEX_MAJOR, i)


def _proc_devices() -> str:
    """This machine's /proc/devices with the IMEX channel entries the kernel module would
    add, before its block devices (setup-mock-gpu.sh step 7b)."""
    text = Path("/proc/devices").read_text()
    chars, _, blocks = text.partition("\nBlock devices:")
    return (chars.rstrip("\n") + f"\n{IMEX_MAJOR} nvidia-caps-imex-channels\n"
            f"236 nvidia-caps\n\nBlock devices:{blocks}")


def _proc_files(proc: Path, version: str) -> None:
    proc.mkdir(parents=True, exist_ok=True)
    (proc / "version").write_text(
        f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {version}  "
        "Thu Feb 20 23:41:34 UTC 2026\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n")
    (proc / "params").write_text(
        "EnableMSI: 1\nNVreg_RegistryDwords:\nNVreg_DeviceFileGID: 0\n"
        "NVreg_DeviceFileMode: 438\nNVreg_DeviceFileUID: 0\nNVreg_ModifyDeviceFiles: 1\n"
        "NVreg_PreserveVideoMemoryAllocations: 0\nNVreg_EnableResizableBar: 0\n")
    caps = proc / "capabilities"
    caps.mkdir(exist_ok=True)
    (caps / "fabric-imex-mgmt").write_text(
        "DeviceFileMinor: 512\nDeviceFileMode: 438\nDeviceFileModify: 0\n")


def lay_out(node_host: Path, mock: MockProfile, files: Path | None = None) -> Path:
    """NVIDIA's mock on a node whose own file system is `node_host` (its `/`): the
    node's /var/lib/nvml-mock as above. Returns the driver root's folder. Laying out a
    node again replaces its profile (the library reads it when a plugin starts)."""
    files = files or mock_files()
    config = profile_config(files, mock)
    root = node_host / MOCK_ROOT.lstrip("/")
    driver = root / "driver"
    version = mock.driver_version
    lib64 = driver / "usr" / "lib64"
    lib64.mkdir(parents=True, exist_ok=True)
    for old in lib64.glob("libnvidia-ml.so*"):
        old.unlink()
    shutil.copy2(files / "libnvidia-ml.so", lib64 / f"libnvidia-ml.so.{version}")
    (lib64 / "libnvidia-ml.so.1").symlink_to(f"libnvidia-ml.so.{version}")
    (lib64 / "libnvidia-ml.so").symlink_to("libnvidia-ml.so.1")
    (driver / "usr" / "bin").mkdir(parents=True, exist_ok=True)
    shutil.copy2(files / "nvidia-smi", driver / "usr" / "bin" / "nvidia-smi")
    (driver / "config").mkdir(exist_ok=True)
    # As JSON (which YAML includes): PyYAML writes "0421819085498" unquoted, a string to
    # YAML 1.1 (not octal) but a number to the mock's Go YAML reader.
    (driver / "config" / "config.yaml").write_text(json.dumps(config, indent=1) + "\n")
    for dev in (root / "dev", driver / "dev"):
        _devices(dev, mock.count)
    _node_dev(node_host / "dev", mock.count)
    _proc_files(driver / "proc" / "driver" / "nvidia", version)
    (root / "imex").mkdir(exist_ok=True)
    (root / "imex" / "proc-devices").write_text(_proc_devices())
    _render_sysfs(files, driver / "config" / "config.yaml", node_host)
    return driver


def _render_sysfs(files: Path, config: Path, node_host: Path) -> None:
    shutil.rmtree(node_host / "sys" / "bus" / "pci", ignore_errors=True)
    shutil.rmtree(node_host / "sys" / "devices", ignore_errors=True)
    result = subprocess.run([str(files / "render-pci-sysfs"), "--config", str(config),
                             "--output", str(node_host)], capture_output=True, text=True,
                            timeout=60, check=False)
    if result.returncode != 0:
        raise MockError(f"render-pci-sysfs: {result.stderr.strip()}")


def lay_out_preset(preset: Path, data_dir: Path, files: Path | None = None) -> dict[str, Path]:
    """Every node of the preset that has an `nvidiaMock`, in the cluster of `data_dir`
    (`draemu up --data-dir`): node -> its driver root on this machine."""
    return {node: lay_out(data_dir / "nodes" / node / "host", mock, files)
            for node, mock in preset_mocks(preset).items()}



def main(argv: list[str] | None = None) -> int:
    """`python -m draemu.cmd.demo.nvidiamock PRESET DATA_DIR`: lay out the mocks of a
    preset's nodes in a cluster's data dir (after `draemu up --preset PRESET --data-dir
    DATA_DIR`, before installing NVIDIA's chart)."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m draemu.cmd.demo.nvidiamock",
                                     description=main.__doc__)
    parser.add_argument("preset", help="a preset with nvidiaMock nodes: seed-nvidia or a file")
    parser.add_argument("data_dir", type=Path, help="the cluster's --data-dir")
    args = parser.parse_args(argv)
    preset = Path(args.preset)
    if not preset.exists():
        preset = Path(__file__).parents[2] / "drivers" / "presets" / f"{args.preset}.yaml"
    try:
        for node, driver_root in lay_out_preset(preset, args.data_dir).items():
            print(f"{node}: {driver_root}")
    except (MockError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
