"""What exists from the start, as kube-apiserver's start-up controllers make it:

- the namespaces `default`, `kube-system`, `kube-public` and `kube-node-lease`;
- the system PriorityClasses `system-node-critical` and `system-cluster-critical`;
- the default ServiceCIDR `kubernetes` (Ready) for the service IP range;
- the Service `default/kubernetes` (the range's first address, port 443 to the
  apiserver's port) with its Endpoints and EndpointSlice at the advertised address,
  corrected when they differ (kube-apiserver's kubernetes-service and endpoint
  reconciler controllers);
- the ConfigMap `kube-system/extension-apiserver-authentication` with the client CA and
  the front-proxy (request header) settings;
- the API Priority and Fairness FlowSchemas and PriorityLevelConfigurations
  (`registry/flowcontrol/bootstrapconfig.py`), as kube-apiserver's priority-and-fairness
  config producer keeps them (its periodic pass is `flowcontrol/controller.py`'s).

(`serviceips` then keeps the IPAddress objects of Services' cluster IPs.)

Everything goes through the generic store as any write (defaults, validation, the
admission chain), as `system:apiserver`."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
from collections.abc import Callable
from typing import Any

from draemu.api.errors import StatusError
from draemu.api.meta import time_now
from draemu.api.types import Obj
from draemu.apiserver.genericregistry.store import Store
from draemu.apiserver.registry.core import serviceallocation
from draemu.apiserver.registry.flowcontrol import bootstrapconfig as apf
from draemu.apiserver.registry.request import RequestContext
from draemu.apiserver.registry.scheduling.priorityclass import SYSTEM_PRIORITY_CLASSES
from draemu.apiserver.wire.jsoncopy import clone
from draemu.log import get_logger

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_MANAGER = "kube-apiserver"
AUTHENTICATION_CONFIGMAP = "extension-apiserver-authentication"
log = get_logger("apiserver.bootstrap")


class Bootstrap:
    """Creates (and for a few objects corrects) the start-up objects of one server, as
    any write: through the generic store and the admission chain, as `system:apiserver`."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.table = store.table

    def _request(self, group: str, resource: str, verb: str, namespace: str, name: str = "",
                 subresource: str = "") -> RequestContext | None:
        r = self.table.by_group_resource(group, resource)
        if r is None:
            return None
        return RequestContext.system(r, verb, namespace, name, subresource)

    def get(self, group: str, resource: str, namespace: str, name: str) -> Obj | None:
        return self.store.objects.lookup(resource, group, namespace, name)

    async def ensure(self, group: str, resource: str, obj: Obj) -> Obj | None:
        """Create `obj` (storage version) unless an object of its name exists."""
        meta = obj["metadata"]
        namespace = meta.get("namespace", "")
        found = self.get(group, resource, namespace, meta["name"])
        if found is not None:
            return found
        req = self._request(group, resource, "create", namespace)
        if req is None:
            return None
        obj.setdefault("apiVersion", req.api_version)
        obj.setdefault("kind", req.resource.kind)
        try:
            return await self.store.create(req, obj, dry_run=False, manager=_MANAGER)
        except StatusError as e:
            if e.reason != "AlreadyExists":  # another apiserver on the same store was first
                raise
            return self.get(group, resource, namespace, meta["name"])

    async def correct(self, group: str, resource: str, namespace: str, name: str,
                      change: Callable[[Obj], None], subresource: str = "") -> None:
        """Update an object with `change` when that changes it."""
        await self.store.storage.caught_up()
        found = self.get(group, resource, namespace, name)
        if found is None:
            return
        wanted = clone(found)
        change(wanted)
        if wanted == found:
            return
        req = self._request(group, resource, "update", namespace, name, subresource)
        if req is None:
            return

        async def propose(current: Obj) -> Obj:
            change(current)
            return current

        await self.store.update(req, propose, dry_run=False, manager=_MANAGER, pinned=False)

    async def delete(self, group: str, resource: str, obj: Obj) -> None:
        """Delete `obj` if it is still at its resourceVersion."""
        meta = obj["metadata"]
        namespace = meta.get("namespace", "")
        req = self._request(group, resource, "delete", namespace, meta["name"])
        if req is not None:
            await self.store.delete(req, namespace, meta["name"], {"preconditions": {
                "resourceVersion": meta["resourceVersion"]}}, dry_run=False)


async def ensure_system_namespaces(store: Store) -> None:
    boot = Bootstrap(store)
    for name in SYSTEM_NAMESPACES:
        await boot.ensure("", "namespaces", {"metadata": {"name": name}})
    await store.storage.caught_up()


async def ensure_system_objects(store: Store, address: str, port: int,
                                client_ca: bytes | None, front_proxy_ca: bytes | None,
                                service_cidr: str = str(serviceallocation.SERVICE_CIDR)
                                ) -> None:
    """Everything but the namespaces (which must exist before the server serves)."""
    cidr = ipaddress.ip_network(service_cidr)
    boot = Bootstrap(store)
    storage = store.storage
    for known in SYSTEM_PRIORITY_CLASSES:
        await boot.ensure("scheduling.k8s.io", "priorityclasses", {
            "metadata": {"name": known["name"]}, "value": known["value"],
            "description": known["description"], "preemptionPolicy": "PreemptLowerPriority"})
    await _ensure_service_cidr(boot, cidr)
    await storage.caught_up()
    await _ensure_kubernetes_service(boot, advertise_address(address), port, cidr)
    if client_ca is not None:
        await _ensure_authentication_configmap(boot, client_ca, front_proxy_ca)
    await ensure_flowcontrol_configuration(boot)
    await storage.caught_up()


async def ensure_flowcontrol_configuration(boot: Bootstrap) -> None:
    """Suggested objects, then mandatory ones (created when missing, their specs
    revised as `flowcontrol.bootstrap.revise` decides), then the objects that still
    auto-update but are no longer bootstrap objects are deleted."""
    group = "flowcontrol.apiserver.k8s.io"
    kinds = (("prioritylevelconfigurations", apf.SUGGESTED_LEVELS, apf.MANDATORY_LEVELS),
             ("flowschemas", apf.SUGGESTED_SCHEMAS, apf.MANDATORY_SCHEMAS))
    if boot.table.by_group_resource(group, "flowschemas") is None:
        return
    # Concurrently: the store commits writes that come together at once.
    await asyncio.gather(*(_ensure_apf_object(boot, group, resource, wanted, fixed)
                           for resource, suggested, mandatory in kinds
                           for objects, fixed in ((suggested, False), (mandatory, True))
                           for wanted in objects))
    await boot.store.storage.caught_up()
    for resource, suggested, mandatory in kinds:
        r = boot.table.by_group_resource(group, resource)
        assert r is not None
        names = {o["metadata"]["name"] for o in (*suggested, *mandatory)}
        for _key, obj in boot.store.cache.list(r.prefix):
            meta = obj["metadata"]
            auto = apf.parse_bool((meta.get("annotations") or {}).get(apf.AUTO_UPDATE))
            if meta["name"] in names or meta.get("finalizers") or auto is not True:
                continue
            try:
                await boot.delete(group, resource, obj)
            except StatusError as e:
                if e.reason not in ("NotFound", "Conflict"):
                    raise


async def _ensure_apf_object(boot: Bootstrap, group: str, resource: str, wanted: Obj,
                             fixed: bool) -> None:
    name = wanted["metadata"]["name"]
    if boot.get(group, resource, "", name) is None:
        await boot.ensure(group, resource, clone(wanted))
        return

    def revise(obj: Obj) -> None:
        revised = apf.revise(obj, wanted, fixed)
        if revised is not None:
            obj["spec"] = clone(revised["spec"])
            obj["metadata"]["annotations"] = dict(revised["metadata"].get("annotations") or {})

    try:
        await boot.correct(group, resource, "", name, revise)
    except StatusError as e:  # deleted or changed meanwhile: the next pass sees it
        if e.reason not in ("NotFound", "Conflict"):
            raise


def advertise_address(bind: str) -> str:
    """The address published for the apiserver, as kube-apiserver chooses its
    --advertise-address: the bind address, or for a loopback or unspecified one the
    host's primary address (falling back to the bind address when there is none)."""
    try:
        ip = ipaddress.ip_address("127.0.0.1" if bind == "localhost" else bind)
    except ValueError:
        return bind
    if not (ip.is_loopback or ip.is_unspecified):
        return str(ip)
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: a route lookup only
            found = ipaddress.ip_address(probe.getsockname()[0])
        if not (found.is_loopback or found.is_unspecified or found.is_link_local):
            return str(found)
    except OSError:
        pass
    return "127.0.0.1"


async def _ensure_service_cidr(boot: Bootstrap, cidr: Any) -> None:
    await boot.ensure("networking.k8s.io", "servicecidrs", {
        "metadata": {"name": "kubernetes"}, "spec": {"cidrs": [str(cidr)]}})

    def ready(obj: Obj) -> None:
        conditions = obj.setdefault("status", {}).setdefault("conditions", [])
        if not any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
            conditions[:] = [c for c in conditions if c.get("type") != "Ready"]
            conditions.append({"type": "Ready", "status": "True", "reason": "",
                               "message": "Kubernetes default Service CIDR is ready",
                               "lastTransitionTime": time_now()})

    await boot.correct("networking.k8s.io", "servicecidrs", "", "kubernetes", ready,
                       subresource="status")


async def _ensure_kubernetes_service(boot: Bootstrap, address: str, port: int,
                                     cidr: Any) -> None:
    ports = [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]
    await boot.ensure("", "services", {
        "metadata": {"name": "kubernetes", "namespace": "default",
                     "labels": {"provider": "kubernetes", "component": "apiserver"}},
        "spec": {"type": "ClusterIP", "clusterIP": serviceallocation.first_address(cidr),
                 "ipFamilyPolicy": "SingleStack", "sessionAffinity": "None",
                 "ports": ports}})

    def service(obj: Obj) -> None:
        spec = obj.setdefault("spec", {})
        if spec.get("type") != "ClusterIP" or [
                {k: p.get(k) for k in ("name", "port", "protocol", "targetPort")}
                for p in spec.get("ports") or []] != ports:
            spec["type"], spec["ports"] = "ClusterIP", clone(ports)

    await boot.correct("", "services", "default", "kubernetes", service)
    try:
        loopback_ip = ipaddress.ip_address(address).is_loopback
    except ValueError:
        loopback_ip = True
    if loopback_ip:
        # Endpoints may not hold loopback addresses (nor may kube-apiserver advertise
        # one): without a routable address, the Service has no endpoints.
        log.warning("no routable address to advertise: default/kubernetes has no endpoints")
        return
    subsets = [{"addresses": [{"ip": address}],
                "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]
    await boot.ensure("", "endpoints", {
        "metadata": {"name": "kubernetes", "namespace": "default",
                     "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
        "subsets": subsets})

    def endpoints(obj: Obj) -> None:
        obj["subsets"] = clone(subsets)
        obj["metadata"].setdefault("labels", {})["endpointslice.kubernetes.io/skip-mirror"] = \
            "true"

    await boot.correct("", "endpoints", "default", "kubernetes", endpoints)
    slice_endpoints = [{"addresses": [address], "conditions": {"ready": True}}]
    slice_ports = [{"name": "https", "port": port, "protocol": "TCP"}]
    await boot.ensure("discovery.k8s.io", "endpointslices", {
        "metadata": {"name": "kubernetes", "namespace": "default",
                     "labels": {"kubernetes.io/service-name": "kubernetes"}},
        "addressType": "IPv4", "endpoints": slice_endpoints, "ports": slice_ports})

    def endpoint_slice(obj: Obj) -> None:
        obj["addressType"] = "IPv4"
        obj["endpoints"], obj["ports"] = clone(slice_endpoints), clone(slice_ports)
        obj["metadata"].setdefault("labels", {})["kubernetes.io/service-name"] = "kubernetes"

    await boot.correct("discovery.k8s.io", "endpointslices", "default", "kubernetes",
                       endpoint_slice)


def authentication_data(client_ca: bytes, front_proxy_ca: bytes | None) -> dict[str, str]:
    """The ConfigMap's data as kube-apiserver's cluster-authentication-trust controller
    writes it (kubeadm's request-header flags)."""
    data = {"client-ca-file": client_ca.decode()}
    if front_proxy_ca is not None:
        data.update({
            "requestheader-allowed-names": json.dumps(["front-proxy-client"]),
            "requestheader-client-ca-file": front_proxy_ca.decode(),
            "requestheader-extra-headers-prefix": json.dumps(["X-Remote-Extra-"]),
            "requestheader-group-headers": json.dumps(["X-Remote-Group"]),
            "requestheader-username-headers": json.dumps(["X-Remote-User"]),
        })
    return data


async def _ensure_authentication_configmap(boot: Bootstrap, client_ca: bytes,
                                           front_proxy_ca: bytes | None) -> None:
    data = authentication_data(client_ca, front_proxy_ca)
    await boot.ensure("", "configmaps", {
        "metadata": {"name": AUTHENTICATION_CONFIGMAP, "namespace": "kube-system"},
        "data": data})

    def update(obj: Obj) -> None:
        obj["data"] = dict(data)

    await boot.correct("", "configmaps", "kube-system", AUTHENTICATION_CONFIGMAP, update)
