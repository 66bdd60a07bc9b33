"""ClusterIP and NodePort allocation for Services, as kube-apiserver's allocators do it
(pkg/registry/core/service/{ipallocator,portallocator}), over the watch cache.

Taken addresses and ports are those of the Services in the apiserver's cache plus the
ones this server handed out at random in the last few seconds (`Reservations`, kept in
the server's strategy state, so that two creates in a row do not both pick an address
the cache does not show yet). An address a user asks for is not reserved: a Service
deleted and created again with it at once must get it back. A new address is a random free
one from the upper part of the range, as upstream (the lower part is left for addresses
that users ask for, and its first address is `default/kubernetes`'s). Several apiservers
on one store can in rare races hand out one address twice: `duplicates()` finds those for
the start-up repair, which reports them as upstream's repair loop does.
"""

from __future__ import annotations

import ipaddress
import random
import time
from collections.abc import Iterable
from typing import Any

from draemu.api.types import Obj

SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/12")
NODE_PORT_RANGE = (30000, 32767)
NODE_PORT_RANGE_TEXT = f"{NODE_PORT_RANGE[0]}-{NODE_PORT_RANGE[1]}"
IP_ALLOCATED = "provided IP is already allocated"
PORT_ALLOCATED = "provided port is already allocated"
# How long an address handed out here counts as taken while the cache does not show it
# (a create takes milliseconds to reach the cache; a failed one leaves its address).
_RESERVATION_SECONDS = 5.0


class Reservations:
    """Addresses and ports one server handed out recently (time of hand-out), and the
    server's service CIDR (--service-cluster-ip-range)."""

    def __init__(self, cidr: ipaddress.IPv4Network | ipaddress.IPv6Network = SERVICE_CIDR
                 ) -> None:
        self.ips: dict[str, float] = {}
        self.ports: dict[int, float] = {}
        self.cidr = cidr


def reservations(state: dict[str, Any]) -> Reservations:
    """The server's reservations, from its strategies' state (`Context.state`)."""
    found = state.get("serviceallocation")
    if found is None:
        found = state["serviceallocation"] = Reservations()
    return found


def first_address(cidr: ipaddress.IPv4Network | ipaddress.IPv6Network = SERVICE_CIDR) -> str:
    """The address of `default/kubernetes` (the range's first usable address)."""
    return str(cidr.network_address + 1)


def not_in_range(ip: str, cidr: ipaddress.IPv4Network | ipaddress.IPv6Network = SERVICE_CIDR
                 ) -> str:
    return (f"the provided IP ({ip}) is not in the valid range. The range of valid IPs is "
            f"{cidr}")


def port_not_in_range() -> str:
    return ("provided port is not in the valid range. The range of valid ports is "
            f"{NODE_PORT_RANGE_TEXT}")


def _fresh(reserved: dict[Any, float]) -> set[Any]:
    now = time.monotonic()
    for key in [k for k, at in reserved.items() if now - at > _RESERVATION_SECONDS]:
        del reserved[key]
    return set(reserved)


def held_by_addresses(addresses: Iterable[Obj], services: Iterable[Obj]) -> set[str]:
    """IPAddress objects that hold their address: any not made for a Service by the
    allocator (a user's, or another implementation's), and the allocator's while their
    Service still holds the address (an orphan left by a deleted Service does not)."""
    holding = {((s.get("metadata") or {}).get("namespace", ""),
                (s.get("metadata") or {}).get("name", ""), ip)
               for s in services for ip in (s.get("spec") or {}).get("clusterIPs") or []}
    out: set[str] = set()
    for address in addresses:
        meta = address.get("metadata") or {}
        ref = (address.get("spec") or {}).get("parentRef") or {}
        ours = (meta.get("labels") or {}).get("ipaddress.kubernetes.io/managed-by") == \
            "ipallocator.k8s.io" and ref.get("resource") == "services" and not ref.get("group")
        if not ours or (ref.get("namespace", ""), ref.get("name", ""),
                        meta.get("name", "")) in holding:
            out.add(meta.get("name", ""))
    return out


def used_ips(services: Iterable[Obj]) -> set[str]:
    out: set[str] = set()
    for svc in services:
        for ip in (svc.get("spec") or {}).get("clusterIPs") or []:
            if ip and ip != "None":
                out.add(ip)
    return out


def used_node_ports(services: Iterable[Obj]) -> set[int]:
    out: set[int] = set()
    for svc in services:
        spec = svc.get("spec") or {}
        for port in spec.get("ports") or []:
            if port.get("nodePort"):
                out.add(port["nodePort"])
        if spec.get("healthCheckNodePort"):
            out.add(spec["healthCheckNodePort"])
    return out


def in_range(ip: str, cidr: ipaddress.IPv4Network | ipaddress.IPv6Network = SERVICE_CIDR
             ) -> bool:
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return False
    return (address.version == cidr.version and address in cidr
            and address not in (cidr.network_address, cidr.broadcast_address))


def claim_ip(ip: str, services: Iterable[Obj], held: Reservations,
             taken: set[str] | frozenset[str] = frozenset()) -> str:
    """Take a requested address: "" when done, else upstream's reason why not. `taken`:
    addresses IPAddress objects hold (`held_by_addresses`)."""
    if not in_range(ip, held.cidr):
        return not_in_range(ip, held.cidr)
    if ip in used_ips(services) or ip in _fresh(held.ips) or ip in taken:
        return IP_ALLOCATED
    return ""


def _dynamic_offset(size: int) -> int:
    """Upstream's static band: size/16, between 16 and 256 addresses."""
    return min(max(16, size // 16), 256)


def next_ip(services: Iterable[Obj], held: Reservations,
            also_taken: set[str] | frozenset[str] = frozenset()) -> str | None:
    """A random free address from the dynamic band (then anywhere); None when full."""
    taken = used_ips(services) | _fresh(held.ips) | also_taken
    cidr = held.cidr
    size = cidr.num_addresses - 2  # without network and broadcast addresses
    start = _dynamic_offset(size)
    for low, high in ((start, size), (0, start)):
        if high <= low:
            continue
        # Random probes first (the range is large), then a scan when nearly full.
        for _ in range(64):
            candidate = str(cidr.network_address + 1 + random.randrange(low, high))
            if candidate not in taken:
                held.ips[candidate] = time.monotonic()
                return candidate
        for offset in range(low, high):
            candidate = str(cidr.network_address + 1 + offset)
            if candidate not in taken:
                held.ips[candidate] = time.monotonic()
                return candidate
    return None


def claim_node_port(port: int, services: Iterable[Obj], held: Reservations) -> str:
    if not NODE_PORT_RANGE[0] <= port <= NODE_PORT_RANGE[1]:
        return port_not_in_range()
    if port in used_node_ports(services) or port in _fresh(held.ports):
        return PORT_ALLOCATED
    return ""


def next_node_port(services: Iterable[Obj], also_taken: set[int],
                   held: Reservations) -> int | None:
    taken = used_node_ports(services) | _fresh(held.ports) | also_taken
    free = [p for p in range(NODE_PORT_RANGE[0], NODE_PORT_RANGE[1] + 1) if p not in taken]
    if not free:
        return None
    port = random.choice(free)
    held.ports[port] = time.monotonic()
    return port


def duplicates(services: Iterable[Obj]) -> dict[str, list[Obj]]:
    """Cluster IPs held by more than one Service (the repair loop reports them)."""
    holders: dict[str, list[Obj]] = {}
    for svc in services:
        for ip in (svc.get("spec") or {}).get("clusterIPs") or []:
            if ip and ip != "None":
                holders.setdefault(ip, []).append(svc)
    return {ip: found for ip, found in holders.items() if len(found) > 1}
