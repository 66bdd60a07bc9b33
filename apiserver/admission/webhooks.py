"""Admission webhooks: the Mutating- and ValidatingWebhookConfigurations in the watch
cache are called over HTTPS with an admission.k8s.io AdmissionReview, as
kube-apiserver's MutatingAdmissionWebhook and ValidatingAdmissionWebhook plugins do.

- Matching: rules, namespaceSelector, objectSelector, matchPolicy and matchConditions
  (CEL over `object`, `oldObject`, `request`).
- Transport: `clientConfig.url`, or `clientConfig.service`, which is dialled at an
  address of the Service's Endpoints with the certificate checked for
  `<service>.<namespace>.svc`; the server certificate is verified against `caBundle`
  (the system trust store without one); `timeoutSeconds` bounds the call, waiting for a
  connection included. Each webhook has a client of its own (upstream caches one per
  client config) with at most MAX_CONNECTIONS connections: a webhook that never
  answers holds up only its own calls, never another webhook's.
- Results: a denial is upstream's `admission webhook "<name>" denied the request: ...`
  Status; a failed call follows `failurePolicy` (Fail: a 500 `failed calling webhook`,
  Ignore: the request goes on); warnings become Warning headers; mutating webhooks'
  JSONPatch responses are applied in order; `reinvocationPolicy: IfNeeded` webhooks are
  called again in the mutating phase's second pass (`reinvocation.py`).

A webhook served by a pod is reached on the pod network (draemu/podnetwork.py), with
sockets made in its cluster namespace (`dialer`), as kube-apiserver with
--enable-aggregator-routing reaches a Service's endpoints; without a pod network (the
fake runtime) pods serve nothing, and the call fails as upstream's would, through the
webhook's failurePolicy.
"""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import uuid
from typing import TYPE_CHECKING, Any

import aiohttp

from draemu.api.errors import StatusError
from draemu.api.types import Obj
from draemu.apiserver.admission.matching import Request, resources_match
from draemu.apiserver.admission.policies import EXEMPT, GROUP, request_variable, user_info
from draemu.apiserver.admission.reinvocation import ReinvocationContext
from draemu.apiserver.registry.resources import ResourceTable
from draemu.cel.cost import PER_CALL_LIMIT, RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS, Meter
from draemu.cel.errors import CELCompileError, CELRuntimeError
from draemu.cel.kubernetes import compile_kubernetes
from draemu.cel.offload import run_off_loop
from draemu.log import get_logger

if TYPE_CHECKING:
    from draemu.netns import NetnsDialer

log = get_logger("apiserver.webhooks")

VALIDATING = "validatingwebhookconfigurations"
MUTATING = "mutatingwebhookconfigurations"
VARIABLES = ("object", "oldObject", "request")
_OPTIONS = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}
MAX_CONNECTIONS = 100  # per webhook: calls beyond wait for one, within their timeout
MAX_CLIENTS = 256  # webhooks' clients kept; the least recently used one is closed


class CallError(Exception):
    """A webhook could not be called or answered wrongly (upstream's ErrCallingWebhook)."""


class Webhooks:
    def __init__(self, table: ResourceTable, cache: Any, dialer: NetnsDialer | None = None
                 ) -> None:
        self.table = table
        self.cache = cache
        self.dialer = dialer
        # One client per webhook (its name and where it is dialled), least recently used
        # first.
        self._sessions: dict[tuple[str, str], aiohttp.ClientSession] = {}
        self._closing: set[asyncio.Task[None]] = set()
        self._contexts: dict[str, ssl.SSLContext] = {}

    async def close(self) -> None:
        sessions, self._sessions = self._sessions, {}
        for session in sessions.values():
            await session.close()

    def _session(self, hook: Obj, url: str) -> aiohttp.ClientSession:
        key = (str(hook.get("name") or ""), url)
        session = self._sessions.pop(key, None)
        if session is None:
            session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(
                limit=MAX_CONNECTIONS,
                socket_factory=self.dialer.socket_factory if self.dialer else None))
            if len(self._sessions) >= MAX_CLIENTS:
                oldest = self._sessions.pop(next(iter(self._sessions)))
                task = asyncio.get_running_loop().create_task(oldest.close())
                self._closing.add(task)
                task.add_done_callback(self._closing.discard)
        self._sessions[key] = session
        return session

    def _configurations(self, resource: str) -> list[Obj]:
        r = self.table.by_group_resource(GROUP, resource)
        if r is None:
            return []
        return [obj for _key, obj in self.cache.list(r.prefix)]

    def has_any(self, group: str, resource: str) -> bool:
        if group == GROUP and resource in EXEMPT:
            return False
        return bool(self._configurations(VALIDATING) or self._configurations(MUTATING))

    # Admission -----------------------------------------------------------------------------
    async def mutate(self, req: Request, obj: Obj, old: Obj | None, user: Any, dry_run: bool,
                     warnings: list[str], reinvocation: ReinvocationContext | None = None
                     ) -> Obj:
        """`obj` (request version) after every matching mutating webhook's patch. In the
        second pass of a reinvocation only the webhooks with `reinvocationPolicy:
        IfNeeded` that ran before are called again, and only if the object changed."""
        if req.group == GROUP and req.resource in EXEMPT:
            return obj
        context = reinvocation or ReinvocationContext()
        mine = context.of("MutatingAdmissionWebhook")
        if context.is_reinvoke and mine.output_changed(obj):
            mine.require_reinvoking_previously_invoked()
        for config in sorted(self._configurations(MUTATING),
                             key=lambda c: c["metadata"]["name"]):
            for i, hook in enumerate(config.get("webhooks") or []):
                key = (config["metadata"]["name"], hook.get("name") or "", i)
                if not await self._matches(hook, req, obj, old, user, dry_run) or (
                        context.is_reinvoke and not mine.should_reinvoke(key)):
                    continue
                review = await self._call(hook, req, obj, old, user, dry_run, warnings)
                patch = review.get("patch") if review is not None else None
                if patch:
                    patched = _apply_patch(hook, obj, patch, review.get("patchType"))
                    if patched != obj:
                        mine.require_reinvoking_previously_invoked()
                        context.should_reinvoke = True
                    obj = patched
                if hook.get("reinvocationPolicy") == "IfNeeded":
                    mine.invoked(key)
        mine.record_output(obj)
        return obj

    async def validate(self, req: Request, obj: Obj | None, old: Obj | None, user: Any,
                       dry_run: bool, warnings: list[str]) -> None:
        if req.group == GROUP and req.resource in EXEMPT:
            return
        calls = [self._call(hook, req, obj, old, user, dry_run, warnings)
                 for config in self._configurations(VALIDATING)
                 for hook in config.get("webhooks") or []
                 if await self._matches(hook, req, obj, old, user, dry_run)]
        if calls:
            await asyncio.gather(*calls)

    async def _matches(self, hook: Obj, req: Request, obj: Obj | None, old: Obj | None,
                       user: Any, dry_run: bool) -> bool:
        match = {"resourceRules": hook.get("rules") or [],
                 "matchPolicy": hook.get("matchPolicy") or "Equivalent",
                 "namespaceSelector": hook.get("namespaceSelector"),
                 "objectSelector": hook.get("objectSelector")}
        namespace = None
        if req.namespaced and req.namespace:
            ns = self.table.by_group_resource("", "namespaces")
            namespace = self.cache.get(ns.key("", req.namespace)) if ns is not None else None
        if not resources_match(match, req, obj, old, namespace):
            return False
        conditions = hook.get("matchConditions") or []
        if not conditions:
            return True
        context = {"object": obj, "oldObject": old,
                   "request": request_variable(req, user, dry_run)}
        # Off the event loop: the conditions may cost up to their budget.
        return await run_off_loop(lambda deadline: _conditions_hold(
            hook, conditions, context, deadline))

    # Calls ---------------------------------------------------------------------------------
    async def _call(self, hook: Obj, req: Request, obj: Obj | None, old: Obj | None,
                    user: Any, dry_run: bool, warnings: list[str]) -> Obj | None:
        """The webhook's response (None when a failure was ignored); raises the denial."""
        name = hook.get("name") or ""
        uid = str(uuid.uuid4())
        try:
            response = await self._post(hook, _review(hook, uid, req, obj, old, user, dry_run))
            result = _check_response(response, uid)
        except CallError as e:
            if (hook.get("failurePolicy") or "Fail") == "Ignore":
                log.warning("failed calling webhook, failing open", webhook=name, error=str(e))
                return None
            raise StatusError(500, "InternalError", f'Internal error occurred: failed calling '
                              f'webhook "{name}": {e}') from None
        warnings.extend(str(w) for w in result.get("warnings") or [])
        if result.get("allowed") is True:
            return result
        raise _rejection(name, result.get("status") or {})

    async def _post(self, hook: Obj, body: Obj) -> Any:
        config = hook.get("clientConfig") or {}
        url, server_name = self._url(config)
        timeout = int(hook.get("timeoutSeconds") or 10)
        target = f"{url}{'&' if '?' in url else '?'}timeout={timeout}s"
        try:
            async with self._session(hook, url).post(
                    target, data=json.dumps(body).encode(),
                    headers={"Content-Type": "application/json", "Accept": "application/json"},
                    ssl=self._ssl(config.get("caBundle") or ""), server_hostname=server_name,
                    timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
                text = await resp.read()
                if resp.status >= 300:
                    raise CallError(f'failed to call webhook: the server responded with the '
                                    f'status code {resp.status} but did not return more '
                                    f'information (post {target})')
        except (aiohttp.ClientError, TimeoutError, ssl.SSLError, OSError) as e:
            raise CallError(f'failed to call webhook: Post "{target}": '
                            f'{_describe(e)}') from None
        try:
            return json.loads(text)
        except ValueError as e:
            raise CallError(f"received invalid webhook response: {e}") from None

    def _url(self, config: Obj) -> tuple[str, str | None]:
        return client_config_url(self.table, self.cache, config)

    def _ssl(self, ca_bundle: str) -> ssl.SSLContext:
        ctx = self._contexts.get(ca_bundle)
        if ctx is None:
            ctx = ssl.create_default_context()
            if ca_bundle:
                try:
                    ctx = ssl.create_default_context(
                        cadata=base64.b64decode(ca_bundle).decode())
                except (ValueError, ssl.SSLError):
                    ctx = ssl.create_default_context()
            self._contexts[ca_bundle] = ctx
        return ctx


def client_config_url(table: ResourceTable, cache: Any, config: Obj) -> tuple[str, str | None]:
    """Where a webhook's `clientConfig` is dialled and the TLS server name to check: its
    `url`, or an address of its Service's Endpoints (CallError when there is none)."""
    if config.get("url"):
        return str(config["url"]), None
    service = config.get("service") or {}
    name, namespace = service.get("name", ""), service.get("namespace", "")
    port = int(service.get("port") or 443)
    path = service.get("path") or ""
    host = f"{name}.{namespace}.svc"
    address = service_endpoint(table, cache, name, namespace, port)
    display = f"https://{host}:{port}{path}"
    if address is None:
        raise CallError(f'failed to call webhook: Post "{display}?timeout=10s": no '
                        f'endpoints available for service "{name}"')
    ip, target_port = address
    shown = f"[{ip}]" if ":" in ip else ip
    return f"https://{shown}:{target_port}{path}", host


def service_endpoint(table: ResourceTable, cache: Any, name: str, namespace: str, port: int
                     ) -> tuple[str, int] | None:
    """A ready address of the Service's Endpoints for `port` (its target port)."""
    endpoints = table.by_group_resource("", "endpoints")
    services = table.by_group_resource("", "services")
    if endpoints is None or services is None:
        return None
    service = cache.get(services.key(namespace, name))
    found = cache.get(endpoints.key(namespace, name))
    if service is None or found is None:
        return None
    port_name = ""
    for p in (service.get("spec") or {}).get("ports") or []:
        if p.get("port") == port:
            port_name = p.get("name") or ""
    for subset in found.get("subsets") or []:
        for p in subset.get("ports") or []:
            if (p.get("name") or "") == port_name:
                for address in subset.get("addresses") or []:
                    if address.get("ip"):
                        return str(address["ip"]), int(p.get("port") or port)
    return None


def _describe(e: BaseException) -> str:
    if isinstance(e, TimeoutError):
        return "context deadline exceeded"
    if isinstance(e, aiohttp.ClientConnectorCertificateError):
        return f"tls: failed to verify certificate: {e.certificate_error}"
    if isinstance(e, aiohttp.ClientConnectorError):
        return f"dial tcp {e.host}:{e.port}: connect: connection refused"
    return str(e) or type(e).__name__



def _conditions_hold(hook: Obj, conditions: list[Obj], context: dict[str, Any],
                     deadline: float) -> bool:
    """A webhook's matchConditions against RuntimeCELCostBudgetMatchConditions (each
    expression also stopped at PerCallLimit); an error follows the failurePolicy."""
    remaining = RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS
    for condition in conditions:
        meter = Meter(PER_CALL_LIMIT, deadline)
        error: str | None = None
        try:
            result = compile_kubernetes(condition.get("expression") or "",
                                        VARIABLES).evaluate(context, meter)
        except (CELCompileError, CELRuntimeError) as e:
            result, error = None, getattr(e, "message", None) or str(e)
        if meter.cost > remaining:
            error = ("validation failed due to running out of cost budget, no further "
                     "validation rules will be run")
        remaining -= meter.cost
        if error is not None:
            if (hook.get("failurePolicy") or "Fail") == "Fail":
                raise StatusError(500, "InternalError", f"Internal error occurred: failed "
                                  f"calling webhook \"{hook.get('name')}\": {error}")
            return False
        if result is not True:
            return False
    return True

def _review(hook: Obj, uid: str, req: Request, obj: Obj | None, old: Obj | None, user: Any,
            dry_run: bool) -> Obj:
    versions = hook.get("admissionReviewVersions") or ["v1"]
    version = "v1" if "v1" in versions else "v1beta1"
    request: Obj = {
        "uid": uid,
        "kind": {"group": req.group, "version": req.version, "kind": req.kind},
        "resource": {"group": req.group, "version": req.version, "resource": req.resource},
        "requestKind": {"group": req.group, "version": req.version, "kind": req.kind},
        "requestResource": {"group": req.group, "version": req.version,
                            "resource": req.resource},
        "name": req.name, "namespace": req.namespace, "operation": req.operation,
        "userInfo": user_info(user), "object": obj, "oldObject": old, "dryRun": dry_run,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": _OPTIONS.get(req.operation,
                                                                         "CreateOptions")}}
    if req.subresource:
        request["subResource"] = request["requestSubResource"] = req.subresource
    if not req.namespace:
        del request["namespace"]
    return {"apiVersion": f"admission.k8s.io/{version}", "kind": "AdmissionReview",
            "request": request}


def _check_response(review: Any, uid: str) -> Obj:
    if not isinstance(review, dict) or not isinstance(review.get("response"), dict):
        raise CallError("received invalid webhook response: webhook response was absent")
    response = review["response"]
    if response.get("uid") != uid:
        raise CallError(f"received invalid webhook response: expected response.uid="
                        f"{json.dumps(uid)}, got {json.dumps(response.get('uid', ''))}")
    return response


def _rejection(name: str, status: Obj) -> StatusError:
    denied = f'admission webhook "{name}" denied the request'
    message = status.get("message") or ""
    reason = status.get("reason") or ""
    if message:
        text = f"{denied}: {message}"
    elif reason:
        text = f"{denied}: {reason}"
    else:
        text = f"{denied} without explanation"
    code = int(status.get("code") or 400)
    if code < 400:
        code = 400
    details = status.get("details") if isinstance(status.get("details"), dict) else {}
    return StatusError(code, reason, text, details or {})


def _apply_patch(hook: Obj, obj: Obj, patch: str, patch_type: Any) -> Obj:
    from draemu.apiserver.wire import patch as patch_library

    name = hook.get("name") or ""
    if patch_type != "JSONPatch":
        raise StatusError(500, "InternalError", f'Internal error occurred: failed calling '
                          f'webhook "{name}": unsupported patch type {json.dumps(patch_type)}')
    try:
        operations = json.loads(base64.b64decode(patch))
        patched = patch_library.apply_json_patch(obj, operations)
    except (ValueError, StatusError) as e:
        raise StatusError(500, "InternalError", f'Internal error occurred: failed calling '
                          f'webhook "{name}": {getattr(e, "message", e)}') from None
    if not isinstance(patched, dict):
        raise StatusError(500, "InternalError", f'Internal error occurred: failed calling '
                          f'webhook "{name}": the patched object is not an object')
    return patched

