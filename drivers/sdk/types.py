"""What a driver author hands to the SDK and gets back from it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from draemu.api.types import Obj
from draemu.drivers.sdk.metadata import DeviceMetadata


@dataclass(frozen=True)
class ClaimRef:
    """A ResourceClaim as the kubelet names it in NodeUnprepareResources."""

    namespace: str
    name: str
    uid: str


@dataclass
class PreparedDevice:
    """One device handed to a claim's containers (a `Device` in the DRA gRPC response)."""

    pool_name: str
    device_name: str
    requests: list[str] = field(default_factory=list)  # empty: serves all requests
    cdi_device_ids: list[str] = field(default_factory=list)
    share_id: str | None = None
    # Attributes and network data for the containers' device metadata files (KEP-5304),
    # written when the plugin has `device_metadata` on.
    metadata: DeviceMetadata | None = None


@dataclass
class PrepareResult:
    devices: list[PreparedDevice] = field(default_factory=list)
    error: str | None = None


@dataclass
class Pool:
    """A pool's devices; the SDK splits them into ResourceSlices within the API's limits."""

    devices: list[Obj] = field(default_factory=list)
    shared_counters: list[Obj] = field(default_factory=list)


@dataclass
class DriverResources:
    """Everything the driver publishes for its node, by pool name."""

    pools: dict[str, Pool] = field(default_factory=dict)


class Driver(Protocol):
    """The callbacks a driver implements; both must be idempotent (kubelets retry)."""

    async def prepare_resource_claims(self, claims: list[Obj]) -> dict[str, PrepareResult]:
        """Prepare allocated claims (full objects from the API); result by claim UID."""
        ...

    async def unprepare_resource_claims(self, claims: list[ClaimRef]) -> dict[str, str | None]:
        """Undo prepare; returns an error string (or None) by claim UID."""
        ...
