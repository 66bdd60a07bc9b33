"""`APIServer`: the apiserver's lifecycle — store, watch cache, certificates, HTTP(S)
listener, admin kubeconfig, the namespaces that always exist, graceful shutdown.

    server = APIServer(APIServerOptions(data_dir=Path("/tmp/d"), port=0))
    await server.start(); server.url; server.kubeconfig_path
    await server.stop()
"""

from __future__ import annotations

import asyncio
import gc
import ipaddress
import os
import secrets
import shutil
import socket
import ssl
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from draemu import aio, kubeconfig, pki
from draemu.apiserver.admission.policystatus import PolicyStatus
from draemu.apiserver.auth.authentication import load_token_file
from draemu.apiserver.controlplane.apiservices import (
    APIServiceAvailability,
    CRDAPIServices,
    ensure_local_apiservices,
)
from draemu.apiserver.controlplane.bootstraproles import ensure_bootstrap_policy
from draemu.apiserver.controlplane.crdconversion import ConversionWebhooks
from draemu.apiserver.controlplane.crdserving import CRDServing
from draemu.apiserver.controlplane.serviceips import ServiceIPAddresses
from draemu.apiserver.controlplane.systemobjects import (
    ensure_system_namespaces,
    ensure_system_objects,
)
from draemu.apiserver.endpoints import reviews
from draemu.apiserver.endpoints.subresources import LogProvider, LogProviders
from draemu.apiserver.registry import discover
from draemu.apiserver.registry.core.serviceallocation import first_address, reservations
from draemu.apiserver.registry.resources import ResourceTable
from draemu.apiserver.server import httperrors
from draemu.apiserver.server.app import create_app
from draemu.apiserver.server.context import APIContext, AppOptions
from draemu.apiserver.server.gcfreeze import GCFreezer
from draemu.apiserver.server.metrics import Labels
from draemu.apiserver.server.options import APIServerOptions
from draemu.apiserver.storage.storeadapter import Storage
from draemu.apiserver.storage.watchcache import WatchCache
from draemu.client import Client
from draemu.identity import AUTHENTICATED, MASTERS, UserInfo
from draemu.log import get_logger
from draemu.netns import listening_socket
from draemu.privatefiles import tighten
from draemu.satokens import Signer

log = get_logger("apiserver")

SHUTDOWN_TIMEOUT = 5.0
# The identity of in-process components on the loopback socket, as kube-apiserver's
# loopback client.
LOOPBACK_USER = "system:apiserver"


def _loopback(address: str) -> bool:
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


class APIServer:
    def __init__(self, options: APIServerOptions) -> None:
        if options.insecure_http and not _loopback(options.address):
            raise ValueError(f"--insecure-http serves without authentication and is only "
                             f"allowed on a loopback address, not {options.address}")
        self.options = options
        self.data_dir = Path(options.data_dir).absolute()
        self.log_providers = LogProviders()
        self.pki: pki.PKI | None = None
        self.signer: Signer | None = None
        self.store: Any = None
        self.port = 0
        self.ready_seconds = 0.0
        self._owns_store = options.store is None
        self._runner: web.AppRunner | None = None
        self._cache: WatchCache | None = None
        self.api: APIContext | None = None
        self._sockets: list[socket.socket] = []
        self.crds: CRDServing | None = None
        self.policy_status: PolicyStatus | None = None
        self.service_ips: ServiceIPAddresses | None = None
        self.crd_apiservices: CRDAPIServices | None = None
        self.availability: APIServiceAvailability | None = None
        # A unix socket for components in this process: plain HTTP with a per-identity
        # random token, so they skip TLS on both ends.
        self.loopback_path = ""
        self._loopback_dir: str | None = None
        self._loopback_tokens: dict[tuple[str, tuple[str, ...]], str] = {}
        self._gc: GCFreezer | None = None

    # Addresses and credentials ---------------------------------------------------------------
    @property
    def url(self) -> str:
        host = self.options.address
        if host in ("0.0.0.0", "::"):
            host = "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"
        scheme = "http" if self.options.insecure_http else "https"
        return f"{scheme}://{host}:{self.port}"

    @property
    def kubeconfig_path(self) -> Path:
        return self.data_dir / "kubeconfig"

    def issue_client_certificate(self, user: str, groups: list[str] | tuple[str, ...] = ()
                                 ) -> pki.KeyPair:
        """A client certificate (CN=user, O=groups) signed by this server's CA."""
        if self.pki is None:
            raise RuntimeError("the server has no PKI (not started, or --insecure-http)")
        return pki.make_client_cert(self.pki.ca, user, list(groups))

    def write_kubeconfig(self, path: Path, user: str = "kubernetes-admin",
                         groups: list[str] | tuple[str, ...] = ("system:masters",),
                         namespace: str = "default") -> Path:
        if self.options.insecure_http:
            config = kubeconfig.build(self.url, namespace=namespace)
        else:
            assert self.pki is not None
            pair = self.pki.admin if user == "kubernetes-admin" and \
                tuple(groups) == ("system:masters",) else \
                self.issue_client_certificate(user, groups)
            config = kubeconfig.build(self.url, user=user, ca_pem=self.pki.ca.cert_pem,
                                      client_cert_pem=pair.cert_pem,
                                      client_key_pem=pair.key_pem, namespace=namespace)
        return kubeconfig.write(path, config)

    def loopback_client(self, user_agent: str, user: str = LOOPBACK_USER,
                        groups: list[str] | tuple[str, ...] = (MASTERS,)) -> Client:
        """A client for a component in this process, as `user` in `groups`, over the
        loopback socket (no TLS, no network). Its token exists only in this process's
        memory and dies with it."""
        token = self.loopback_token(user, groups)
        return Client("http://localhost", token=token, user_agent=user_agent,
                      unix_socket=self.loopback_path,
                      ca_pem=self.pki.ca.cert_pem if self.pki is not None else None)

    def loopback_token(self, user: str = LOOPBACK_USER,
                       groups: list[str] | tuple[str, ...] = (MASTERS,)) -> str:
        """The loopback socket's token of `user` in `groups` (made on first use), for a
        component in this process or in a child it hands the token to privately."""
        if self.api is None or not self.loopback_path:
            raise RuntimeError("the apiserver is not started")
        identity = (user, tuple(groups))
        token = self._loopback_tokens.get(identity)
        if token is None:
            token = self._loopback_tokens[identity] = secrets.token_urlsafe(32)
            all_groups = tuple(groups) if AUTHENTICATED in groups else (*groups, AUTHENTICATED)
            self.api.authenticator.add_token(token, UserInfo(user, groups=all_groups))
        return token

    # Components in this process -----------------------------------------------------------------
    def register_log_provider(self, node: str, provider: LogProvider) -> None:
        """Serve `pods/log` of the pods on `node` from `provider` (a kubelet in this
        process) instead of calling the node's kubelet over the network."""
        self.log_providers.register(node, provider)

    def unregister_log_provider(self, node: str) -> None:
        self.log_providers.unregister(node)

    def add_gauge(self, name: str, collect: Callable[[], dict[Labels, float]]) -> None:
        """Serve one more gauge on /metrics: `collect()` gives its value per label set
        (a component in this process shows its own figures there)."""
        if self.api is None:
            raise RuntimeError("the apiserver is not started")
        self.api.metrics.gauges[name] = collect

    # Lifecycle ---------------------------------------------------------------------------------
    async def start(self) -> None:
        started = time.perf_counter()
        opts = self.options
        if opts.freeze_gc:
            # What start-up makes lives as long as the server: the collector would only
            # walk it again and again. The freezer collects once, after start-up.
            gc.disable()
        try:
            await self._start(started)
        finally:
            if opts.freeze_gc:
                gc.enable()
        if opts.freeze_gc:
            # Each request's decoded objects, copies and responses are young garbage by
            # the thousand.
            aio.collect_young_less_often()
            self._gc = GCFreezer()
            self._gc.start()
            if self._cache is not None:
                self._cache.decoded_in_bulk = self._gc.absorb

    async def _start(self, started: float) -> None:
        opts = self.options
        tighten(self.data_dir)
        tokens = load_token_file(opts.token_file) if opts.token_file else {}
        if opts.store is not None:
            self.store = opts.store
        else:
            from draemu.store import open_store

            url = opts.store_url or f"sqlite:///{self.data_dir / 'state.db'}"
            self.store = await open_store(url, data_dir=self.data_dir)
        try:
            await self._serve(tokens)
        except BaseException:
            await self.stop()
            raise
        self.ready_seconds = time.perf_counter() - started
        log.info("apiserver ready", url=self.url, seconds=round(self.ready_seconds, 3))

    async def _serve(self, tokens: dict[str, UserInfo]) -> None:
        opts = self.options
        self._cache = WatchCache(self.store, history=opts.watch_history,
                                 watcher_queue=opts.watcher_queue)
        await self._cache.start()
        storage = Storage(self.store, self._cache)
        strategies = discover()
        served = {(s.group, s.resource) for s in strategies}
        strategies += [s for s in reviews.STRATEGIES if (s.group, s.resource) not in served]
        table = ResourceTable(strategies, opts.feature_gates, opts.legacy_versions)
        self.pki, signer, front_proxy_ca = await asyncio.to_thread(self._credentials)
        self.signer = signer
        # Bound now, listening once the application serves: its port is known to the
        # application (discovery) and to the start-up objects.
        sockets = bind_sockets(opts.address, opts.port)
        self._sockets = sockets
        self.port = sockets[0].getsockname()[1]
        if opts.cluster_listener is not None:
            netns, address = opts.cluster_listener
            sockets.append(await asyncio.to_thread(listening_socket, netns, address,
                                                   self.port, 1024))
        app = create_app(AppOptions(opts, table, storage, signer, self.pki,
                                    f"{opts.address}:{self.port}", tokens, self.log_providers,
                                    self._rbac_version))
        self.api = api = app.context
        reservations(api.store.state).cidr = ipaddress.ip_network(opts.service_cidr)
        await ensure_system_namespaces(api.store)
        await ensure_bootstrap_policy(api.store)
        self.crds = CRDServing(table, storage,
                               ConversionWebhooks(table, storage.cache, opts.dialer))
        self.crds.start()
        self.policy_status = PolicyStatus(table, storage)
        self.policy_status.start()
        await self._listen(app.application, sockets)
        await ensure_system_objects(api.store, self.advertised_address, self.port,
                                    self.pki.ca.cert_pem if self.pki is not None else None,
                                    front_proxy_ca, opts.service_cidr)
        self.service_ips = ServiceIPAddresses(api.store)
        self.service_ips.start()
        await ensure_local_apiservices(api.store)
        self.crd_apiservices = CRDAPIServices(api.store)
        self.crd_apiservices.start()
        self.availability = APIServiceAvailability(api.store, api.aggregator)
        self.availability.start()
        if api.flowcontrol is not None:
            api.flowcontrol.start()
        self.write_kubeconfig(self.kubeconfig_path)
        api.ready.set()

    def _credentials(self) -> tuple[pki.PKI | None, Signer, bytes | None]:
        """The cluster CA and certificates (none under --insecure-http), the ServiceAccount
        token signer (its key lives beside the CA) and the front-proxy CA. Under the
        folder's lock: apiservers sharing it may be starting together."""
        opts = self.options
        pki_dir = Path(opts.pki_dir).absolute() if opts.pki_dir else self.data_dir / "pki"
        with pki.locked(pki_dir):
            made = None if opts.insecure_http else pki.ensure_pki(
                pki_dir, opts.address, self._service_names())
            signer = Signer.ensure(pki_dir)
            front = pki.ensure_front_proxy(pki_dir)[0].cert_pem if made else None
        return made, signer, front

    async def _listen(self, application: web.Application, sockets: list[socket.socket]
                      ) -> None:
        """Serve `application` on the bound sockets (HTTPS unless --insecure-http) and on
        the loopback socket."""
        self._runner = web.AppRunner(application, access_log=None,
                                     shutdown_timeout=SHUTDOWN_TIMEOUT)
        await self._runner.setup()
        httperrors.answer_with_status(self._runner)
        ssl_context = _ssl_context(self.pki) if self.pki is not None else None
        for sock in sockets:
            await web.SockSite(self._runner, sock, ssl_context=ssl_context,
                               backlog=1024).start()
        self._sockets = []  # the sites own them now
        self.loopback_path = self._loopback_socket_path()
        await web.UnixSite(self._runner, self.loopback_path).start()
        os.chmod(self.loopback_path, 0o600)

    @property
    def advertised_address(self) -> str:
        """Where the apiserver says it is (default/kubernetes's endpoint)."""
        listener = self.options.cluster_listener
        return listener[1] if listener is not None else self.options.address

    def _service_names(self) -> list[str]:
        """What the serving certificate also names, as kube-apiserver's does: the
        kubernetes Service's address and names, and the advertised address."""
        names = [first_address(ipaddress.ip_network(self.options.service_cidr)),
                 "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                 "kubernetes.default.svc.cluster.local"]
        if self.options.cluster_listener is not None:
            names.append(self.options.cluster_listener[1])
        return names

    def _rbac_version(self) -> tuple[int, ...]:
        """Moves whenever a Role, ClusterRole or binding changes in the watch cache."""
        cache = self._cache
        assert cache is not None
        return tuple(cache.bucket_version(f"/registry/rbac.authorization.k8s.io/{r}/")
                     for r in ("roles", "clusterroles", "rolebindings", "clusterrolebindings"))

    def _loopback_socket_path(self) -> str:
        """The loopback socket's file: in the data directory (the data-dir lock keeps
        it ours), or a private temporary directory when that path is too long for a
        unix socket address (108 bytes on Linux)."""
        path = self.data_dir / "apiserver.sock"
        if len(os.fsencode(path)) < 100:
            return str(path)
        self._loopback_dir = tempfile.mkdtemp(prefix="draemu-")
        return os.path.join(self._loopback_dir, "apiserver.sock")

    async def stop(self) -> None:
        """Graceful: stop accepting, end watches, let in-flight requests finish, close
        the store."""
        if self.api is not None:
            self.api.ready.clear()
        if self._cache is not None:
            self._cache.end_watches()  # watch streams would hold the shutdown up
        for sock in self._sockets:  # bound, never served (a start that failed)
            sock.close()
        self._sockets = []
        if self._runner is not None:
            # Stops listening and lets in-flight requests finish (the cache still follows
            # the store, so their reads and writes complete).
            await self._runner.cleanup()
            self._runner = None
        if self.crds is not None:
            await self.crds.stop()
            self.crds = None
        if self.policy_status is not None:
            await self.policy_status.stop()
            self.policy_status = None
        if self.api is not None and self.api.flowcontrol is not None:
            await self.api.flowcontrol.stop()
        if self.service_ips is not None:
            await self.service_ips.stop()
            self.service_ips = None
        if self.crd_apiservices is not None:
            await self.crd_apiservices.stop()
            self.crd_apiservices = None
        if self.availability is not None:
            await self.availability.stop()
            self.availability = None
        if self.api is not None:
            await self.api.store.admission.close()
        if self._cache is not None:
            await self._cache.stop()
        if self._gc is not None:
            await self._gc.stop()
            self._gc = None
        if self.api is not None:
            await self.api.kubelet_client.close()
            await self.api.backend_client.close()
            await self.api.aggregator.client.close()
            if self.api.audit is not None:
                self.api.audit.close()
        if self.store is not None and self._owns_store:
            await self.store.close()
        self.store = None
        if self.loopback_path:
            Path(self.loopback_path).unlink(missing_ok=True)
            self.loopback_path = ""
        if self._loopback_dir is not None:
            shutil.rmtree(self._loopback_dir, ignore_errors=True)
            self._loopback_dir = None


def bind_sockets(address: str, port: int) -> list[socket.socket]:
    """Sockets bound to every address `address` names (both of `localhost`'s), on one
    port: `port`, or the one the system gave the first when `port` is 0. They listen once
    a site serves them."""
    infos = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM,
                               flags=socket.AI_PASSIVE)
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _name, sockaddr in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if sockets[1:]:  # the others on the first one's port
                sockaddr = (sockaddr[0], sockets[0].getsockname()[1], *sockaddr[2:])
            sock.bind(sockaddr)
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


def _ssl_context(p: pki.PKI) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(p.serving_cert_path, p.serving_key_path)
    ctx.load_verify_locations(cadata=p.ca.cert_pem.decode())
    # Client certificates are optional: tokens and public paths work without one.
    ctx.verify_mode = ssl.CERT_OPTIONAL
    ctx.set_alpn_protocols(["http/1.1"])
    # No TLS 1.3 session tickets: the clients of an apiserver do not resume sessions
    # (client-go, kubectl, aiohttp, urllib3 keep no session cache), and making the two
    # tickets OpenSSL sends after each handshake was a quarter to a third of the server's
    # cost of one (issue 22: 1,000 watches opened at once).
    ctx.num_tickets = 0
    return ctx
