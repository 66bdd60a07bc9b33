"""The emulated node's file system: where a path of the node (a `hostPath` volume, a
plugin's socket path as the plugin saw it in its container) lives on this machine.

The kubelet's own folders are the node's folders the emulated kubelet watches:

    /var/lib/kubelet/plugins_registry  ->  <node root>/plugins_registry
    /var/lib/kubelet/plugins           ->  <node root>/plugins
    /var/lib/kubelet/<rest>            ->  <node root>/<rest>
    /var/run/cdi, /run/cdi, /etc/cdi   ->  <node root>/cdi

Every other path P is the node's own: `<node root>/host/P`, so that a pod writing to
its node never touches this machine's file system or another node's.
"""

from __future__ import annotations

import posixpath
from pathlib import Path

from draemu.nodelayout import NodeLayout

KUBELET_ROOT = "/var/lib/kubelet"
CDI_DIRS = ("/var/run/cdi", "/run/cdi", "/etc/cdi")


def _normal(path: str) -> str:
    return posixpath.normpath("/" + path.lstrip("/"))


def _under(path: str, prefix: str) -> str | None:
    if path == prefix:
        return ""
    if path.startswith(prefix + "/"):
        return path[len(prefix) + 1:]
    return None


def node_path(layout: NodeLayout, path: str, *, for_socket: bool = False) -> Path:
    """Where the node's `path` is on this machine. `for_socket`: through the layout's
    short alias when the root is too long for unix socket addresses."""
    path = _normal(path)
    root = layout.socket_root if for_socket else layout.root
    for cdi in CDI_DIRS:
        rest = _under(path, cdi)
        if rest is not None:
            return layout.cdi_dir / rest if rest else layout.cdi_dir
    rest = _under(path, KUBELET_ROOT)
    if rest is not None:
        return root / rest if rest else root
    return layout.root / "host" / path.lstrip("/")


def plugin_endpoint(layout: NodeLayout, endpoint: str) -> str:
    """A plugin's socket as the kubelet dials it: paths under /var/lib/kubelet are the
    ones the plugin saw in its container."""
    if endpoint.startswith(KUBELET_ROOT + "/"):
        return str(node_path(layout, endpoint, for_socket=True))
    return endpoint
