"""Feature gates, with Kubernetes' names and the newest release's defaults.

Components read `gates.enabled("DRAAdminAccess")`; `draemu up --feature-gates A=true,B=false`
builds the set with `FeatureGates.parse`. Gates are registered where their behaviour
lives (`register`), so this module only knows the mechanism and the common gates.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Gate:
    name: str
    default: bool
    stage: str  # "ALPHA", "BETA", "GA", "DEPRECATED"
    locked: bool = False  # GA gates locked to their default cannot be changed


_KNOWN: dict[str, Gate] = {}


def register(name: str, default: bool, stage: str, locked: bool = False) -> None:
    _KNOWN[name] = Gate(name, default, stage, locked)


def known() -> dict[str, Gate]:
    return dict(_KNOWN)


class FeatureGateError(ValueError):
    pass


class FeatureGates:
    def __init__(self, overrides: dict[str, bool] | None = None) -> None:
        self._overrides = dict(overrides or {})
        for name, value in self._overrides.items():
            gate = _KNOWN.get(name)
            if gate is None:
                raise FeatureGateError(f"unrecognized feature gate: {name}")
            if gate.locked and value != gate.default:
                raise FeatureGateError(
                    f"cannot set feature gate {name} to {str(value).lower()}, feature is "
                    f"locked to {str(gate.default).lower()}")

    @classmethod
    def parse(cls, text: str | None) -> FeatureGates:
        """`A=true,B=false` as kube components take it."""
        overrides: dict[str, bool] = {}
        for item in (text or "").split(","):
            item = item.strip()
            if not item:
                continue
            name, sep, value = item.partition("=")
            if not sep:
                raise FeatureGateError(f"missing bool value for {name}")
            lowered = value.strip().lower()
            if lowered not in ("true", "false"):
                raise FeatureGateError(f"invalid value of {name}={value}, err: invalid syntax")
            overrides[name.strip()] = lowered == "true"
        return cls(overrides)

    def enabled(self, name: str) -> bool:
        if name in self._overrides:
            return self._overrides[name]
        gate = _KNOWN.get(name)
        if gate is None:
            raise KeyError(f"feature gate {name} is not registered")
        return gate.default

    def overrides(self) -> dict[str, bool]:
        return dict(self._overrides)

    def to_flag(self) -> str:
        return ",".join(f"{k}={str(v).lower()}" for k, v in sorted(self._overrides.items()))


# Gates of the DRA feature set, as Kubernetes 1.37 sets them (see
# shared/reference/dra-api.md §1). Their behaviour lives in the apiserver's resource
# strategies, the allocator and the kubelet.
for _name, _default, _stage, _locked in [
    ("DynamicResourceAllocation", True, "GA", True),
    ("DRAAdminAccess", True, "GA", True),
    ("DRAPrioritizedList", True, "GA", True),
    ("DRAResourceClaimDeviceStatus", True, "GA", True),
    ("DRAExtendedResource", True, "GA", True),
    ("DRADeviceTaints", True, "GA", False),
    ("DRADeviceTaintRules", True, "GA", False),
    ("DRAConsumableCapacity", True, "BETA", False),
    ("DRADeviceBindingConditions", True, "BETA", False),
    ("DRAPartitionableDevices", True, "BETA", False),
    ("DRAResourceClaimGranularStatusAuthorization", True, "BETA", False),
    ("DRASchedulerFilterTimeout", True, "BETA", False),
    ("DRAFractionalCapacityRange", True, "BETA", False),
    ("DRAListTypeAttributes", False, "ALPHA", False),
    ("DRANodeAllocatableResources", False, "ALPHA", False),
    ("DRAResourcePoolStatus", False, "ALPHA", False),
    ("DRAWorkloadResourceClaims", False, "ALPHA", False),
    ("DRAOptionalNodeOperations", False, "ALPHA", False),
    ("DRAPartitionableDevicesType", False, "ALPHA", False),
    ("KubeletPodResourcesDynamicResources", True, "GA", True),
    # Kubelet PodResources API: Get (GA with the above in 1.36); List reports only active
    # pods unless the deprecated gate is turned off.
    ("KubeletPodResourcesGet", True, "GA", True),
    ("KubeletPodResourcesListUseActivePods", True, "DEPRECATED", False),
    # Kubelet: device health from DRA plugins into pods' allocatedResourcesStatus.
    ("ResourceHealthStatus", False, "ALPHA", False),
    ("ResourceHealthStatusMessage", False, "ALPHA", False),
    # Machinery gates clients notice.
    ("WatchList", True, "BETA", False),
]:
    register(_name, _default, _stage, _locked)
