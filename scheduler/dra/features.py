"""The DRA feature switches of the allocator and the scheduler's DRA plugin, derived from
Kubernetes feature gates once (gates that go in pairs are one switch here)."""

from __future__ import annotations

from dataclasses import dataclass

from draemu.features import CURRENT_VERSION, FeatureGates

# Upstream keeps three copies of the allocator and runs the first whose features cover
# every enabled one (structured.NewAllocator): "stable" as long as nothing beyond its set
# is on, "incubating" up to its set, else "experimental". Up to 1.37 they differ in more
# than the features: that stable copy ignores capacity requests, has no distinctAttribute
# and gathers counter slices from every node (`Features.old_stable`); 1.38's stable copy is
# 1.37's incubating one. `Features.tier` says which copy decides.
_STABLE = frozenset({"admin_access", "prioritized_list", "partitionable_devices",
                     "device_taints"})
_INCUBATING = _STABLE | {"binding_conditions", "consumable_capacity",
                         "fractional_capacity_range"}
_TIERED = _INCUBATING | {"list_type_attributes", "optional_node_operations",
                         "derived_attributes", "compatibility_groups"}
STABLE, INCUBATING, EXPERIMENTAL = "stable", "incubating", "experimental"
# Per release (from which on): what the stable and the incubating copies cover
# (k8s.io/dynamic-resource-allocation/structured/internal/*/allocator_*.go
# SupportedFeatures), and whether the stable copy is the old one.
_TIER_SETS: tuple[tuple[tuple[int, int], frozenset[str], frozenset[str], bool], ...] = (
    ((1, 34), _STABLE, _INCUBATING, True),
    ((1, 38), _INCUBATING, _TIERED, False),
)


# Allocator behaviour a release changed without a gate, by the release that changed it:
# an `allocationMode: All` request meeting an incomplete or invalid pool rules out this
# node only (structured.ErrFailedAllocationOnNode), no longer the pod's scheduling attempt.
ALL_POOL_ERRORS_NODE_LOCAL = (1, 38)
# A capacity request names the device's capacity with or without the driver as its domain
# (k8s.io/dynamic-resource-allocation's resolveCapacityRequests); before, only the
# slice's own spelling matched.
QUALIFIED_CAPACITY_REQUESTS = (1, 38)
# matchAttribute / distinctAttribute compare versions as semver's Equals (build metadata
# aside), no longer as strings.
VERSIONS_BY_PRECEDENCE = (1, 38)
# A device that is not (or no longer) allowMultipleAllocations but still has a shared
# allocation (a share of when it was) cannot be allocated exclusively
# (deviceCapacityInUse); before, only exclusive allocations kept it in use.
SHARES_BLOCK_EXCLUSIVE = (1, 38)


def _minor(release: str) -> tuple[int, int]:
    major, minor = (int(x) for x in release.split(".")[:2])
    return major, minor


def _tier_sets(release: str) -> tuple[frozenset[str], frozenset[str], bool]:
    chosen = _TIER_SETS[0]
    for row in _TIER_SETS:
        if row[0] <= _minor(release):
            chosen = row
    return chosen[1], chosen[2], chosen[3]


@dataclass(frozen=True)
class Features:
    admin_access: bool = True
    prioritized_list: bool = True
    partitionable_devices: bool = True
    device_taints: bool = True
    device_taint_rules: bool = True
    binding_conditions: bool = True  # DRADeviceBindingConditions + DRAResourceClaimDeviceStatus
    consumable_capacity: bool = True
    # DRAFractionalCapacityRange: a validRange with fractional bounds rounds in milli-units.
    fractional_capacity_range: bool = False
    list_type_attributes: bool = False
    derived_attributes: bool = False
    compatibility_groups: bool = False
    optional_node_operations: bool = False
    # The scheduler's DRA plugin (not the allocator):
    extended_resource: bool = True  # DRAExtendedResource: DeviceClasses back resources
    workload_claims: bool = False  # DRAWorkloadResourceClaims: claims of a PodGroup
    filter_timeout: bool = True  # DRASchedulerFilterTimeout: Filter's time limit
    release: str = CURRENT_VERSION  # the emulated Kubernetes release: which allocator copies

    @classmethod
    def from_gates(cls, gates: FeatureGates | None) -> Features:
        g = gates or FeatureGates()
        return cls(
            admin_access=g.enabled("DRAAdminAccess"),
            prioritized_list=g.enabled("DRAPrioritizedList"),
            partitionable_devices=g.enabled("DRAPartitionableDevices"),
            device_taints=g.enabled("DRADeviceTaints"),
            device_taint_rules=g.enabled("DRADeviceTaints") and g.enabled("DRADeviceTaintRules"),
            binding_conditions=g.enabled("DRADeviceBindingConditions")
            and g.enabled("DRAResourceClaimDeviceStatus"),
            consumable_capacity=g.enabled("DRAConsumableCapacity"),
            fractional_capacity_range=g.enabled("DRAFractionalCapacityRange"),
            list_type_attributes=g.enabled("DRAListTypeAttributes"),
            derived_attributes=g.enabled("DRADerivedAttributes"),
            compatibility_groups=g.enabled("DRADeviceCompatibilityGroups"),
            optional_node_operations=g.enabled("DRAOptionalNodeOperations"),
            extended_resource=g.enabled("DRAExtendedResource"),
            workload_claims=g.enabled("DRAWorkloadResourceClaims"),
            filter_timeout=g.enabled("DRASchedulerFilterTimeout"),
            release=g.emulated_version,
        )

    @property
    def tier(self) -> str:
        """Which of upstream's allocators these features select (see _TIER_SETS)."""
        stable, incubating, _ = _tier_sets(self.release)
        enabled = {name for name in _TIERED if getattr(self, name)}
        if enabled <= stable:
            return STABLE
        return INCUBATING if enabled <= incubating else EXPERIMENTAL

    def since(self, release: tuple[int, int]) -> bool:
        """Whether the emulated release is `release` or later."""
        return _minor(self.release) >= release

    @property
    def old_stable(self) -> bool:
        """Whether the allocator that decides is the stable copy of 1.37 and before (no
        distinctAttribute, capacity requests ignored, counter slices from every node)."""
        return self.tier == STABLE and _tier_sets(self.release)[2]
