"""Writing kubeconfig files for draemu clusters.

Credentials are embedded (`*-data` fields), so a kubeconfig works from any working
directory and can be copied; the context carries a default namespace, as kind's do.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import yaml

from draemu.api import yamlload


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def build(server: str, *, name: str = "draemu", user: str = "kubernetes-admin",
          ca_pem: bytes | None = None, client_cert_pem: bytes | None = None,
          client_key_pem: bytes | None = None, token: str | None = None,
          namespace: str = "default") -> dict[str, Any]:
    cluster: dict[str, Any] = {"server": server}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = _b64(ca_pem)
    credentials: dict[str, Any] = {}
    if client_cert_pem is not None and client_key_pem is not None:
        credentials["client-certificate-data"] = _b64(client_cert_pem)
        credentials["client-key-data"] = _b64(client_key_pem)
    if token is not None:
        credentials["token"] = token
    user_name = f"{name}-{user}" if user != "kubernetes-admin" else f"{name}-admin"
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": user_name, "user": credentials}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": user_name,
                                                 "namespace": namespace}}],
        "current-context": name,
    }


def write(path: Path, config: dict[str, Any]) -> Path:
    """Write `config` to `path` (mode 0600: it holds a private key), atomically."""
    path = Path(path).expanduser().resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump(config, f, default_flow_style=False, sort_keys=False)
    os.replace(tmp, path)
    return path


def foreign(path: Path) -> bool:
    """Whether `path` holds a kubeconfig that draemu did not write (a user's own, which
    must never be overwritten silently)."""
    path = Path(path).expanduser()
    if not path.exists():
        return False
    try:
        config = yamlload.load_file_text(path.read_text()) or {}
    except (OSError, yaml.YAMLError):
        return True
    clusters = config.get("clusters") or [] if isinstance(config, dict) else []
    return not clusters or any(c.get("name") != "draemu" for c in clusters
                               if isinstance(c, dict))
