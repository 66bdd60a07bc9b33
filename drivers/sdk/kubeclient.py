"""The API client a driver uses: from a kubeconfig, or in-cluster from its ServiceAccount.

Inside a Kubernetes pod (a DaemonSet on a real cluster) there is no kubeconfig; the
apiserver address comes from KUBERNETES_SERVICE_HOST/PORT and the credentials from the
mounted ServiceAccount token and CA, as client-go's in-cluster config does.
"""

from __future__ import annotations

import os
import ssl
from pathlib import Path

from draemu.client import Client, ConfigError

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


def in_cluster_client(service_account_dir: Path = SERVICE_ACCOUNT_DIR,
                      user_agent: str = "draemu-driver") -> Client:
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get(
        "KUBERNETES_SERVICE_PORT")
    token_file = service_account_dir / "token"
    if not host or not port or not token_file.exists():
        raise ConfigError("not running in a cluster (KUBERNETES_SERVICE_HOST/PORT or the "
                          "ServiceAccount token missing); pass --kubeconfig")
    if ":" in host:
        host = f"[{host}]"
    context = ssl.create_default_context(cafile=str(service_account_dir / "ca.crt"))
    return Client(f"https://{host}:{port}", ssl_context=context,
                  token=token_file.read_text().strip(), user_agent=user_agent)


def client_from_environment(kubeconfig: str | None = None) -> Client:
    """`kubeconfig` if given (or $KUBECONFIG / ~/.kube/config), else in-cluster."""
    if kubeconfig:
        return Client.from_kubeconfig(kubeconfig, user_agent="draemu-driver")
    try:
        return Client.from_kubeconfig(None, user_agent="draemu-driver")
    except ConfigError:
        return in_cluster_client()
