"""The endpoints and endpointslice controllers (upstream's pkg/controller/endpoint and
endpointslice): for every Service with a selector, the pods it selects that have an IP.

`endpoints` keeps an Endpoints object of the Service's name: ready pods in `addresses`,
others in `notReadyAddresses` (all ready with publishNotReadyAddresses), terminating
pods left out, one subset per distinct set of resolved ports. `endpointslice` keeps
EndpointSlices labelled `kubernetes.io/service-name`, owned by the Service, with up to
100 endpoints each and their `ready`, `serving` and `terminating` conditions (terminating
pods stay, not ready). A service port's named targetPort is looked up in each pod's
container ports; a pod without it is left out of that port. Services without a selector
are left to their owners.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from draemu.api.labels import matches
from draemu.api.meta import (
    meta,
    name_of,
    namespace_of,
    owner_reference,
    pod_is_ready,
    pod_is_terminal,
    uid_of,
)
from draemu.api.types import Obj
from draemu.client import ApiError, key_of
from draemu.controllers.base import Controller
from draemu.controllers.expectations import Expectations

HEADLESS = "service.kubernetes.io/headless"
SERVICE_NAME = "kubernetes.io/service-name"
SLICE_MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
SLICE_CONTROLLER = "endpointslice-controller.k8s.io"
ENDPOINTS_MANAGED_BY = "endpoints.kubernetes.io/managed-by"
ENDPOINTS_CONTROLLER = "endpoint-controller"
MAX_PER_SLICE = 100
MAX_ENDPOINTS = 1000  # addresses an Endpoints object holds
OVER_CAPACITY = "endpoints.kubernetes.io/over-capacity"


def pod_ip(pod: Obj) -> str:
    status = pod.get("status") or {}
    return str(status.get("podIP") or ((status.get("podIPs") or [{}])[0]).get("ip") or "")


def should_include(pod: Obj, include_terminating: bool) -> bool:
    """ShouldPodBeInEndpoints: not terminal, has an IP, terminating only if allowed."""
    if pod_is_terminal(pod) or not pod_ip(pod):
        return False
    return include_terminating or not meta(pod).get("deletionTimestamp")


def find_port(pod: Obj, service_port: Obj) -> int | None:
    """The pod port a service port's targetPort means (a number, or a container port's
    name with the same protocol); None if the pod has no such port."""
    target = service_port.get("targetPort", service_port.get("port"))
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    protocol = service_port.get("protocol", "TCP")
    for c in (pod.get("spec") or {}).get("containers") or []:
        for p in c.get("ports") or []:
            if p.get("name") == target and p.get("protocol", "TCP") == protocol:
                return int(p["containerPort"])
    return None


def _target_ref(pod: Obj) -> Obj:
    return {"kind": "Pod", "namespace": namespace_of(pod), "name": name_of(pod),
            "uid": uid_of(pod)}


def _hostname(pod: Obj, service: Obj) -> str | None:
    spec = pod.get("spec") or {}
    if spec.get("hostname") and spec.get("subdomain") == name_of(service):
        return str(spec["hostname"])
    return None


def _headless(service: Obj) -> bool:
    return (service.get("spec") or {}).get("clusterIP") == "None"


def _selected(service: Obj, pods: list[Obj]) -> list[Obj]:
    selector = (service.get("spec") or {}).get("selector") or {}
    return sorted((p for p in pods if namespace_of(p) == namespace_of(service)
                   and matches({"matchLabels": selector}, meta(p).get("labels"))),
                  key=name_of)


def truncate(subsets: list[Obj]) -> bool:
    """Keep at most MAX_ENDPOINTS addresses (upstream's truncateEndpoints): ready ones
    first, each subset keeping its share (rounded up); True when anything was dropped."""
    ready = sum(len(s.get("addresses") or []) for s in subsets)
    not_ready = sum(len(s.get("notReadyAddresses") or []) for s in subsets)
    if ready + not_ready <= MAX_ENDPOINTS:
        return False
    field = "addresses" if ready > MAX_ENDPOINTS else "notReadyAddresses"
    room = MAX_ENDPOINTS if field == "addresses" else MAX_ENDPOINTS - ready
    total = ready if field == "addresses" else not_ready
    left = room
    for subset in subsets:
        keep = min(left, math.ceil(len(subset.get(field) or []) / total * room))
        subset[field] = (subset.get(field) or [])[:keep]
        if field == "addresses":
            subset.pop("notReadyAddresses", None)
        left -= len(subset[field])
    for subset in subsets:
        for f in ("addresses", "notReadyAddresses"):
            if f in subset and not subset[f]:
                del subset[f]
    return True


class _ServiceController(Controller):
    def setup(self) -> None:
        inf = self.ctx.informers
        self.services = inf.informer("v1", "services")
        self.pods = inf.informer("v1", "pods")
        self.handlers_enqueue(self.services)
        self.pods.add_handler(on_add=self._pod_changed,
                              on_update=lambda o, n: (self._pod_changed(o),
                                                      self._pod_changed(n)),
                              on_delete=self._pod_changed)

    def primary(self) -> Any:
        return self.services

    def _pod_changed(self, pod: Obj) -> None:
        labels = meta(pod).get("labels")
        for svc in self.services.list():
            selector = (svc.get("spec") or {}).get("selector")
            if selector and namespace_of(svc) == namespace_of(pod) and matches(
                    {"matchLabels": selector}, labels):
                self.queue.add(key_of(svc))


class EndpointsController(_ServiceController):
    name = "endpoints"
    workers = 2

    def component(self) -> str:
        return "endpoint-controller"

    def setup(self) -> None:
        super().setup()
        self.endpoints = self.ctx.informers.informer("v1", "endpoints")
        self.endpoints.add_handler(on_delete=lambda ep: self.queue.add(key_of(ep)))

    def subsets(self, service: Obj) -> list[Obj]:
        spec = service.get("spec") or {}
        publish = bool(spec.get("publishNotReadyAddresses"))
        by_ports: dict[str, Obj] = {}
        for pod in _selected(service, self.pods.list()):
            if not should_include(pod, publish):
                continue
            address: Obj = {"ip": pod_ip(pod), "targetRef": _target_ref(pod)}
            if (pod.get("spec") or {}).get("nodeName"):
                address["nodeName"] = pod["spec"]["nodeName"]
            hostname = _hostname(pod, service)
            if hostname:
                address["hostname"] = hostname
            ready = publish or pod_is_ready(pod)
            port_sets: list[list[Obj]] = []
            if not spec.get("ports"):
                if _headless(service):
                    port_sets.append([])
            for sp in spec.get("ports") or []:
                number = find_port(pod, sp)
                if number is None:
                    continue
                port: Obj = {"port": number, "protocol": sp.get("protocol", "TCP")}
                if sp.get("name"):
                    port["name"] = sp["name"]
                if sp.get("appProtocol"):
                    port["appProtocol"] = sp["appProtocol"]
                port_sets.append([port])
            for ports in port_sets:
                key = repr(sorted((p.get("name", ""), p["port"], p["protocol"]) for p in ports))
                subset = by_ports.setdefault(key, {"ports": ports} if ports else {})
                subset.setdefault("addresses" if ready else "notReadyAddresses",
                                  []).append(address)
        out = []
        for _, subset in sorted(by_ports.items()):
            for field in ("addresses", "notReadyAddresses"):
                if field in subset:
                    subset[field].sort(key=lambda a: (a["ip"], a["targetRef"]["name"]))
            out.append(subset)
        return out

    async def reconcile(self, key: str) -> float | None:
        service = self.services.get(key)
        namespace, _, name = key.partition("/")
        if service is None:
            try:
                await self.client.delete("v1", "endpoints", name, namespace)
            except ApiError as e:
                if e.code != 404:
                    raise
            return None
        if not (service.get("spec") or {}).get("selector"):
            return None
        subsets = self.subsets(service)
        truncated = truncate(subsets)
        labels = dict(meta(service).get("labels") or {})
        labels[ENDPOINTS_MANAGED_BY] = ENDPOINTS_CONTROLLER
        if _headless(service):
            labels[HEADLESS] = ""
        else:
            labels.pop(HEADLESS, None)
        current = self.endpoints.get(key)
        over = OVER_CAPACITY in (meta(current).get("annotations") or {}) if current else False
        if current is not None and (current.get("subsets") or []) == subsets and \
                (meta(current).get("labels") or {}) == labels and over == truncated:
            return None
        body = copy.deepcopy(current) if current is not None else {
            "apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": name, "namespace": namespace}}
        body["metadata"]["labels"] = labels
        annotations = body["metadata"].setdefault("annotations", {})
        if truncated:
            annotations[OVER_CAPACITY] = "truncated"
        else:
            annotations.pop(OVER_CAPACITY, None)
        if not annotations:
            del body["metadata"]["annotations"]
        body["subsets"] = subsets
        if not subsets:
            body.pop("subsets")
        try:
            if current is None:
                await self.client.create("v1", "endpoints", body, namespace=namespace)
            else:
                await self.client.update("v1", "endpoints", body)
        except ApiError as e:
            if e.code == 409 and current is None:
                return 0.5  # created meanwhile; update it once the informer has it
            raise
        return None


class EndpointSliceController(_ServiceController):
    name = "endpointslice"
    workers = 2

    def component(self) -> str:
        return "endpoint-slice-controller"

    def setup(self) -> None:
        super().setup()
        self.slices = self.ctx.informers.informer("discovery.k8s.io/v1", "endpointslices")
        self.nodes = self.ctx.informers.informer("v1", "nodes")
        self.expectations = Expectations()
        self.slices.add_handler(on_delete=self._slice_changed,
                                on_update=lambda _o, n: self._slice_changed(n))

    def _slice_changed(self, es: Obj) -> None:
        labels = meta(es).get("labels") or {}
        if labels.get(SLICE_MANAGED_BY) == SLICE_CONTROLLER and labels.get(SERVICE_NAME):
            self.queue.add(f"{namespace_of(es)}/{labels[SERVICE_NAME]}")

    def endpoints_of(self, service: Obj) -> list[tuple[list[Obj], Obj]]:
        """(the pod's resolved ports, its endpoint) for every selected pod with an IP."""
        out = []
        for pod in _selected(service, self.pods.list()):
            if not should_include(pod, True):
                continue
            serving = pod_is_ready(pod)
            terminating = bool(meta(pod).get("deletionTimestamp"))
            if (service.get("spec") or {}).get("publishNotReadyAddresses"):
                serving = True
            ep: Obj = {"addresses": [pod_ip(pod)],
                       "conditions": {"ready": serving and not terminating,
                                      "serving": serving, "terminating": terminating},
                       "targetRef": _target_ref(pod)}
            node_name = (pod.get("spec") or {}).get("nodeName")
            if node_name:
                ep["nodeName"] = node_name
                node = self.nodes.get(node_name)
                zone = ((meta(node).get("labels") or {}) if node else {}).get(
                    "topology.kubernetes.io/zone")
                if zone:
                    ep["zone"] = zone
            hostname = _hostname(pod, service)
            if hostname:
                ep["hostname"] = hostname
            out.append((self.ports_of(service, pod), ep))
        return out

    @staticmethod
    def ports_of(service: Obj, pod: Obj) -> list[Obj]:
        """The service ports resolved against `pod` (a named targetPort it lacks is left
        out)."""
        out = []
        for sp in (service.get("spec") or {}).get("ports") or []:
            number = find_port(pod, sp)
            if number is None:
                continue
            port: Obj = {"name": sp.get("name", ""), "protocol": sp.get("protocol", "TCP"),
                         "port": number}
            if sp.get("appProtocol"):
                port["appProtocol"] = sp["appProtocol"]
            out.append(port)
        return out

    def _labels(self, service: Obj) -> dict[str, str]:
        labels = {k: v for k, v in (meta(service).get("labels") or {}).items()
                  if k not in (SERVICE_NAME, SLICE_MANAGED_BY, HEADLESS)}
        labels[SERVICE_NAME] = name_of(service)
        labels[SLICE_MANAGED_BY] = SLICE_CONTROLLER
        if _headless(service):
            labels[HEADLESS] = ""
        return labels

    async def reconcile(self, key: str) -> float | None:
        service = self.services.get(key)
        namespace, _, name = key.partition("/")
        owned = sorted((s for s in self.slices.list() if namespace_of(s) == namespace
                        and (meta(s).get("labels") or {}).get(SERVICE_NAME) == name
                        and (meta(s).get("labels") or {}).get(SLICE_MANAGED_BY)
                        == SLICE_CONTROLLER), key=name_of)
        if service is None or not (service.get("spec") or {}).get("selector") \
                or meta(service).get("deletionTimestamp"):
            for es in owned:  # the garbage collector would too; be prompt as upstream
                await self._delete(es)
            return None
        if not self.expectations.satisfied(key, lambda n: self.slices.get(f"{namespace}/{n}")):
            return 0.5  # our last creates are not in the informer yet
        # Endpoints grouped by their resolved ports (pods may name their ports
        # differently), each group in slices of at most 100.
        groups: dict[str, tuple[list[Obj], list[Obj]]] = {}
        for ports, ep in self.endpoints_of(service):
            groups.setdefault(repr(ports), (ports, []))[1].append(ep)
        if not groups:  # upstream's placeholder: no endpoints, no ports
            groups[""] = ([], [])
        labels = self._labels(service)
        wanted = [(ports, eps[i:i + MAX_PER_SLICE])
                  for _, (ports, eps) in sorted(groups.items())
                  for i in range(0, max(len(eps), 1), MAX_PER_SLICE)]
        spare = list(owned)
        for ports, chunk in wanted:
            es = next((s for s in spare if (s.get("ports") or []) == ports), None)
            if es is not None:
                spare.remove(es)
                if (es.get("endpoints") or []) == chunk and \
                        (meta(es).get("labels") or {}) == labels:
                    continue
                body = copy.deepcopy(es)
                body["metadata"]["labels"] = labels
                body["endpoints"] = chunk
                await self.client.update("discovery.k8s.io/v1", "endpointslices", body)
                continue
            body = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                    "metadata": {"generateName": f"{name}-", "namespace": namespace,
                                 "labels": labels,
                                 "ownerReferences": [owner_reference(service)]},
                    "addressType": "IPv6" if any(":" in e["addresses"][0]
                                                 for e in chunk) else "IPv4",
                    "endpoints": chunk, "ports": ports}
            created = await self.client.create("discovery.k8s.io/v1", "endpointslices",
                                               body, namespace=namespace)
            self.expectations.expect_add(key, name_of(created))
        for es in spare:
            await self._delete(es)
        return None

    async def _delete(self, es: Obj) -> None:
        try:
            await self.client.delete("discovery.k8s.io/v1", "endpointslices", name_of(es),
                                     namespace_of(es))
        except ApiError as e:
            if e.code != 404:
                raise
