"""The aggregation layer: requests for a group-version that an APIService names with a
`spec.service` go to that extension apiserver, as kube-aggregator's proxy handler sends
them.

- The backend is a ready endpoint of the Service's port (EndpointSlices), dialled on the
  pod network (the apiserver's `NetnsDialer`), over TLS checked against the APIService's
  `caBundle` for `<service>.<namespace>.svc` (not checked with
  `insecureSkipTLSVerify`), with the front-proxy client certificate.
- The user this apiserver authenticated goes along in `X-Remote-User`, `X-Remote-Group`
  and `X-Remote-Extra-*` (what the extension-apiserver-authentication ConfigMap tells
  extension servers to trust from that certificate); the client's own credentials and
  impersonation headers do not.
- An APIService that is not Available answers 503 `service unavailable`; a backend that
  cannot be reached, 503 `Error trying to reach service: ...`.
- `discover(...)` fetches a group-version's resource list from its server (the
  availability check and aggregated discovery use it).
"""

from __future__ import annotations

import base64
import binascii
import json
import random
import ssl
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import aiohttp
from aiohttp import web

from draemu.api.errors import StatusError
from draemu.api.types import Obj
from draemu.apiserver.endpoints.proxy import relay
from draemu.apiserver.genericregistry.store import Store
from draemu.identity import UserInfo

if TYPE_CHECKING:
    from draemu.netns import NetnsDialer

GROUP = "apiregistration.k8s.io"
RESOURCE = "apiservices"
# Not passed on: the connection's own headers, and the client's credentials.
_DROPPED = frozenset({"connection", "keep-alive", "proxy-connection", "transfer-encoding",
                      "te", "trailer", "upgrade", "host", "authorization", "content-length",
                      "x-remote-user", "x-remote-group", "x-remote-uid"})
_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=10)


class BackendUnreachable(Exception):
    """The extension apiserver could not be resolved or reached."""


class AggregatorClient:
    """TLS to extension apiservers with the front-proxy client certificate."""

    def __init__(self, dialer: NetnsDialer | None, pki_dir: Path | None) -> None:
        self.dialer = dialer
        self.pki_dir = pki_dir
        self._session: aiohttp.ClientSession | None = None
        self._contexts: dict[tuple[str, bool], ssl.SSLContext] = {}

    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(
                    limit=0, force_close=False,
                    socket_factory=self.dialer.socket_factory if self.dialer else None),
                timeout=_TIMEOUT, auto_decompress=False)
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def ssl_for(self, spec: Obj) -> ssl.SSLContext:
        bundle, insecure = str(spec.get("caBundle") or ""), bool(spec.get("insecureSkipTLSVerify"))
        ctx = self._contexts.get((bundle, insecure))
        if ctx is None:
            ctx = ssl.create_default_context()
            if insecure:
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            elif bundle:
                try:
                    ctx = ssl.create_default_context(cadata=base64.b64decode(bundle).decode())
                except (binascii.Error, ValueError, ssl.SSLError):
                    pass
            cert = self.pki_dir / "front-proxy-client.crt" if self.pki_dir else None
            if cert is not None and cert.exists():
                ctx.load_cert_chain(cert, cert.with_suffix(".key"))
            self._contexts[(bundle, insecure)] = ctx
        return ctx


def remote_apiservice(store: Store, group: str, version: str) -> Obj | None:
    """The APIService of `group`/`version` when an extension apiserver serves it."""
    found = store.objects.lookup(RESOURCE, GROUP, "", f"{version}.{group}")
    if found is None or not isinstance((found.get("spec") or {}).get("service"), dict):
        return None
    return found


def available(apiservice: Obj) -> bool:
    return any(c.get("type") == "Available" and c.get("status") == "True"
               for c in (apiservice.get("status") or {}).get("conditions") or [])


def resolve(store: Store, apiservice: Obj) -> tuple[str, str]:
    """(`https://address:port`, TLS server name) of a ready endpoint of the Service."""
    ref = apiservice["spec"]["service"]
    name, namespace, port = ref.get("name", ""), ref.get("namespace", ""), ref.get("port", 443)
    service = store.objects.lookup("services", "", namespace, name)
    if service is None:
        raise BackendUnreachable(f'service "{name}" not found')
    port_name = next((p.get("name") or "" for p in (service.get("spec") or {}).get("ports")
                      or [] if p.get("port") == port), None)
    if port_name is None:
        raise BackendUnreachable(f'no service port {port} found for service "{name}"')
    candidates = []
    for slice_ in store.objects.lookup_namespace("endpointslices", "discovery.k8s.io",
                                                 namespace):
        if (slice_["metadata"].get("labels") or {}).get("kubernetes.io/service-name") != name:
            continue
        numbers = [p["port"] for p in slice_.get("ports") or []
                   if (p.get("name") or "") == port_name and p.get("port")]
        for endpoint in slice_.get("endpoints") or []:
            if numbers and (endpoint.get("conditions") or {}).get("ready") is not False:
                candidates += [(a, numbers[0]) for a in endpoint.get("addresses") or []]
    if not candidates:
        raise BackendUnreachable(f'no endpoints available for service "{name}"')
    ip, number = random.choice(candidates)
    host = f"[{ip}]" if ":" in ip else ip
    return f"https://{host}:{number}", f"{name}.{namespace}.svc"


def identity_headers(user: UserInfo) -> list[tuple[str, str]]:
    """transport.SetAuthProxyHeaders: the user, each group, each extra value."""
    headers = [("X-Remote-User", user.name)]
    headers += [("X-Remote-Group", g) for g in user.groups]
    for key, values in user.extra.items():
        headers += [(f"X-Remote-Extra-{quote(key, safe='')}", v) for v in values]
    return headers


async def proxy(request: web.Request, apiservice: Obj, user: UserInfo, store: Store,
                client: AggregatorClient) -> web.StreamResponse:
    """Relay the request to the APIService's extension apiserver."""
    if not available(apiservice):
        raise StatusError(503, "ServiceUnavailable", "service unavailable")
    try:
        base, server_name = resolve(store, apiservice)
    except BackendUnreachable as e:
        raise StatusError(503, "ServiceUnavailable", f"service unavailable: {e}") from None
    headers = [(k, v) for k, v in request.headers.items()
               if k.lower() not in _DROPPED and not k.lower().startswith(("impersonate-",
                                                                          "x-remote-extra-"))]
    headers += identity_headers(user)
    body = await request.read()
    try:
        upstream = await client.session().request(
            request.method, base + request.raw_path, headers=headers, data=body or None,
            allow_redirects=False, ssl=client.ssl_for(apiservice["spec"]),
            server_hostname=server_name,
            # A body without a Content-Type goes on without one (aiohttp would call it
            # application/octet-stream, which an apiserver refuses with a 415).
            skip_auto_headers=() if "Content-Type" in request.headers else ("Content-Type",))
    except (aiohttp.ClientError, OSError, TimeoutError, ssl.SSLError) as err:
        raise StatusError(503, "ServiceUnavailable",
                          f"Error trying to reach service: '{err}'") from None
    return await relay(request, upstream, _DROPPED)


async def discover(store: Store, client: AggregatorClient, apiservice: Obj,
                   timeout: float = 5.0) -> Any:
    """GET /apis/<group>/<version> from the APIService's server as system:kube-aggregator
    (system:masters), as the availability check does: its APIResourceList."""
    spec = apiservice["spec"]
    base, server_name = resolve(store, apiservice)
    path = f"/apis/{spec.get('group', '')}/{spec.get('version', '')}"
    url = base + path
    user = UserInfo("system:kube-aggregator", groups=("system:masters",))
    try:
        async with client.session().get(
                url, headers=identity_headers(user) + [("Accept", "application/json")],
                ssl=client.ssl_for(spec), server_hostname=server_name, allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
            text = await resp.read()
            if resp.status < 200 or resp.status >= 300:
                raise BackendUnreachable(f"failing or missing response from {url}: bad status "
                                         f"from {url}: {resp.status}")
    except (aiohttp.ClientError, OSError, TimeoutError, ssl.SSLError) as err:
        raise BackendUnreachable(f"failing or missing response from {url}: Get \"{url}\": "
                                 f"{err or type(err).__name__}") from None
    try:
        return json.loads(text)
    except ValueError:
        return None


class Aggregator:
    """What the handlers know of extension apiservers: the client that reaches them and
    the resource lists of the Available ones (kept by the availability controller)."""

    def __init__(self, client: AggregatorClient) -> None:
        self.client = client
        # (group, version) -> the server's APIResourceList.
        self.documents: dict[tuple[str, str], Obj] = {}

    def remote(self, store: Store) -> list[tuple[str, str, Obj | None]]:
        """(group, version, resource list or None) of every service-backed APIService, by
        group priority (highest first) then version priority."""
        r = store.table.by_group_resource(GROUP, RESOURCE)
        if r is None:
            return []
        found = [obj for _key, obj in store.cache.list(r.prefix)
                 if isinstance((obj.get("spec") or {}).get("service"), dict)]
        found.sort(key=lambda o: (-int(o["spec"].get("groupPriorityMinimum") or 0),
                                  o["spec"].get("group", ""),
                                  -int(o["spec"].get("versionPriority") or 0)))
        out = []
        for obj in found:
            key = (obj["spec"].get("group", ""), obj["spec"].get("version", ""))
            out.append((*key, self.documents.get(key) if available(obj) else None))
        return out
