
import asyncio

import pytest

from draemu.apiserver.server.lifecycle import APIServer, APIServerOptions
from draemu.client import Client
from draemu.controllers.manager import ControllerManager
from draemu.controllers.resourcepoolstatus import pool_statuses
from draemu.features import FeatureGates

pytestmark = pytest.mark.unit


def _slice(pool, devices, generation=1, count=1, node="n1"):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{pool}-{generation}"},
            "spec": {"driver": "gpu.example.com", "nodeName": node,
                     "pool": {"name": pool, "generation": generation,
                              "resourceSliceCount": count},
                     "devices": devices}}


def _claim(pool, device, consumed=None):
    result = {"request": "gpu", "driver": "gpu.example.com", "pool": pool, "device": device}
    if consumed:
        result["consumedCapacity"] = {"memory": consumed}
    return {"metadata": {"name": f"c-{device}", "namespace": "default"},
            "status": {"allocation": {"devices": {"results": [result]}}}}


def test_counts_allocated_tainted_and_available_devices():
    devices = [{"name": "gpu-0"}, {"name": "gpu-1"},
               {"name": "gpu-2", "taints": [{"key": "broken", "effect": "NoSchedule"}]},
               {"name": "gpu-3"}]
    [pool] = pool_statuses("gpu.example.com", None, [_slice("n1", devices)],
                           [_claim("n1", "gpu-0")], [])
    assert (pool["totalDevices"], pool["allocatedDevices"], pool["unavailableDevices"],
            pool["availableDevices"]) == (4, 1, 1, 2)
    assert pool["nodeName"] == "n1" and pool["resourceSliceCount"] == 1


def test_shareable_devices_report_consumed_and_remaining_capacity():
    devices = [{"name": "gpu-0", "allowMultipleAllocations": True,
                "capacity": {"memory": {"value": "80Gi"}}},
               {"name": "gpu-1", "allowMultipleAllocations": True,
                "capacity": {"memory": {"value": "80Gi"}}}]
    [pool] = pool_statuses("gpu.example.com", None, [_slice("n1", devices)],
                           [_claim("n1", "gpu-0", "10Gi")], [])
    summary = pool["shareableSummary"]
    assert (summary["fullyAvailableDevices"], summary["partiallyAvailableDevices"]) == (1, 1)
    assert summary["capacity"] == [{"name": "memory", "total": "160Gi", "consumed": "10Gi",
                                    "available": "150Gi"}]


def test_incomplete_pool_reports_a_validation_error():
    [pool] = pool_statuses("gpu.example.com", None, [_slice("n1", [], count=2)], [], [])
    assert "incomplete" in pool["validationError"]


async def test_request_is_answered_and_completed_through_the_api(tmp_path):
    gates = FeatureGates.parse("DRAResourcePoolStatus=true")
    server = APIServer(APIServerOptions(data_dir=tmp_path, store_url="sqlite://:memory:",
                                        feature_gates=gates))
    await server.start()
    admin = Client.from_kubeconfig(server.kubeconfig_path)
    manager = ControllerManager(Client.from_kubeconfig(server.kubeconfig_path), gates,
                                enabled=["resourcepoolstatus"])
    try:
        await admin.create("resource.k8s.io/v1", "resourceslices",
                           _slice("n1", [{"name": "gpu-0"}, {"name": "gpu-1"}]))
        await manager.start()
        await admin.create("resource.k8s.io/v1alpha3", "resourcepoolstatusrequests", {
            "metadata": {"name": "gpus"}, "spec": {"driver": "gpu.example.com"}})
        for _ in range(200):
            req = await admin.get("resource.k8s.io/v1alpha3", "resourcepoolstatusrequests",
                                  "gpus")
            if req.get("status", {}).get("conditions"):
                break
            await asyncio.sleep(0.05)
        status = req["status"]
        assert status["poolCount"] == 1
        assert status["pools"][0]["totalDevices"] == 2
        assert status["conditions"][0]["type"] == "Complete"
    finally:
        await manager.stop()
        await manager.ctx.client.close()
        await admin.close()
        await server.stop()
