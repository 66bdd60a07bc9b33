"""The 1.37 and 1.38 feature-gate tables of DRA and the kubelet's DRA, as kubernetes
v1.37.2's and v1.38.0-beta.0's pkg/features/kube_features.go have them (stage, default,
lock), and upstream's checks."""

from __future__ import annotations

import pytest

from draemu.features import FeatureGateError, FeatureGates, known, listed, spec_at

pytestmark = pytest.mark.unit

# name: (stage, default, locked) in kubernetes v1.37.2
UPSTREAM_1_37 = {
    "DynamicResourceAllocation": ("GA", True, True),
    "DRAAdminAccess": ("GA", True, True),
    "DRAConsumableCapacity": ("BETA", True, False),
    "DRADerivedAttributes": ("ALPHA", False, False),
    "DRADeviceBindingConditions": ("BETA", True, False),
    "DRADeviceCompatibilityGroups": ("ALPHA", False, False),
    "DRADeviceTaintRules": ("GA", True, False),
    "DRADeviceTaints": ("GA", True, False),
    "DRAExtendedResource": ("GA", True, True),
    "DRAFractionalCapacityRange": ("BETA", False, False),
    "DRAListTypeAttributes": ("ALPHA", False, False),
    "DRANodeAllocatableResources": ("ALPHA", False, False),
    "DRAOptionalNodeOperations": ("ALPHA", False, False),
    "DRAPartitionableDevices": ("BETA", True, False),
    "DRAPartitionableDevicesType": ("ALPHA", False, False),
    "DRAPrioritizedList": ("GA", True, True),
    "DRAResourceClaimDeviceStatus": ("GA", True, True),
    "DRAResourceClaimGranularStatusAuthorization": ("BETA", True, False),
    "DRAResourcePoolStatus": ("ALPHA", False, False),
    "DRASchedulerFilterTimeout": ("BETA", True, False),
    "DRAWorkloadResourceClaims": ("BETA", False, False),
    "GenericWorkload": ("BETA", False, False),
    "CompositePodGroup": ("ALPHA", False, False),
    "PodGroupPreemptionPolicy": ("ALPHA", False, False),
    "TopologyAwareWorkloadScheduling": ("ALPHA", False, False),
    "WorkloadWithJob": ("ALPHA", False, False),
    "NodeDeclaredFeatures": ("GA", True, True),
    "SchedulerPreQueueingHints": ("ALPHA", False, False),
    "KubeletPodResourcesDynamicResources": ("GA", True, True),
    "KubeletPodResourcesGet": ("GA", True, True),
    "KubeletPodResourcesListUseActivePods": ("DEPRECATED", True, False),
    "ResourceHealthStatus": ("BETA", True, False),
    "ResourceHealthStatusMessage": ("BETA", True, False),
}

# What changes in kubernetes v1.38.0-beta.0 (DynamicResourceAllocation and
# PodGroupPreemptionPolicy are gone from it).
UPSTREAM_1_38 = {
    **{name: row for name, row in UPSTREAM_1_37.items()
       if name not in ("DynamicResourceAllocation", "PodGroupPreemptionPolicy")},
    "DRAConsumableCapacity": ("GA", True, False),
    "DRADeviceBindingConditions": ("GA", True, True),
    "DRADeviceTaintRules": ("GA", True, True),
    "DRADeviceTaints": ("GA", True, True),
    "DRAFractionalCapacityRange": ("GA", True, False),
    "DRAPartitionableDevices": ("GA", True, True),
    "CompositePodGroup": ("BETA", False, False),
    "TopologyAwareWorkloadScheduling": ("BETA", False, False),
    "SchedulerPreQueueingHints": ("BETA", True, False),
}


def test_every_dra_and_kubelet_dra_gate_has_its_1_38_stage_default_and_lock() -> None:
    gates = listed("1.38")
    assert {name: (g.stage, g.default, g.locked) for name, g in gates.items()
            if name in UPSTREAM_1_38} == UPSTREAM_1_38
    assert "DynamicResourceAllocation" not in gates


def test_a_removed_gate_is_unknown_but_its_feature_stays_on() -> None:
    with pytest.raises(FeatureGateError,
                       match="unrecognized feature gate: DynamicResourceAllocation"):
        FeatureGates.parse("DynamicResourceAllocation=true", emulated_version="1.38")
    gates = FeatureGates(emulated_version="1.38")
    assert gates.enabled("DynamicResourceAllocation")
    assert gates.enabled("PodGroupPreemptionPolicy")
    assert "DynamicResourceAllocation" in listed("1.37")


def test_a_removed_gate_is_no_dependency_any_more() -> None:
    # At 1.34 DynamicResourceAllocation may still be turned off, and its dependents with it.
    with pytest.raises(FeatureGateError, match=r"DRAAdminAccess is enabled, but depends on "
                                               r"features that are disabled: "
                                               r"\[DynamicResourceAllocation\]"):
        FeatureGates.parse("DynamicResourceAllocation=false", emulated_version="1.34")
    assert FeatureGates.parse("DRAPartitionableDevicesType=true,DRAResourcePoolStatus=true",
                              emulated_version="1.38").enabled("DRAPartitionableDevicesType")


def test_1_38_gates_new_dependencies_hold_at_1_37_too() -> None:
    for release in ("1.37", "1.38"):
        with pytest.raises(FeatureGateError, match=r"WorkloadWithJob is enabled, but depends "
                                                   r"on features that are disabled: "
                                                   r"\[GenericWorkload\]"):
            FeatureGates.parse("WorkloadWithJob=true", emulated_version=release)


def test_every_dra_and_kubelet_dra_gate_has_its_1_37_stage_default_and_lock() -> None:
    gates = known("1.37")
    assert {name: (g.stage, g.default, g.locked) for name, g in gates.items()
            if name in UPSTREAM_1_37} == UPSTREAM_1_37


def test_no_dra_gate_is_missing_from_the_table() -> None:
    dra = {name for name in known() if name.startswith("DRA") or "ResourceHealth" in name}
    assert dra <= set(UPSTREAM_1_37)


def test_defaults_follow_the_emulated_release() -> None:
    assert spec_at("ResourceHealthStatus", "1.35").default is False
    assert spec_at("ResourceHealthStatus", "1.36").default is True
    assert spec_at("DRADeviceTaints", "1.35").stage == "ALPHA"
    assert FeatureGates(emulated_version="1.35").enabled("DRAPartitionableDevices") is False
    assert FeatureGates(emulated_version="1.38").enabled("DRAPartitionableDevices") is True


def test_a_locked_gate_cannot_be_changed() -> None:
    with pytest.raises(FeatureGateError, match="cannot set feature gate DRAAdminAccess to "
                                               "false, feature is locked to true"):
        FeatureGates.parse("DRAAdminAccess=false")


def test_a_gate_from_a_later_release_cannot_be_set() -> None:
    with pytest.raises(FeatureGateError, match="PreAlpha at emulated version 1.36"):
        FeatureGates.parse("DRADerivedAttributes=true", emulated_version="1.36")


def test_workload_claims_need_the_workload_api() -> None:
    with pytest.raises(FeatureGateError,
                       match=r"DRAWorkloadResourceClaims is enabled, but depends on features "
                             r"that are disabled: \[GenericWorkload\]"):
        FeatureGates.parse("DRAWorkloadResourceClaims=true")
    gates = FeatureGates.parse("DRAWorkloadResourceClaims=true,GenericWorkload=true")
    assert gates.enabled("DRAWorkloadResourceClaims")


def test_compatibility_groups_need_partitionable_devices() -> None:
    with pytest.raises(FeatureGateError, match=r"disabled: \[DRAPartitionableDevices\]"):
        FeatureGates.parse("DRADeviceCompatibilityGroups=true,DRAPartitionableDevices=false")


def test_unknown_gates_and_releases_are_refused() -> None:
    with pytest.raises(FeatureGateError, match="unrecognized feature gate: NoSuchGate"):
        FeatureGates.parse("NoSuchGate=true")
    with pytest.raises(FeatureGateError, match="emulation version 1.30 is not between"):
        FeatureGates(emulated_version="1.30")
