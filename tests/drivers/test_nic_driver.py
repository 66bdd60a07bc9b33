"""The built-in NIC driver's prepare: CDI specs with the NICs' environment and RDMA
device nodes; unprepare removes the claim's spec."""

from __future__ import annotations

import pytest
import yaml

from draemu.drivers.nic import NICDriver
from draemu.drivers.sdk import ClaimRef

pytestmark = pytest.mark.unit


def claim(*devices):
    results = [{"request": "nic", "driver": "nic.example.com", "pool": "node-1", "device": d}
               for d in devices]
    return {"metadata": {"name": "c", "namespace": "default", "uid": "uid-1"},
            "status": {"allocation": {"devices": {"results": results}}}}


async def test_prepare_writes_the_nics_environment_and_rdma_device_nodes(tmp_path):
    driver = NICDriver("nic.example.com", "node-1", tmp_path, [{"count": 2, "numaNode": 1}])
    out = await driver.prepare_resource_claims([claim("nic-1")])
    (device,) = out["uid-1"].devices
    assert device.cdi_device_ids == ["k8s.nic.example.com/nic=common",
                                     "k8s.nic.example.com/nic=uid-1-nic-1"]
    (spec_file,) = tmp_path.glob("*_uid-1.yaml")
    [edits] = [d["containerEdits"] for d in yaml.safe_load(spec_file.read_text())["devices"]]
    assert edits["env"] == ["NIC_DEVICE_1=nic-1", "NIC_DEVICE_1_INTERFACE=ib1",
                            "NIC_DEVICE_1_SPEED=100", "NIC_DEVICE_1_RDMA=true",
                            "NIC_DEVICE_1_NUMA_NODE=1"]
    assert edits["deviceNodes"] == [{"path": "/dev/infiniband/uverbs1"}]


async def test_an_unknown_nic_is_a_prepare_error_and_writes_no_spec(tmp_path):
    driver = NICDriver("nic.example.com", "node-1", tmp_path, [{"count": 1}])
    out = await driver.prepare_resource_claims([claim("nic-7")])
    assert out["uid-1"].error == "requested NIC is not allocatable: nic-7"
    assert not list(tmp_path.glob("*_uid-1.yaml"))


async def test_unprepare_removes_the_claims_spec(tmp_path):
    driver = NICDriver("nic.example.com", "node-1", tmp_path, [{"count": 1}])
    await driver.prepare_resource_claims([claim("nic-0")])
    ref = ClaimRef(uid="uid-1", namespace="default", name="c")
    assert await driver.unprepare_resource_claims([ref]) == {"uid-1": None}
    assert not list(tmp_path.glob("*_uid-1.yaml"))
