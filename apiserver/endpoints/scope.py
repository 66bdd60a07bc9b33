"""One resource request: its resource, version, namespace, user and wire options, with
the helpers every verb shares (output conversion, strategy context, warnings)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from multidict import MultiMapping

from draemu.api.errors import StatusError, bad_request
from draemu.api.types import Obj
from draemu.apiserver.admission.matching import Request
from draemu.apiserver.endpoints.requestinfo import RequestInfo
from draemu.apiserver.registry.resources import Resource
from draemu.apiserver.registry.strategy import Context, Strategy
from draemu.apiserver.wire.codec import Accept, json_response, parse_bool
from draemu.features import FeatureGates
from draemu.identity import UserInfo

# ValidatingAdmissionPolicy failures with the Audit action, for the request's audit event.
VALIDATION_FAILURES = web.RequestKey("validation_failures", list)

@dataclass
class Scope:
    request: web.Request
    info: RequestInfo
    resource: Resource
    version: str
    namespace: str
    user: UserInfo
    accept: Accept
    gates: FeatureGates
    lookup: Callable[..., Any]
    warnings: list[str] = field(default_factory=list)
    # The request's authorizer, for strategies that check what the user may do.
    authorizer: Any = None
    # Validating admission (ValidatingAdmissionPolicies); None: nothing to admit.
    admission: Any = None
    listing: Callable[..., Any] | None = None
    # State the strategies keep per server (Context.extra["state"]), e.g. the service
    # address reservations: the same dict for every request of one server.
    state: dict[str, Any] = field(default_factory=dict)
    # Admission webhooks (Webhooks); None: none are called.
    webhooks: Any = None
    # The served resources (ResourceTable), for handlers that write another kind.
    resources: Any = None

    @property
    def strategy(self) -> Strategy:
        return self.resource.strategy

    @property
    def query(self) -> MultiMapping[str]:
        return self.request.query

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def subresource(self) -> str:
        return self.info.subresource

    @property
    def api_version(self) -> str:
        return self.resource.api_version(self.version)

    def flag(self, name: str) -> bool:
        return parse_bool(self.query.get(name), name)

    def dry_run(self, body_options: Obj | None = None) -> bool:
        values = list(self.query.getall("dryRun", []))
        if body_options and isinstance(body_options.get("dryRun"), list):
            values += body_options["dryRun"]
        for v in values:
            if v != "All":
                raise StatusError(400, "BadRequest",
                                  f'dryRun: Unsupported value: "{v}": supported values: "All"')
        return bool(values)

    def context(self, dry_run: bool = False, subresource: str | None = None) -> Context:
        return Context(gates=self.gates, user=self.user.name, groups=self.user.groups,
                       dry_run=dry_run,
                       subresource=self.subresource if subresource is None else subresource,
                       lookup=self.lookup, listing=self.listing,
                       extra={"version": self.version, "state": self.state,
                              "verb": self.info.verb},
                       user_info=self.user, authorizer=self.authorizer)

    def admit(self, operation: str, obj: Obj | None, old: Obj | None, dry_run: bool,
              subresource: str | None = None) -> None:
        """Validating admission of a write (storage-version objects; policies see them in
        the request's version). Raises the denial; warnings go to the response."""
        if self.admission is None:
            return
        meta = (obj or old or {}).get("metadata") or {}
        self.admission.admit(
            operation=operation, group=self.resource.group, version=self.version,
            resource=self.resource.name,
            subresource=self.subresource if subresource is None else subresource,
            kind=self.resource.kind, namespaced=self.resource.namespaced,
            namespace=self.namespace, name=meta.get("name") or self.name,
            obj=self.out(obj) if obj is not None else None,
            old=self.out(old) if old is not None else None, user=self.user,
            dry_run=dry_run, warnings=self.warnings,
            audit=self.request.setdefault(VALIDATION_FAILURES, []))

    def _admission_request(self, operation: str, obj: Obj | None, old: Obj | None,
                           subresource: str | None = None) -> Request:
        meta = (obj or old or {}).get("metadata") or {}
        return Request(operation, self.resource.group, self.version, self.resource.name,
                       self.subresource if subresource is None else subresource,
                       self.resource.kind, self.namespace, meta.get("name") or self.name,
                       self.resource.namespaced)

    async def mutate(self, operation: str, obj: Obj, old: Obj | None, dry_run: bool,
                     subresource: str | None = None) -> Obj:
        """`obj` (storage version) after the mutating admission webhooks."""
        if self.webhooks is None or not self.webhooks.has_any(self.resource.group,
                                                               self.resource.name):
            return obj
        req = self._admission_request(operation, obj, old, subresource)
        served = self.out(obj)
        mutated = await self.webhooks.mutate(req, served, self.out(old) if old else None,
                                             self.user, dry_run, self.warnings)
        if mutated is served:
            return obj
        return self.strategy.to_storage(mutated, self.version)

    async def admit_webhooks(self, operation: str, obj: Obj | None, old: Obj | None,
                             dry_run: bool, subresource: str | None = None) -> None:
        """The validating admission webhooks of a write (after the policies)."""
        if self.webhooks is None or not self.webhooks.has_any(self.resource.group,
                                                               self.resource.name):
            return
        req = self._admission_request(operation, obj, old, subresource)
        await self.webhooks.validate(req, self.out(obj) if obj is not None else None,
                                     self.out(old) if old is not None else None, self.user,
                                     dry_run, self.warnings)

    def out(self, obj: Obj) -> Obj:
        """A stored object in the request's version."""
        if self.stored_as_served:
            return obj
        converted = self.strategy.from_storage(obj, self.version)
        converted["apiVersion"] = self.api_version
        converted.setdefault("kind", self.resource.kind)
        return converted

    def respond(self, obj: Any, status: int = 200) -> web.Response:
        resp = json_response(obj, status)
        self.add_warnings(resp)
        return resp

    def respond_raw(self, body: bytes, status: int = 200) -> web.Response:
        """A response from already serialized JSON."""
        resp = web.Response(body=body, status=status)
        resp.headers["Content-Type"] = "application/json"
        self.add_warnings(resp)
        return resp

    @property
    def storage_shape(self) -> bool:
        """Whether responses are stored objects as they are (no conversion)."""
        return self.stored_as_served and not self.accept.table \
            and not self.accept.partial_metadata

    @property
    def stored_as_served(self) -> bool:
        """Whether stored objects already are in the request's group and version (not
        so for a kind stored as another, like events.k8s.io Events as core Events)."""
        return self.version == self.strategy.storage_version and \
            self.strategy.storage_group is None

    def partial(self, obj: Obj) -> Obj:
        """meta.k8s.io PartialObjectMetadata (metadata-only clients, e.g. the garbage
        collector's metadata informers)."""
        return {"kind": "PartialObjectMetadata",
                "apiVersion": f"meta.k8s.io/{self.accept.partial_metadata}",
                "metadata": obj.get("metadata") or {}}

    def add_warnings(self, resp: web.StreamResponse) -> None:
        deprecated = self.strategy.deprecated_versions.get(self.version)
        texts = ([deprecated] if deprecated else []) + self.warnings
        for text in dict.fromkeys(texts):
            resp.headers.add("Warning", f'299 - "{_escape(text)}"')

    def check_type_meta(self, obj: Obj) -> None:
        """Bodies may omit apiVersion and kind (the endpoint defines them); present
        ones must match."""
        api_version = obj.get("apiVersion")
        kind = obj.get("kind")
        if api_version and api_version != self.api_version:
            raise bad_request(f"the API version in the data ({api_version}) does not match "
                              f"the expected API version ({self.api_version})")
        if kind and kind != self.resource.kind:
            raise bad_request(f"the kind in the data ({kind}) does not match the expected "
                              f"kind ({self.resource.kind})")
        obj["apiVersion"] = self.api_version
        obj["kind"] = self.resource.kind


# Control characters (an unknown field named "\x1f") may not appear in a header; Go's
# net/http writes them as spaces, and aiohttp would drop the connection instead.
_CONTROL = {c: " " for c in [*range(0x20), 0x7F]}


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').translate(_CONTROL)
