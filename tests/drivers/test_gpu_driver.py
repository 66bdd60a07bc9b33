"""The built-in GPU driver's prepare: opaque sharing config, CDI specs, environment."""

from __future__ import annotations

import pytest
import yaml

from draemu.drivers.gpu import GPUDriver
from draemu.drivers.sdk import ClaimRef

pytestmark = pytest.mark.unit


def claim(results, config=()):
    return {"metadata": {"name": "c", "namespace": "default", "uid": "uid-1"},
            "status": {"allocation": {"devices": {"results": results,
                                                  "config": list(config)}}}}


def result(device, request="gpu", **extra):
    return {"request": request, "driver": "gpu.example.com", "pool": "node-1",
            "device": device, **extra}


def gpu_config(strategy, **sharing):
    return {"apiVersion": "gpu.resource.example.com/v1alpha1", "kind": "GpuConfig",
            "sharing": {"strategy": strategy, **sharing}}


def entry(source, params, requests=None):
    e = {"source": source, "opaque": {"driver": "gpu.example.com", "parameters": params}}
    if requests:
        e["requests"] = requests
    return e


def env_of(driver, tmp_path):
    (spec_file,) = tmp_path.glob("*_uid-1.yaml")
    spec = yaml.safe_load(spec_file.read_text())
    return {d["name"]: d["containerEdits"]["env"] for d in spec["devices"]}


async def test_default_sharing_is_time_slicing(tmp_path):
    driver = GPUDriver("gpu.example.com", "node-1", tmp_path, [{"count": 2}])
    out = await driver.prepare_resource_claims([claim([result("gpu-1")])])
    (device,) = out["uid-1"].devices
    assert device.cdi_device_ids == ["k8s.gpu.example.com/gpu=common",
                                     "k8s.gpu.example.com/gpu=uid-1-gpu-1"]
    assert env_of(driver, tmp_path)["uid-1-gpu-1"][:3] == [
        "GPU_DEVICE_1=gpu-1", "GPU_DEVICE_1_SHARING_STRATEGY=TimeSlicing",
        "GPU_DEVICE_1_TIMESLICE_INTERVAL=Default"]


async def test_claim_config_wins_over_class_config_per_request(tmp_path):
    driver = GPUDriver("gpu.example.com", "node-1", tmp_path, [{"count": 2}])
    config = [entry("FromClaim", gpu_config("SpacePartitioning",
                                            spacePartitioningConfig={"partitionCount": 10}),
                    ["sp"]),
              entry("FromClass", gpu_config("TimeSlicing",
                                            timeSlicingConfig={"interval": "Long"}))]
    await driver.prepare_resource_claims([claim(
        [result("gpu-0", "ts"), result("gpu-1", "sp")], config)])
    env = env_of(driver, tmp_path)
    assert "GPU_DEVICE_0_TIMESLICE_INTERVAL=Long" in env["uid-1-gpu-0"]
    assert "GPU_DEVICE_1_PARTITION_COUNT=10" in env["uid-1-gpu-1"]


async def test_invalid_config_is_a_prepare_error(tmp_path):
    driver = GPUDriver("gpu.example.com", "node-1", tmp_path, [{"count": 1}])
    out = await driver.prepare_resource_claims([claim(
        [result("gpu-0")], [entry("FromClaim", gpu_config("Juggling"))])])
    assert out["uid-1"].error == "error applying GPU config: unknown GPU sharing strategy: " \
                                 "Juggling"


async def test_shares_get_their_own_cdi_device_and_consumed_capacity(tmp_path):
    driver = GPUDriver("gpu.example.com", "node-1", tmp_path,
                       [{"count": 1, "allowMultipleAllocations": True}])
    out = await driver.prepare_resource_claims([claim([result(
        "gpu-0", shareID="4a1c0f3e-1d2b-4c5d-8e9f-0a1b2c3d4e5f",
        consumedCapacity={"memory": "10Gi"})])])
    (device,) = out["uid-1"].devices
    assert device.share_id == "4a1c0f3e-1d2b-4c5d-8e9f-0a1b2c3d4e5f"
    env = env_of(driver, tmp_path)["uid-1-gpu-0-4a1c0f3e-1d2b-4c5d-8e9f-0a1b2c3d4e5f"]
    assert "GPU_DEVICE_0_MEMORY=10Gi" in env


async def test_unknown_device_is_refused_and_unprepare_removes_the_spec(tmp_path):
    driver = GPUDriver("gpu.example.com", "node-1", tmp_path, [{"count": 1}])
    out = await driver.prepare_resource_claims([claim([result("gpu-9")])])
    assert out["uid-1"].error == "requested GPU is not allocatable: gpu-9"
    await driver.prepare_resource_claims([claim([result("gpu-0")])])
    assert list(tmp_path.glob("*_uid-1.yaml"))
    await driver.unprepare_resource_claims([ClaimRef("default", "c", "uid-1")])
    assert not list(tmp_path.glob("*_uid-1.yaml"))
