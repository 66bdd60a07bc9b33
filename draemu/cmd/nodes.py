"""Starting a preset's nodes: one emulated kubelet per node and its built-in drivers.

    handle = await start_nodes("seed", data_dir=Path(".draemu"), server=apiserver)
    ...
    await handle.stop()

Each node gets `<data_dir>/nodes/<name>/` as its kubelet root, and — when the apiserver
object is given — a kubeconfig with the node's own credentials (`system:node:<name>` in
group `system:nodes`) at `<root>/kubeconfig`; with only a kubeconfig, every node uses it.
In the apiserver's process, kubelets register their log provider with the apiserver for
`pods/log` and `pods/exec`. Elsewhere (`access`, how `draemu up`'s child process starts
them: draemu/cmd/controlplane.py) each kubelet serves its own API, which the apiserver
calls as it calls a real kubelet.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from draemu.api.nodelabels import kubelet_may_set_label
from draemu.client import ApiError, Client
from draemu.cmd.nodecredentials import NodeAccess, loopback_address, node_kubeconfig
from draemu.drivers.builtin import start_builtin_driver
from draemu.drivers.presets import NodeSpec, Preset, device_class_object, load_preset
from draemu.drivers.sdk import KubeletPlugin
from draemu.features import FeatureGates
from draemu.kubelet.kubelet import Kubelet, KubeletOptions
from draemu.kubelet.node import UNREACHABLE
from draemu.kubelet.runtime import ImageMap
from draemu.kubelet.runtime.userns import IdRanges
from draemu.log import get_logger

if TYPE_CHECKING:
    from draemu.apiserver.server.lifecycle import APIServer
    from draemu.podnetwork import NodeNetwork, NodeNetworks

log = get_logger("nodes")

LABEL_RETRY = 120.0  # seconds

__all__ = ["Node", "NodeAccess", "NodesHandle", "ensure_device_classes", "loopback_address",
           "node_kubeconfig", "start_node", "start_nodes"]


@dataclass
class Node:
    name: str
    kubelet: Kubelet
    client: Client
    kubeconfig: Path
    drivers: list[KubeletPlugin] = field(default_factory=list)
    server: APIServer | None = None
    stopped: bool = False
    network: NodeNetworks | None = None  # the pod network it is attached to

    async def stop(self) -> None:
        """Stop the drivers, then the kubelet; safe to call twice."""
        if self.stopped:
            return
        self.stopped = True
        for plugin in self.drivers:
            await plugin.stop()
        await self.kubelet.stop()
        if self.network is not None:
            await self.network.detach(self.name)
            if _node_ranges is not None:
                _node_ranges.release(f"node/{self.name}")
        if self.server is not None:
            self.server.unregister_log_provider(self.name)
        await self.client.close()

    @property
    def root(self) -> Path:
        return self.kubelet.layout.root

    @property
    def registry_dir(self) -> Path:
        return self.kubelet.layout.registry_dir

    @property
    def plugins_dir(self) -> Path:
        return self.kubelet.layout.plugins_dir

    @property
    def cdi_dir(self) -> Path:
        return self.kubelet.layout.cdi_dir


@dataclass
class NodesHandle:
    preset: Preset
    nodes: dict[str, Node]
    started_seconds: float = 0.0

    async def wait_ready(self, timeout: float = 30.0) -> None:
        """Until every built-in driver's ResourceSlices are in the API and its node's
        kubelet has registered it (so pods can be prepared at once)."""
        await asyncio.gather(*(d.slices.wait_synced(timeout)
                               for n in self.nodes.values() for d in n.drivers))
        deadline = time.monotonic() + timeout
        while not all(n.kubelet.plugins.registered(d.driver_name)
                      for n in self.nodes.values() for d in n.drivers):
            if time.monotonic() > deadline:
                raise TimeoutError("built-in drivers did not register with their kubelets")
            await asyncio.sleep(0.02)

    async def stop(self) -> None:
        await asyncio.gather(*(n.stop() for n in self.nodes.values()))


async def ensure_device_classes(client: Client, preset: Preset) -> None:
    for entry in preset.device_classes:
        try:
            await client.create("resource.k8s.io/v1", "deviceclasses",
                                device_class_object(entry))
        except ApiError as err:
            if err.code != 409:
                raise


async def start_node(spec: NodeSpec, *, kubeconfig: Path, data_dir: Path,
                     runtime: str = "fake", feature_gates: FeatureGates | None = None,
                     server: APIServer | None = None, slice_wipe_delay: float | None = None,
                     crash_loop_backoff: float | None = None, index: int | None = None,
                     image_map: ImageMap | None = None,
                     access: NodeAccess | None = None,
                     runtime_unconfined: bool = False,
                     network: NodeNetworks | None = None) -> Node:
    """Start one node's kubelet and built-in drivers. `index` (the node's place in its
    preset) gives it kind-like addresses: InternalIP 172.18.0.<index+2>, pod CIDR
    10.244.<index>.0/24; without it they are derived from the name. With `access` the
    kubelet serves its API on a loopback address of its own (that is then its
    InternalIP), for an apiserver in another process. With `network` (the process
    runtime's pod network) the node is a network namespace at its index's address on the
    node network, its kubelet API listens there on port 10250, and node-ipam gives its
    podCIDR."""
    if server is not None:
        # In the apiserver's process: its loopback socket, as the node (no TLS on either end).
        client = server.loopback_client("draemu", f"system:node:{spec.name}", ["system:nodes"])
    elif access is not None:
        client = access.node_client(spec.name)
    else:
        client = Client.from_kubeconfig(str(kubeconfig))
    labels, admin_labels = spec.labels, {}
    if server is not None or access is not None:
        # As on a real cluster, a node registers only the labels a kubelet may set; the
        # others (node-role.kubernetes.io/..., node-restriction.kubernetes.io/...) are
        # the administrator's, added once the Node exists (kubeadm does the same).
        labels = {k: v for k, v in spec.labels.items() if kubelet_may_set_label(k)}
        admin_labels = {k: v for k, v in spec.labels.items() if k not in labels}
    url = server.url if server is not None else access.url if access is not None else ""
    options = KubeletOptions(node_name=spec.name, root_dir=Path(data_dir) / "nodes" / spec.name,
                             runtime=runtime, labels=labels, taints=spec.taints,
                             capacity=spec.capacity,
                             feature_gates=feature_gates or FeatureGates(),
                             image_map=image_map, api_server_url=url,
                             runtime_unconfined=runtime_unconfined)
    if index is not None:
        options.internal_ip = f"172.18.{index // 250}.{index % 250 + 2}"
        options.pod_cidr = f"10.{244 + index // 256}.{index % 256}.0/24"
    if access is not None:
        options.address = (access.kubelet_address or loopback_address)(index or 0)
        options.port = 0
    if network is not None:
        await _join(options, network, index or 0, serve=access is not None)
    if access is not None:
        options.tls = access.serving_tls(spec.name, options.address)
    if slice_wipe_delay is not None:
        options.slice_wipe_delay = slice_wipe_delay
    if crash_loop_backoff is not None:
        options.crash_loop_backoff = crash_loop_backoff
    try:
        kubelet = Kubelet(client, options)
    except BaseException:
        if network is not None and options.network is not None:
            await network.detach(spec.name)
        raise
    node = Node(spec.name, kubelet, client, kubeconfig, server=server,
                network=network if options.network is not None else None)
    try:
        await kubelet.start()
        if server is not None:
            server.register_log_provider(spec.name, kubelet.log_provider)
        if admin_labels:
            await _label_as_admin(server, access, spec.name, admin_labels)
        layout = kubelet.layout
        started = await asyncio.gather(*(start_builtin_driver(
            driver, spec.name, client, layout.registry_dir, layout.plugin_dir(driver.name),
            layout.cdi_dir) for driver in spec.drivers), return_exceptions=True)
        node.drivers.extend(p for p in started if isinstance(p, KubeletPlugin))
        for result in started:
            if isinstance(result, BaseException):
                raise result
    except BaseException:
        await node.stop()
        raise
    return node


async def _label_as_admin(server: APIServer | None, access: NodeAccess | None, name: str,
                          labels: dict[str, str]) -> None:
    """The administrator's labels on a new Node; again while the apiserver cannot be
    reached (a busy one, or thousands of nodes starting), for up to LABEL_RETRY seconds."""
    deadline = time.monotonic() + LABEL_RETRY
    pause = 0.2
    while True:
        admin = server.loopback_client("draemu") if server is not None else \
            access.admin_client()  # type: ignore[union-attr]
        try:
            async with admin:
                await admin.patch("v1", "nodes", name, {"metadata": {"labels": labels}})
            return
        except UNREACHABLE as err:
            if time.monotonic() + pause > deadline:
                raise
            log.warning("cannot label the node yet; retrying", node=name, error=str(err))
        await asyncio.sleep(pause)
        pause = min(pause * 2, 5.0)


KUBELET_PORT = 10250
_node_ranges: IdRanges | None = None


async def _join(options: KubeletOptions, network: NodeNetworks, index: int, serve: bool
                ) -> None:
    """The kubelet's node on the pod network: its address, its API there (`serve`), and
    kube-dns as its cluster DNS (draemu/cmd/addons.py), as kubeadm configures a kubelet."""
    options.network = await _attach(network, options.node_name, index,
                                    options.runtime_unconfined)
    options.internal_ip = options.address = options.network.ip
    options.cluster_dns = [network.ranges.service_ip(10)] if network.dns else []
    options.port = KUBELET_PORT if serve else None


async def _attach(network: NodeNetworks, name: str, index: int, unconfined: bool
                  ) -> NodeNetwork:
    """The node's namespace on the pod network, with a user namespace of its own (an ID
    range like a pod's) unless pods run unconfined."""
    global _node_ranges
    id_range = None
    if not unconfined:
        if _node_ranges is None:
            _node_ranges = IdRanges()
        held = _node_ranges.for_pod(f"node/{name}")
        id_range = (held.base, held.size)
    return await network.attach(name, index, id_range)


async def start_nodes(preset: str | Path | Preset, *, data_dir: Path,
                      server: APIServer | None = None,
                      kubeconfig: str | Path | None = None, runtime: str = "fake",
                      nodes: int | None = None, feature_gates: FeatureGates | None = None,
                      wait: bool = True, image_map: ImageMap | None = None,
                      access: NodeAccess | None = None,
                      runtime_unconfined: bool = False, first_index: int = 0,
                      concurrency: int | None = None,
                      network: NodeNetworks | None = None) -> NodesHandle:
    """Start every node of a preset (concurrently) and create its DeviceClasses.

    `server`: the in-process `APIServer` (node credentials, log providers); `access`:
    an apiserver in another process (its node kubeconfigs already written, see
    `node_kubeconfig`); otherwise `kubeconfig` (admin) is used by all nodes. `wait`:
    return once all slices are published and all drivers registered. `first_index`: the
    first node's place among all of the cluster's nodes, which gives its addresses and
    pod CIDR (processes that each run a part of the nodes: `draemu nodes --first`).
    `concurrency`: nodes starting at once (None: all), for an apiserver reached over TCP
    and TLS, which a thousand handshakes at once would time out. `network`: the pod
    network the nodes join (process runtime).
    """
    started = time.perf_counter()
    chosen = preset if isinstance(preset, Preset) else load_preset(preset, nodes)
    if server is None and kubeconfig is None and access is None:
        raise ValueError("start_nodes needs the apiserver object, its access or a kubeconfig")
    data_dir = Path(data_dir)
    admin = Path(kubeconfig) if kubeconfig is not None else \
        server.kubeconfig_path if server is not None else None
    async with (access.admin_client() if access is not None
                else Client.from_kubeconfig(str(admin))) as client:
        await ensure_device_classes(client, chosen)

    gate = asyncio.Semaphore(concurrency or len(chosen.nodes) or 1)

    async def one(index: int, spec: NodeSpec) -> Node:
        async with gate:
            return await start(index, spec)

    async def start(index: int, spec: NodeSpec) -> Node:
        if server is not None:
            path = node_kubeconfig(server, data_dir, spec.name)
        elif access is not None:
            path = data_dir / "nodes" / spec.name / "kubeconfig"
        else:
            assert admin is not None
            path = admin
        return await start_node(spec, kubeconfig=path, data_dir=data_dir, runtime=runtime,
                                feature_gates=feature_gates, server=server, index=index,
                                image_map=image_map, access=access,
                                runtime_unconfined=runtime_unconfined, network=network)

    results = await asyncio.gather(*(one(first_index + i, s)
                                     for i, s in enumerate(chosen.nodes)),
                                   return_exceptions=True)
    handle = NodesHandle(chosen, {r.name: r for r in results if isinstance(r, Node)})
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors:
        await handle.stop()
        raise errors[0]
    if wait:
        await handle.wait_ready()
    handle.started_seconds = time.perf_counter() - started
    log.info("nodes started", preset=chosen.name, nodes=len(handle.nodes),
             seconds=round(handle.started_seconds, 3))
    return handle
