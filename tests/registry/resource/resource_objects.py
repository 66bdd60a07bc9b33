"""Builders for valid resource.k8s.io objects (v1), which the tests then break."""

from __future__ import annotations

import copy
from typing import Any

from draemu.api.types import Obj

CLAIM: Obj = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "c1", "namespace": "default"},
    "spec": {"devices": {
        "requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com",
                                        "allocationMode": "ExactCount", "count": 1}},
            {"name": "nic", "firstAvailable": [
                {"name": "fast", "deviceClassName": "nic-fast", "allocationMode": "ExactCount",
                 "count": 1},
                {"name": "slow", "deviceClassName": "nic-slow", "allocationMode": "ExactCount",
                 "count": 1}]}],
        "constraints": [{"requests": ["gpu", "nic"],
                         "matchAttribute": "resource.kubernetes.io/pcieRoot"}],
    }},
}

SLICE: Obj = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
    "metadata": {"name": "node-1-gpu"},
    "spec": {"driver": "gpu.example.com", "nodeName": "node-1",
             "pool": {"name": "node-1", "generation": 0, "resourceSliceCount": 1},
             "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "A100"}},
                          "capacity": {"memory": {"value": "40Gi"}}}]},
}

CLASS: Obj = {
    "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
    "metadata": {"name": "gpu.example.com"},
    "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
}

TAINT_RULE: Obj = {
    "apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule",
    "metadata": {"name": "maintenance"},
    "spec": {"deviceSelector": {"driver": "gpu.example.com", "pool": "node-1"},
             "taint": {"key": "example.com/maintenance", "effect": "NoSchedule"}},
}


# A claim and a slice using every v1 field, as the round-trip baseline.
FULL_CLAIM: Obj = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "full", "namespace": "default"},
    "spec": {"devices": {
        "requests": [
            {"name": "gpu", "exactly": {
                "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 2,
                "adminAccess": False,
                "selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}],
                "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule",
                                 "tolerationSeconds": 5}],
                "capacity": {"requests": {"memory": "1Gi"}}}},
            {"name": "nic", "firstAvailable": [
                {"name": "fast", "deviceClassName": "nic-fast", "allocationMode": "All",
                 "selectors": [{"cel": {"expression": "true"}}],
                 "tolerations": [{"key": "k", "operator": "Equal", "value": "v"}],
                 "capacity": {"requests": {"bandwidth": "10G"}}}]}],
        "constraints": [{"requests": ["gpu"], "matchAttribute": "example.com/numa"},
                        {"distinctAttribute": "example.com/port"}],
        "config": [{"requests": ["nic/fast"], "opaque": {"driver": "nic.example.com",
                                                         "parameters": {"mtu": 9000}}}]}},
    "status": {
        "allocation": {
            "devices": {
                "results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "n1",
                             "device": "gpu-0", "adminAccess": False,
                             "tolerations": [{"key": "k", "operator": "Exists"}],
                             "bindingConditions": ["Ready"],
                             "bindingFailureConditions": ["Failed"],
                             "shareID": "0b8e4bd0-8fd3-4b4e-9d5a-3f0c5c4b2a11",
                             "consumedCapacity": {"memory": "1Gi"},
                             "skipNodeOperations": ["*"]}],
                "config": [{"source": "FromClaim", "opaque": {"driver": "gpu.example.com",
                                                              "parameters": {"a": 1}}}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]},
            "allocationTimestamp": "2026-01-01T00:00:00Z"},
        "reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}],
        "devices": [{"driver": "gpu.example.com", "pool": "n1", "device": "gpu-0",
                     "conditions": None, "data": {"x": 1},
                     "networkData": {"interfaceName": "eth0", "ips": ["10.0.0.1/24"],
                                     "hardwareAddress": "aa:bb"}}]},
}

FULL_SLICE: Obj = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
    "metadata": {"name": "full"},
    "spec": {
        "driver": "gpu.example.com", "perDeviceNodeSelection": True,
        "pool": {"name": "n1", "generation": 3, "resourceSliceCount": 2},
        "partitionTypeAttribute": "gpu.example.com/type",
        "skipNodeOperations": ["NodePrepareResources", "NodeUnprepareResources"],
        "devices": [{
            "name": "gpu-0", "nodeName": "n1",
            "attributes": {"model": {"string": "A100"}, "ids": {"ints": [1, 2]},
                           "v": {"version": "1.2.3"}, "ok": {"bool": True}},
            "capacity": {"memory": {"value": "40Gi", "requestPolicy": {
                "default": "1Gi", "validRange": {"min": "1Gi", "step": "1Gi"}}}},
            "consumesCounters": [{"counterSet": "s", "counters": {"mem": {"value": "1Gi"}}}],
            "taints": [{"key": "k", "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"}],
            "bindsToNode": True, "bindingConditions": ["Ready"],
            "bindingFailureConditions": ["Failed"], "allowMultipleAllocations": True,
            "nodeAllocatableResources": {"memory": {"mapping": {
                "capacityKey": "memory", "capacityMultiplier": "1"}}}}]},
}

ALPHA3_SLICE: Obj = {
    "apiVersion": "resource.k8s.io/v1alpha3", "kind": "ResourceSlice",
    "metadata": {"name": "s"},
    "spec": {"driver": "gpu.example.com", "nodeName": "n1", "allNodes": False,
             "pool": {"name": "n1", "generation": 0, "resourceSliceCount": 1},
             "devices": [{"name": "gpu-0", "basic": {"attributes": {"model": {"string": "A100"}},
                                                     "capacity": {"memory": "40Gi"}}}]},
}


def fresh(o: Obj) -> Obj:
    return copy.deepcopy(o)


def messages(errors: list[Any]) -> list[str]:
    return [str(e) for e in errors]
