"""One emulated kubelet: the Node and its Lease, plugin registration, the DRA manager,
CDI, a container runtime, the pod workers and the kubelet HTTP endpoint."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from draemu.client import Client, EventRecorder, Informer
from draemu.features import FeatureGates
from draemu.kubelet.cdi import CDIRegistry
from draemu.kubelet.dra.claiminfo import ClaimCache
from draemu.kubelet.dra.manager import DRAManager
from draemu.kubelet.dra.plugins import SLICE_WIPE_DELAY, DRAPluginManager, wipe_slices
from draemu.kubelet.execsession import ExecError, ExecSession
from draemu.kubelet.hostpaths import plugin_endpoint
from draemu.kubelet.node import DECLARABLE_FEATURES, NodeAgent, NodeConfig, reachable_address
from draemu.kubelet.pluginwatcher import PluginWatcher
from draemu.kubelet.podresources import PodResourcesServer, socket_path
from draemu.kubelet.pods import PodWorkers
from draemu.kubelet.runtime import ImageMap, make_runtime
from draemu.kubelet.server import KubeletServer, LogProvider
from draemu.kubelet.servingcert import ServingTLS
from draemu.kubelet.volumes import VolumeManager
from draemu.kubeletapi import pluginregistration as reg
from draemu.log import get_logger
from draemu.netns import dial
from draemu.nodelayout import NodeLayout

if TYPE_CHECKING:
    from draemu.podnetwork import NodeNetwork
    from draemu.portforward import StreamConnection

log = get_logger("kubelet")


@dataclass
class KubeletOptions:
    node_name: str
    root_dir: Path
    runtime: str = "fake"
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[dict[str, Any]] = field(default_factory=list)
    capacity: dict[str, str] | None = None
    # The Node's InternalIP and pod CIDR; empty: derived from the node name.
    internal_ip: str = ""
    pod_cidr: str = ""
    # The kubelet HTTP API (container logs, exec) for kubelets outside the apiserver's
    # process: it listens on `address` (then the Node's InternalIP) and `port`; None: no
    # server (in process, the apiserver calls `Kubelet.log_provider`).
    address: str = "127.0.0.1"
    port: int | None = None
    # HTTPS for that API (see kubelet/servingcert.py); None: plain HTTP.
    tls: ServingTLS | None = None
    feature_gates: FeatureGates = field(default_factory=FeatureGates)
    # Extra CDI spec directories, lowest priority first; the node's own `cdi/` comes last.
    cdi_dirs: list[Path] = field(default_factory=list)
    slice_wipe_delay: float = SLICE_WIPE_DELAY
    plugin_scan_interval: float = 1.0
    crash_loop_backoff: float = 10.0  # first restart delay of a failed container, doubling
    # Upstream: the Lease is renewed every 10 s; an unchanged status is re-posted every 5 min.
    heartbeat_interval: float = 10.0
    node_status_report_interval: float = 300.0
    # The process runtime: which local programs stand for images, and the apiserver's
    # address as its containers reach it (empty: the client's server).
    image_map: ImageMap | None = None
    api_server_url: str = ""
    # Pods without a user namespace of their own, as this machine's root (only where the
    # machine cannot make user namespaces, and only when the user says so).
    runtime_unconfined: bool = False
    # The node on the pod network (process runtime): its namespace is where the kubelet
    # API listens (at its address, which is then the InternalIP) and hostNetwork pods
    # run; pods get addresses of the podCIDR node-ipam gives the Node. None: no pod
    # network (pod IPs are picked from `pod_cidr` and reach nothing).
    network: NodeNetwork | None = None
    # --cluster-dns and --cluster-domain: the resolv.conf of pods with dnsPolicy
    # ClusterFirst (empty: there is no cluster DNS, they get this machine's).
    cluster_dns: list[str] = field(default_factory=list)
    cluster_domain: str = "cluster.local"


class Kubelet:
    def __init__(self, client: Client, options: KubeletOptions) -> None:
        self.client = client
        self.options = options
        self.layout = NodeLayout(options.root_dir)
        gates = options.feature_gates
        network = options.network
        # As a kubelet sets KUBERNETES_SERVICE_HOST/PORT: the kubernetes Service's
        # address on the pod network with kube-proxy; else the apiserver forwarded into
        # each pod.
        api_server = (network.networks.ranges.service_ip(1), 443) \
            if network is not None and network.networks.services \
            else _host_port(options.api_server_url or client.server)
        self.runtime = make_runtime(options.runtime, options.image_map, api_server,
                                    unconfined=options.runtime_unconfined,
                                    node_folder=self.layout.root, network=network)
        self.plugins = DRAPluginManager(client, options.node_name,
                                        health_enabled=gates.enabled("ResourceHealthStatus"),
                                        wipe_delay=options.slice_wipe_delay,
                                        on_health=self._health_changed,
                                        on_register=self._plugin_registered)
        self.cache = ClaimCache(self.layout.checkpoint_file)
        self.dra = DRAManager(client, self.plugins, self.cache,
                              optional_node_operations=gates.enabled("DRAOptionalNodeOperations"),
                              pod_group_claims=gates.enabled("DRAWorkloadResourceClaims"))
        self.cdi = CDIRegistry([*options.cdi_dirs, self.layout.cdi_dir])
        self.events = EventRecorder(client, "kubelet", options.node_name)
        self.watcher = PluginWatcher(self.layout.registry_dir, {reg.DRA_PLUGIN: self.plugins},
                                     interval=options.plugin_scan_interval,
                                     endpoint_path=lambda e: plugin_endpoint(self.layout, e))
        self.server = None if options.port is None else KubeletServer(
            self.layout.pods_dir, self._find_pod, self._running, self._list_pods,
            options.address, options.port, options.tls, self._log_instance, self._exec,
            netns=network.netns if network is not None else None,
            port_forward=self._port_forward)
        self.log_provider = LogProvider(self.layout.pods_dir, self._running, self._log_instance,
                                        self._exec, self._port_forward)
        self.podresources = PodResourcesServer(
            socket_path(self.layout.socket_root), self.cache, self._list_pods, self._find_pod,
            self._running, use_active_pods=gates.enabled("KubeletPodResourcesListUseActivePods"))
        self.node: NodeAgent | None = None
        self.pods: PodWorkers | None = None
        self._node_informer: Informer | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def node_name(self) -> str:
        return self.options.node_name

    async def start(self) -> None:
        o = self.options
        self.layout.create()
        self.cache.load()
        cfg = NodeConfig(o.node_name, labels=o.labels, taints=o.taints,
                         internal_ip=o.internal_ip, pod_cidr=o.pod_cidr,
                         declared_features=[f for f in DECLARABLE_FEATURES
                                            if o.feature_gates.enabled(f)])
        if o.network is not None:
            # The podCIDR is node-ipam's to give (kube-controller-manager's
            # --allocate-node-cidrs), as on a kubeadm cluster.
            cfg.internal_ip, cfg.pod_cidr = o.network.ip, None
        if self.server is not None:
            await self.server.start()
            cfg.internal_ip = o.network.ip if o.network is not None else \
                reachable_address(o.address)
            cfg.kubelet_port = self.server.port
        if o.capacity:
            cfg.capacity = dict(o.capacity)
        self.node = NodeAgent(self.client, cfg, status_interval=o.node_status_report_interval,
                              lease_interval=o.heartbeat_interval)
        await self.node.register()
        # Like upstream: slices left from an earlier run are stale until drivers republish.
        await asyncio.gather(self.node.start_heartbeats(), wipe_slices(self.client, o.node_name))
        gates = o.feature_gates
        self.pods = PodWorkers(
            self.client, o.node_name, cfg.internal_ip, cfg.pod_cidr, self.layout.pods_dir,
            self.dra, self.plugins, self.cdi, self.runtime, self.events,
            health_enabled=gates.enabled("ResourceHealthStatus"),
            health_messages=gates.enabled("ResourceHealthStatusMessage"),
            crash_backoff=o.crash_loop_backoff,
            volumes=VolumeManager(self.client, self.layout) if o.runtime == "process" else None,
            cluster_dns=o.cluster_dns, cluster_domain=o.cluster_domain)
        await asyncio.gather(self.watcher.start(), self.pods.start(), self._watch_pod_cidr())
        await self.podresources.start()
        log.info("kubelet started", node=o.node_name, root=str(self.layout.root),
                 registry=str(self.layout.registry_dir))

    async def _watch_pod_cidr(self) -> None:
        """On the pod network: hand the Node's podCIDR to the runtime's network once
        node-ipam has set it (upstream: the kubelet's UpdateRuntimeConfig to the CRI)."""
        network = self.options.network
        if network is None:
            return
        informer = Informer(self.client, "v1", "nodes",
                            field_selector=f"metadata.name={self.node_name}")

        def changed(node: dict[str, Any]) -> None:
            cidr = (node.get("spec") or {}).get("podCIDR")
            if cidr and cidr != network.pod_cidr:
                task = asyncio.create_task(self._set_pod_cidr(cidr))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

        informer.add_handler(on_add=changed, on_update=lambda _old, new: changed(new))
        self._node_informer = informer
        await informer.start()

    async def _set_pod_cidr(self, cidr: str) -> None:
        from draemu.podnetwork import NetworkError

        assert self.options.network is not None
        try:
            await self.options.network.set_pod_cidr(cidr)
        except NetworkError as err:
            log.error("routing the node's podCIDR failed", cidr=cidr, error=str(err))
            return
        if self.pods:
            self.pods.retry_pending()

    async def stop(self) -> None:
        if self._node_informer is not None:
            await self._node_informer.stop()
        await self.podresources.stop()
        if self.pods:
            await self.pods.stop()
        await self.watcher.stop()
        await self.plugins.stop()
        if self.node:
            await self.node.stop()
        if self.server is not None:
            await self.server.stop()
        self.layout.remove_alias()

    def _plugin_registered(self, _driver: str) -> None:
        if self.pods:
            self.pods.retry_pending()

    async def _health_changed(self, driver: str) -> None:
        if self.pods:
            await self.pods.health_changed(driver)

    def _find_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.pods.informer.get(f"{namespace}/{name}") if self.pods else None

    def _running(self, namespace: str, name: str, container: str) -> bool:
        return bool(self.pods and self.pods.container_running(namespace, name, container))

    def _log_instance(self, namespace: str, name: str, container: str, previous: bool
                      ) -> int | None:
        return self.pods.log_instance(namespace, name, container, previous) if self.pods \
            else None

    async def _exec(self, namespace: str, name: str, container: str, argv: list[str],
                    stdin: bool, tty: bool) -> ExecSession | None:
        if self.pods is None:
            raise ExecError(f'container not found ("{container}")')
        return await self.pods.exec(namespace, name, container, argv, stdin, tty)

    async def _port_forward(self, namespace: str, name: str, port: int) -> StreamConnection:
        from draemu.portforward import StreamConnection

        if self.pods is None:
            raise OSError(f'pod "{name}" not found')
        netns = self.pods.pod_netns(namespace, name)
        try:
            reader, writer = await dial(netns, "127.0.0.1", port)
        except (OSError, TimeoutError) as err:
            reason = os.strerror(err.errno).lower() if getattr(err, "errno", None) else \
                "i/o timeout"
            # containerd's words
            raise OSError(f"failed to connect to localhost:{port} inside namespace of pod "
                          f"{name}, IPv4: dial tcp4 127.0.0.1:{port}: connect: {reason}"
                          ) from err
        return StreamConnection(reader, writer)

    def _list_pods(self) -> list[dict[str, Any]]:
        return self.pods.informer.list() if self.pods else []


def _host_port(url: str) -> tuple[str, int] | None:
    """host and port of an https:// URL (None for anything else, e.g. a unix socket)."""
    parsed = urlsplit(url)
    if parsed.scheme not in ("https", "http") or not parsed.hostname:
        return None
    return parsed.hostname, parsed.port or (443 if parsed.scheme == "https" else 80)
