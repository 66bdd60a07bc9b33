"""The Python DRA driver SDK: write prepare/unprepare callbacks and a device inventory;
`KubeletPlugin` does the rest (see examples/drivers/ for a complete small driver)."""

from draemu.drivers.sdk.cdi import CDIWriter
from draemu.drivers.sdk.health import HealthReporter
from draemu.drivers.sdk.kubeclient import client_from_environment, in_cluster_client
from draemu.drivers.sdk.metadata import DeviceMetadata, MetadataWriter, container_file_path
from draemu.drivers.sdk.plugin import KubeletPlugin
from draemu.drivers.sdk.slices import ResourceSliceController, split_pool
from draemu.drivers.sdk.types import (
    ClaimRef,
    Driver,
    DriverResources,
    Pool,
    PreparedDevice,
    PrepareResult,
)

__all__ = ["CDIWriter", "ClaimRef", "DeviceMetadata", "Driver", "DriverResources",
           "HealthReporter", "KubeletPlugin", "MetadataWriter", "Pool", "PrepareResult",
           "PreparedDevice", "ResourceSliceController", "client_from_environment",
           "container_file_path", "in_cluster_client", "split_pool"]
