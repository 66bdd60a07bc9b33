"""Starting the built-in drivers (`gpu`, `nic`) as kubelet plugins of one node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from draemu.client import Client
from draemu.drivers.gpu import GPUDriver
from draemu.drivers.nic import NICDriver
from draemu.drivers.presets import DriverSpec
from draemu.drivers.sdk import KubeletPlugin


def make_driver(spec: DriverSpec, node_name: str, cdi_dir: Path) -> Any:
    if spec.type == "gpu":
        return GPUDriver(spec.name, node_name, cdi_dir, list(spec.config.get("gpus") or []))
    if spec.type == "nic":
        return NICDriver(spec.name, node_name, cdi_dir, list(spec.config.get("nics") or []))
    raise ValueError(f"driver {spec.name}: unknown built-in driver type {spec.type!r} "
                     "(known: gpu, nic)")


async def start_builtin_driver(spec: DriverSpec, node_name: str, client: Client,
                               registrar_dir: Path, plugin_data_dir: Path,
                               cdi_dir: Path) -> KubeletPlugin:
    """Serve the driver's plugin sockets and publish its ResourceSlices."""
    driver = make_driver(spec, node_name, cdi_dir)
    driver.write_common_spec()
    # Device metadata files (KEP-5304) carry each device's ResourceSlice attributes into
    # its containers, at /var/run/kubernetes.io/dra-device-attributes/...
    plugin = KubeletPlugin(driver, driver_name=spec.name, node_name=node_name, client=client,
                           registrar_dir=registrar_dir, plugin_data_dir=plugin_data_dir,
                           device_metadata=True, cdi_dir=cdi_dir)
    await plugin.start()
    await plugin.publish_resources(driver.resources())
    return plugin
