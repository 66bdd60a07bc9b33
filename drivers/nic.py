"""A NIC driver: RDMA-capable network interfaces with speed, NUMA node and PCIe root.

Devices `nic-0`, `nic-1`, ... with attributes `model`, `interfaceName`, `speed` (Gb/s),
`rdmaCapable`, the shared NUMA attribute and `resource.kubernetes.io/pcieRoot`. Prepare
gives the container environment naming its NICs and the RDMA device nodes.
"""

from __future__ import annotations

from draemu.api.types import Obj
from draemu.drivers.inventory import NUMA_ATTRIBUTE, PCIE_ROOT_ATTRIBUTE, attribute, stable_uuid
from draemu.drivers.nodedriver import NodeDriver
from draemu.drivers.sdk import DeviceMetadata, Pool, PreparedDevice
from draemu.drivers.sdk import PrepareResult as Result


def build_devices(driver: str, node: str, nics: list[Obj]) -> Pool:
    devices = []
    index = 0
    for entry in nics:
        for _ in range(int(entry.get("count", 1))):
            name = f"nic-{index}"
            attrs: Obj = {
                "model": attribute(entry.get("model", "ConnectX-7")),
                "interfaceName": attribute(f"{entry.get('interfacePrefix', 'ib')}{index}"),
                "speed": attribute(int(entry.get("speed", 100))),
                "rdmaCapable": attribute(bool(entry.get("rdmaCapable", True))),
                "uuid": attribute(stable_uuid(node, driver, name)),
            }
            if "numaNode" in entry:
                attrs[NUMA_ATTRIBUTE] = attribute(int(entry["numaNode"]))
            if "pcieRoot" in entry:
                attrs[PCIE_ROOT_ATTRIBUTE] = attribute(str(entry["pcieRoot"]))
            for key, value in (entry.get("attributes") or {}).items():
                attrs[key] = attribute(value)
            devices.append({"name": name, "attributes": attrs})
            index += 1
    return Pool(devices=devices)


class NICDriver(NodeDriver):
    cdi_class = "nic"
    build_pool = staticmethod(build_devices)

    def common_env(self) -> list[str]:
        return [f"DRA_NIC_DRIVER_NAME={self.driver_name}"]

    def prepare(self, claim: Obj) -> Result:
        uid = claim["metadata"]["uid"]
        cdi_devices: dict[str, Obj] = {}
        prepared: list[PreparedDevice] = []
        for result in claim["status"]["allocation"]["devices"].get("results") or []:
            if result["driver"] != self.driver_name:
                continue
            name = result["device"]
            device = self.devices.get(name)
            if device is None:
                return Result(error=f"requested NIC is not allocatable: {name}")
            attrs = device["attributes"]
            n = name.removeprefix("nic-")
            prefix = f"NIC_DEVICE_{n}"
            env = [f"{prefix}={name}",
                   f"{prefix}_INTERFACE={attrs['interfaceName']['string']}",
                   f"{prefix}_SPEED={attrs['speed']['int']}",
                   f"{prefix}_RDMA={'true' if attrs['rdmaCapable']['bool'] else 'false'}"]
            if NUMA_ATTRIBUTE in attrs:
                env.append(f"{prefix}_NUMA_NODE={attrs[NUMA_ATTRIBUTE]['int']}")
            edits: Obj = {"env": env}
            if attrs["rdmaCapable"]["bool"]:
                edits["deviceNodes"] = [{"path": f"/dev/infiniband/uverbs{n}"}]
            cdi_devices[f"{uid}-{name}"] = edits
            prepared.append(PreparedDevice(
                pool_name=result["pool"], device_name=name, requests=[result["request"]],
                cdi_device_ids=[self.cdi.device_id("common"),
                                self.cdi.device_id(f"{uid}-{name}")],
                metadata=DeviceMetadata(attributes=dict(attrs))))
        if cdi_devices:
            self.cdi.write(uid, cdi_devices)
        return Result(devices=prepared)
