"""The DRA device health stream (KEP-4680), k8s.io/kubelet/pkg/apis/dra-health v1alpha1 and v1.

The proto packages are the short `v1alpha1` and `v1`. The plugin serves the
server-streaming `NodeWatchResources`; each response is the driver's complete list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from draemu.protoschema import Field, ProtoFile

UNKNOWN, HEALTHY, UNHEALTHY = 0, 1, 2
# The strings the kubelet writes into allocatedResourcesStatus.
HEALTH_NAMES = {UNKNOWN: "Unknown", HEALTHY: "Healthy", UNHEALTHY: "Unhealthy"}


@dataclass(frozen=True)
class HealthVersion:
    registration_name: str
    service: str
    watch_path: str
    NodeWatchResourcesRequest: Any
    NodeWatchResourcesResponse: Any
    DeviceHealth: Any
    DeviceIdentifier: Any


def _define(version: str) -> HealthVersion:
    file = ProtoFile(
        name=f"k8s.io/kubelet/pkg/apis/dra-health/{version}/api.proto",
        package=version,
        enums={"HealthStatus": [("UNKNOWN", UNKNOWN), ("HEALTHY", HEALTHY),
                                ("UNHEALTHY", UNHEALTHY)]},
        messages={
            "NodeWatchResourcesRequest": [],
            "NodeWatchResourcesResponse": [Field("devices", 1, "DeviceHealth", repeated=True)],
            "DeviceHealth": [
                Field("device", 1, "DeviceIdentifier"),
                Field("health", 2, "enum:HealthStatus"),
                Field("last_updated_time", 3, "int64"),
                Field("health_check_timeout_seconds", 4, "int64"),
                Field("message", 5, "string"),
            ],
            "DeviceIdentifier": [
                Field("pool_name", 1, "string"),
                Field("device_name", 2, "string"),
            ],
        },
        services={"DRAResourceHealth": {
            "NodeWatchResources": ("NodeWatchResourcesRequest", "NodeWatchResourcesResponse",
                                   True)}},
    )
    types = file.build()
    types.pop("HealthStatus")
    return HealthVersion(
        registration_name=f"{version}.DRAResourceHealth",
        service=f"{version}.DRAResourceHealth",
        watch_path=file.method_path("DRAResourceHealth", "NodeWatchResources"),
        **types,
    )


V1ALPHA1 = _define("v1alpha1")
V1 = _define("v1")
VERSIONS: dict[str, HealthVersion] = {V1.registration_name: V1,
                                      V1ALPHA1.registration_name: V1ALPHA1}
# Newest kubelets prefer v1 and still accept v1alpha1.
KUBELET_PREFERENCE = [V1.registration_name, V1ALPHA1.registration_name]
