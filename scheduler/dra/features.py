"""The allocator's feature switches, derived from Kubernetes feature gates."""

from __future__ import annotations

from dataclasses import dataclass

from draemu.features import FeatureGates


@dataclass(frozen=True)
class Features:
    admin_access: bool = True
    prioritized_list: bool = True
    partitionable_devices: bool = True
    device_taints: bool = True
    device_taint_rules: bool = True
    binding_conditions: bool = True  # DRADeviceBindingConditions + DRAResourceClaimDeviceStatus
    consumable_capacity: bool = True
    list_type_attributes: bool = False
    derived_attributes: bool = False
    compatibility_groups: bool = False
    optional_node_operations: bool = False

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
            list_type_attributes=g.enabled("DRAListTypeAttributes"),
            derived_attributes=g.enabled("DRADerivedAttributes"),
            compatibility_groups=g.enabled("DRADeviceCompatibilityGroups"),
            optional_node_operations=g.enabled("DRAOptionalNodeOperations"),
        )
