"""Feature gates, with Kubernetes' names, versioned as Kubernetes versions them.

A gate is a list of specs, each saying from which minor release on the gate has a stage,
a default and maybe a lock (upstream's `featuregate.VersionedSpecs`). The release draemu
emulates (1.37 unless `--emulated-version` says otherwise) picks the spec in force:
`gates.enabled("DRAAdminAccess")`. `draemu up --feature-gates A=true,B=false` builds the
set with `FeatureGates.parse`, with upstream's checks: unknown gates, locked gates, gates
not yet introduced at the emulated release, and dependencies (`X is enabled, but depends
on features that are disabled: [Y]`). The table below is every gate draemu knows.
"""

from __future__ import annotations

from dataclasses import dataclass

# The release draemu reports and emulates by default, and the releases it can emulate.
CURRENT_VERSION = "1.37"
EMULATABLE_VERSIONS = ("1.34", "1.35", "1.36", "1.37", "1.38")
# The Kubernetes release whose sources the newest rows of each emulated release were read
# from (and whose kube-apiserver tests/e2e/realk8s compares against).
RELEASE_SOURCES = {"1.37": "v1.37.2", "1.38": "v1.38.0-beta.0"}

ALPHA, BETA, GA, DEPRECATED, PREALPHA = "ALPHA", "BETA", "GA", "DEPRECATED", ""
# A row of this stage says the gate is gone from that release on: the code behaves as
# `default` always, and the name is unknown to --feature-gates and /metrics.
REMOVED = "REMOVED"


def _minor(version: str) -> tuple[int, int]:
    major, _, minor = version.removeprefix("v").partition(".")
    return int(major), int(minor.split(".")[0] or 0)


@dataclass(frozen=True)
class Spec:
    """One row of a gate's history: from `version` on, this stage and default."""
    version: str
    default: bool
    stage: str
    locked: bool = False


@dataclass(frozen=True)
class Gate:
    name: str
    default: bool
    stage: str  # "ALPHA", "BETA", "GA", "DEPRECATED" ("" before the gate exists, REMOVED after)
    locked: bool = False  # locked to its default: cannot be changed

    @property
    def listed(self) -> bool:
        """Whether the release lists the gate (--feature-gates, /metrics): it exists."""
        return self.stage not in (PREALPHA, REMOVED)

    @property
    def metric_stage(self) -> str:
        """The `stage` label of kubernetes_feature_enabled ("" for GA, as upstream's)."""
        return "" if self.stage == GA else self.stage


_SPECS: dict[str, tuple[Spec, ...]] = {}
_DEPENDENCIES: dict[str, tuple[str, ...]] = {}


def register_versioned(name: str, specs: list[Spec], depends_on: tuple[str, ...] = ()) -> None:
    _SPECS[name] = tuple(sorted(specs, key=lambda s: _minor(s.version)))
    if depends_on:
        _DEPENDENCIES[name] = depends_on


def spec_at(name: str, version: str = CURRENT_VERSION) -> Gate:
    """The gate as the release `version` has it (upstream's featureSpecAtEmulationVersion)."""
    chosen: Spec | None = None
    for spec in _SPECS[name]:
        if _minor(spec.version) <= _minor(version):
            chosen = spec
    if chosen is None:
        return Gate(name, False, PREALPHA)
    return Gate(name, chosen.default, chosen.stage, chosen.locked or chosen.stage == REMOVED)


def dependencies(name: str, version: str = CURRENT_VERSION) -> tuple[str, ...]:
    """What `name` depends on at release `version` (gates removed there no longer count)."""
    return tuple(d for d in _DEPENDENCIES.get(name, ()) if spec_at(d, version).stage != REMOVED)


def known(version: str = CURRENT_VERSION) -> dict[str, Gate]:
    """Every gate of the table as `version` has it (removed ones too: callers that list
    gates as the release does filter on `Gate.listed`)."""
    return {name: spec_at(name, version) for name in _SPECS}


def listed(version: str = CURRENT_VERSION) -> dict[str, Gate]:
    """The gates release `version` has (not yet introduced and removed ones left out), as
    its /metrics kubernetes_feature_enabled lists them."""
    return {name: gate for name, gate in known(version).items() if gate.listed}


class FeatureGateError(ValueError):
    pass


class FeatureGates:
    def __init__(self, overrides: dict[str, bool] | None = None,
                 emulated_version: str = CURRENT_VERSION) -> None:
        if emulated_version.removeprefix("v") not in EMULATABLE_VERSIONS:
            raise FeatureGateError(
                f"emulation version {emulated_version} is not between "
                f"[{EMULATABLE_VERSIONS[0]}, {EMULATABLE_VERSIONS[-1]}]")
        self.emulated_version = emulated_version.removeprefix("v")
        self._overrides = dict(overrides or {})
        # Answers of enabled(): a set of gates never changes, and the registry writes
        # of DRA kinds ask a dozen gates per request (spec_at parses versions each time).
        self._answers: dict[str, bool] = {}
        errors: list[str] = []
        for name, value in self._overrides.items():
            if name not in _SPECS:
                raise FeatureGateError(f"unrecognized feature gate: {name}")
            gate = spec_at(name, self.emulated_version)
            if gate.stage == REMOVED:
                raise FeatureGateError(f"unrecognized feature gate: {name}")
            if gate.locked and value != gate.default:
                errors.append(f"cannot set feature gate {name} to {str(value).lower()}, feature is "
                              f"locked to {str(gate.default).lower()}")
            elif gate.stage == PREALPHA:
                errors.append(f"cannot set feature gate {name} to {str(value).lower()}, feature is "
                              f"PreAlpha at emulated version {self.emulated_version}")
        if not errors:
            errors = self._dependency_errors()
        if errors:
            raise FeatureGateError("; ".join(errors))

    def _dependency_errors(self) -> list[str]:
        """Upstream's dependency check; a gate the release has removed neither depends on
        nor is depended on (its release dropped it from the table)."""
        errors = []
        for name in sorted(_DEPENDENCIES):
            if not spec_at(name, self.emulated_version).listed or not self.enabled(name):
                continue
            off = [d for d in dependencies(name, self.emulated_version) if not self.enabled(d)]
            if off:
                errors.append(f"{name} is enabled, but depends on features that are "
                              f"disabled: [{' '.join(off)}]")
        return errors

    @classmethod
    def parse(cls, text: str | None, emulated_version: str = CURRENT_VERSION) -> FeatureGates:
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
        return cls(overrides, emulated_version)

    def enabled(self, name: str) -> bool:
        answer = self._answers.get(name)
        if answer is None:
            if name in self._overrides:
                answer = self._overrides[name]
            elif name not in _SPECS:
                raise KeyError(f"feature gate {name} is not registered")
            else:
                answer = spec_at(name, self.emulated_version).default
            self._answers[name] = answer
        return answer

    def overrides(self) -> dict[str, bool]:
        return dict(self._overrides)

    def emulates_at_least(self, release: str) -> bool:
        """Whether the emulated release is `release` or a later one: rules (validation,
        behaviour) a release added without a gate apply from it on."""
        return _minor(self.emulated_version) >= _minor(release)

    def metric_rows(self) -> dict[tuple[str, str], bool]:
        """(name, stage label) -> enabled, for every gate the emulated release has: what
        its kube-apiserver's /metrics reports as kubernetes_feature_enabled."""
        return {(name, gate.metric_stage): self.enabled(name)
                for name, gate in listed(self.emulated_version).items()}


def _v(*rows: tuple) -> list[Spec]:
    return [Spec(*row) for row in rows]


# The DRA feature set and the gates DRA's kubelet, scheduler and workloads read, with the
# history kubernetes v1.37.2's and v1.38.0-beta.0's pkg/features/kube_features.go give
# them (and their dependencies tables). A new release: its rows here (a REMOVED row for a
# gate its source no longer has), checked by tests/features/test_feature_gates_source.py
# against the release's source and by tests/e2e/realk8s/test_release_against_real.py
# against its kube-apiserver.
_DRA = "DynamicResourceAllocation"
for _name, _specs, _deps in [
    (_DRA, _v(("1.26", False, ALPHA), ("1.32", False, BETA), ("1.34", True, GA),
              ("1.35", True, GA, True), ("1.38", True, REMOVED)), ()),
    ("DRAAdminAccess", _v(("1.32", False, ALPHA), ("1.34", True, BETA),
                          ("1.36", True, GA, True)), (_DRA,)),
    ("DRAConsumableCapacity", _v(("1.34", False, ALPHA), ("1.36", True, BETA),
                                 ("1.38", True, GA)), (_DRA,)),
    ("DRADerivedAttributes", _v(("1.37", False, ALPHA)), (_DRA,)),
    ("DRADeviceBindingConditions", _v(("1.34", False, ALPHA), ("1.36", True, BETA),
                                      ("1.38", True, GA, True)),
     (_DRA, "DRAResourceClaimDeviceStatus")),
    ("DRADeviceCompatibilityGroups", _v(("1.37", False, ALPHA)),
     (_DRA, "DRAPartitionableDevices")),
    ("DRADeviceTaintRules", _v(("1.35", False, ALPHA), ("1.36", False, BETA),
                               ("1.37", True, GA), ("1.38", True, GA, True)),
     ("DRADeviceTaints",)),
    ("DRADeviceTaints", _v(("1.33", False, ALPHA), ("1.36", True, BETA), ("1.37", True, GA),
                           ("1.38", True, GA, True)), (_DRA,)),
    ("DRAExtendedResource", _v(("1.34", False, ALPHA), ("1.36", True, BETA),
                               ("1.37", True, GA, True)), (_DRA,)),
    # Beta but off: on only with --min-compatibility-version 1.37, which draemu does not take.
    ("DRAFractionalCapacityRange", _v(("1.37", False, BETA), ("1.38", True, GA)),
     ("DRAConsumableCapacity",)),
    ("DRAListTypeAttributes", _v(("1.36", False, ALPHA)), (_DRA,)),
    ("DRANodeAllocatableResources", _v(("1.36", False, ALPHA)), (_DRA,)),
    ("DRAOptionalNodeOperations", _v(("1.37", False, ALPHA)), (_DRA, "NodeDeclaredFeatures")),
    ("DRAPartitionableDevices", _v(("1.33", False, ALPHA), ("1.36", True, BETA),
                                   ("1.38", True, GA, True)), (_DRA,)),
    ("DRAPartitionableDevicesType", _v(("1.37", False, ALPHA)),
     (_DRA, "DRAPartitionableDevices", "DRAResourcePoolStatus")),
    ("DRAPrioritizedList", _v(("1.33", False, ALPHA), ("1.34", True, BETA), ("1.36", True, GA),
                              ("1.37", True, GA, True)), (_DRA,)),
    ("DRAResourceClaimDeviceStatus", _v(("1.32", False, ALPHA), ("1.33", True, BETA),
                                        ("1.37", True, GA, True)), ()),
    ("DRAResourceClaimGranularStatusAuthorization", _v(("1.36", True, BETA)),
     (_DRA, "DRAResourceClaimDeviceStatus")),
    ("DRAResourcePoolStatus", _v(("1.36", False, ALPHA)), (_DRA,)),
    ("DRASchedulerFilterTimeout", _v(("1.34", True, BETA)), (_DRA,)),
    ("DRAWorkloadResourceClaims", _v(("1.36", False, ALPHA), ("1.37", False, BETA)),
     (_DRA, "GenericWorkload")),
    # scheduling.k8s.io Workload and PodGroup.
    ("GenericWorkload", _v(("1.35", False, ALPHA), ("1.37", False, BETA)), ()),
    ("TopologyAwareWorkloadScheduling", _v(("1.36", False, ALPHA), ("1.38", False, BETA)),
     ("GenericWorkload",)),
    ("CompositePodGroup", _v(("1.37", False, ALPHA), ("1.38", False, BETA)),
     ("GenericWorkload", "TopologyAwareWorkloadScheduling")),
    # Gone in 1.38: a PodGroup's preemptionPolicy is part of GenericWorkload there.
    ("PodGroupPreemptionPolicy", _v(("1.37", False, ALPHA), ("1.38", True, REMOVED)),
     ("GenericWorkload",)),
    ("WorkloadWithJob", _v(("1.36", False, ALPHA)), ("GenericWorkload",)),
    ("NodeDeclaredFeatures", _v(("1.35", False, ALPHA), ("1.36", True, BETA),
                                ("1.37", True, GA, True)), ()),
    ("SchedulerPreQueueingHints", _v(("1.37", False, ALPHA), ("1.38", True, BETA)), ()),
    # StatefulSet rolling updates take down up to rollingUpdate.maxUnavailable pods at once.
    ("MaxUnavailableStatefulSet", _v(("1.24", False, ALPHA), ("1.35", False, BETA),
                                     ("1.37", True, BETA)), ()),
    # pods/binding clears status.nominatedNodeName.
    ("ClearingNominatedNodeNameAfterBinding", _v(("1.34", False, ALPHA), ("1.35", True, BETA)),
     ()),
    # Kubelet PodResources API (Get and the dynamic resources are GA in 1.36); List reports
    # only active pods unless the deprecated gate is turned off.
    ("KubeletPodResourcesDynamicResources", _v(("1.27", False, ALPHA), ("1.34", True, BETA),
                                               ("1.36", True, GA, True)), ()),
    ("KubeletPodResourcesGet", _v(("1.27", False, ALPHA), ("1.34", True, BETA),
                                  ("1.36", True, GA, True)), ()),
    ("KubeletPodResourcesListUseActivePods", _v(("1.0", False, GA), ("1.34", True, DEPRECATED)),
     ()),
    # Kubelet: device health from DRA plugins into pods' allocatedResourcesStatus.
    ("ResourceHealthStatus", _v(("1.31", False, ALPHA), ("1.36", True, BETA)), (_DRA,)),
    ("ResourceHealthStatusMessage", _v(("1.36", True, BETA)), ("ResourceHealthStatus",)),
    # admissionregistration.k8s.io/v1 MutatingAdmissionPolicy(Binding) and their admission
    # plugin (v1beta1 before 1.36, which draemu does not serve).
    ("MutatingAdmissionPolicy", _v(("1.32", False, ALPHA), ("1.34", False, BETA),
                                   ("1.36", True, GA)), ()),
    # The storage version migrator controllers (storagemigration.k8s.io/v1).
    ("StorageVersionMigrator", _v(("1.30", False, ALPHA), ("1.35", False, BETA),
                                  ("1.37", True, GA)), ()),
    # Machinery gates clients notice.
    ("WatchList", _v(("1.27", False, ALPHA), ("1.32", True, BETA), ("1.33", False, BETA),
                     ("1.34", True, BETA)), ()),
]:
    register_versioned(_name, _specs, _deps)
