"""How nodes reach the apiserver, and it them: what the parent process of `draemu up`
prepares for the nodes it runs in its child (draemu/cmd/controlplane.py) without
importing the kubelet or the drivers (draemu/cmd/nodes.py starts them)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from draemu.apiserver.server.lifecycle import APIServer
    from draemu.client import Client
    from draemu.kubelet.servingcert import ServingTLS


@dataclass
class NodeAccess:
    """How nodes outside the apiserver's process reach it, and how it reaches them."""

    url: str  # the apiserver's address as containers reach it
    node_client: Callable[[str], Client]  # the client of node NAME, as system:node:NAME
    admin_client: Callable[[], Client]  # DeviceClasses, and the admin's node labels
    # The kubelet API of node NAME at its InternalIP: its TLS (None: plain HTTP).
    serving_tls: Callable[[str, str], ServingTLS | None]
    # The address the kubelet API of the node at INDEX listens on, its InternalIP
    # (None: a loopback address of its own, see loopback_address).
    kubelet_address: Callable[[int], str] | None = None


def loopback_address(index: int) -> str:
    """A node's InternalIP when its kubelet API must be reachable from this host: a
    loopback address of its own (Linux routes all of 127.0.0.0/8 to the loopback
    interface; elsewhere only 127.0.0.1 is sure to exist)."""
    if not sys.platform.startswith("linux"):
        return "127.0.0.1"
    return f"127.0.{index // 250}.{index % 250 + 2}"


def node_kubeconfig(server: APIServer, data_dir: Path, name: str) -> Path:
    """Write `<data_dir>/nodes/<name>/kubeconfig` with the node's credentials."""
    path = Path(data_dir) / "nodes" / name / "kubeconfig"
    path.parent.mkdir(parents=True, exist_ok=True)
    server.write_kubeconfig(path, user=f"system:node:{name}", groups=["system:nodes"])
    return path
