"""The DRA kubelet plugin service, k8s.io/kubelet/pkg/apis/dra/v1 and v1beta1.

Both versions have the same two unary RPCs and the same messages, except that v1's
`Device` has the proto3-optional `share_id` (field 5). `V1` and `V1BETA1` each hold the
message classes of their version; code that serves or calls both picks one by
registration string (`v1.DRAPlugin`, `v1beta1.DRAPlugin`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from draemu.protoschema import Field, Map, ProtoFile


@dataclass(frozen=True)
class DRAVersion:
    registration_name: str  # what a plugin lists in PluginInfo.supported_versions
    service: str  # the full gRPC service name
    prepare_path: str
    unprepare_path: str
    Claim: Any
    Device: Any
    NodePrepareResourcesRequest: Any
    NodePrepareResourcesResponse: Any
    NodePrepareResourceResponse: Any
    NodeUnprepareResourcesRequest: Any
    NodeUnprepareResourcesResponse: Any
    NodeUnprepareResourceResponse: Any
    has_share_id: bool


def _define(version: str, has_share_id: bool) -> DRAVersion:
    device = [
        Field("request_names", 1, "string", repeated=True),
        Field("pool_name", 2, "string"),
        Field("device_name", 3, "string"),
        Field("cdi_device_ids", 4, "string", repeated=True),
    ]
    if has_share_id:
        device.append(Field("share_id", 5, "string", optional=True))
    package = f"k8s.io.kubelet.pkg.apis.dra.{version}"
    file = ProtoFile(
        name=f"k8s.io/kubelet/pkg/apis/dra/{version}/api.proto",
        package=package,
        messages={
            "NodePrepareResourcesRequest": [Field("claims", 1, "Claim", repeated=True)],
            "NodePrepareResourcesResponse": [
                Map("claims", 1, "string", "NodePrepareResourceResponse")],
            "NodePrepareResourceResponse": [
                Field("devices", 1, "Device", repeated=True),
                Field("error", 2, "string"),
            ],
            "Device": device,
            "NodeUnprepareResourcesRequest": [Field("claims", 1, "Claim", repeated=True)],
            "NodeUnprepareResourcesResponse": [
                Map("claims", 1, "string", "NodeUnprepareResourceResponse")],
            "NodeUnprepareResourceResponse": [Field("error", 1, "string")],
            "Claim": [
                Field("namespace", 1, "string"),
                Field("uid", 2, "string"),
                Field("name", 3, "string"),
            ],
        },
        services={
            "DRAPlugin": {
                "NodePrepareResources": ("NodePrepareResourcesRequest",
                                         "NodePrepareResourcesResponse", False),
                "NodeUnprepareResources": ("NodeUnprepareResourcesRequest",
                                           "NodeUnprepareResourcesResponse", False),
            },
        },
    )
    types = file.build()
    return DRAVersion(
        registration_name=f"{version}.DRAPlugin",
        service=f"{package}.DRAPlugin",
        prepare_path=file.method_path("DRAPlugin", "NodePrepareResources"),
        unprepare_path=file.method_path("DRAPlugin", "NodeUnprepareResources"),
        has_share_id=has_share_id,
        **types,
    )


V1 = _define("v1", has_share_id=True)
V1BETA1 = _define("v1beta1", has_share_id=False)
VERSIONS: dict[str, DRAVersion] = {V1.registration_name: V1,
                                   V1BETA1.registration_name: V1BETA1}
# What kubelets since 1.34 accept, in the kubelet's own order (the plugin's order decides).
SUPPORTED_BY_KUBELET = [V1.registration_name, V1BETA1.registration_name]
