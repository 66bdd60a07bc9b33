"""`pods/proxy` and `services/proxy`: HTTP requests relayed to a pod's port, or to a ready
endpoint of a Service's port, as kube-apiserver's ProxyREST relays them.

- The name is `[scheme:]name[:port]`: for a pod, a port number (default: the first
  declared container port, else none); for a Service, a port's name or number (default:
  its only port). The rest of the path after `/proxy` and the query go to the backend.
- A Service is resolved to a ready address of its EndpointSlices with that port (one at
  random, as upstream), an `ExternalName` Service is refused.
- The backend is dialled on the pod network (the apiserver's `NetnsDialer`, draemu/
  netns.py): its answer comes back as it is, status, headers and body; the client's
  credentials (Authorization, impersonation) are not passed on. HTTPS backends are not
  verified, as kube-apiserver's proxy transport does not verify them. Links in HTML are
  not rewritten.
- A backend that cannot be reached is a 503 `error trying to reach service: ...`.
"""

from __future__ import annotations

import os
import random
import ssl
from typing import TYPE_CHECKING

import aiohttp
from aiohttp import web

from draemu.api.errors import StatusError, bad_request, not_found_error
from draemu.api.types import Obj
from draemu.apiserver.endpoints.scope import Scope
from draemu.apiserver.genericregistry.store import Store

if TYPE_CHECKING:
    from draemu.netns import NetnsDialer

# Not passed on: the connection's own, and the client's credentials for the apiserver.
_DROPPED = frozenset({"connection", "keep-alive", "proxy-connection", "transfer-encoding",
                      "te", "trailer", "upgrade", "host", "authorization", "content-length"})
_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=10)


class BackendClient:
    """The apiserver's HTTP client for pods and Services (one connection pool)."""

    def __init__(self, dialer: NetnsDialer | None) -> None:
        self.dialer = dialer
        self._session: aiohttp.ClientSession | None = None

    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            insecure = ssl.create_default_context()
            insecure.check_hostname = False
            insecure.verify_mode = ssl.CERT_NONE
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(
                    ssl=insecure, limit=0,
                    socket_factory=self.dialer.socket_factory if self.dialer else None),
                timeout=_TIMEOUT, auto_decompress=False)
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def split_name(text: str) -> tuple[str, str, str]:
    """(scheme, name, port) of `[scheme:]name[:port]`."""
    parts = text.split(":")
    if len(parts) == 1:
        return "", parts[0], ""
    if len(parts) == 2:
        return "", parts[0], parts[1]
    if len(parts) == 3:
        return parts[0], parts[1], parts[2]
    raise bad_request(f"invalid resource name {text!r}")


def _pod_location(pod: Obj, port: str) -> str:
    if not port:
        for container in (pod.get("spec") or {}).get("containers") or []:
            if container.get("ports"):
                port = str(container["ports"][0].get("containerPort") or "")
                break
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        raise bad_request(f'invalid port "{port}" for pod {pod["metadata"]["name"]}')
    ip = (pod.get("status") or {}).get("podIP")
    if not ip:
        raise bad_request(f"address not allowed: pod {pod['metadata']['name']} has no IP")
    host = f"[{ip}]" if ":" in ip else ip
    return f"{host}:{port}" if port else host


def _service_location(store: Store, service: Obj, port: str) -> str:
    meta, spec = service["metadata"], service.get("spec") or {}
    name, namespace = meta["name"], meta["namespace"]
    if spec.get("type") == "ExternalName":
        raise bad_request(f'external name service "{name}" has no endpoints')
    ports = spec.get("ports") or []
    chosen = next((p for p in ports if (port and (p.get("name") == port
                                                  or str(p.get("port")) == port))
                   or (not port and len(ports) == 1)), None)
    if chosen is None:
        raise StatusError(503, "ServiceUnavailable",
                          f'no service port "{port}" found for service "{name}"')
    port_name = chosen.get("name") or ""
    candidates = []
    for slice_ in store.objects.lookup_namespace("endpointslices", "discovery.k8s.io",
                                                 namespace):
        if (slice_["metadata"].get("labels") or {}).get("kubernetes.io/service-name") != name:
            continue
        numbers = [p.get("port") for p in slice_.get("ports") or []
                   if (p.get("name") or "") == port_name and p.get("port")]
        for endpoint in slice_.get("endpoints") or []:
            if (endpoint.get("conditions") or {}).get("ready") is False:
                continue
            candidates += [(address, numbers[0]) for address in endpoint.get("addresses") or []
                           if numbers]
    if not candidates:
        raise StatusError(503, "ServiceUnavailable",
                          f'no endpoints available for service "{name}"')
    ip, number = random.choice(candidates)
    return f"[{ip}]:{number}" if ":" in ip else f"{ip}:{number}"


async def proxy(scope: Scope, store: Store, backends: BackendClient) -> web.StreamResponse:
    """Relay the request to the pod's or the Service's backend."""
    scheme, name, port = split_name(scope.name)
    kind = scope.resource.name
    obj = await store.storage.get(scope.resource, scope.namespace, name)
    if obj is None:
        raise not_found_error(kind, "", name)
    location = _pod_location(obj, port) if kind == "pods" else \
        _service_location(store, obj, port)
    request = scope.request
    raw = request.raw_path
    marker = f"/{scope.name}/proxy"
    rest = raw[raw.index(marker) + len(marker):] if marker in raw else "/"
    url = f"{scheme or 'http'}://{location}{rest if rest.startswith('/') else '/' + rest}"
    headers = {k: v for k, v in request.headers.items()
               if k.lower() not in _DROPPED and not k.lower().startswith("impersonate-")}
    body = await request.read()
    try:
        upstream = await backends.session().request(
            request.method, url, headers=headers, data=body or None, allow_redirects=False,
            skip_auto_headers=() if "Content-Type" in request.headers else ("Content-Type",))
    except (aiohttp.ClientError, OSError, TimeoutError) as err:
        raise StatusError(503, "ServiceUnavailable",
                          f"error trying to reach service: {_describe(err, location)}"
                          ) from None
    return await relay(request, upstream, _DROPPED)


async def relay(request: web.Request, upstream: aiohttp.ClientResponse,
                dropped: frozenset[str]) -> web.StreamResponse:
    """Stream `upstream`'s answer to the client, without the headers named in `dropped`
    (hop-by-hop ones and what the relay sets itself)."""
    async with upstream:
        response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
        for key, value in upstream.headers.items():
            if key.lower() not in dropped:
                response.headers.add(key, value)
        await response.prepare(request)
        async for chunk in upstream.content.iter_any():
            await response.write(chunk)
        await response.write_eof()
    return response


def _describe(err: BaseException, location: str) -> str:
    if isinstance(err, aiohttp.ClientConnectorError):
        errno = err.os_error.errno if err.os_error is not None else None
        reason = os.strerror(errno).lower() if errno else str(err)
        return f"dial tcp {location}: connect: {reason}"
    if isinstance(err, TimeoutError):
        return f"dial tcp {location}: i/o timeout"
    return str(err) or type(err).__name__

