"""Runs the controllers: shared informers, then every enabled controller's workers.

`draemu up` runs it in-process; `draemu controllers` runs it alone against any
apiserver.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from draemu.client import Client, SharedInformers
from draemu.controllers.base import Controller, ControllerContext
from draemu.controllers.clusterroleaggregation import ClusterRoleAggregationController
from draemu.controllers.cronjob import CronJobController
from draemu.controllers.daemonset import DaemonSetController
from draemu.controllers.deployment import DeploymentController
from draemu.controllers.devicetainteviction import DeviceTaintEvictionController
from draemu.controllers.discovery import served
from draemu.controllers.disruption import DisruptionController
from draemu.controllers.endpoints import EndpointsController, EndpointSliceController
from draemu.controllers.garbagecollector import GarbageCollector
from draemu.controllers.job import JobController
from draemu.controllers.names import NAMES
from draemu.controllers.namespace import NamespaceController
from draemu.controllers.nodelifecycle import NodeLifecycleController
from draemu.controllers.replicaset import ReplicaSetController, ReplicationControllerController
from draemu.controllers.resourceclaim import ResourceClaimController
from draemu.controllers.resourcepoolstatus import ResourcePoolStatusController
from draemu.controllers.resourcequota import ResourceQuotaController
from draemu.controllers.serviceaccount import RootCACertPublisher, ServiceAccountController
from draemu.controllers.serviceaccounttoken import ServiceAccountTokenController
from draemu.controllers.statefulset import StatefulSetController
from draemu.controllers.ttlafterfinished import TTLAfterFinishedController
from draemu.features import FeatureGates
from draemu.log import get_logger
from draemu.satokens import Signer

log = get_logger("controller-manager")

SIMPLE: dict[str, type[Controller]] = {
    "resourceclaim": ResourceClaimController,
    "device-taint-eviction": DeviceTaintEvictionController,
    "node-lifecycle": NodeLifecycleController,
    "job": JobController,
    "replicaset": ReplicaSetController,
    "deployment": DeploymentController,
    "replicationcontroller": ReplicationControllerController,
    "daemonset": DaemonSetController,
    "statefulset": StatefulSetController,
    "cronjob": CronJobController,
    "endpoints": EndpointsController,
    "endpointslice": EndpointSliceController,
    "resourcequota": ResourceQuotaController,
    "disruption": DisruptionController,
    "ttl-after-finished": TTLAfterFinishedController,
    "resourcepoolstatus": ResourcePoolStatusController,
    "serviceaccount": ServiceAccountController,
    "root-ca-cert-publisher": RootCACertPublisher,
    "clusterrole-aggregation": ClusterRoleAggregationController,
    "serviceaccount-token": ServiceAccountTokenController,
}
DISCOVERING = {"garbagecollector": GarbageCollector, "namespace": NamespaceController}
ALL = [*SIMPLE, *DISCOVERING]
assert ALL == list(NAMES), "controllers/names.py lists every controller, in this order"


class ControllerManager:
    def __init__(self, client: Client, gates: FeatureGates | None = None, *,
                 enabled: list[str] | None = None,
                 settings: dict[str, float] | None = None,
                 client_for: Callable[[str], Client] | None = None,
                 service_account_key_file: Path | None = None,
                 informers: SharedInformers | None = None) -> None:
        """`client_for(account)`: the client of a controller's ServiceAccount (see
        credentials.py); without it every controller uses `client`.
        `service_account_key_file`: the key that signs legacy token Secrets (the
        serviceaccount-token controller runs only with it).
        `informers`: the shared informers to use (others in the process may share them);
        by default informers of our own over `client`. The manager starts and stops them."""
        unknown = set(enabled or []) - set(ALL)
        if unknown:
            raise ValueError(f"unknown controllers: {', '.join(sorted(unknown))}; "
                             f"known: {', '.join(ALL)}")
        self.enabled = ALL if enabled is None else enabled
        self.ctx = ControllerContext(client, informers or SharedInformers(client),
                                     gates or FeatureGates(),
                                     dict(settings or {}), client_for,
                                     Signer.load(service_account_key_file)
                                     if service_account_key_file else None)
        self.controllers: list[Controller] = []

    async def start(self) -> None:
        for name in self.enabled:
            if name == "device-taint-eviction" and not self.ctx.gates.enabled(
                    "DRADeviceTaints"):
                continue
            if name == "serviceaccount-token" and self.ctx.signer is None:
                continue  # no key to sign with (--service-account-private-key-file)
            if name in SIMPLE:
                self.controllers.append(SIMPLE[name](self.ctx))
            else:
                self.controllers.append(await DISCOVERING[name].create(self.ctx))
        skipped = await self.ctx.informers.start(served=await served(self.ctx.client))
        if skipped:
            log.info("resources not served; their informers stay empty", resources=skipped)
        for c in self.controllers:
            await c.start()
        log.info("controllers started", controllers=[c.name for c in self.controllers])

    def metrics(self) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
        """Controller metrics with kube-controller-manager's names, for /metrics."""
        out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
        for c in self.controllers:
            if isinstance(c, ResourceClaimController):
                out["resourceclaim_controller_creates_total"] = {
                    (("status", status),): float(n) for status, n in c.creates.items()}
        return out

    async def stop(self) -> None:
        for c in self.controllers:
            await c.stop()
        await self.ctx.informers.stop()
        self.controllers.clear()
