"""What one request is about, whoever makes it: an HTTP request (`endpoints.scope.Scope`
adds the wire to it) or one of the apiserver's own writers at start-up
(`RequestContext.system`), which go through the same generic store and admission
chain."""

from __future__ import annotations

from dataclasses import dataclass, field

from draemu.api.types import Obj
from draemu.apiserver.registry.resources import Resource
from draemu.apiserver.registry.strategy import Strategy
from draemu.identity import MASTERS, UserInfo

# Who the apiserver's own writes are made as (kube-apiserver's loopback identity).
SYSTEM_USER = UserInfo("system:apiserver", groups=(MASTERS,))


@dataclass(eq=False)
class RequestContext:
    resource: Resource
    # The version the request speaks (its body's and its answer's).
    version: str
    namespace: str
    user: UserInfo
    name: str = ""
    subresource: str = ""
    # The API verb: create, update, patch, delete, deletecollection, get, list, watch.
    verb: str = ""
    # Warning headers of the answer (deprecations, admission, strategies).
    warnings: list[str] = field(default_factory=list)
    # ValidatingAdmissionPolicy failures with the Audit action, for the audit event.
    audit: list[Obj] = field(default_factory=list)
    # Annotations admission plugins add to the audit event (upstream's
    # audit.AddAuditAnnotations), e.g. pod-security.kubernetes.io/enforce-policy.
    annotations: dict[str, str] = field(default_factory=dict)

    @classmethod
    def system(cls, resource: Resource, verb: str, namespace: str = "", name: str = "",
               subresource: str = "") -> RequestContext:
        """A write of the apiserver itself, in the resource's storage version."""
        return cls(resource, resource.strategy.storage_version, namespace, SYSTEM_USER,
                   name, subresource, verb)

    @property
    def strategy(self) -> Strategy:
        return self.resource.strategy

    @property
    def api_version(self) -> str:
        return self.resource.api_version(self.version)

    @property
    def stored_as_served(self) -> bool:
        """Whether stored objects are served as they are: in the request's group and
        version (not so for a kind stored as another, like events.k8s.io Events as core
        Events) and not defaulted when read (custom resources whose schema has defaults)."""
        return self.version == self.strategy.storage_version and \
            self.strategy.storage_group is None and \
            not self.strategy.defaults_on_read(self.version) and \
            not self.strategy.converts_on_read()

    def out(self, obj: Obj) -> Obj:
        """A stored object in the request's version."""
        if self.stored_as_served:
            return obj
        converted = self.strategy.from_storage(obj, self.version)
        converted["apiVersion"] = self.api_version
        converted.setdefault("kind", self.resource.kind)
        return converted

    def to_storage(self, obj: Obj) -> Obj:
        """A request-version object, defaulted, in the storage version."""
        self.strategy.default(obj, self.version)
        return self.strategy.to_storage(obj, self.version)
