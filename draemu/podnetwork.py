"""The pod network of `draemu up --runtime process`: what kind gets from Docker and its
CNI plugin, made of network namespaces that draemu creates and that end with it.

    cluster namespace (Docker's network)      node namespaces (kind's node containers)
    bridge draemu0 172.18.0.1/16 ─── veth ─── eth0 172.18.0.2/16 (InternalIP) ── pods
      the apiserver listens here,  ── veth ─── eth0 172.18.0.3/16              ── pods
      routes: podCIDR via node IP,
      the service CIDR via the nodes

- The cluster namespace holds a bridge with the node network's gateway address, where
  the apiserver (which runs in the machine's namespace) also listens and from which it
  dials pods and Services (draemu/netns.py: NetnsDialer). Each node's podCIDR is routed
  to the node's address there, as kindnet routes them; the service CIDR is routed to
  the nodes, whose kube-proxy translates it.
- Each node is a namespace with its InternalIP on eth0, a default route to the gateway,
  forwarding on; with a user namespace of its own when given an ID range (its
  hostNetwork pods run in it: root of the node, not of this machine).
- Each pod (not hostNetwork) is attached as the CNI ptp plugin attaches it (kind's
  kindnet uses ptp): a veth pair, eth0 in the pod with an address of the node's podCIDR,
  the host end with the podCIDR's gateway address and a host route to the pod.

Addresses exist only inside these namespaces: the machine's own namespace gets no
address, route or link, and nothing is routed off the machine. Each namespace is held by
a `nsholder.py` process that dies with draemu (even after SIGKILL), and the kernel
removes what was in it. IPv4 only.
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from draemu.log import get_logger
from draemu.netns import NetnsDialer

log = get_logger("podnetwork")

HOLDER = Path(__file__).with_name("nsholder.py")
BRIDGE = "draemu0"
ROUTING = {"net/ipv4/ip_forward": "1", "net/ipv4/conf/all/rp_filter": "0",
           "net/ipv4/conf/default/rp_filter": "0", "net/ipv4/conf/all/send_redirects": "0",
           "net/ipv4/conf/default/send_redirects": "0"}


class PodNetworkUnavailable(RuntimeError):
    """This machine cannot give draemu a pod network (said in one line)."""


class NetworkError(RuntimeError):
    """Setting up a namespace's links, addresses or routes failed."""


@dataclass(frozen=True)
class NetworkRanges:
    """The address ranges of the pod network (all private, all inside draemu's
    namespaces)."""

    cluster_cidr: str = "10.244.0.0/16"  # --pod-cidr: kube-controller-manager's --cluster-cidr
    service_cidr: str = "10.96.0.0/12"  # --service-cidr: kubeadm's default
    node_cidr: str = "172.18.0.0/16"  # the nodes' network, as kind's Docker network
    node_mask: int = 24  # --node-cidr-mask-size

    def __post_init__(self) -> None:
        for name in ("cluster_cidr", "service_cidr", "node_cidr"):
            value = getattr(self, name)
            try:
                net = ipaddress.ip_network(value, strict=True)
            except ValueError as err:
                raise ValueError(f"{name.replace('_', '-')} {value!r}: {err}") from None
            if net.version != 4:
                raise ValueError(f"{value}: the pod network is IPv4 only")
            if not net.is_private:
                raise ValueError(f"{value}: not a private range")
        nets = [ipaddress.ip_network(getattr(self, n)) for n in
                ("cluster_cidr", "service_cidr", "node_cidr")]
        for i, a in enumerate(nets):
            for b in nets[i + 1:]:
                if a.overlaps(b):
                    raise ValueError(f"the ranges {a} and {b} overlap")
        if not nets[0].prefixlen <= self.node_mask <= 30:
            raise ValueError(f"node CIDR mask size {self.node_mask} does not fit in "
                             f"{self.cluster_cidr}")

    @property
    def gateway(self) -> str:
        """The node network's gateway, in the cluster namespace: the apiserver's address."""
        return str(ipaddress.ip_network(self.node_cidr).network_address + 1)

    def node_ip(self, index: int) -> str:
        net = ipaddress.ip_network(self.node_cidr)
        if index + 2 >= net.num_addresses - 1:
            raise ValueError(f"node {index} has no address left in {self.node_cidr}")
        return str(net.network_address + index + 2)

    def service_ip(self, offset: int) -> str:
        """The offset-th address of the service CIDR (1: the kubernetes Service, 10: kube-dns)."""
        return str(ipaddress.ip_network(self.service_cidr).network_address + offset)

    def networks(self) -> list[str]:
        return [self.cluster_cidr, self.service_cidr, self.node_cidr]


def check_available() -> None:
    """Raise PodNetworkUnavailable when namespaces cannot be made here."""
    if os.geteuid() != 0:
        raise PodNetworkUnavailable(f"network namespaces need root (running as uid "
                                    f"{os.geteuid()})")
    for tool in ("ip", "nsenter"):
        if shutil.which(tool) is None:
            raise PodNetworkUnavailable(f"the {tool} command is missing (Debian: "
                                        f"{'iproute2' if tool == 'ip' else 'util-linux'})")


async def run_ip(netns: str, commands: list[str]) -> None:
    """`ip -batch` inside `netns`: one process for all the commands."""
    proc = await asyncio.create_subprocess_exec(
        "nsenter", f"--net={netns}", "--", "ip", "-batch", "-",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE)
    _, err = await proc.communicate("\n".join(commands).encode() + b"\n")
    if proc.returncode != 0:
        raise NetworkError(err.decode(errors="replace").strip() or
                           f"ip -batch exited {proc.returncode}")


class Holder:
    """One namespace, held by a nsholder.py process (which dies with this one)."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.proc: asyncio.subprocess.Process | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def netns(self) -> str:
        return f"/proc/{self.pid}/ns/net"

    @property
    def userns(self) -> str:
        return f"/proc/{self.pid}/ns/user"

    async def start(self, sysctls: dict[str, str], id_range: tuple[int, int] | None = None
                    ) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-I", "-S", str(HOLDER), stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        spec = {"userns": id_range is not None, "sysctls": sysctls}
        self.proc.stdin.write(json.dumps(spec).encode() + b"\n")
        try:
            line = await asyncio.wait_for(self.proc.stdout.readline(), 10)
            if line.strip() == b"userns" and id_range is not None:
                mapping = f"0 {id_range[0]} {id_range[1]}\n"
                for name in ("uid_map", "gid_map"):
                    Path(f"/proc/{self.pid}/{name}").write_text(mapping)
                self.proc.stdin.write(b"mapped\n")
                line = await asyncio.wait_for(self.proc.stdout.readline(), 10)
        except (TimeoutError, OSError) as err:
            await self.stop()
            raise NetworkError(f"{self.what}: {err}") from err
        if line.strip() != b"ready":
            assert self.proc.stderr is not None
            error = (await self.proc.stderr.read()).decode(errors="replace").strip()
            await self.stop()
            raise NetworkError(f"{self.what} could not be made: {error or 'holder exited'}")

    async def stop(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            try:
                self.proc.kill()
            except ProcessLookupError:
                pass
            await self.proc.wait()


def _link_name(prefix: str, key: str) -> str:
    return prefix + hashlib.sha256(key.encode()).hexdigest()[:15 - len(prefix)]


class ClusterNetwork:
    """The cluster namespace (the bridge and the gateway): made once, by the process
    that runs the apiserver."""

    def __init__(self, ranges: NetworkRanges) -> None:
        self.ranges = ranges
        self.holder = Holder("the cluster network namespace")
        # Whether kube-proxy and CoreDNS run on it (their programs were found).
        self.services = False
        self.dns = False

    @property
    def netns(self) -> str:
        return self.holder.netns

    @classmethod
    async def create(cls, ranges: NetworkRanges) -> ClusterNetwork:
        check_available()
        network = cls(ranges)
        try:
            await network.holder.start(ROUTING)
            prefix = ipaddress.ip_network(ranges.node_cidr).prefixlen
            await run_ip(network.netns, [
                f"link add {BRIDGE} type bridge", f"addr add {ranges.gateway}/{prefix} dev "
                f"{BRIDGE}", f"link set {BRIDGE} up"])
        except (NetworkError, OSError) as err:
            await network.close()
            raise PodNetworkUnavailable(str(err)) from err
        return network

    def dialer(self) -> NetnsDialer:
        return NetnsDialer(self.netns, self.ranges.networks())

    async def close(self) -> None:
        await self.holder.stop()


class NodeNetworks:
    """The nodes a process runs, attached to the cluster namespace (given by its path,
    as the process that made it hands it over)."""

    def __init__(self, cluster_netns: str, ranges: NetworkRanges, services: bool = True,
                 dns: bool = True) -> None:
        self.cluster_netns = cluster_netns
        self.ranges = ranges
        # kube-proxy runs on the nodes (pods reach the apiserver by the kubernetes
        # Service), and CoreDNS (kube-dns is the pods' nameserver).
        self.services = services
        self.dns = dns
        self.nodes: dict[str, NodeNetwork] = {}

    async def attach(self, name: str, index: int, id_range: tuple[int, int] | None = None
                     ) -> NodeNetwork:
        """The node's namespace, on the node network at its index's address (with a user
        namespace of `id_range`: its base and size)."""
        node = NodeNetwork(self, name, self.ranges.node_ip(index), id_range)
        try:
            await node.holder.start(ROUTING, id_range)
            link = _link_name("dn", name)
            prefix = ipaddress.ip_network(self.ranges.node_cidr).prefixlen
            await run_ip(self.cluster_netns, [
                f"link add {link} type veth peer name eth0 netns {node.holder.pid}",
                f"link set {link} master {BRIDGE} up"])
            await run_ip(node.netns, [f"addr add {node.ip}/{prefix} dev eth0",
                                      "link set eth0 up",
                                      f"route add default via {self.ranges.gateway}"])
        except BaseException:
            await node.holder.stop()
            raise
        self.nodes[name] = node
        await self._route_services()
        return node

    async def detach(self, name: str) -> None:
        node = self.nodes.pop(name, None)
        if node is not None:
            await node.holder.stop()
            await self._route_services()

    async def _route_services(self) -> None:
        """The service CIDR from the cluster namespace goes to the nodes (their
        kube-proxy answers it), spread over all of them."""
        cidr = self.ranges.service_cidr
        ips = [n.ip for n in self.nodes.values()]
        if not ips:
            command = f"route flush {cidr}"
        elif len(ips) == 1:
            command = f"route replace {cidr} via {ips[0]}"
        else:
            command = f"route replace {cidr} " + " ".join(f"nexthop via {ip}" for ip in ips)
        try:
            await run_ip(self.cluster_netns, [command])
        except NetworkError as err:
            log.warning("routing the service CIDR failed", error=str(err))

    async def close(self) -> None:
        for name in list(self.nodes):
            node = self.nodes.pop(name)
            await node.holder.stop()


class NodeNetwork:
    """One node's namespace and its pods' addresses (host-local IPAM over its podCIDR)."""

    def __init__(self, networks: NodeNetworks, name: str, ip: str,
                 id_range: tuple[int, int] | None = None) -> None:
        self.networks = networks
        self.name = name
        self.ip = ip
        self.id_range = id_range  # its user namespace's (base, size); None: none
        self.holder = Holder(f"node {name}'s network namespace")
        self.pod_cidr: str | None = None
        self._free: list[str] = []
        self._pods: dict[str, str] = {}
        self._cidr_set = asyncio.Event()

    @property
    def netns(self) -> str:
        return self.holder.netns

    @property
    def userns(self) -> str:
        return self.holder.userns

    @property
    def ready(self) -> bool:
        return self.pod_cidr is not None

    async def set_pod_cidr(self, cidr: str) -> None:
        """The node's podCIDR is known (from node-ipam): route it here from the cluster."""
        if cidr == self.pod_cidr:
            return
        net = ipaddress.ip_network(cidr, strict=False)
        await run_ip(self.networks.cluster_netns, [f"route replace {net} via {self.ip}"])
        hosts = [str(h) for h in net.hosts()]
        self.pod_cidr = str(net)
        self._free = [h for h in hosts[1:] if h not in self._pods.values()]
        self._cidr_set.set()
        log.info("node pod CIDR routed", node=self.name, cidr=self.pod_cidr)

    def gateway(self) -> str:
        assert self.pod_cidr is not None
        return str(ipaddress.ip_network(self.pod_cidr).network_address + 1)

    async def attach_pod(self, pod_uid: str, sandbox_pid: int) -> str:
        """Attach a pod's namespace (held by `sandbox_pid`): its address."""
        if self.pod_cidr is None:
            raise NetworkError("network is not ready: the node has no podCIDR yet")
        ip = self._pods.get(pod_uid)
        if ip is None:
            if not self._free:
                raise NetworkError(f"no IP addresses available in range set: {self.pod_cidr}")
            ip = self._pods[pod_uid] = self._free.pop(0)
        gateway, prefix = self.gateway(), ipaddress.ip_network(self.pod_cidr).prefixlen
        host = _link_name("veth", pod_uid)
        try:
            await run_ip(self.netns, [
                f"link add {host} type veth peer name eth0 netns {sandbox_pid}",
                f"addr add {gateway}/32 dev {host}", f"link set {host} up",
                f"route add {ip}/32 dev {host} scope host"])
            await run_ip(f"/proc/{sandbox_pid}/ns/net", [
                f"addr add {ip}/{prefix} dev eth0 noprefixroute", "link set eth0 up",
                f"route add {gateway} dev eth0 scope link src {ip}",
                f"route add {self.pod_cidr} via {gateway} dev eth0 src {ip}",
                f"route add default via {gateway} dev eth0"])
        except NetworkError:
            try:  # a half-made pair: the pod's end goes with its namespace, ours not
                await run_ip(self.netns, [f"link del {host}"])
            except NetworkError:
                pass
            self.release_pod(pod_uid)
            raise
        return ip

    def release_pod(self, pod_uid: str) -> None:
        """The pod's namespace is gone (its veth with it): its address is free again."""
        ip = self._pods.pop(pod_uid, None)
        if ip is not None and self.pod_cidr is not None:
            self._free.append(ip)

