"""Builders for valid resource.k8s.io objects (v1), which the tests then break."""

from __future__ import annotations

import copy
from typing import Any

Obj = dict[str, Any]

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


def fresh(o: Obj) -> Obj:
    return copy.deepcopy(o)


def messages(errors: list[Any]) -> list[str]:
    return [str(e) for e in errors]
