"""Kubelet plugin registration, k8s.io/kubelet/pkg/apis/pluginregistration/v1.

The proto package is `pluginregistration` (without a version) in v1alpha1, v1beta1 and
v1 alike, so one definition serves all three. The plugin serves `Registration`; the
kubelet calls it.
"""

from __future__ import annotations

from draemu.protoschema import Field, ProtoFile

FILE = ProtoFile(
    name="k8s.io/kubelet/pkg/apis/pluginregistration/v1/api.proto",
    package="pluginregistration",
    messages={
        "PluginInfo": [
            Field("type", 1, "string"),
            Field("name", 2, "string"),
            Field("endpoint", 3, "string"),
            Field("supported_versions", 4, "string", repeated=True),
        ],
        "RegistrationStatus": [
            Field("plugin_registered", 1, "bool"),
            Field("error", 2, "string"),
        ],
        "RegistrationStatusResponse": [],
        "InfoRequest": [],
    },
    services={
        "Registration": {
            "GetInfo": ("InfoRequest", "PluginInfo", False),
            "NotifyRegistrationStatus": ("RegistrationStatus", "RegistrationStatusResponse",
                                         False),
        },
    },
)

_types = FILE.build()
PluginInfo = _types["PluginInfo"]
RegistrationStatus = _types["RegistrationStatus"]
RegistrationStatusResponse = _types["RegistrationStatusResponse"]
InfoRequest = _types["InfoRequest"]

SERVICE = "pluginregistration.Registration"
GET_INFO = FILE.method_path("Registration", "GetInfo")
NOTIFY_REGISTRATION_STATUS = FILE.method_path("Registration", "NotifyRegistrationStatus")

# PluginInfo.type values (k8s.io/kubelet/pkg/apis/pluginregistration/v1/constants.go).
CSI_PLUGIN = "CSIPlugin"
DEVICE_PLUGIN = "DevicePlugin"
DRA_PLUGIN = "DRAPlugin"
