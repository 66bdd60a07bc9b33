"""The kubelet's PodResources API, k8s.io/kubelet/pkg/apis/podresources/v1.

The proto package is the short `v1`, so the service is `v1.PodResourcesLister`. The
kubelet serves it on `<root>/pod-resources/kubelet.sock`; node agents (GPU monitoring
exporters, topology tools) call it. Field numbers are upstream's, including the ones a
newer kubelet added: the pod-level `cpu_ids`/`memory` (4, 5) of PodResources (1.37,
PodLevelResourceManagers) and the proto3-optional `share_id` (5) of ClaimResource
(consumable capacity). `DynamicResource` keeps field 1 free: upstream dropped `class_name`.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2

from draemu.protoschema import Field, ProtoFile


class _ProtoFile(ProtoFile):
    """ProtoFile plus `uint64`, which only ContainerMemory.size needs."""

    def _set_type(self, fd: descriptor_pb2.FieldDescriptorProto, type_name: str) -> None:
        if type_name == "uint64":
            fd.type = descriptor_pb2.FieldDescriptorProto.TYPE_UINT64
            return
        super()._set_type(fd, type_name)


SERVICE_NAME = "PodResourcesLister"

FILE = _ProtoFile(
    name="k8s.io/kubelet/pkg/apis/podresources/v1/api.proto",
    package="v1",
    messages={
        "AllocatableResourcesRequest": [],
        "AllocatableResourcesResponse": [
            Field("devices", 1, "ContainerDevices", repeated=True),
            Field("cpu_ids", 2, "int64", repeated=True),
            Field("memory", 3, "ContainerMemory", repeated=True),
        ],
        "ListPodResourcesRequest": [],
        "ListPodResourcesResponse": [
            Field("pod_resources", 1, "PodResources", repeated=True)],
        "PodResources": [
            Field("name", 1, "string"),
            Field("namespace", 2, "string"),
            Field("containers", 3, "ContainerResources", repeated=True),
            Field("cpu_ids", 4, "int64", repeated=True),
            Field("memory", 5, "ContainerMemory", repeated=True),
        ],
        "ContainerResources": [
            Field("name", 1, "string"),
            Field("devices", 2, "ContainerDevices", repeated=True),
            Field("cpu_ids", 3, "int64", repeated=True),
            Field("memory", 4, "ContainerMemory", repeated=True),
            Field("dynamic_resources", 5, "DynamicResource", repeated=True),
        ],
        "ContainerMemory": [
            Field("memory_type", 1, "string"),
            Field("size", 2, "uint64"),
            Field("topology", 3, "TopologyInfo"),
        ],
        "ContainerDevices": [
            Field("resource_name", 1, "string"),
            Field("device_ids", 2, "string", repeated=True),
            Field("topology", 3, "TopologyInfo"),
        ],
        "TopologyInfo": [Field("nodes", 1, "NUMANode", repeated=True)],
        "NUMANode": [Field("ID", 1, "int64")],
        "DynamicResource": [
            Field("claim_name", 2, "string"),
            Field("claim_namespace", 3, "string"),
            Field("claim_resources", 4, "ClaimResource", repeated=True),
        ],
        "ClaimResource": [
            Field("cdi_devices", 1, "CDIDevice", repeated=True),
            Field("driver_name", 2, "string"),
            Field("pool_name", 3, "string"),
            Field("device_name", 4, "string"),
            Field("share_id", 5, "string", optional=True),
        ],
        "CDIDevice": [Field("name", 1, "string")],
        "GetPodResourcesRequest": [
            Field("pod_name", 1, "string"),
            Field("pod_namespace", 2, "string"),
        ],
        "GetPodResourcesResponse": [Field("pod_resources", 1, "PodResources")],
    },
    services={
        SERVICE_NAME: {
            "List": ("ListPodResourcesRequest", "ListPodResourcesResponse", False),
            "GetAllocatableResources": ("AllocatableResourcesRequest",
                                        "AllocatableResourcesResponse", False),
            "Get": ("GetPodResourcesRequest", "GetPodResourcesResponse", False),
        },
    },
)

_types = FILE.build()
AllocatableResourcesRequest = _types["AllocatableResourcesRequest"]
AllocatableResourcesResponse = _types["AllocatableResourcesResponse"]
ListPodResourcesRequest = _types["ListPodResourcesRequest"]
ListPodResourcesResponse = _types["ListPodResourcesResponse"]
PodResources = _types["PodResources"]
ContainerResources = _types["ContainerResources"]
ContainerMemory = _types["ContainerMemory"]
ContainerDevices = _types["ContainerDevices"]
TopologyInfo = _types["TopologyInfo"]
NUMANode = _types["NUMANode"]
DynamicResource = _types["DynamicResource"]
ClaimResource = _types["ClaimResource"]
CDIDevice = _types["CDIDevice"]
GetPodResourcesRequest = _types["GetPodResourcesRequest"]
GetPodResourcesResponse = _types["GetPodResourcesResponse"]

SERVICE = f"{FILE.package}.{SERVICE_NAME}"
LIST = FILE.method_path(SERVICE_NAME, "List")
GET_ALLOCATABLE_RESOURCES = FILE.method_path(SERVICE_NAME, "GetAllocatableResources")
GET = FILE.method_path(SERVICE_NAME, "Get")
