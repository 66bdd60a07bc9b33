"""Every controller, one entry each: its name (as `--controllers` takes it), its class,
who it acts as and when it runs. Adding a controller is adding its module and its entry
here; the manager, `--controllers`, the ServiceAccount tokens `draemu up` makes and the
controllers' identities all read this list.

Who a controller is: kube-controller-manager with `--use-service-account-credentials`
(kubeadm's setting) runs every controller as its own ServiceAccount in kube-system,
bound by the bootstrap policy to its `system:controller:<account>` ClusterRole (the
apiserver's RBAC bootstrap holds the roles, upstream's policy); the shared informers
list and watch as `system:kube-controller-manager`. A controller without an account
acts with the manager's own identity.

The classes are named, not imported: the command line checks a `--controllers` value
without importing every controller.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from draemu.controllers.base import Controller
    from draemu.features import FeatureGates

MANAGER_USER = "system:kube-controller-manager"
NAMESPACE = "kube-system"


@dataclass(frozen=True)
class ControllerEntry:
    name: str
    factory: str  # "module:Class" under draemu.controllers, built by `Class.create(ctx)`
    service_account: str | None  # upstream's account in kube-system; None: the manager's
    default: bool = True  # started unless `--controllers` leaves it out ("*" takes these)
    gates: tuple[str, ...] = ()  # runs only with these feature gates on
    needs_signer: bool = False  # runs only with a key to sign tokens with

    @property
    def role(self) -> str | None:
        """The ClusterRole the bootstrap policy binds to its ServiceAccount."""
        return f"system:controller:{self.service_account}" if self.service_account else None

    def load(self) -> type[Controller]:
        module, _, cls = self.factory.partition(":")
        return getattr(importlib.import_module(f"draemu.controllers.{module}"), cls)

    def runs(self, gates: FeatureGates, has_signer: bool) -> bool:
        return all(gates.enabled(g) for g in self.gates) and (has_signer or not self.needs_signer)


CONTROLLERS = (
    ControllerEntry("resourceclaim", "resourceclaim:ResourceClaimController",
                    "resource-claim-controller"),
    ControllerEntry("device-taint-eviction",
                    "devicetainteviction:DeviceTaintEvictionController",
                    "device-taint-eviction-controller", gates=("DRADeviceTaints",)),
    ControllerEntry("node-lifecycle", "nodelifecycle:NodeLifecycleController",
                    "node-controller"),
    # Allocates only with a cluster CIDR (kube-controller-manager's --allocate-node-cidrs).
    ControllerEntry("node-ipam", "nodeipam:NodeIPAMController", "node-controller"),
    ControllerEntry("job", "job:JobController", "job-controller"),
    ControllerEntry("replicaset", "replicaset:ReplicaSetController", "replicaset-controller"),
    ControllerEntry("deployment", "deployment:DeploymentController", "deployment-controller"),
    ControllerEntry("replicationcontroller", "replicaset:ReplicationControllerController",
                    "replication-controller"),
    ControllerEntry("daemonset", "daemonset:DaemonSetController", "daemon-set-controller"),
    ControllerEntry("statefulset", "statefulset:StatefulSetController",
                    "statefulset-controller"),
    ControllerEntry("cronjob", "cronjob:CronJobController", "cronjob-controller"),
    ControllerEntry("endpoints", "endpoints:EndpointsController", "endpoint-controller"),
    ControllerEntry("endpointslice", "endpoints:EndpointSliceController",
                    "endpointslice-controller"),
    ControllerEntry("resourcequota", "resourcequota:ResourceQuotaController",
                    "resourcequota-controller"),
    ControllerEntry("disruption", "disruption:DisruptionController", "disruption-controller"),
    ControllerEntry("ttl-after-finished", "ttlafterfinished:TTLAfterFinishedController",
                    "ttl-after-finished-controller"),
    ControllerEntry("resourcepoolstatus", "resourcepoolstatus:ResourcePoolStatusController",
                    "resourcepoolstatusrequest-controller"),
    ControllerEntry("serviceaccount", "serviceaccount:ServiceAccountController",
                    "service-account-controller"),
    ControllerEntry("root-ca-cert-publisher", "serviceaccount:RootCACertPublisher",
                    "root-ca-cert-publisher"),
    ControllerEntry("clusterrole-aggregation",
                    "clusterroleaggregation:ClusterRoleAggregationController",
                    "clusterrole-aggregation-controller"),
    # Signs legacy token Secrets: only with --service-account-private-key-file's key.
    ControllerEntry("serviceaccount-token", "serviceaccounttoken:ServiceAccountTokenController",
                    None, needs_signer=True),
    ControllerEntry("garbagecollector", "garbagecollector:GarbageCollector",
                    "generic-garbage-collector"),
    ControllerEntry("storage-version-migrator",
                    "storageversionmigrator:StorageVersionMigratorController",
                    "storage-version-migrator-controller", gates=("StorageVersionMigrator",)),
    ControllerEntry("namespace", "namespace:NamespaceController", "namespace-controller"),
)
BY_NAME = {e.name: e for e in CONTROLLERS}
NAMES = tuple(BY_NAME)


def service_account(controller: str) -> str | None:
    entry = BY_NAME.get(controller)
    return entry.service_account if entry is not None else None


def service_accounts() -> list[str]:
    """Every controller's ServiceAccount, sorted, once each."""
    return sorted({e.service_account for e in CONTROLLERS if e.service_account})


def select(spec: str) -> list[str] | None:
    """The controllers a `--controllers` value names, as kube-controller-manager reads
    it: a comma-separated list where `*` is every controller on by default, `NAME` adds
    one and `-NAME` leaves one out; upstream's names (`node-lifecycle-controller`) are
    taken too. None (the default ones) for an empty value. ValueError for an unknown
    name."""
    items = [i.strip() for i in spec.split(",") if i.strip()]
    if not items:
        return None
    chosen: list[str] = []
    dropped: set[str] = set()
    unknown: list[str] = []
    for item in items:
        if item == "*":
            chosen.extend(e.name for e in CONTROLLERS if e.default)
            continue
        off = item.startswith("-")
        name = item.removeprefix("-")
        if name not in BY_NAME:
            name = name.removesuffix("-controller")
        if name not in BY_NAME:
            unknown.append(item.removeprefix("-"))
        elif off:
            dropped.add(name)
        else:
            chosen.append(name)
    if unknown:
        raise ValueError(f"unknown controllers: {', '.join(unknown)}; known: {', '.join(NAMES)}")
    return [name for name in dict.fromkeys(chosen) if name not in dropped]


def defaults() -> list[str]:
    """The controllers that run when none are named."""
    return [e.name for e in CONTROLLERS if e.default]
