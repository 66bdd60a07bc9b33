"""The APIServices of the group-versions this apiserver serves itself ("Local"), as
kube-apiserver's aggregator registers them: one per built-in group-version that has a
priority in upstream's table, made once at start (label
`kube-aggregator.kubernetes.io/automanaged: onstart`), and one per group-version a
CustomResourceDefinition serves, kept while a CRD serves it (`automanaged: true`, group
priority 1000, version priority 100: the crdRegistrationController's)."""

from __future__ import annotations

from draemu.api.errors import StatusError
from draemu.api.types import Obj
from draemu.apiserver.controlplane.systemobjects import Bootstrap
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
