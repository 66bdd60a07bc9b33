"""What the handlers of one apiserver share, built once and frozen (`APIContext`), and
what it is built from (`AppOptions`): the wiring of the authorizers, the admission chain,
the generic store, the audit log and API Priority and Fairness."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from draemu import pki
from draemu.apiserver.admission.chain import AdmissionChain, AdmissionServices
from draemu.apiserver.admission.plugins import PLUGINS
from draemu.apiserver.auth.authentication import Authenticator
from draemu.apiserver.auth.authorization import PrivilegedGroupAuthorizer, UnionAuthorizer
from draemu.apiserver.auth.nodeauthorizer import NodeAuthorizer
from draemu.apiserver.auth.rbac.authorizer import RBACAuthorizer
from draemu.apiserver.auth.serviceaccounttokens import ServiceAccountAuthenticator
from draemu.apiserver.controlplane.systemobjects import (
    Bootstrap,
    ensure_flowcontrol_configuration,
)
from draemu.apiserver.endpoints.aggregation import Aggregator, AggregatorClient
from draemu.apiserver.endpoints.kubeletclient import KubeletClient
from draemu.apiserver.endpoints.proxy import BackendClient
from draemu.apiserver.endpoints.subresources import LogProviders
from draemu.apiserver.flowcontrol.controller import FlowControl
from draemu.apiserver.genericregistry.store import Store
from draemu.apiserver.registry.resources import ResourceTable
from draemu.apiserver.server.audit import AuditLog
from draemu.apiserver.server.metrics import Metrics
from draemu.apiserver.server.options import APIServerOptions
from draemu.apiserver.storage.cachedobjects import CachedObjects
from draemu.apiserver.storage.storeadapter import Storage
from draemu.features import FeatureGates
from draemu.identity import UserInfo
from draemu.satokens import Signer


@dataclass(frozen=True)
class AppOptions:
    """What `create_app` builds an apiserver's application from: its options and what
    `APIServer` started before (the store and watch cache, the served kinds, the
    credentials, the address it listens on)."""

    options: APIServerOptions
    table: ResourceTable
    storage: Storage
    signer: Signer
    # The cluster CA and certificates; None under --insecure-http.
    pki: pki.PKI | None
    # host:port of the listener (discovery's serverAddressByClientCIDRs).
    server_address: str
    # Static bearer tokens (--token-auth-file); the loopback socket adds its own.
    tokens: dict[str, UserInfo]
    # pods/log and pods/exec of the kubelets in this process.
    log_providers: LogProviders
    # Moves whenever a Role, ClusterRole or binding changes (RBAC's decision cache).
    rbac_version: Callable[[], tuple[int, ...]]


@dataclass(frozen=True)
class APIContext:
    """Everything the handlers of one apiserver share."""

    table: ResourceTable
    store: Store
    gates: FeatureGates
    authenticator: Authenticator
    authorizer: UnionAuthorizer
    # Plain HTTP without authentication (--insecure-http, loopback only).
    insecure: bool
    server_address: str
    # Signs ServiceAccount tokens (serviceaccounts/token).
    signer: Signer
    log_providers: LogProviders
    # Reaches kubelets in their own process (pods/log, pods/exec).
    kubelet_client: KubeletClient
    # Reaches pods and Services (pods/proxy, services/proxy).
    backend_client: BackendClient
    metrics: Metrics
    max_readonly: int
    max_mutating: int
    # Seconds a request that is not long-running may take (upstream's --request-timeout).
    request_timeout: float
    # Set once the server serves (/readyz), cleared when it stops.
    ready: asyncio.Event
    # --audit-log, or None.
    audit: AuditLog | None
    # API Priority and Fairness, or None for the max-in-flight limits.
    flowcontrol: FlowControl | None
    # Extension apiservers behind APIServices (the aggregation layer).
    aggregator: Aggregator


def create_context(app: AppOptions) -> APIContext:
    opts, table, storage = app.options, app.table, app.storage
    objects = CachedObjects(table, storage.cache)
    # --authorization-mode=Node,RBAC behind system:masters, as kubeadm sets it up. The
    # node and RBAC authorizers read related objects and bindings from the watch cache.
    authorizer = UnionAuthorizer(
        PrivilegedGroupAuthorizer(),
        NodeAuthorizer(objects.lookup, objects.lookup_namespace),
        RBACAuthorizer(objects.lookup, objects.lookup_namespace, app.rbac_version))
    admission = AdmissionChain(PLUGINS, AdmissionServices(table, storage, objects, authorizer,
                                                          opts.feature_gates, opts.dialer))
    store = Store(table, storage, opts.feature_gates, admission, authorizer)
    authenticator = Authenticator(app.tokens, ServiceAccountAuthenticator(app.signer,
                                                                          objects.lookup))
    metrics = Metrics()
    flowcontrol = None
    if opts.enable_priority_and_fairness:
        flowcontrol = FlowControl(
            table, storage, opts.max_requests_inflight + opts.max_mutating_requests_inflight,
            lambda: ensure_flowcontrol_configuration(Bootstrap(store)),
            opts.apf_ensure_interval, in_flight=metrics.in_flight)
    return APIContext(
        table=table, store=store, gates=opts.feature_gates, authenticator=authenticator,
        authorizer=authorizer, insecure=opts.insecure_http, server_address=app.server_address,
        signer=app.signer, log_providers=app.log_providers,
        # Plain HTTP to kubelets when this server has no certificates (--insecure-http).
        kubelet_client=KubeletClient(app.pki, opts.dialer),
        backend_client=BackendClient(opts.dialer), metrics=metrics,
        max_readonly=opts.max_requests_inflight,
        max_mutating=opts.max_mutating_requests_inflight,
        request_timeout=opts.request_timeout, ready=asyncio.Event(),
        audit=AuditLog(opts.audit_log) if opts.audit_log is not None else None,
        flowcontrol=flowcontrol,
        aggregator=Aggregator(AggregatorClient(
            opts.dialer, app.pki.directory if app.pki is not None else None)))
