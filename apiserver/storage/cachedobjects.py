"""Synchronous reads of other objects from the watch cache, by resource name: what
strategies (`Context.lookup`, `Context.listing`), authorizers and admission plugins use
to look at related objects (a namespace's labels, a pod's node, a role's rules)."""

from __future__ import annotations

from typing import Any

from draemu.apiserver.registry.resources import ResourceTable
from draemu.apiserver.storage.watchcache import WatchCache


class CachedObjects:
    def __init__(self, table: ResourceTable, cache: WatchCache) -> None:
        self.table = table
        self.cache = cache

    def lookup(self, resource: str, group: str, namespace: str, name: str) -> Any:
        """One object, or None."""
        r = self.table.by_group_resource(group, resource)
        if r is None:
            return None
        return self.cache.get(r.key(namespace, name))

    def lookup_namespace(self, resource: str, group: str, namespace: str) -> list[Any]:
        """The objects of a resource under `namespace`'s key."""
        r = self.table.by_group_resource(group, resource)
        if r is None:
            return []
        return [obj for _key, obj in self.cache.list(r.key(namespace, ""))]

    def resource_of_kind(self, group: str, version: str, kind: str) -> str | None:
        """The served resource of a kind (its plural), or None (upstream's discovery
        based resolver)."""
        for r in self.table.resources:
            if r.group == group and r.kind == kind and version in r.strategy.versions:
                return r.name
        return None

    def list_objects(self, resource: str, group: str, namespace: str) -> list[Any]:
        """Every object of a resource in `namespace` ("": all namespaces)."""
        r = self.table.by_group_resource(group, resource)
        if r is None:
            return []
        return [obj for _key, obj in self.cache.list(r.namespace_prefix(namespace))]
