"""NamespaceLifecycle admission: no new objects in a missing or terminating namespace.

A namespace the watch cache does not know yet may have been created a moment ago
through another apiserver on the same store: as upstream's plugin, a miss is checked
against the store itself before the create is refused."""

from __future__ import annotations

from draemu.api.errors import forbidden_error, not_found_error
from draemu.apiserver.admission.chain import AdmissionServices, Attributes


class NamespaceLifecycle:
    operations = frozenset({"CREATE"})

    def __init__(self, services: AdmissionServices) -> None:
        self.storage = services.storage
        self.objects = services.objects
        self.namespaces = services.table.by_group_resource("", "namespaces")

    async def admit(self, attrs: Attributes) -> None:
        resource, namespace = attrs.resource, attrs.namespace
        if not resource.namespaced or attrs.subresource:
            return
        ns = self.objects.lookup("namespaces", "", "", namespace)
        if ns is None and self.namespaces is not None:
            ns = await self.storage.get_latest(self.namespaces, "", namespace)
        if ns is None:
            raise not_found_error("namespaces", "", namespace)
        if (ns.get("metadata") or {}).get("deletionTimestamp") or \
                (ns.get("status") or {}).get("phase") == "Terminating":
            name = attrs.name
            raise forbidden_error(
                f'{resource.qualified} "{name}" is forbidden: unable to create new content in '
                f'namespace {namespace} because it is being terminated',
                {"name": name, **({"group": resource.group} if resource.group else {}),
                 "kind": resource.name,
                 "causes": [{"reason": "NamespaceTerminating",
                             "message": f"namespace {namespace} is being terminated",
                             "field": "metadata.namespace"}]})
