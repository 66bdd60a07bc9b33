"""The table of served resources: which strategy answers which group/version/resource.

Built once from `draemu.apiserver.registry.discover()` (filtered by feature gates);
discovery, routing, storage keys and the watch cache all read it.
"""

from __future__ import annotations

import copy
import os
import re
from dataclasses import dataclass
from functools import cached_property

from draemu.apiserver.registry.strategy import Strategy
from draemu.features import FeatureGates


@dataclass(frozen=True, eq=False)
class Resource:
    strategy: Strategy

    @property
    def group(self) -> str:
        return self.strategy.group

    @property
    def name(self) -> str:
        return self.strategy.resource

    @property
    def kind(self) -> str:
        return self.strategy.kind

    @property
    def namespaced(self) -> bool:
        return self.strategy.namespaced

    @property
    def qualified(self) -> str:
        """`resourceclaims.resource.k8s.io`, or `pods` for the core group."""
        return f"{self.name}.{self.group}" if self.group else self.name

    @cached_property
    def prefix(self) -> str:
        """Store key prefix of every object of this resource (with a trailing slash).
        Kinds sharing one storage (core/v1 and events.k8s.io/v1 Events) share it."""
        group = self.strategy.storage_group
        if group is None:
            group = self.group
        resource = self.strategy.storage_resource or self.name
        return f"/registry/{group or 'core'}/{resource}/"

    def key(self, namespace: str, name: str) -> str:
        if self.namespaced:
            return f"{self.prefix}{namespace}/{name}"
        return f"{self.prefix}{name}"

    def namespace_prefix(self, namespace: str) -> str:
        if self.namespaced and namespace:
            return f"{self.prefix}{namespace}/"
        return self.prefix

    def api_version(self, version: str) -> str:
        return self.strategy.api_version(version)


class ResourceTable:
    """Built-in kinds are fixed at start; custom resources come and go with their
    CustomResourceDefinitions (`add` / `remove`), and `generation` counts those changes
    so that discovery and OpenAPI caches know when to rebuild."""

    def __init__(self, strategies: list[Strategy], gates: FeatureGates,
                 legacy_versions: bool = False, serve_removed: bool | None = None) -> None:
        """`legacy_versions`: also serve the versions strategies list as legacy (draemu's
        own, for old manifests). The gates' emulated release decides which versions are
        served at all; `serve_removed` (default: $KUBE_APISERVER_SERVE_REMOVED_APIS_FOR_
        ONE_RELEASE, as kube-apiserver reads it) keeps those the release removes."""
        if serve_removed is None:
            serve_removed = serve_removed_from_env()
        self.resources: list[Resource] = []
        self._by_gvr: dict[tuple[str, str, str], Resource] = {}
        self._by_gr: dict[tuple[str, str], Resource] = {}
        self.generation = 0
        for strategy in strategies:
            if strategy.feature_gate and not gates.enabled(strategy.feature_gate):
                continue
            served = served_versions(strategy, gates.emulated_version, legacy_versions,
                                     serve_removed)
            if not served:
                continue
            if served != tuple(strategy.versions):
                strategy = copy.copy(strategy)
                strategy.versions = served  # type: ignore[misc]  # this table's view
            self._index(Resource(strategy))

    def _index(self, resource: Resource) -> None:
        strategy = resource.strategy
        self.resources.append(resource)
        self._by_gr[(strategy.group, strategy.resource)] = resource
        for version in strategy.versions:
            self._by_gvr[(strategy.group, version, strategy.resource)] = resource

    def add(self, strategy: Strategy) -> Resource:
        """Serve `strategy` (replacing what served its group and resource before)."""
        self.remove(strategy.group, strategy.resource)
        resource = Resource(strategy)
        self._index(resource)
        self.generation += 1
        return resource

    def remove(self, group: str, resource: str) -> None:
        found = self._by_gr.pop((group, resource), None)
        if found is None:
            return
        self.resources = [r for r in self.resources if r is not found]
        self._by_gvr = {k: v for k, v in self._by_gvr.items() if v is not found}
        self.generation += 1

    def lookup(self, group: str, version: str, resource: str) -> Resource | None:
        return self._by_gvr.get((group, version, resource))

    def by_group_resource(self, group: str, resource: str) -> Resource | None:
        return self._by_gr.get((group, resource))

    def groups(self) -> dict[str, list[str]]:
        """group -> served versions, preferred first (core group under "")."""
        out: dict[str, list[str]] = {}
        for r in self.resources:
            versions = out.setdefault(r.group, [])
            for v in r.strategy.versions:
                if v not in versions:
                    versions.append(v)
        for versions in out.values():
            versions.sort(key=version_priority)
        return out

    def in_group_version(self, group: str, version: str) -> list[Resource]:
        return [r for r in self.resources
                if r.group == group and version in r.strategy.versions]


def _release(text: str) -> tuple[int, int]:
    major, _, minor = text.partition(".")
    return int(major), int(minor)


SERVE_REMOVED_ENV = "KUBE_APISERVER_SERVE_REMOVED_APIS_FOR_ONE_RELEASE"
_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def serve_removed_from_env() -> bool:
    """$KUBE_APISERVER_SERVE_REMOVED_APIS_FOR_ONE_RELEASE as kube-apiserver parses it
    (Go's strconv.ParseBool); anything else is an error at start."""
    text = os.environ.get(SERVE_REMOVED_ENV)
    if text is None or text in _FALSE:
        return False
    if text in _TRUE:
        return True
    raise ValueError(f'strconv.ParseBool: parsing "{text}": invalid syntax')


def served_versions(strategy: Strategy, release: str, legacy: bool,
                    serve_removed: bool = False) -> tuple[str, ...]:
    """The versions of a kind that Kubernetes `release` ("1.37") serves, plus draemu's
    legacy ones when asked; with `serve_removed`, also those `release` removes (served
    one more release, as kube-apiserver does when told to)."""
    out = []
    for version in strategy.versions:
        if version in strategy.legacy_versions:
            if legacy:
                out.append(version)
            continue
        since, until = strategy.version_releases.get(version, ("0.0", None))
        if until is not None and serve_removed and _release(until) == _release(release):
            until = None
        if _release(since) <= _release(release) and (until is None or
                                                    _release(release) < _release(until)):
            out.append(version)
    return tuple(out)


def version_priority(version: str) -> tuple[int, int, int]:
    """Kubernetes' version order: GA before beta before alpha, higher numbers first."""
    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not m:
        return (3, 0, 0)
    major = int(m.group(1))
    stage = {"": 0, "beta": 1, "alpha": 2}[m.group(2) or ""]
    minor = int(m.group(3) or 0)
    return (stage, -major, -minor)
