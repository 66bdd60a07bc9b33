"""PodSecurity in the admission chain: its validating phase asks `decisions` about pods,
pod templates and namespaces, with the namespace (from the watch cache, else the store)
and the namespace's pods (for a stricter enforce label's warnings); a denial is raised,
warnings go to the answer, annotations (`pod-security.kubernetes.io/enforce-policy`,
`.../audit-violations`, ...) to the audit event. The Pod Security Standards apply as of
the emulated Kubernetes release (`--emulated-version`)."""

from __future__ import annotations

from typing import Any

from draemu.api.types import Obj
from draemu.apiserver.admission.chain import AdmissionServices, Attributes
from draemu.apiserver.admission.podsecurity import decisions
from draemu.apiserver.admission.podsecurity.evaluator import Evaluator
from draemu.apiserver.admission.podsecurity.levels import PREFIX, parse_version


class PodSecurity:
    operations = frozenset({"CREATE", "UPDATE"})

    def __init__(self, services: AdmissionServices) -> None:
        self.storage = services.storage
        self.objects = services.objects
        self.namespaces = services.table.by_group_resource("", "namespaces")
        emulated = parse_version(f"v{services.gates.emulated_version}")
        self.decide = decisions.PodSecurity(Evaluator(emulated))

    async def validate(self, attrs: Attributes) -> None:
        r = attrs.resource
        if not decisions.applies_to(r.group, r.name):
            return
        namespace = await self._namespace(attrs.namespace) \
            if (r.group, r.name) != ("", "namespaces") else None
        answer = self.decide.admit(
            decisions.Attributes(attrs.operation, r.group, r.name, attrs.subresource,
                                 attrs.namespace, attrs.name, attrs.served(attrs.obj),
                                 attrs.served(attrs.old), attrs.user.name),
            lambda _name: namespace,
            lambda name: self.objects.list_objects("pods", "", name))
        attrs.request.warnings.extend(answer.warnings)
        attrs.request.annotations.update({PREFIX + k: v for k, v in answer.audit.items()})
        if answer.error is not None:
            raise answer.error

    async def _namespace(self, name: str) -> Obj | None:
        """From the watch cache, else from the store (made a moment ago through another
        apiserver), as NamespaceLifecycle looks it up."""
        found: Any = self.objects.lookup("namespaces", "", "", name)
        if found is None and self.namespaces is not None and name:
            found = await self.storage.get_latest(self.namespaces, "", name)
        return found
