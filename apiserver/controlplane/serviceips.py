"""IPAddress objects for Services' cluster IPs, as kube-apiserver keeps them since the
MultiCIDRServiceAllocator (GA in 1.33): one `networking.k8s.io/v1` IPAddress named by
each address, with the Service as its parentRef, made and removed as Services come and
go (upstream's allocator writes them with the Service; here a watch-cache listener does
it right after, and the allocator also counts them as taken).

It is also upstream's repair loop (ipallocator-repair-controller): missing IPAddresses
are made, ones whose Service no longer holds the address are deleted, and a Service
whose address another Service already holds gets a `ClusterIPAlreadyAllocated` Warning
Event. Several apiservers on one store may do this at once: creates and deletes that
lose the race are ignored.
"""

from __future__ import annotations

import contextlib
import uuid

from draemu.api.errors import StatusError
from draemu.api.meta import time_now
from draemu.api.types import Obj
from draemu.apiserver.controlplane.systemobjects import Bootstrap
from draemu.apiserver.genericregistry.store import Store
from draemu.apiserver.storage.cachelistener import CacheListener
from draemu.apiserver.storage.watchcache import Change
from draemu.log import get_logger

log = get_logger("apiserver.serviceips")
GROUP = "networking.k8s.io"
MANAGED_BY = "ipaddress.kubernetes.io/managed-by"
ALLOCATOR = "ipallocator.k8s.io"
FAMILY = "ipaddress.kubernetes.io/ip-family"
REPAIR = "ipallocator-repair-controller"
# Changes arriving together are handled in one pass.
_SETTLE = 0.05


def wanted_addresses(services: list[Obj]) -> dict[str, Obj]:
    """address -> the Service that holds it first (by creation, then name)."""
    out: dict[str, Obj] = {}
    ordered = sorted(services, key=lambda s: ((s.get("metadata") or {}).get(
        "creationTimestamp", ""), (s.get("metadata") or {}).get("namespace", ""),
        (s.get("metadata") or {}).get("name", "")))
    for svc in ordered:
        for ip in (svc.get("spec") or {}).get("clusterIPs") or []:
            if ip and ip != "None":
                out.setdefault(ip, svc)
    return out


def _parent(svc: Obj) -> Obj:
    meta = svc["metadata"]
    return {"group": "", "resource": "services", "namespace": meta.get("namespace", ""),
            "name": meta["name"]}


class ServiceIPAddresses(CacheListener):
    """Every change of a Service or an IPAddress queues one pass over all of them (the
    key "")."""

    name = "service-ip-addresses"
    failure = "service IP repair failed; retrying"
    settle = _SETTLE
    retry_after = 1.0

    def __init__(self, store: Store) -> None:
        self.listing = store.objects.list_objects
        self.boot = Bootstrap(store)
        self.services = store.table.by_group_resource("", "services")
        self.addresses = store.table.by_group_resource(GROUP, "ipaddresses")
        self._reported: set[tuple[str, str]] = set()
        super().__init__(store.cache, [r.prefix for r in (self.services, self.addresses)
                                       if r is not None])

    def start(self) -> None:
        if self.services is not None and self.addresses is not None:
            super().start()

    def changed(self, change: Change) -> None:
        self.enqueue("")

    def resynced(self) -> None:
        self.enqueue("")

    async def reconcile(self, key: str = "") -> None:
        services = self.listing("services", "", "")
        wanted = wanted_addresses(services)
        existing = {a["metadata"]["name"]: a for a in self.listing("ipaddresses", GROUP, "")}
        for ip, svc in wanted.items():
            if ip not in existing:
                await self._create(ip, svc)
        for svc in services:
            for ip in (svc.get("spec") or {}).get("clusterIPs") or []:
                holder = wanted.get(ip)
                if holder is not None and holder is not svc:
                    await self._report_duplicate(ip, svc)
        for ip, address in existing.items():
            labels = (address.get("metadata") or {}).get("labels") or {}
            holder = wanted.get(ip)
            parent = (address.get("spec") or {}).get("parentRef") or {}
            if labels.get(MANAGED_BY) != ALLOCATOR:
                continue  # made by someone else: theirs to remove
            if holder is None or _parent(holder) != {k: parent.get(k, "") for k in (
                    "group", "resource", "namespace", "name")}:
                await self._delete(address)

    async def _create(self, ip: str, svc: Obj) -> None:
        with contextlib.suppress(StatusError):
            await self.boot.ensure(GROUP, "ipaddresses", {
                "metadata": {"name": ip, "labels": {FAMILY: "IPv6" if ":" in ip else "IPv4",
                                                    MANAGED_BY: ALLOCATOR}},
                "spec": {"parentRef": _parent(svc)}})

    async def _delete(self, address: Obj) -> None:
        try:
            await self.boot.delete(GROUP, "ipaddresses", address)
        except StatusError as e:
            if e.reason not in ("NotFound", "Conflict"):
                raise

    async def _report_duplicate(self, ip: str, svc: Obj) -> None:
        meta = svc["metadata"]
        key = (meta.get("uid", ""), ip)
        if key in self._reported:
            return
        self._reported.add(key)
        log.warning("cluster IP assigned to several services", ip=ip,
                    service=f"{meta.get('namespace')}/{meta.get('name')}")
        stamp = time_now()
        await self.boot.ensure("", "events", {
            "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:16]}",
                         "namespace": meta.get("namespace", "default")},
            "involvedObject": {"kind": "Service", "apiVersion": "v1",
                               "namespace": meta.get("namespace"), "name": meta["name"],
                               "uid": meta.get("uid")},
            "reason": "ClusterIPAlreadyAllocated", "type": "Warning",
            "message": f"Cluster IP [{'IPv6' if ':' in ip else 'IPv4'}]:{ip} was assigned to "
                       "multiple services. Please recreate service",
            "source": {"component": REPAIR}, "reportingComponent": REPAIR,
            "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1})
