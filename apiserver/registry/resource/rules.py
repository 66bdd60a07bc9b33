"""resource.k8s.io rules that a Kubernetes release added without a feature gate, by that
release: a rule applies when the emulated release (`--emulated-version`) is the one named
here or a later one. A new release's rules are rows here and the checks that read them."""

from __future__ import annotations

from draemu.features import FeatureGates

# 1.38 (kubernetes v1.38.0-beta.0, pkg/apis/resource/validation and k8s.io/api/resource):
ONE_SLASH_NAMES = "1.38"  # a qualified name with more than one '/' is refused
# capacity.requests of a request and consumedCapacity of a result: names are qualified
# names, at most 32 entries, every quantity at least 0.
CAPACITY_REQUESTS = "1.38"
INT64_VERSIONS = "1.38"  # a version attribute's numbers have at most 18 digits
ONE_TERM_DEVICE_NODE_SELECTOR = "1.38"  # a device's own nodeSelector has one term
CAPACITY_KEY_NAME = "1.38"  # nodeAllocatableResources[].mapping.capacityKey is a name
# The declarative dependentRequired of capacityKey and capacityMultiplier is enforced
# (beta) and speaks instead of the hand-written check: "must be set when X is set".
DECLARATIVE_DEPENDENT_REQUIRED = "1.38"
# An unchanged ResourceSlice device list is not validated again (stored devices that later
# rules refuse keep working); 1.37 let unchanged capacities and taints pass, device by device.
UNCHANGED_DEVICES = "1.38"
# A ResourceClaimTemplate update validates the spec again (not only that it is unchanged),
# accepting unchanged capacity requests that CAPACITY_REQUESTS refuses.
TEMPLATE_UPDATE_VALIDATED = "1.38"


def applies(gates: FeatureGates, rule: str) -> bool:
    return gates.emulates_at_least(rule)
