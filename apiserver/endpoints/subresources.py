"""Custom subresources: pods/binding, pods/eviction, pods/log, */scale (deployments,
replicasets). `/status` and namespaces/finalize go through the generic update path."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import AsyncGenerator
from dataclasses import dataclass, replace
from typing import Any, Protocol

from aiohttp import web

from draemu.api.errors import StatusError, bad_request, conflict, not_found_error
from draemu.api.meta import time_now
from draemu.api.types import Obj
from draemu.apiserver.admission.chain import Attributes
from draemu.apiserver.endpoints import disruptionbudgets, managedfields
from draemu.apiserver.endpoints.kubeletclient import LOG_PARAMETERS, KubeletClient
from draemu.apiserver.endpoints.patching import PATCH_TYPES, apply_patch
from draemu.apiserver.endpoints.rest_write import body_object
from draemu.apiserver.endpoints.scope import Scope
from draemu.apiserver.genericregistry.store import Store
from draemu.apiserver.registry.core.common import selector_requirements
from draemu.apiserver.storage.storeadapter import MODIFIED
from draemu.apiserver.wire import timestamps
from draemu.apiserver.wire.codec import (
    decode,
    media_type,
    parse_bool,
    parse_int,
    read_body,
)
from draemu.openapi import schemas


def _created_status() -> Obj:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "code": 201}


# pods/binding ---------------------------------------------------------------------------
async def binding(scope: Scope, store: Store) -> web.Response:
    body = _typed_body("Binding", await body_object(scope))
    target = body.get("target") or {}
    node = target.get("name") or ""
    if not node:
        raise StatusError(422, "Invalid", f'Binding.core "{scope.name}" is invalid: '
                          "target.name: Required value")
    if (body.get("metadata") or {}).get("name") not in (None, "", scope.name):
        raise bad_request("name in URL does not match name in Binding object")
    dry_run = scope.dry_run()
    annotations = (body.get("metadata") or {}).get("annotations") or {}

    async def propose(pod: Obj) -> Obj:
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            raise conflict("pods/binding", "", scope.name,
                           f"pod {scope.name} is being deleted, cannot be assigned to a host")
        current = (pod.get("spec") or {}).get("nodeName")
        if current:
            raise conflict("pods/binding", "", scope.name,
                           f'pod {scope.name} is already assigned to node "{current}"')
        pod.setdefault("spec", {})["nodeName"] = node
        if store.gates.enabled("ClearingNominatedNodeNameAfterBinding"):
            pod.setdefault("status", {}).pop("nominatedNodeName", None)
        if annotations:
            meta.setdefault("annotations", {}).update(annotations)
        conditions = pod.setdefault("status", {}).setdefault("conditions", [])
        stamp = time_now()
        for c in conditions:
            if c.get("type") == "PodScheduled":
                if c.get("status") != "True":
                    c.update({"status": "True", "lastTransitionTime": stamp})
                    c.pop("reason", None)
                    c.pop("message", None)
                break
        else:
            conditions.append({"type": "PodScheduled", "status": "True",
                               "lastProbeTime": None, "lastTransitionTime": stamp})
        return pod

    # The binding writes spec and status at once: bypass the main resource's rule
    # that keeps the old status.
    bind_scope = _with_subresource(scope, "binding")
    await store.update(bind_scope, propose, dry_run=dry_run,
                       manager=managedfields.manager(scope), pinned=False)
    return scope.respond(_created_status(), 201)


def _with_subresource(scope: Scope, subresource: str) -> Scope:
    return replace(scope, subresource=subresource)


# pods/attach ------------------------------------------------------------------------------
_UNSUPPORTED_STREAMS = {
    "attach": "draemu's kubelets cannot attach to a container: no container runtime here "
              "keeps a container's console (use kubectl logs, or kubectl exec into a "
              "process-runtime pod)",
}


async def unsupported_stream(scope: Scope, store: Store) -> web.Response:
    """pods/attach: a Status that says why, once the pod is known (a missing pod is still
    a 404, as upstream)."""
    if store.cache.get(scope.resource.key(scope.namespace, scope.name)) is None:
        raise not_found_error("pods", "", scope.name)
    await connect_admission(scope, store, attach_options(scope))
    raise bad_request(f"pods/{scope.subresource} is not supported: "
                      f"{_UNSUPPORTED_STREAMS[scope.subresource]}")


def attach_options(scope: Scope) -> Obj:
    """The PodAttachOptions of the request's query, as the connect's object."""
    query = scope.request.query
    options: Obj = {"kind": "PodAttachOptions", "apiVersion": "v1"}
    for name in ("stdin", "stdout", "stderr", "tty"):
        if query.get(name, "").lower() in ("true", "1"):
            options[name] = True
    if query.get("container"):
        options["container"] = query["container"]
    return options


async def connect_admission(scope: Scope, store: Store, options: Obj) -> None:
    """A CONNECT of the subresource through admission (its webhooks may deny it), as
    kube-apiserver admits a connect before it proxies it."""
    attrs = Attributes("CONNECT", scope, options, None, False, scope.subresource)
    await store.admission.admit(attrs)
    await store.admission.validate(attrs)


# pods/eviction --------------------------------------------------------------------------
async def eviction(scope: Scope, store: Store) -> web.Response:
    body = await body_object(scope)
    for field in ("metadata", "deleteOptions"):
        if not isinstance(body.get(field) or {}, dict):
            raise bad_request(f'Eviction in version "v1" cannot be handled as a Eviction: '
                              f"json: cannot unmarshal {field} into an object")
    if (body.get("metadata") or {}).get("name") not in (None, "", scope.name):
        raise bad_request("name in URL does not match name in Eviction object")
    opts = body.get("deleteOptions") or {}
    dry_run = scope.dry_run(opts)
    # The eviction is a create of pods/eviction (NodeRestriction: a node evicts only its
    # own pods); the pod's delete is then admitted as any delete.
    attrs = Attributes("CREATE", scope, body, None, dry_run, "eviction")
    await store.admission.admit(attrs)
    pod = await store.storage.get(scope.resource, scope.namespace, scope.name)
    if pod is None:
        raise not_found_error("pods", "", scope.name)
    await store.admission.validate(attrs)
    if not disruptionbudgets.can_ignore(pod):
        answer = await disruptionbudgets.take_disruption(scope, store, pod, dry_run)
        if answer is not None:
            return scope.respond(answer, 500)
    await store.delete(_with_subresource(scope, ""), scope.namespace, scope.name, opts,
                       dry_run)
    return scope.respond(_created_status(), 201)


# */scale --------------------------------------------------------------------------------
_SCALE_PATCH_TYPES = [t for t in PATCH_TYPES if not t.endswith("yaml")]


def scale_of(obj: Obj) -> Obj:
    meta = obj["metadata"]
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return {"kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion",
                                              "creationTimestamp") if k in meta},
            "spec": {"replicas": int(spec.get("replicas", 1))},
            "status": {"replicas": int(status.get("replicas") or 0),
                       "selector": ",".join(selector_requirements(_label_selector(
                           spec.get("selector"))))}}


def _label_selector(selector: Obj | None) -> Obj | None:
    """A ReplicationController's selector is a plain label map; the apps kinds' a
    LabelSelector."""
    if selector and not {"matchLabels", "matchExpressions"} & set(selector):
        return {"matchLabels": selector}
    return selector


async def scale(scope: Scope, store: Store) -> web.Response:
    method = scope.request.method
    if method == "GET":
        obj = await store.storage.get(scope.resource, scope.namespace, scope.name)
        if obj is None:
            raise not_found_error(scope.resource.name, scope.resource.group, scope.name)
        return scope.respond(scope.strategy.scale_of(obj) or scale_of(obj))
    dry_run = scope.dry_run()
    if method == "PUT":
        body = await body_object(scope)
        ctype = ""
    elif method == "PATCH":
        ctype = media_type(scope.request.headers.get("Content-Type"))
        if ctype not in _SCALE_PATCH_TYPES:
            raise StatusError(415, "UnsupportedMediaType",
                              "the body of the request was in an unknown format - accepted "
                              "media types include: " + ", ".join(_SCALE_PATCH_TYPES))
        body = decode(await read_body(scope.request), "application/json")
    else:
        raise StatusError(405, "MethodNotAllowed",
                          f"{method} is not supported on {scope.resource.name}/scale")
    async def propose(obj: Obj) -> Obj:
        current = scope.strategy.scale_of(obj) or scale_of(obj)
        wanted = body if not ctype else apply_patch(scope, ctype, copy.deepcopy(current), body)
        _check_scale_types(wanted)
        rv = str((wanted.get("metadata") or {}).get("resourceVersion") or "")
        if rv and rv != obj["metadata"]["resourceVersion"]:
            raise conflict(scope.resource.name, scope.resource.group, scope.name, MODIFIED)
        replicas = (wanted.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or replicas < 0:
            raise StatusError(422, "Invalid", f'Scale.autoscaling "{scope.name}" is invalid: '
                              f"spec.replicas: Invalid value: {replicas}: must be greater than "
                              "or equal to 0")
        scope.strategy.set_replicas(obj, replicas)
        return obj

    result = await store.update(_with_subresource(scope, "scale"), propose, dry_run=dry_run,
                                manager=managedfields.manager(scope), pinned=False)
    return scope.respond(scope.strategy.scale_of(result) or scale_of(result))


def _typed_body(kind: str, body: Obj) -> Obj:
    """A core/v1 body whose JSON types match `kind`'s schema (upstream's decoding into the
    Go type): `"target": [...]` is a 400 naming the field, not a crash further on."""
    found = schemas.check_request("", "v1", kind, body, None, timestamps.format_value)
    if found.type_error:
        raise bad_request(f'{kind} in version "v1" cannot be handled as a {kind}: '
                          f"{found.type_error}")
    return body


# pods/log -------------------------------------------------------------------------------
@dataclass(frozen=True)
class LogOptions:
    container: str
    follow: bool = False
    previous: bool = False
    timestamps: bool = False
    tail_lines: int | None = None
    since_seconds: int | None = None
    limit_bytes: int | None = None


class LogProvider(Protocol):
    """What serves the logs of the pods on one node (the node's kubelet)."""

    def pod_log(self, namespace: str, pod: str, uid: str, options: LogOptions
                ) -> AsyncGenerator[bytes, None]: ...


class LogProviders:
    """Log providers by node name; in-process kubelets register themselves here."""

    def __init__(self) -> None:
        self._by_node: dict[str, LogProvider] = {}

    def register(self, node: str, provider: LogProvider) -> None:
        self._by_node[node] = provider

    def unregister(self, node: str) -> None:
        self._by_node.pop(node, None)

    def get(self, node: str) -> LogProvider | None:
        return self._by_node.get(node)


def container_of(pod: Obj, name: str, wanted: str) -> str:
    """The container a pods/log or pods/exec request means (kubectl's default-container
    annotation, or the only one)."""
    spec = pod.get("spec") or {}
    names = [c.get("name", "") for c in spec.get("containers") or []]
    others = [c.get("name", "") for c in (spec.get("initContainers") or []) +
              (spec.get("ephemeralContainers") or [])]
    if wanted:
        if wanted not in names + others:
            raise bad_request(f"container {wanted} is not valid for pod {name}")
        return wanted
    default = ((pod.get("metadata") or {}).get("annotations") or {}).get(
        "kubectl.kubernetes.io/default-container")
    if default in names:
        return default
    if len(names) == 1:
        return names[0]
    raise bad_request(f"a container name must be specified for pod {name}, choose one of: "
                      f"[{' '.join(names)}]")


async def pod_log(scope: Scope, store: Store, providers: LogProviders,
                  kubelets: KubeletClient | None = None) -> web.StreamResponse:
    """In-process kubelets answer through their log provider; a kubelet in its own
    process through its HTTPS API, which the apiserver proxies as kube-apiserver does."""
    pod = await store.storage.get(scope.resource, scope.namespace, scope.name)
    if pod is None:
        raise not_found_error("pods", "", scope.name)
    q = scope.query
    options = LogOptions(
        container=container_of(pod, scope.name, q.get("container", "")),
        follow=parse_bool(q.get("follow"), "follow"),
        previous=parse_bool(q.get("previous"), "previous"),
        timestamps=parse_bool(q.get("timestamps"), "timestamps"),
        tail_lines=parse_int(q.get("tailLines"), "tailLines"),
        since_seconds=parse_int(q.get("sinceSeconds"), "sinceSeconds"),
        limit_bytes=parse_int(q.get("limitBytes"), "limitBytes"))
    node = (pod.get("spec") or {}).get("nodeName")
    if not node:
        raise bad_request(f"pod {scope.name} does not have a host assigned")
    provider = providers.get(node)
    if provider is not None:
        chunks = provider.pod_log(scope.namespace, scope.name,
                                  pod["metadata"].get("uid", ""), options)
    elif kubelets is not None:
        node_obj = store.objects.lookup("nodes", "", "", node)
        if node_obj is None:
            raise not_found_error("nodes", "", node)
        forwarded = {k: q[k] for k in LOG_PARAMETERS if q.get(k)}
        chunks = await kubelets.container_logs(
            node_obj, scope.namespace, scope.name, options.container, forwarded,
            verify=not parse_bool(q.get("insecureSkipTLSVerifyBackend"),
                                  "insecureSkipTLSVerifyBackend"))
    else:
        raise StatusError(503, "ServiceUnavailable",
                          f'no log provider for node "{node}": the node\'s kubelet is not '
                          "connected to this apiserver")
    # Closing the stream when the client goes away ends a follow at once (and with it the
    # connection to a kubelet).
    async with contextlib.aclosing(chunks):
        # The first chunk before the headers: a log that cannot be read (a container
        # still waiting to start) is a Status error, not a broken 200.
        try:
            first: bytes | None = await anext(chunks)
        except StopAsyncIteration:
            first = None
        resp = web.StreamResponse(status=200)
        resp.headers["Content-Type"] = "text/plain"
        resp.enable_chunked_encoding()
        await resp.prepare(scope.request)
        try:
            if first is not None:
                await resp.write(first)
                async for chunk in chunks:
                    await resp.write(chunk)
        except ConnectionResetError:
            pass
    return resp


def _check_scale_types(scale: Any) -> None:
    """A Scale decodes like any object: wrong JSON types are a 400 in Go's words."""
    from draemu.openapi import schemas

    error = schemas.type_error("autoscaling", "v1", "Scale", scale) \
        if isinstance(scale, dict) else "json: cannot unmarshal array into Go value of type " \
        "v1.Scale"
    if error:
        raise bad_request(f'Scale in version "v1" cannot be handled as a Scale: {error}')
