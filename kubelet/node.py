"""The kubelet's Node object and its Lease in `kube-node-lease`.

The Node is created with the standard labels, capacity/allocatable, addresses, daemon
endpoints and a complete nodeInfo (strict clients parse every field); its conditions are
re-posted every `status_interval` (upstream's node status report frequency, 5 min), and
the Lease is renewed every `lease_interval` (upstream: 10 s, with a 40 s lease duration).
"""

from __future__ import annotations

import asyncio
import hashlib
import platform
import socket
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import aiohttp

import draemu
from draemu.api.meta import micro_time_now, time_now
from draemu.client import ApiError, Client
from draemu.kubelet.csinode import ensure_csinode
from draemu.log import get_logger

log = get_logger("kubelet.node")

# What the client raises when the apiserver cannot be reached (or the connection broke):
# a heartbeat or a registration tries again later.
UNREACHABLE = (aiohttp.ClientError, OSError, TimeoutError)
# The pause between registration attempts: first and longest (the kubelet's is 7 s).
REGISTER_BACKOFF = (0.2, 7.0)

LEASE_DURATION = 40
_CONDITIONS = [
    ("MemoryPressure", "False", "KubeletHasSufficientMemory",
     "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
]


@dataclass
class NodeConfig:
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    taints: list[dict[str, Any]] = field(default_factory=list)
    capacity: dict[str, str] = field(default_factory=lambda: {
        "cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi",
        "hugepages-1Gi": "0", "hugepages-2Mi": "0"})
    internal_ip: str = ""
    # "": derived from the name; None: not set by the kubelet (node-ipam sets it).
    pod_cidr: str | None = ""
    kubelet_port: int = 10250
    # status.declaredFeatures (NodeDeclaredFeatures): what this kubelet supports that the
    # scheduler must know, e.g. DRAOptionalNodeOperations.
    declared_features: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        digest = hashlib.sha256(self.name.encode()).digest()
        if not self.internal_ip:
            self.internal_ip = f"172.18.{digest[0]}.{digest[1] % 253 + 2}"
        if not self.pod_cidr:
            self.pod_cidr = f"10.{digest[2] % 200 + 40}.{digest[3]}.0/24"


def reachable_address(bind: str) -> str:
    """The address to publish as InternalIP for a kubelet API bound to `bind`: the bind
    address itself, or for a wildcard the address this host reaches others from (the
    apiserver dials it, so it must be real, unlike the synthetic in-process ones)."""
    if bind not in ("0.0.0.0", "::", ""):
        return bind
    family = socket.AF_INET6 if bind == "::" else socket.AF_INET
    probe = "2001:db8::1" if family == socket.AF_INET6 else "192.0.2.1"
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            s.connect((probe, 9))  # UDP connect sends nothing; it only picks a route
            return str(s.getsockname()[0])
    except OSError:
        return "::1" if family == socket.AF_INET6 else "127.0.0.1"


def _arch() -> str:
    machine = platform.machine().lower()
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine or "amd64")


def node_object(cfg: NodeConfig, boot_id: str) -> dict[str, Any]:
    arch = _arch()
    labels = {"beta.kubernetes.io/arch": arch, "beta.kubernetes.io/os": "linux",
              "kubernetes.io/arch": arch, "kubernetes.io/hostname": cfg.name,
              "kubernetes.io/os": "linux", **cfg.labels}
    annotations = {"node.alpha.kubernetes.io/ttl": "0",
                   "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                   **cfg.annotations}
    spec: dict[str, Any] = {"podCIDR": cfg.pod_cidr, "podCIDRs": [cfg.pod_cidr]} \
        if cfg.pod_cidr else {}
    if cfg.taints:
        spec["taints"] = cfg.taints
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": cfg.name, "labels": labels, "annotations": annotations},
            "spec": spec, "status": node_status(cfg, boot_id, None)}


def node_status(cfg: NodeConfig, boot_id: str, previous: dict[str, Any] | None) -> dict[str, Any]:
    now = time_now()
    old = {c["type"]: c for c in ((previous or {}).get("conditions") or [])}
    conditions = []
    for type_, status, reason, message in _CONDITIONS:
        prior = old.get(type_)
        since = prior["lastTransitionTime"] if prior and prior.get("status") == status else now
        conditions.append({"type": type_, "status": status, "reason": reason,
                           "message": message, "lastHeartbeatTime": now,
                           "lastTransitionTime": since})
    machine = hashlib.md5(cfg.name.encode(), usedforsecurity=False).hexdigest()
    return {
        "capacity": dict(cfg.capacity),
        "allocatable": dict(cfg.capacity),
        "conditions": conditions,
        "addresses": [{"type": "InternalIP", "address": cfg.internal_ip},
                      {"type": "Hostname", "address": cfg.name}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": cfg.kubelet_port}},
        "nodeInfo": {
            "machineID": machine, "systemUUID": str(uuid.UUID(machine)), "bootID": boot_id,
            "kernelVersion": platform.release() or "6.1.0", "osImage": "draemu emulated node",
            "containerRuntimeVersion": f"draemu://{draemu.__version__}",
            "kubeletVersion": draemu.KUBERNETES_VERSION,
            "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": _arch(),
        },
        "images": [],
        **({"declaredFeatures": sorted(cfg.declared_features)} if cfg.declared_features
           else {}),
    }


# Node features of the 1.37 registry (component-helpers/nodedeclaredfeatures) that a
# kubelet declares when their feature gate is on.
DECLARABLE_FEATURES = ("DRANodeAllocatableResources", "DRAOptionalNodeOperations")


class NodeAgent:
    """Registers the Node, keeps its status fresh and renews its Lease."""

    def __init__(self, client: Client, cfg: NodeConfig, status_interval: float = 300.0,
                 lease_interval: float = 10.0) -> None:
        self.client = client
        self.cfg = cfg
        self.status_interval = status_interval
        self.lease_interval = lease_interval
        self.boot_id = str(uuid.uuid4())
        self.node: dict[str, Any] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._last_status = 0.0

    async def register(self) -> dict[str, Any]:
        """Create the Node (or take the one there), as the kubelet: again and again while
        the apiserver cannot be reached or answers a server error, with a pause that
        grows to REGISTER_BACKOFF_MAX."""
        pause = REGISTER_BACKOFF[0]
        while True:
            try:
                self.node = await self._create_or_get()
                break
            except (ApiError, *UNREACHABLE) as err:
                if isinstance(err, ApiError) and err.code < 500 and err.code != 429:
                    raise
                log.warning("unable to register node with the API server; retrying",
                            node=self.cfg.name, error=str(err), retry_in=pause)
            await asyncio.sleep(pause)
            pause = min(pause * 2, REGISTER_BACKOFF[1])
        # Status is not set on create by a real apiserver; post it through /status.
        await self.update_status()
        log.info("node registered", node=self.cfg.name)
        try:
            await ensure_csinode(self.client, self.node)
        except (ApiError, OSError) as err:  # not fatal: a kubelet would retry it later
            log.warning("cannot publish the CSINode", node=self.cfg.name, error=str(err))
        return self.node

    async def _create_or_get(self) -> dict[str, Any]:
        try:
            return await self.client.create("v1", "nodes", node_object(self.cfg, self.boot_id))
        except ApiError as err:
            if err.code != 409:
                raise
            return await self.client.get("v1", "nodes", self.cfg.name)

    async def update_status(self) -> None:
        previous = (self.node or {}).get("status")
        status = node_status(self.cfg, self.boot_id, previous)
        self.node = await self.client.patch("v1", "nodes", self.cfg.name, {"status": status},
                                            subresource="status")

    async def renew_lease(self) -> None:
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": self.cfg.name, "namespace": "kube-node-lease"},
                "spec": {"holderIdentity": self.cfg.name,
                         "leaseDurationSeconds": LEASE_DURATION,
                         "renewTime": micro_time_now()}}
        if self.node is not None:
            body["metadata"]["ownerReferences"] = [{
                "apiVersion": "v1", "kind": "Node", "name": self.cfg.name,
                "uid": self.node["metadata"]["uid"]}]
        try:
            await self.client.patch("coordination.k8s.io/v1", "leases", self.cfg.name,
                                    {"spec": body["spec"]}, namespace="kube-node-lease")
        except ApiError as err:
            if err.code != 404:
                raise
            await self.client.create("coordination.k8s.io/v1", "leases", body,
                                     namespace="kube-node-lease")

    async def start(self) -> None:
        await self.register()
        await self.start_heartbeats()

    async def start_heartbeats(self) -> None:
        """Renew the Lease now, then every `lease_interval` renew it and check the Node."""
        await self.renew_lease()
        self._last_status = time.monotonic()
        self._tasks = [asyncio.create_task(self._heartbeats(), name=f"node-{self.cfg.name}")]

    async def _heartbeats(self) -> None:
        while True:
            await asyncio.sleep(self.lease_interval)
            try:
                await self.renew_lease()
                await self.sync_status()
            except (ApiError, *UNREACHABLE) as err:
                log.warning("node heartbeat failed", node=self.cfg.name, error=str(err))

    async def sync_status(self) -> None:
        """Post the status when the API's copy disagrees with ours (say the node lifecycle
        controller marked it Unknown) or the report interval is over; re-register a Node
        that was deleted, as the kubelet does."""
        try:
            current = await self.client.get("v1", "nodes", self.cfg.name)
        except ApiError as err:
            if err.code != 404:
                raise
            await self.register()
            self._last_status = time.monotonic()
            return
        self.node = current
        ours = {t: s for t, s, _r, _m in _CONDITIONS}
        theirs = {c.get("type"): c.get("status")
                  for c in (current.get("status") or {}).get("conditions") or []}
        due = time.monotonic() - self._last_status >= self.status_interval
        if due or any(theirs.get(t) != s for t, s in ours.items()):
            await self.update_status()
            self._last_status = time.monotonic()

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
