"""A GPU driver modelled on the upstream example driver (and usable as `gpu.nvidia.com`).

Devices `gpu-0`, `gpu-1`, ... with attributes `index`, `uuid`, `model`, `driverVersion`
(plus, per preset, `memory` in bytes, `cudaMajor`, a NUMA node and a PCIe root) and a
`memory` capacity. Per GPU entry of the preset, optionally:

- `partitions: N` — a MIG-like profile: a counter set per GPU and devices
  `gpu-<i>-full` and `gpu-<i>-partition-<j>` that consume it (sharedCounters);
- `allowMultipleAllocations: true` — consumable capacity: many claims share the GPU,
  each taking `memory` within a request policy (default: all, steps of 1Gi).

Prepare writes a CDI spec per claim whose environment tells the container which GPUs it
got and how they are shared; sharing comes from an opaque `GpuConfig`
(`gpu.resource.example.com/v1alpha1`) in the claim's or class's config.
"""

from __future__ import annotations

from draemu.api.types import Obj
from draemu.drivers.inventory import (
    NUMA_ATTRIBUTE,
    PCIE_ROOT_ATTRIBUTE,
    attribute,
    binary,
    quantity,
    quantity_bytes,
    stable_uuid,
)
from draemu.drivers.nodedriver import NodeDriver
from draemu.drivers.sdk import DeviceMetadata, Pool, PreparedDevice
from draemu.drivers.sdk import PrepareResult as Result

CONFIG_API_VERSION = "gpu.resource.example.com/v1alpha1"
INTERVALS = ("Default", "Short", "Medium", "Long")


class ConfigError(ValueError):
    pass


def build_devices(driver: str, node: str, gpus: list[Obj]) -> Pool:
    devices: list[Obj] = []
    counters: list[Obj] = []
    index = 0
    for entry in gpus:
        for _ in range(int(entry.get("count", 1))):
            name = f"gpu-{index}"
            memory = quantity_bytes(entry.get("memory", "80Gi"))
            attrs: Obj = {
                "index": attribute(index),
                "uuid": attribute(f"gpu-{stable_uuid(node, driver, name)}"),
                "model": attribute(entry.get("model", "LATEST-GPU-MODEL")),
                "driverVersion": {"version": str(entry.get("driverVersion", "1.0.0"))},
            }
            if entry.get("memoryAttribute", False):
                attrs["memory"] = attribute(memory)
            for key in ("cudaMajor", "cudaMinor"):
                if key in entry:
                    attrs[key] = attribute(int(entry[key]))
            if "numaNode" in entry:
                attrs[NUMA_ATTRIBUTE] = attribute(int(entry["numaNode"]))
            if "pcieRoot" in entry:
                attrs[PCIE_ROOT_ATTRIBUTE] = attribute(str(entry["pcieRoot"]))
            for key, value in (entry.get("attributes") or {}).items():
                attrs[key] = attribute(value)
            partitions = int(entry.get("partitions", 0))
            if partitions > 0:
                counter_set = f"{name}-counter-set"
                counters.append({"name": counter_set,
                                 "counters": {"memory": {"value": binary(memory)}}})
                devices.append(_device(f"{name}-full", {
                    **attrs, "partitionable": attribute(True), "full": attribute(True)},
                    memory, counter_set, memory))
                for j in range(partitions):
                    share = memory // partitions
                    devices.append(_device(f"{name}-partition-{j}", {
                        **attrs, "partition": attribute(j), "partitionable": attribute(True),
                        "full": attribute(False)}, share, counter_set, share))
            else:
                device = _device(name, attrs, memory)
                if entry.get("allowMultipleAllocations"):
                    step = quantity(entry.get("memoryStep", "1Gi"))
                    device["allowMultipleAllocations"] = True
                    device["capacity"]["memory"]["requestPolicy"] = {
                        "default": binary(memory),
                        "validRange": {"min": step, "max": binary(memory), "step": step}}
                devices.append(device)
            index += 1
    return Pool(devices=devices, shared_counters=counters)


def _device(name: str, attrs: Obj, memory: int, counter_set: str | None = None,
            consumes: int = 0) -> Obj:
    device: Obj = {"name": name, "attributes": attrs,
                   "capacity": {"memory": {"value": binary(memory)}}}
    if counter_set:
        device["consumesCounters"] = [{"counterSet": counter_set,
                                       "counters": {"memory": {"value": binary(consumes)}}}]
    return device


def parse_config(params: Obj) -> Obj:
    """A GpuConfig, strictly: apiVersion, kind and sharing as the example driver takes them."""
    if params.get("apiVersion") != CONFIG_API_VERSION or params.get("kind") != "GpuConfig":
        raise ConfigError(f"unsupported config {params.get('apiVersion')}/{params.get('kind')}; "
                          f"expected {CONFIG_API_VERSION}, kind GpuConfig")
    unknown = set(params) - {"apiVersion", "kind", "sharing"}
    if unknown:
        raise ConfigError(f"unknown field(s) in GpuConfig: {', '.join(sorted(unknown))}")
    sharing = params.get("sharing") or {"strategy": "TimeSlicing"}
    strategy = sharing.get("strategy")
    if strategy == "TimeSlicing":
        interval = (sharing.get("timeSlicingConfig") or {}).get("interval", "Default")
        if interval not in INTERVALS:
            raise ConfigError(f"unknown time-slice interval: {interval}")
        return {"strategy": strategy, "interval": interval}
    if strategy == "SpacePartitioning":
        count = (sharing.get("spacePartitioningConfig") or {}).get("partitionCount", 1)
        if not isinstance(count, int) or count < 1:
            raise ConfigError("invalid partition count: must be a positive integer")
        return {"strategy": strategy, "partitionCount": count}
    raise ConfigError(f"unknown GPU sharing strategy: {strategy}")


def config_for(claim: Obj, driver: str, request: str) -> Obj:
    """The last applicable opaque config (class entries first, then claim entries)."""
    entries = (claim["status"]["allocation"]["devices"].get("config") or [])
    ordered = [e for e in entries if e.get("source") == "FromClass"] + \
        [e for e in entries if e.get("source") == "FromClaim"]
    for e in entries:
        if e.get("source") not in ("FromClass", "FromClaim"):
            raise ConfigError(f"invalid config source: {e.get('source')}")
    chosen: Obj | None = None
    main = request.split("/", 1)[0]
    for e in ordered:
        opaque = e.get("opaque") or {}
        if opaque.get("driver") != driver:
            continue
        if not e.get("requests") or request in e["requests"] or main in e["requests"]:
            chosen = opaque.get("parameters") or {}
    return parse_config(chosen) if chosen is not None else {"strategy": "TimeSlicing",
                                                             "interval": "Default"}


class GPUDriver(NodeDriver):
    cdi_class = "gpu"
    build_pool = staticmethod(build_devices)

    def common_env(self) -> list[str]:
        return [f"KUBERNETES_NODE_NAME={self.node_name}",
                f"DRA_RESOURCE_DRIVER_NAME={self.driver_name}"]

    def prepare(self, claim: Obj) -> Result:
        uid = claim["metadata"]["uid"]
        allocation = claim["status"]["allocation"]["devices"]
        cdi_devices: dict[str, Obj] = {}
        prepared: list[PreparedDevice] = []
        try:
            for result in allocation.get("results") or []:
                if result["driver"] != self.driver_name:
                    continue
                name = result["device"]
                device = self.devices.get(name)
                if device is None:
                    return Result(error=f"requested GPU is not allocatable: {name}")
                config = config_for(claim, self.driver_name, result["request"])
                share = result.get("shareID")
                cdi_name = f"{uid}-{name}" + (f"-{share}" if share else "")
                cdi_devices[cdi_name] = {"env": self._env(uid, name, config, result)}
                prepared.append(PreparedDevice(
                    pool_name=result["pool"], device_name=name, requests=[result["request"]],
                    cdi_device_ids=[self.cdi.device_id("common"), self.cdi.device_id(cdi_name)],
                    share_id=share,
                    metadata=DeviceMetadata(attributes=dict(device.get("attributes") or {}))))
        except ConfigError as err:
            return Result(error=f"error applying GPU config: {err}")
        if cdi_devices:
            self.cdi.write(uid, cdi_devices)
        return Result(devices=prepared)

    @staticmethod
    def _env(claim_uid: str, name: str, config: Obj, result: Obj) -> list[str]:
        n = name.removeprefix("gpu-").upper().replace("-", "_")
        prefix = f"GPU_DEVICE_{n}"
        env = [f"{prefix}={name}", f"{prefix}_SHARING_STRATEGY={config['strategy']}"]
        if config["strategy"] == "TimeSlicing":
            env.append(f"{prefix}_TIMESLICE_INTERVAL={config['interval']}")
        else:
            env.append(f"{prefix}_PARTITION_COUNT={config['partitionCount']}")
        for key, value in (result.get("consumedCapacity") or {}).items():
            env.append(f"{prefix}_{key.rsplit('/', 1)[-1].upper()}={value}")
        env.append(f"GPU_DEVICE_GPU_{n}_RESOURCE_CLAIM={claim_uid}")
        env.append(f"DRA_ADMIN_ACCESS={'true' if result.get('adminAccess') else 'false'}")
        return env
