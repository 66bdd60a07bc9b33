"""`APIServerOptions`: what an apiserver is started with (`draemu apiserver`'s flags,
`draemu up`'s and the tests' settings)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from draemu.apiserver.storage.watchcache import HISTORY, WATCHER_QUEUE
from draemu.features import FeatureGates

if TYPE_CHECKING:
    from draemu.netns import NetnsDialer


@dataclass
class APIServerOptions:
    data_dir: Path
    # None: a SQLite file in data_dir; "sqlite://:memory:" for tests; "postgresql://...".
    store_url: str | None = None
    address: str = "127.0.0.1"
    port: int = 0
    insecure_http: bool = False
    feature_gates: FeatureGates = field(default_factory=FeatureGates)
    # Also serve the versions draemu keeps for old manifests (resource.k8s.io/v1alpha3 of
    # Kubernetes 1.31), which no release it emulates serves.
    legacy_versions: bool = False
    token_file: Path | None = None
    # Audit events (audit.k8s.io/v1, Metadata level) appended to this file, as JSON lines.
    audit_log: Path | None = None
    max_requests_inflight: int = 400
    max_mutating_requests_inflight: int = 200
    # API Priority and Fairness (their sum is its server concurrency); off: the two
    # max-in-flight limits above, as kube-apiserver's --enable-priority-and-fairness.
    enable_priority_and_fairness: bool = True
    # Seconds between passes of the APF config producer (upstream: a minute).
    apf_ensure_interval: float = 60.0
    request_timeout: float = 60.0  # kube-apiserver's --request-timeout, in seconds
    # The watch cache's sizes (see WatchCache).
    watch_history: int = HISTORY
    watcher_queue: int = WATCHER_QUEUE
    # An already opened store to serve instead of opening `store_url` (it is then
    # not closed by stop()).
    store: Any = None
    # Where the CA, serving and client certificates and the service-account keys live
    # (None: data_dir/pki). Several apiservers on one PostgreSQL store share one folder,
    # so one kubeconfig and one token signer serve for all of them.
    pki_dir: Path | None = None
    # Keep the cyclic garbage collector off the watch cache (see gcfreeze.py): for a
    # process that is this apiserver's alone (the commands), not for servers in tests.
    freeze_gc: bool = False
    # --service-cluster-ip-range: where ClusterIPs come from (its first address is
    # default/kubernetes's).
    service_cidr: str = "10.96.0.0/12"
    # Also listen in another network namespace, on the same port: (its path, address).
    # That address is then the one advertised (--advertise-address: default/kubernetes's
    # endpoint), as where the pod network (draemu/podnetwork.py) reaches the apiserver.
    cluster_listener: tuple[str, str] | None = None
    # Where connections to the pod network are made: webhooks, kubelets (None: here).
    dialer: NetnsDialer | None = None
