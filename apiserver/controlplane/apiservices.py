"""The APIServices of the group-versions this apiserver serves itself ("Local"), as
kube-apiserver's aggregator registers them: one per built-in group-version that has a
priority in upstream's table, made once at start (label
`kube-aggregator.kubernetes.io/automanaged: onstart`), and one per group-version a
CustomResourceDefinition serves, kept while a CRD serves it (`automanaged: true`, group
priority 1000, version priority 100: the crdRegistrationController's)."""

from __future__ import annotations

import asyncio

from draemu.api.errors import StatusError
from draemu.api.meta import time_now
from draemu.api.types import Obj
from draemu.apiserver.controlplane.systemobjects import Bootstrap
from draemu.apiserver.endpoints import aggregation
from draemu.apiserver.endpoints.aggregation import Aggregator
from draemu.apiserver.genericregistry.store import Store
from draemu.apiserver.registry.apiextensions.customresource import CustomResourceStrategy
from draemu.apiserver.storage.cachelistener import CacheListener
from draemu.apiserver.storage.watchcache import Change
from draemu.log import get_logger

log = get_logger("apiserver.apiservices")

GROUP = "apiregistration.k8s.io"
RESOURCE = "apiservices"
AUTOMANAGED = "kube-aggregator.kubernetes.io/automanaged"
ON_START, CONTINUOUSLY = "onstart", "true"
CRD_GROUP_PRIORITY, CRD_VERSION_PRIORITY = 1000, 100

# (group, version) -> (group priority minimum, version priority): kube-apiserver's
# DefaultGenericAPIServicePriorities merged with its own apiVersionPriorities.
PRIORITIES: dict[tuple[str, str], tuple[int, int]] = {
    ("", "v1"): (18000, 1),
    ("events.k8s.io", "v1"): (17750, 15), ("events.k8s.io", "v1beta1"): (17750, 5),
    ("authentication.k8s.io", "v1"): (17700, 15),
    ("authentication.k8s.io", "v1beta1"): (17700, 9),
    ("authentication.k8s.io", "v1alpha1"): (17700, 1),
    ("authorization.k8s.io", "v1"): (17600, 15),
    ("certificates.k8s.io", "v1"): (17300, 15),
    ("certificates.k8s.io", "v1beta1"): (17300, 9),
    ("certificates.k8s.io", "v1alpha1"): (17300, 1),
    ("rbac.authorization.k8s.io", "v1"): (17000, 15),
    ("apiextensions.k8s.io", "v1"): (16700, 15),
    ("admissionregistration.k8s.io", "v1"): (16700, 15),
    ("admissionregistration.k8s.io", "v1beta1"): (16700, 12),
    ("admissionregistration.k8s.io", "v1alpha1"): (16700, 9),
    ("coordination.k8s.io", "v1"): (16500, 15), ("coordination.k8s.io", "v1beta1"): (16500, 13),
    ("coordination.k8s.io", "v1alpha2"): (16500, 12),
    ("discovery.k8s.io", "v1"): (16200, 15), ("discovery.k8s.io", "v1beta1"): (16200, 12),
    ("flowcontrol.apiserver.k8s.io", "v1"): (16100, 21),
    ("flowcontrol.apiserver.k8s.io", "v1beta3"): (16100, 18),
    ("flowcontrol.apiserver.k8s.io", "v1beta2"): (16100, 15),
    ("flowcontrol.apiserver.k8s.io", "v1beta1"): (16100, 12),
    ("flowcontrol.apiserver.k8s.io", "v1alpha1"): (16100, 9),
    ("internal.apiserver.k8s.io", "v1alpha1"): (16000, 9),
    ("storagemigration.k8s.io", "v1"): (15800, 15),
    ("storagemigration.k8s.io", "v1beta1"): (15800, 9),
    ("apps", "v1"): (17800, 15),
    ("autoscaling", "v1"): (17500, 15), ("autoscaling", "v2"): (17500, 30),
    ("autoscaling", "v2beta1"): (17500, 9), ("autoscaling", "v2beta2"): (17500, 1),
    ("batch", "v1"): (17400, 15), ("batch", "v1beta1"): (17400, 9),
    ("batch", "v2alpha1"): (17400, 9),
    ("networking.k8s.io", "v1"): (17200, 15), ("networking.k8s.io", "v1beta1"): (17200, 9),
    ("policy", "v1"): (17100, 15), ("policy", "v1beta1"): (17100, 9),
    ("storage.k8s.io", "v1"): (16800, 15), ("storage.k8s.io", "v1beta1"): (16800, 9),
    ("storage.k8s.io", "v1alpha1"): (16800, 1),
    ("scheduling.k8s.io", "v1"): (16600, 15), ("scheduling.k8s.io", "v1beta1"): (16600, 9),
    ("scheduling.k8s.io", "v1alpha3"): (16600, 3),
    ("node.k8s.io", "v1"): (16300, 15), ("node.k8s.io", "v1alpha1"): (16300, 1),
    ("node.k8s.io", "v1beta1"): (16300, 9),
    ("resource.k8s.io", "v1"): (16200, 21), ("resource.k8s.io", "v1beta2"): (16200, 15),
    ("resource.k8s.io", "v1beta1"): (16200, 9), ("resource.k8s.io", "v1alpha3"): (16200, 1),
    ("lifecycle.k8s.io", "v1alpha1"): (15700, 1),
}


def apiservice_name(group: str, version: str) -> str:
    return f"{version}.{group}"


def local_apiservice(group: str, version: str, priorities: tuple[int, int],
                     managed: str) -> Obj:
    return {"metadata": {"name": apiservice_name(group, version),
                         "labels": {AUTOMANAGED: managed}},
            "spec": {"group": group, "version": version,
                     "groupPriorityMinimum": priorities[0],
                     "versionPriority": priorities[1]}}


async def ensure_local_apiservices(store: Store) -> None:
    """An APIService for each served built-in group-version with an upstream priority."""
    boot = Bootstrap(store)
    if boot.table.by_group_resource(GROUP, RESOURCE) is None:
        return
    for group, versions in boot.table.groups().items():
        for version in versions:
            priorities = PRIORITIES.get((group, version))
            if priorities is not None and _builtin(boot, group, version):
                await boot.ensure(GROUP, RESOURCE, local_apiservice(group, version,
                                                                   priorities, ON_START))


def _builtin(boot: Bootstrap, group: str, version: str) -> bool:
    return any(not isinstance(r.strategy, CustomResourceStrategy)
               for r in boot.table.in_group_version(group, version))


class CRDAPIServices(CacheListener):
    """The crdRegistrationController and autoregister: an APIService for every
    group-version a CRD serves, deleted once no CRD serves it."""

    name = "crd-apiservices"
    failure = "registering a CRD's APIService failed; retrying"
    retry_after = 1.0

    def __init__(self, store: Store) -> None:
        self.boot = Bootstrap(store)
        self.crds = store.table.by_group_resource("apiextensions.k8s.io",
                                                  "customresourcedefinitions")
        self.apiservices = store.table.by_group_resource(GROUP, RESOURCE)
        super().__init__(store.cache, [self.crds.prefix] if self.crds is not None else [])

    def start(self) -> None:
        if self.crds is not None and self.apiservices is not None:
            super().start()

    def changed(self, change: Change) -> None:
        for obj in (change.obj, change.prev):
            for version in ((obj or {}).get("spec") or {}).get("versions") or []:
                self.enqueue(apiservice_name(obj["spec"].get("group", ""),
                                             version.get("name", "")))

    def resynced(self) -> None:
        assert self.crds is not None and self.apiservices is not None
        for _key, crd in self.cache.list(self.crds.prefix):
            spec = crd.get("spec") or {}
            for version in spec.get("versions") or []:
                self.enqueue(apiservice_name(spec.get("group", ""), version.get("name", "")))
        for _key, svc in self.cache.list(self.apiservices.prefix):
            if _managed(svc) == CONTINUOUSLY:
                self.enqueue(svc["metadata"]["name"])

    def _served(self, group: str, version: str) -> bool:
        assert self.crds is not None
        return any((crd.get("spec") or {}).get("group") == group and any(
            v.get("name") == version and v.get("served")
            for v in (crd.get("spec") or {}).get("versions") or [])
            for _key, crd in self.cache.list(self.crds.prefix))

    async def reconcile(self, key: str) -> None:
        version, _, group = key.partition(".")
        if (group, version) in PRIORITIES and _builtin(self.boot, group, version):
            return  # a built-in group-version keeps its own APIService
        found = self.boot.get(GROUP, RESOURCE, "", key)
        if self._served(group, version):
            if found is None:
                await self.boot.ensure(GROUP, RESOURCE, local_apiservice(
                    group, version, (CRD_GROUP_PRIORITY, CRD_VERSION_PRIORITY), CONTINUOUSLY))
            return
        if found is not None and _managed(found) == CONTINUOUSLY:
            try:
                await self.boot.delete(GROUP, RESOURCE, found)
            except StatusError as e:
                if e.reason not in ("NotFound", "Conflict"):
                    raise
                if e.reason == "Conflict":
                    self.enqueue(key)


def _managed(obj: Obj) -> str:
    return str(((obj.get("metadata") or {}).get("labels") or {}).get(AUTOMANAGED, ""))


class APIServiceAvailability(CacheListener):
    """kube-aggregator's AvailableConditionController: the `Available` condition of
    every service-backed APIService, from its Service, the Service's EndpointSlices and a
    discovery request to the server (`Passed`, `all checks passed`); checked again when
    they change, every RECHECK seconds while Available and every RETRY seconds while not.
    The server's resource list is kept for aggregated discovery."""

    name = "apiservice-availability"
    failure = "checking an APIService's availability failed; retrying"
    settle = 0.05
    retry_after = RETRY = 2.0
    RECHECK = 30.0

    def __init__(self, store: Store, aggregator: Aggregator) -> None:
        self.store = store
        self.boot = Bootstrap(store)
        self.aggregator = aggregator
        table = store.table
        self.apiservices = table.by_group_resource(GROUP, RESOURCE)
        self.services = table.by_group_resource("", "services")
        self.slices = table.by_group_resource("discovery.k8s.io", "endpointslices")
        self._timers: dict[str, asyncio.TimerHandle] = {}
        found = [r for r in (self.apiservices, self.services, self.slices) if r is not None]
        super().__init__(store.cache, [r.prefix for r in found] if len(found) == 3 else [])

    def start(self) -> None:
        if self.prefixes:
            super().start()

    async def stop(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        await super().stop()

    def _remote(self) -> list[Obj]:
        assert self.apiservices is not None
        return [obj for _key, obj in self.cache.list(self.apiservices.prefix)
                if isinstance((obj.get("spec") or {}).get("service"), dict)]

    def changed(self, change: Change) -> None:
        assert self.apiservices is not None
        if change.key.startswith(self.apiservices.prefix):
            self.enqueue(change.key[len(self.apiservices.prefix):])
            return
        obj = change.obj or {}
        meta = obj.get("metadata") or {}
        name = (meta.get("labels") or {}).get("kubernetes.io/service-name") \
            if change.key.startswith(self.slices.prefix if self.slices else "") \
            else meta.get("name")
        for svc in self._remote():
            ref = svc["spec"]["service"]
            if ref.get("namespace") == meta.get("namespace") and ref.get("name") == name:
                self.enqueue(svc["metadata"]["name"])

    def resynced(self) -> None:
        for svc in self._remote():
            self.enqueue(svc["metadata"]["name"])

    def _later(self, name: str, delay: float) -> None:
        old = self._timers.pop(name, None)
        if old is not None:
            old.cancel()
        self._timers[name] = asyncio.get_running_loop().call_later(delay, self.enqueue, name)

    async def reconcile(self, key: str) -> None:
        assert self.apiservices is not None
        obj = self.cache.get(self.apiservices.key("", key))
        if obj is None or not isinstance((obj.get("spec") or {}).get("service"), dict):
            timer = self._timers.pop(key, None)
            if timer is not None:
                timer.cancel()
            self._forget(key)
            return
        status, reason, message = await self._check(obj)
        condition = {"type": "Available", "status": status, "reason": reason,
                     "message": message}
        try:
            await self.boot.correct(GROUP, RESOURCE, "", key,
                                    lambda o: _set_available(o, condition), subresource="status")
        except StatusError as e:
            if e.reason not in ("NotFound", "Conflict"):
                raise
        self._later(key, self.RECHECK if status == "True" else self.RETRY)

    def _forget(self, name: str) -> None:
        version, _, group = name.partition(".")
        self.aggregator.documents.pop((group, version), None)

    async def _check(self, obj: Obj) -> tuple[str, str, str]:
        spec = obj["spec"]
        ref = spec["service"]
        name, namespace, port = ref.get("name", ""), ref.get("namespace", ""), \
            ref.get("port", 443)
        key = (spec.get("group", ""), spec.get("version", ""))
        service = self.store.objects.lookup("services", "", namespace, name)
        if service is None:
            return "False", "ServiceNotFound", f'service/{name} in "{namespace}" is not present'
        if (service.get("spec") or {}).get("type", "ClusterIP") == "ClusterIP":
            problem = self._endpoint_problem(service, name, namespace, port)
            if problem is not None:
                return problem
        try:
            doc = await aggregation.discover(self.store, self.aggregator.client, obj)
        except aggregation.BackendUnreachable as e:
            self.aggregator.documents.pop(key, None)
            return "False", "FailedDiscoveryCheck", str(e)
        if isinstance(doc, dict):
            self.aggregator.documents[key] = doc
        return "True", "Passed", "all checks passed"

    def _endpoint_problem(self, service: Obj, name: str, namespace: str, port: int
                          ) -> tuple[str, str, str] | None:
        port_name = next((p.get("name") or "" for p in (service.get("spec") or {}).get("ports")
                          or [] if p.get("port") == port), None)
        if port_name is None:
            return "False", "ServicePortError", (f'service/{name} in "{namespace}" is not '
                                                 f"listening on port {port}")
        slices = [s for s in self.store.objects.lookup_namespace(
            "endpointslices", "discovery.k8s.io", namespace)
            if (s["metadata"].get("labels") or {}).get("kubernetes.io/service-name") == name]
        if not slices:
            return "False", "EndpointsNotFound", (f"cannot find endpointslices for "
                                                  f'service/{name} in "{namespace}"')
        for s in slices:
            if any((p.get("name") or "") == port_name for p in s.get("ports") or []) and any(
                    (e.get("conditions") or {}).get("ready") is not False and e.get("addresses")
                    for e in s.get("endpoints") or []):
                return None
        return "False", "MissingEndpoints", (f'endpointslices for service/{name} in '
                                             f'"{namespace}" have no addresses with port name '
                                             f'"{port_name}"')


def _set_available(obj: Obj, condition: Obj) -> None:
    """SetAPIServiceCondition: the Available condition replaced, its transition time kept
    while its status stays."""
    conditions = obj.setdefault("status", {}).setdefault("conditions", [])
    old = next((c for c in conditions if c.get("type") == "Available"), None)
    if old is not None and all(old.get(k) == condition[k] for k in ("status", "reason",
                                                                     "message")):
        return
    new = dict(condition)
    new["lastTransitionTime"] = old["lastTransitionTime"] if old is not None and \
        old.get("status") == condition["status"] and old.get("lastTransitionTime") \
        else time_now()
    if old is None:
        conditions.append(new)
    else:
        conditions[conditions.index(old)] = new
