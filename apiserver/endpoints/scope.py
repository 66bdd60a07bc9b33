"""One resource request over HTTP: the request context (resource, version, namespace,
user, warnings; `registry.request`) with its wire options and the helpers every handler
shares (query flags, responses, warnings, type meta)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiohttp import web
from multidict import MultiMapping

from draemu.api.errors import StatusError, bad_request
from draemu.api.types import Obj
from draemu.apiserver.endpoints.requestinfo import RequestInfo
from draemu.apiserver.registry.request import RequestContext
from draemu.apiserver.registry.resources import Resource
from draemu.apiserver.wire.codec import Accept, json_response, parse_bool
from draemu.identity import UserInfo

# ValidatingAdmissionPolicy failures with the Audit action, for the request's audit event.
VALIDATION_FAILURES = web.RequestKey("validation_failures", list)
# What admission plugins annotate the request's audit event with.
AUDIT_ANNOTATIONS = web.RequestKey("audit_annotations", dict)


@dataclass(eq=False, kw_only=True)
class Scope(RequestContext):
    """A request context that came over HTTP: the aiohttp request, its parsed path and
    what the client accepts."""

    request: web.Request
    info: RequestInfo
    accept: Accept

    @classmethod
    def of(cls, request: web.Request, info: RequestInfo, resource: Resource, namespace: str,
           user: UserInfo, accept: Accept) -> Scope:
        return cls(resource=resource, version=info.version, namespace=namespace, user=user,
                   name=info.name, subresource=info.subresource, verb=info.verb,
                   audit=request.setdefault(VALIDATION_FAILURES, []),
                   annotations=request.setdefault(AUDIT_ANNOTATIONS, {}), request=request,
                   info=info, accept=accept)

    @property
    def query(self) -> MultiMapping[str]:
        return self.request.query

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

    def check_applied_type_meta(self, obj: Obj) -> None:
        """An apply configuration names exactly the endpoint's apiVersion and kind, or
        the field manager refuses it first (a 400 naming the configuration's
        group/version and kind as Go prints them)."""
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if api_version == self.api_version and kind == self.resource.kind:
            return
        text = api_version if isinstance(api_version, str) else ""
        group, _, version = text.rpartition("/") if text.count("/") <= 1 else ("", "", "")
        shown_kind = kind if isinstance(kind, str) else ""
        raise bad_request(f"invalid object type: {group}/{version}, Kind={shown_kind}")


# Control characters (an unknown field named "\x1f") may not appear in a header; Go's
# net/http writes them as spaces, and aiohttp would drop the connection instead.
_CONTROL = {c: " " for c in [*range(0x20), 0x7F]}


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').translate(_CONTROL)
