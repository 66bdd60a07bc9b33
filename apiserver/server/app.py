"""The aiohttp application: middlewares for the cross-cutting concerns (errors,
metrics, authentication, in-flight limits) and one router for every path."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

import draemu
from draemu.api.errors import StatusError, not_found_error
from draemu.api.jsonfast import loads
from draemu.api.types import Obj
from draemu.apiserver.auth.authorization import (
    PUBLIC_PATHS,
    Attributes,
    Decision,
    forbidden,
)
from draemu.apiserver.auth.impersonation import Impersonator, wanted_user
from draemu.apiserver.endpoints import (
    aggregation,
    deletion,
    discovery,
    openapi_serving,
    patching,
    podexec,
    portforward,
    proxy,
    rest_read,
    rest_write,
    reviews,
    subresources,
    tokenrequest,
    watch,
)
from draemu.apiserver.endpoints.requestinfo import RequestInfo, parse
from draemu.apiserver.endpoints.scope import AUDIT_ANNOTATIONS, VALIDATION_FAILURES, Scope
from draemu.apiserver.genericregistry.store import WHOLE_OBJECT_SUBRESOURCES, Store
from draemu.apiserver.registry.resources import Resource
from draemu.apiserver.server import health, httperrors
from draemu.apiserver.server.context import APIContext, AppOptions, create_context
from draemu.apiserver.wire.codec import (
    json_response,
    negotiate,
    parse_bool,
    status_response,
)
from draemu.apiserver.wire.queryselectors import parse_field_selector
from draemu.identity import ANONYMOUS, INSECURE_ADMIN, UserInfo
from draemu.log import get_logger
from draemu.store.errors import InvalidKeyError

log = get_logger("apiserver")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
USER_KEY = web.RequestKey("user", UserInfo)
# The authenticated user when the request impersonates USER_KEY's (for the audit log).
REQUESTER_KEY = web.RequestKey("requester", UserInfo)
DECISION_KEY = web.RequestKey("decision", Decision)
INFO_KEY = web.RequestKey("requestinfo", RequestInfo)

_NOT_FOUND = "the server could not find the requested resource"
_LONG_RUNNING = frozenset({"watch"})
# Streams that are long-running whatever their verb (upstream's long-running check).
_STREAMS = frozenset({"attach", "exec", "proxy", "log", "portforward"})
_EXEMPT_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/metrics"})


@dataclass(frozen=True)
class App:
    """An apiserver's aiohttp application and the context its handlers share."""

    context: APIContext
    application: web.Application


def create_app(options: AppOptions) -> App:
    """The application of one apiserver: its context wired from `options`, and the
    handlers (middlewares and router) over it."""
    context = create_context(options)
    return App(context, Handlers(context).build())


class Handlers:
    """The middlewares and the router, over one `APIContext`."""

    def __init__(self, ctx: APIContext) -> None:
        self.ctx = ctx

    # Middlewares -----------------------------------------------------------------------------
    @web.middleware
    async def errors(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        started = time.perf_counter()
        code = 500
        request[INFO_KEY] = parse(request.method, request.path,
                                  _watch_flag(request.query.get("watch")))
        try:
            resp = await handler(request)
            code = resp.status
            return resp
        except StatusError as e:
            code = e.code
            return status_response(e)
        except web.HTTPException as e:
            code = e.status
            return status_response(StatusError(e.status, e.reason.replace(" ", ""), e.text or
                                               e.reason))
        except InvalidKeyError:
            # A name no object can have (a NUL in the URL): as upstream, nothing is there.
            info = request[INFO_KEY]
            error = not_found_error(info.resource, info.group, info.name)
            code = error.code
            return status_response(error)
        except (ConnectionResetError, asyncio.CancelledError):
            code = 499
            raise
        except Exception as e:  # every failure must answer a Status
            log.exception("request failed", method=request.method, path=request.path)
            return status_response(StatusError(500, "InternalError",
                                               f"Internal error occurred: {e!r}"))
        finally:
            info = request[INFO_KEY]
            if info.resource_request:
                self.ctx.metrics.observe(info.verb.upper(), info.group, info.version,
                                     info.resource, info.subresource,
                                     "namespace" if info.namespace else "cluster", code,
                                     time.perf_counter() - started)

    @web.middleware
    async def audit_requests(self, request: web.Request, handler: Handler
                             ) -> web.StreamResponse:
        if self.ctx.audit is None:
            return await handler(request)
        received = datetime.now(UTC)
        code = 500
        resp: web.StreamResponse | None = None
        try:
            resp = await handler(request)
            code = resp.status
            return resp
        finally:
            self._audit(request, received, code, resp)

    def _audit(self, request: web.Request, received: datetime, code: int,
               resp: web.StreamResponse | None) -> None:
        info: RequestInfo | None = request.get(INFO_KEY)
        user, requester = request.get(USER_KEY), request.get(REQUESTER_KEY)
        status: dict[str, Any] = {"metadata": {}, "code": code}
        if code >= 400 and isinstance(resp, web.Response) and isinstance(resp.body, bytes):
            try:
                body = loads(resp.body)
            except ValueError:
                body = None
            if isinstance(body, dict) and body.get("kind") == "Status":
                status = {"metadata": {}, **{k: body[k] for k in (
                    "status", "message", "reason", "details") if k in body}, "code": code}
        ref: dict[str, Any] | None = None
        verb = request.method.lower()
        if info is not None and info.resource_request:
            verb = info.verb
            ref = {"resource": info.resource}
            for key, value in (("namespace", info.namespace), ("name", info.name),
                               ("apiGroup", info.group), ("apiVersion", info.version),
                               ("subresource", info.subresource)):
                if value:
                    ref[key] = value
        peer = request.transport.get_extra_info("peername") if request.transport else None
        self.ctx.audit.write(
            received=received, uri=request.path_qs, verb=verb,
            user=requester or user, impersonated=user if requester else None,
            source_ip=peer[0] if isinstance(peer, tuple) else "",
            user_agent=request.headers.get("User-Agent", ""), object_ref=ref, status=status,
            decision=request.get(DECISION_KEY), annotations=_audit_annotations(request))

    @web.middleware
    async def authenticate(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if self.ctx.insecure:
            user = INSECURE_ADMIN
        else:
            ssl_object = request.transport.get_extra_info("ssl_object") \
                if request.transport else None
            found = self.ctx.authenticator.authenticate(ssl_object,
                                                    request.headers.get("Authorization"))
            if found is None:
                if request.path not in PUBLIC_PATHS and not _health_path(request.path):
                    raise StatusError(401, "Unauthorized", "Unauthorized")
                found = ANONYMOUS
            user = found
        request[USER_KEY] = user
        wanted = wanted_user(request.headers)
        if wanted is not None:
            # The request is then authorized (and answered) as the impersonated user.
            request[REQUESTER_KEY] = user
            request[USER_KEY] = Impersonator(self.ctx.authorizer).impersonate(
                wanted, self._request_attributes(request, user))
        return await handler(request)

    def _request_attributes(self, request: web.Request, user: UserInfo) -> Attributes:
        info: RequestInfo = request[INFO_KEY]
        if not info.resource_request:
            return Attributes(user, info.verb, path=request.path.rstrip("/") or "/")
        field_selector = request.query.get("fieldSelector", "")
        return Attributes(user, info.verb, info.group, info.version, info.resource,
                          info.subresource, info.namespace,
                          info.name or _selected_name(info.verb, field_selector), info.path,
                          field_selector)

    @web.middleware
    async def limit_in_flight(self, request: web.Request, handler: Handler
                              ) -> web.StreamResponse:
        info = request[INFO_KEY]
        long_running = info.verb in _LONG_RUNNING or info.subresource in _STREAMS
        if self.ctx.flowcontrol is not None:
            # API Priority and Fairness (apiserver/flowcontrol) instead of the two
            # in-flight limits, as upstream's --enable-priority-and-fairness: streams are
            # not limited, watches while they start; the time budget covers the queue.
            if long_running and info.verb != "watch":
                return await handler(request)
            served = self.ctx.flowcontrol.handle(request, info, request[USER_KEY], handler,
                                             self.ctx.request_timeout / 4)
            return await (served if long_running else self._within_budget(served))
        if long_running or (
                not info.resource_request and request.path.rstrip("/") in _EXEMPT_PATHS):
            # Long-running requests and the health checks of whoever watches over us
            # do not count against the limit.
            return await handler(request)
        kind = "readOnly" if info.verb in ("get", "list") else "mutating"
        limit = self.ctx.max_readonly if kind == "readOnly" else self.ctx.max_mutating
        if self.ctx.metrics.in_flight[kind] >= limit:
            self.ctx.metrics.rejected[kind] += 1
            raise StatusError(429, "TooManyRequests",
                              "Too many requests, please try again later.",
                              {"retryAfterSeconds": 1}, {"Retry-After": "1"})
        self.ctx.metrics.in_flight[kind] += 1
        try:
            return await self._within_budget(handler(request))
        finally:
            self.ctx.metrics.in_flight[kind] -= 1

    async def _within_budget(self, served: Awaitable[web.StreamResponse]
                             ) -> web.StreamResponse:
        budget = asyncio.timeout(self.ctx.request_timeout)
        try:
            async with budget:
                return await served
        except TimeoutError:
            if not budget.expired():
                raise
            # kube-apiserver's --request-timeout: the client gets a 504 Status; what the
            # request had written stays written.
            raise StatusError(504, "Timeout", "Timeout: request did not complete within "
                              "requested timeout - context deadline exceeded",
                              {"retryAfterSeconds": 1}) from None

    def build(self) -> web.Application:
        app = web.Application(middlewares=[self.audit_requests, self.errors, self.authenticate,
                                           self.limit_in_flight],
                              client_max_size=4 * 1024 * 1024,
                              handler_args=httperrors.HANDLER_ARGS)
        app.router.add_route("*", "/{tail:.*}", self.route)
        if self.ctx.flowcontrol is not None:
            app.on_response_prepare.append(self.ctx.flowcontrol.on_prepare)
            self.ctx.metrics.gauges.update(self.ctx.flowcontrol.gauges())
            self.ctx.metrics.counters.update(self.ctx.flowcontrol.counters())
        self.ctx.metrics.gauges["apiserver_registered_watchers"] = lambda: {
            (): float(self.ctx.store.cache.watcher_count)}
        self.ctx.metrics.gauges["apiserver_storage_objects"] = lambda: {
            (("resource", _resource_label(prefix)),): float(n)
            for prefix, n in self.ctx.store.cache.object_counts().items()}
        self.ctx.metrics.gauges["draemu_store_revision"] = lambda: {
            (): float(self.ctx.store.cache.revision)}
        self.ctx.metrics.gauges["kubernetes_feature_enabled"] = lambda: {
            (("name", name), ("stage", stage)): float(on)
            for (name, stage), on in self.ctx.gates.metric_rows().items()}
        return app

    # Routing ---------------------------------------------------------------------------------
    async def route(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        user: UserInfo = request[USER_KEY]
        info: RequestInfo = request[INFO_KEY]
        apiservice = self._extension_apiservice(path)
        if apiservice is not None:
            return await self._aggregated(request, info, user, apiservice)
        if not info.resource_request:
            self._authorize(Attributes(user, info.verb, path=path.rstrip("/") or "/"), info,
                            request)
            return await self._non_resource(request, path)
        return await self._resource(request, info, user)

    def _extension_apiservice(self, path: str) -> Obj | None:
        """The APIService of an extension apiserver that serves `path`'s group-version
        (none for the group-versions this apiserver serves itself)."""
        parts = [p for p in path.split("/") if p]
        if len(parts) < 3 or parts[0] != "apis":
            return None
        if self.ctx.table.in_group_version(parts[1], parts[2]):
            return None
        return aggregation.remote_apiservice(self.ctx.store, parts[1], parts[2])

    async def _aggregated(self, request: web.Request, info: RequestInfo, user: UserInfo,
                          apiservice: Obj) -> web.StreamResponse:
        """Authorized here, then relayed to the extension apiserver (which authorizes
        again, through a SubjectAccessReview, as kube-aggregator's backends do)."""
        self._authorize(self._request_attributes(request, user), info, request)
        return await aggregation.proxy(request, apiservice, user, self.ctx.store,
                                       self.ctx.aggregator.client)

    def _authorize(self, attrs: Attributes, info: RequestInfo,
                   request: web.Request | None = None) -> None:
        decision = self.ctx.authorizer.authorize(attrs)
        if request is not None:
            request[DECISION_KEY] = decision
        if not decision.allowed:
            raise forbidden(attrs, decision.reason)

    async def _non_resource(self, request: web.Request, path: str) -> web.StreamResponse:
        trimmed = path.rstrip("/") or "/"
        if trimmed in ("/healthz", "/livez", "/readyz") or _health_path(trimmed):
            return health.respond(request, trimmed, self.ctx.ready.is_set())
        if trimmed == "/version":
            return json_response(version_info(self.ctx.gates.emulated_version))
        if trimmed == "/metrics":
            resp = web.Response(text=self.ctx.metrics.render())
            resp.headers["Content-Type"] = "text/plain; version=0.0.4; charset=utf-8"
            return resp
        if trimmed.startswith("/openapi/"):
            return await openapi_serving.respond(request, trimmed, self.ctx.table)
        accept = negotiate(request.headers.get("Accept"))
        parts = [p for p in trimmed.split("/") if p]
        remote = self.ctx.aggregator.remote(self.ctx.store) if parts[:1] == ["apis"] else []
        doc: Any = None
        content_type = ""
        if parts == ["api"]:
            if accept.discovery_v2:
                doc, content_type = discovery.aggregated(self.ctx.table, True), \
                    discovery.V2_CONTENT_TYPE
            else:
                doc = discovery.api_versions(self.ctx.server_address)
        elif parts == ["apis"]:
            if accept.discovery_v2:
                doc, content_type = discovery.aggregated(self.ctx.table, False, remote), \
                    discovery.V2_CONTENT_TYPE
            else:
                doc = discovery.api_group_list(self.ctx.table, remote)
        elif len(parts) == 2 and parts[0] == "api":
            doc = discovery.api_resource_list(self.ctx.table, "", parts[1])
        elif len(parts) == 2 and parts[0] == "apis":
            doc = discovery.api_group(self.ctx.table, parts[1], remote)
        elif len(parts) == 3 and parts[0] == "apis":
            doc = discovery.api_resource_list(self.ctx.table, parts[1], parts[2])
        if doc is None:
            raise StatusError(404, "NotFound", _NOT_FOUND, {})
        resp = json_response(doc)
        if content_type:
            resp.headers["Content-Type"] = content_type
        resp.headers["Vary"] = "Accept"
        return resp

    async def _resource(self, request: web.Request, info: RequestInfo, user: UserInfo
                        ) -> web.StreamResponse:
        resource = self.ctx.table.lookup(info.group, info.version, info.resource)
        if resource is None and "." in info.group:
            # A custom resource whose CRD was just written (maybe through another
            # apiserver) is served once the watch cache holds the CRD: read your writes.
            await self.ctx.store.storage.caught_up()
            resource = self.ctx.table.lookup(info.group, info.version, info.resource)
        if resource is None:
            raise StatusError(404, "NotFound", _NOT_FOUND, {})
        namespace = info.namespace if resource.namespaced else ""
        field_selector = request.query.get("fieldSelector", "")
        attrs = Attributes(user, info.verb, info.group, info.version, info.resource,
                           info.subresource, namespace,
                           info.name or _selected_name(info.verb, field_selector), info.path,
                           field_selector)
        self._authorize(attrs, info, request)
        sub = info.subresource
        if sub and sub not in discovery.subresources_of(resource):
            raise StatusError(404, "NotFound", _NOT_FOUND, {})
        if resource.namespaced and not namespace and info.verb not in ("list", "watch"):
            raise StatusError(404, "NotFound", _NOT_FOUND, {})
        named = {"update", "patch", "delete", "get"}
        # A /watch/ path makes the verb "watch" whatever the method (as upstream's request
        # info), but only GET is served there: a POST must not open a stream.
        if not sub and (info.verb not in resource.strategy.verbs
                        or (info.verb == "watch" and request.method != "GET")
                        or (info.verb in named and not info.name)
                        or (info.verb == "create" and info.name)):
            raise StatusError(405, "MethodNotAllowed",
                              "the server does not allow this method on the requested resource",
                              {})
        scope = Scope.of(request, info, resource, namespace, user,
                         negotiate(request.headers.get("Accept"), strict=True,
                                   table=_prints_tables(resource, sub)))
        if (resource.group, resource.name) in reviews.RESOURCES:
            return await reviews.create(scope, self.ctx.authorizer, self.ctx.authenticator)
        if sub == "token" and (resource.group, resource.name) == ("", "serviceaccounts") \
                and info.verb == "create" and self.ctx.signer is not None:
            # The account, pod or secret may have been written through another apiserver
            # on the store a moment ago: read them as GET does, once the cache caught up.
            await self.ctx.store.storage.caught_up()
            return await tokenrequest.create_token(scope, self.ctx.store, self.ctx.signer)
        if sub == "exec" and resource.name == "pods" and info.verb in ("get", "create"):
            return await podexec.pod_exec(scope, self.ctx.store, self.ctx.log_providers,
                                          subresources.container_of, self.ctx.kubelet_client)
        if sub == "portforward" and resource.name == "pods" and info.verb in ("get", "create"):
            return await portforward.pod_port_forward(scope, self.ctx.store,
                                                      self.ctx.log_providers,
                                                      self.ctx.kubelet_client)
        if sub == "proxy" and resource.group == "" and resource.name in ("pods", "services"):
            return await proxy.proxy(scope, self.ctx.store, self.ctx.backend_client)
        if sub == "attach" and info.verb in ("get", "create"):
            return await subresources.unsupported_stream(scope, self.ctx.store)
        if sub == "log" and info.verb == "get":
            return await subresources.pod_log(scope, self.ctx.store, self.ctx.log_providers,
                                              self.ctx.kubelet_client)
        if not sub:
            handler = _MAIN_VERBS.get(info.verb)
        elif sub in WHOLE_OBJECT_SUBRESOURCES:
            handler = _WHOLE_OBJECT_VERBS.get(info.verb)
        else:
            handler = _CUSTOM_SUBRESOURCES.get((sub, info.verb))
        if handler is None:
            raise StatusError(405, "MethodNotAllowed", "the server does not allow this method "
                              "on the requested resource", {})
        return await handler(scope, self.ctx.store)


# Subresources whose answers are not the object's kind (no Table of them upstream).
_NO_TABLES = frozenset({"binding", "eviction", "token"})


def _prints_tables(resource: Resource, subresource: str) -> bool:
    """Whether an endpoint answers `as=Table` (upstream: a table convertor); reviews,
    bindings, evictions and tokens answer 406."""
    return subresource not in _NO_TABLES and \
        (resource.group, resource.name) not in reviews.RESOURCES


Verb = Callable[[Scope, Store], Awaitable[web.StreamResponse]]
_MAIN_VERBS: dict[str, Verb] = {
    "get": rest_read.get, "list": rest_read.list_, "watch": watch.watch,
    "create": rest_write.create, "update": rest_write.update, "patch": patching.patch,
    "delete": deletion.delete, "deletecollection": deletion.delete_collection}
# /status and /finalize carry the whole object through the generic update path.
_WHOLE_OBJECT_VERBS: dict[str, Verb] = {
    "get": rest_read.get, "update": rest_write.update, "patch": patching.patch}
_CUSTOM_SUBRESOURCES: dict[tuple[str, str], Verb] = {
    ("scale", "get"): subresources.scale, ("scale", "update"): subresources.scale,
    ("scale", "patch"): subresources.scale, ("binding", "create"): subresources.binding,
    ("eviction", "create"): subresources.eviction}


def _audit_annotations(request: web.Request) -> dict[str, str]:
    """What admission adds to the audit event: its plugins' annotations (PodSecurity's
    `pod-security.kubernetes.io/*`) and ValidatingAdmissionPolicies' Audit action, as
    upstream's `validation.policy.admission.k8s.io/validation_failure`."""
    notes = dict(request.get(AUDIT_ANNOTATIONS) or {})
    failures = request.get(VALIDATION_FAILURES)
    if failures:
        notes["validation.policy.admission.k8s.io/validation_failure"] = \
            json.dumps(failures, separators=(",", ":"))
    return notes


def _resource_label(prefix: str) -> str:
    """`/registry/apps/deployments/` -> `deployments.apps`; the core group is bare."""
    _, _, group, resource, _ = prefix.split("/", 4)
    return resource if group == "core" else f"{resource}.{group}"


def _selected_name(verb: str, field_selector: str) -> str:
    """A list or watch pinned to one name by `metadata.name=` is authorized as a request
    for that object, as kube-apiserver's request info resolver does."""
    if verb not in ("list", "watch") or not field_selector:
        return ""
    try:
        return parse_field_selector(field_selector).exact("metadata.name") or ""
    except StatusError:
        return ""  # the handler answers the malformed selector


def _health_path(path: str) -> bool:
    return path.startswith(("/healthz/", "/livez/", "/readyz/"))


def _watch_flag(value: str | None) -> bool:
    try:
        return parse_bool(value, "watch")
    except StatusError:
        return False


def version_info(emulated: str | None = None) -> dict[str, str]:
    """/version: the binary's release, and the release it emulates (--emulated-version)
    with its minimum compatibility one minor below, as kube-apiserver reports them."""
    version = draemu.KUBERNETES_VERSION
    major, minor = version.lstrip("v").split(".")[:2]
    emu_major, emu_minor = (emulated or f"{major}.{minor}").split(".")[:2]
    return {"major": major, "minor": minor, "emulationMajor": emu_major,
            "emulationMinor": emu_minor, "minCompatibilityMajor": emu_major,
            "minCompatibilityMinor": str(int(emu_minor) - 1),
            "gitVersion": version, "gitCommit": f"draemu-{draemu.__version__}",
            "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z",
            "goVersion": "go1.24.0", "compiler": "gc", "platform": "linux/amd64"}
