"""The composition root: one draemu cluster.

`Cluster.start()` brings up the apiserver (with its store), then the controllers, the
scheduler and the emulated nodes of a preset, each talking to the apiserver through
the API only — in this process, or (`control_plane_process`, how `draemu up` runs) all
but the apiserver in one child process; `Cluster.stop()` takes them down in reverse
order.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from draemu.client import Client
from draemu.features import FeatureGates
from draemu.identity import (
    KUBE_CONTROLLER_MANAGER,
    KUBE_SCHEDULER,
    service_account_groups,
    service_account_user,
)
from draemu.log import get_logger
from draemu.privatefiles import private_dir, private_file

if TYPE_CHECKING:  # imported when used: a cluster without a pod network never needs them
    from draemu.podnetwork import ClusterNetwork, NetworkRanges

log = get_logger("cluster")


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    return Path(base) / "draemu"


@dataclass
class ClusterOptions:
    data_dir: Path | None = None  # None with in_memory: a temporary folder
    in_memory: bool = False
    address: str = "127.0.0.1"
    port: int = 6443
    kubeconfig: Path | None = None
    store_url: str | None = None
    feature_gates: FeatureGates = field(default_factory=FeatureGates)
    insecure_http: bool = False
    token_file: Path | None = None
    audit_log: Path | None = None
    preset: str = "seed"
    nodes: int | None = None
    # Serve resource.k8s.io/v1alpha3 in its 1.31 shape; None: as the preset says
    # (`legacyV1alpha3`, on in the seed preset).
    legacy_v1alpha3: bool | None = None
    runtime: str = "fake"
    image_map: Any = None  # kubelet.runtime.ImageMap for the process runtime
    runtime_unconfined: bool = False  # process runtime: pods without user namespaces
    # The process runtime's pod network (draemu/podnetwork.py): on where this machine can
    # make network namespaces. --pod-cidr is node-ipam's cluster CIDR on it;
    # --service-cidr the apiserver's service range, with or without it.
    pod_network: bool = True
    pod_cidr: str = "10.244.0.0/16"
    service_cidr: str = "10.96.0.0/12"

    @property
    def network_ranges(self) -> NetworkRanges:
        from draemu.podnetwork import NetworkRanges

        return NetworkRanges(cluster_cidr=self.pod_cidr, service_cidr=self.service_cidr)
    scheduler: bool = True
    controllers: bool = True
    controller_settings: dict[str, float] = field(default_factory=dict)
    # The controllers to run (controllers.manager.select); None: all of them.
    enabled_controllers: list[str] | None = None
    # The text of a KubeSchedulerConfiguration file (None: upstream's default profile).
    scheduler_config: str | None = None
    # The scheduler, the controllers and the nodes' kubelets and drivers in a child
    # process (draemu/cmd/controlplane.py), off the apiserver's event loop and core;
    # False: in this process (tests, the demo, --one-process).
    control_plane_process: bool = False
    # That child already forked (ControlPlaneProcess.fork, how `draemu up` starts it);
    # None: spawned as `python -m draemu.cmd.controlplane` when needed.
    forked_control_plane: Any = None


@dataclass
class RemoteNodes:
    """The nodes of a cluster whose kubelets run in the child process (their names)."""

    nodes: list[str]

    async def stop(self) -> None:
        """They stop with the child."""


def has_nodes(options: ClusterOptions) -> bool:
    return options.preset != "empty" or bool(options.nodes)


async def start_pod_network(ranges: NetworkRanges) -> ClusterNetwork | None:
    """The pod network's cluster namespace, or None (said in one line) where this machine
    cannot make network namespaces: pods then get addresses that reach nothing, as
    without it."""
    from draemu.podnetwork import ClusterNetwork, PodNetworkUnavailable

    try:
        return await ClusterNetwork.create(ranges)
    except PodNetworkUnavailable as err:
        log.warning(f"no pod network: {err}; pods keep addresses that reach nothing and "
                    "Services do not work")
        return None


class Cluster:
    def __init__(self, options: ClusterOptions) -> None:
        self.options = options
        self._tmp: str | None = None
        self.apiserver: Any = None
        self.controllers: Any = None
        self.scheduler: Any = None
        self.nodes: Any = None
        self.control_plane: Any = None  # ControlPlaneProcess, with control_plane_process
        self.network: ClusterNetwork | None = None  # the pod network, when there is one
        self._clients: list[Client] = []
        self.timings: dict[str, float] = {}

    @property
    def data_dir(self) -> Path:
        if self.options.data_dir is not None:
            return self.options.data_dir
        if self._tmp is None:
            self._tmp = tempfile.mkdtemp(prefix="draemu-")
        return Path(self._tmp)

    @property
    def node_names(self) -> list[str]:
        return list(self.nodes.nodes) if self.nodes is not None else []

    @property
    def url(self) -> str:
        return self.apiserver.url

    @property
    def kubeconfig_path(self) -> Path:
        return Path(self.apiserver.kubeconfig_path)

    def client(self, user_agent: str, user: str, groups: tuple[str, ...] = ()) -> Client:
        """A client for a control-plane component in this process (loopback socket), as
        the identity its upstream counterpart has (none is in system:masters)."""
        client = self.apiserver.loopback_client(user_agent, user, groups)
        self._clients.append(client)
        return client

    async def start(self) -> None:
        from draemu.apiserver.server.lifecycle import APIServer, APIServerOptions

        o = self.options
        t0 = time.perf_counter()
        store_url = o.store_url or ("sqlite://:memory:" if o.in_memory else None)
        private_dir(self.data_dir)
        from draemu.drivers.presets import Preset, load_preset

        preset = None
        if has_nodes(o):
            preset = o.preset if isinstance(o.preset, Preset) else load_preset(o.preset, o.nodes)
        legacy = o.legacy_v1alpha3
        if legacy is None:
            legacy = (preset if preset is not None else load_preset(o.preset, o.nodes)
                      ).legacy_v1alpha3
        child = o.control_plane_process and (o.controllers or o.scheduler or preset is not None)
        if o.forked_control_plane is not None:
            self.control_plane = o.forked_control_plane
        elif child:
            from draemu.cmd.controlplane import ControlPlaneProcess

            # Started first: its imports overlap the apiserver's start-up.
            self.control_plane = ControlPlaneProcess()
            await self.control_plane.spawn(scheduler=o.scheduler, controllers=o.controllers,
                                           nodes=preset is not None)
        if o.runtime == "process" and preset is not None and o.pod_network:
            self.network = await start_pod_network(o.network_ranges)
        network = self.network
        self.apiserver = APIServer(APIServerOptions(
            data_dir=self.data_dir, store_url=store_url, address=o.address, port=o.port,
            insecure_http=o.insecure_http, feature_gates=o.feature_gates,
            legacy_versions=legacy, token_file=o.token_file, audit_log=o.audit_log,
            # With the components in the child, the collector is the apiserver's alone.
            freeze_gc=self.control_plane is not None,
            service_cidr=o.service_cidr,
            # On the pod network the apiserver also listens at the node network's gateway
            # (default/kubernetes's endpoint) and dials pods and Services from there.
            cluster_listener=(network.netns, o.network_ranges.gateway)
            if network is not None else None,
            dialer=network.dialer() if network is not None else None))
        await self.apiserver.start()
        self.timings["apiserver"] = time.perf_counter() - t0
        if network is not None:
            await self._deploy_addons()
        if o.kubeconfig is not None:
            o.kubeconfig.parent.mkdir(parents=True, exist_ok=True)
            private_file(o.kubeconfig)  # it holds the admin's key
            shutil.copyfile(self.kubeconfig_path, o.kubeconfig)
        if self.control_plane is not None:
            await self.control_plane.configure(
                self.apiserver, o.feature_gates, scheduler=o.scheduler,
                controllers=o.controllers, controller_settings=o.controller_settings,
                enabled_controllers=o.enabled_controllers,
                scheduler_config=o.scheduler_config, nodes=preset, data_dir=self.data_dir,
                runtime=o.runtime, image_map=o.image_map,
                runtime_unconfined=o.runtime_unconfined,
                network=network)
            await self.control_plane.wait_ready()
            self.timings["control-plane"] = self.timings["nodes"] = time.perf_counter() - t0
            if preset is not None:
                self.nodes = RemoteNodes([n.name for n in preset.nodes])
            return
        await self._start_control_plane_here()
        self.timings["control-plane"] = time.perf_counter() - t0
        if preset is not None:
            from draemu.cmd.nodes import start_nodes
            from draemu.podnetwork import NodeNetworks

            self.nodes = await start_nodes(
                preset, data_dir=self.data_dir, server=self.apiserver, runtime=o.runtime,
                feature_gates=o.feature_gates, image_map=o.image_map,
                runtime_unconfined=o.runtime_unconfined,
                network=NodeNetworks(network.netns, o.network_ranges, network.services,
                                     network.dns) if network is not None else None)
        self.timings["nodes"] = time.perf_counter() - t0

    async def _deploy_addons(self) -> None:
        """kube-proxy and CoreDNS, as kubeadm's addon phase deploys them, their images
        mapped to the programs when this machine has them (draemu/cmd/addons.py)."""
        from draemu.cmd import addons
        from draemu.kubelet.runtime import ImageMap

        o = self.options
        found, missing = addons.find_programs(o.image_map)
        if o.image_map is None:
            o.image_map = ImageMap()
        for image, path in found.items():
            o.image_map.add(image, path, default=True)
        if missing:
            log.warning(f"Services and cluster DNS need {' and '.join(missing)}: not on PATH "
                        f"nor in {addons.build_cache()} (tests/e2e/realk8s/build.sh network "
                        "builds them; or --image-map IMAGE=PATH); without kube-proxy the "
                        "apiserver is forwarded into each pod, without CoreDNS pods use this "
                        "machine's resolver")
        assert self.network is not None
        mapped = o.image_map
        self.network.services = mapped.lookup(addons.KUBE_PROXY_IMAGE) is not None
        self.network.dns = mapped.lookup(addons.COREDNS_IMAGE) is not None
        ranges = o.network_ranges
        server = f"https://{ranges.gateway}:{self.apiserver.port}"
        async with self.apiserver.loopback_client("draemu-addons") as client:
            await addons.deploy(client, addons.kube_proxy(server, ranges.cluster_cidr)
                                + addons.coredns(ranges.service_ip(10)))

    async def _start_control_plane_here(self) -> None:
        o = self.options
        if o.controllers:
            from draemu.controllers.manager import ControllerManager

            # As kube-controller-manager with --use-service-account-credentials: informers
            # as system:kube-controller-manager, each controller as its ServiceAccount.
            self.controllers = ControllerManager(
                self.client("draemu-controller-manager", KUBE_CONTROLLER_MANAGER),
                o.feature_gates, enabled=o.enabled_controllers, settings=o.controller_settings,
                client_for=lambda account: self.client(
                    f"draemu-controller-manager/{account}",
                    service_account_user("kube-system", account),
                    service_account_groups("kube-system")),
                service_account_key_file=self.data_dir / "pki" / "sa.key",
                cluster_cidr=self.network.ranges.cluster_cidr if self.network else None)
            await self.controllers.start()
            # In one process, the apiserver's /metrics also shows the controllers'.
            manager = self.controllers
            for name in manager.metrics():
                self.apiserver.add_gauge(name, lambda n=name: manager.metrics().get(n, {}))
        if o.scheduler:
            from draemu.scheduler import Scheduler
            from draemu.scheduler.config import load

            self.scheduler = Scheduler(self.client("draemu-scheduler", KUBE_SCHEDULER),
                                       o.feature_gates, config=load(o.scheduler_config)
                                       if o.scheduler_config else None)
            await self.scheduler.start()

    async def stop(self) -> None:
        for part in (self.nodes, self.scheduler, self.controllers, self.control_plane):
            if part is not None:
                try:
                    await part.stop()
                except Exception:
                    log.exception("stopping a component failed")
        for client in self._clients:
            await client.close()
        self._clients.clear()
        if self.apiserver is not None:
            await self.apiserver.stop()
        if self.network is not None:
            await self.network.close()
            self.network = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
