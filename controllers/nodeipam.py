"""The node IPAM controller's range allocator (kube-controller-manager with
`--allocate-node-cidrs --cluster-cidr=CIDR`, as kubeadm and kind run it): each Node gets
`spec.podCIDR`/`podCIDRs`, a `--node-cidr-mask-size` block of the cluster CIDR (24 by
default), which its kubelet's network plugin takes pod addresses from.

As upstream's CIDR set: Nodes that already have a podCIDR occupy it (one outside the
cluster CIDR is left alone); blocks are handed out in order from where the last one
ended, wrapping around; a Node's block is free again once the Node is deleted; a Node
that cannot get one gets a `CIDRNotAvailable` event. A podCIDR is never changed once
set (the API refuses that too). Without a cluster CIDR the controller does nothing, as
kube-controller-manager without `--allocate-node-cidrs`.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from draemu.api.types import Obj
from draemu.client import ApiError
from draemu.controllers.base import Controller


class CIDRSet:
    """The blocks of a cluster CIDR, each taken or free."""

    def __init__(self, cluster_cidr: str, mask_size: int) -> None:
        self.cluster = ipaddress.ip_network(cluster_cidr, strict=False)
        if not self.cluster.prefixlen <= mask_size <= self.cluster.max_prefixlen:
            raise ValueError(f"--node-cidr-mask-size {mask_size} does not fit in "
                             f"--cluster-cidr {cluster_cidr}")
        self.mask_size = mask_size
        self.size = 1 << (mask_size - self.cluster.prefixlen)
        self.taken: dict[int, str] = {}  # block index -> node name
        self._next = 0

    def block(self, index: int) -> str:
        step = 1 << (self.cluster.max_prefixlen - self.mask_size)
        return str(ipaddress.ip_network(
            (int(self.cluster.network_address) + index * step, self.mask_size)))

    def index_of(self, cidr: str) -> int | None:
        """The block `cidr` is, or None when it is not one of ours."""
        try:
            net = ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            return None
        if net.version != self.cluster.version or net.prefixlen != self.mask_size or \
                not net.subnet_of(self.cluster):  # type: ignore[arg-type]
            return None
        step = 1 << (self.cluster.max_prefixlen - self.mask_size)
        return (int(net.network_address) - int(self.cluster.network_address)) // step

    def occupy(self, cidr: str, node: str) -> bool:
        index = self.index_of(cidr)
        if index is None:
            return False
        self.taken[index] = node
        return True

    def allocate(self, node: str) -> str | None:
        """The node's block: the one it was given already, else the next free one."""
        for index, owner in self.taken.items():
            if owner == node:
                return self.block(index)
        for offset in range(self.size):
            index = (self._next + offset) % self.size
            if index not in self.taken:
                self.taken[index] = node
                self._next = (index + 1) % self.size
                return self.block(index)
        return None

    def release(self, node: str) -> None:
        for index in [i for i, owner in self.taken.items() if owner == node]:
            del self.taken[index]


class NodeIPAMController(Controller):
    name = "node-ipam"

    def setup(self) -> None:
        self.cidrs: CIDRSet | None = None
        if self.ctx.cluster_cidr:
            self.cidrs = CIDRSet(self.ctx.cluster_cidr, self.ctx.node_cidr_mask_size)
        self.nodes = self.ctx.informers.informer("v1", "nodes")
        self.handlers_enqueue(self.nodes)

    def primary(self) -> Any:
        return self.nodes

    async def start(self) -> None:
        if self.cidrs is None:
            self.log.info("no cluster CIDR: node CIDRs are not allocated")
            return
        # What is taken already, before anything is handed out (upstream: occupyCIDRs).
        for node in self.nodes.list():
            for cidr in _pod_cidrs(node):
                self.cidrs.occupy(cidr, node["metadata"]["name"])
        await super().start()

    async def reconcile(self, key: str) -> float | None:
        assert self.cidrs is not None
        node = self.nodes.get(key)
        if node is None:
            self.cidrs.release(key)
            for waiting in self.nodes.list():  # a block is free: those without one retry
                if not _pod_cidrs(waiting):
                    self.enqueue(waiting)
            return None
        existing = _pod_cidrs(node)
        if existing:
            for cidr in existing:
                self.cidrs.occupy(cidr, key)
            return None
        cidr = self.cidrs.allocate(key)
        if cidr is None:
            await self.recorder.event(node, "Normal", "CIDRNotAvailable",
                                      f"Node {key} status is now: CIDRNotAvailable")
            return 30.0
        try:
            await self.client.patch("v1", "nodes", key,
                                    {"spec": {"podCIDR": cidr, "podCIDRs": [cidr]}})
        except ApiError as err:
            if err.code == 404:
                self.cidrs.release(key)
                return None
            raise
        self.log.info("set node podCIDR", node=key, cidr=cidr)
        return None


def _pod_cidrs(node: Obj) -> list[str]:
    spec = node.get("spec") or {}
    return list(spec.get("podCIDRs") or ([spec["podCIDR"]] if spec.get("podCIDR") else []))
