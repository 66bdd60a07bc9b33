"""The emulated node's file system: where a path of the node (a `hostPath` volume, a
plugin's socket path as the plugin saw it in its container) lives on this machine.

The kubelet's own folders are the node's folders the emulated kubelet watches:

    /var/lib/kubelet/plugins_registry  ->  <node root>/plugins_registry
    /var/lib/kubelet/plugins           ->  <node root>/plugins
    /var/lib/kubelet/<rest>            ->  <node root>/<rest>
    /var/run/cdi, /run/cdi, /etc/cdi   ->  <node root>/cdi

Every other path P is the node's own: `<node root>/host/P`, so that a pod writing to
its node never touches this machine's file system or another node's.

A node whose own `/sys` is a folder (a mock or faker put a fake sysfs there) gives it
to its containers as their `/sys` (`node_sysfs`); other nodes' containers get this
machine's sysfs, read-only.

A device node that a CDI spec names (`device_source`) is the node's own file where the
node has one (a device a mock or faker made in the node's folder, such as NVIDIA's mock
driver root's `dev/nvidia0`), else, for paths under /dev, this machine's device.

A path inside the node's folder is looked up and made with symbolic links and `..`
resolved as if the node's folder were `/` (`lookup`, `make`): a link that a pod wrote
through a hostPath volume (`/etc` -> the machine's /etc) cannot lead the kubelet, which
runs as root, or a later pod's mount out of it.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
from pathlib import Path

from draemu.kubelet.runtime.confine.syscalls import open_in_root
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


def in_node(layout: NodeLayout, path: str) -> str:
    """The node's `path` relative to its folder (what `lookup` and `make` take)."""
    return node_path(layout, path).relative_to(layout.root).as_posix()


def machine_path_in_node(layout: NodeLayout, path: str) -> str | None:
    """A path of this machine inside the node's folder (or its socket alias), relative
    to the folder; None for any other path."""
    for root in (layout.root, layout.socket_root):
        rest = _under(_normal(path), str(root))
        if rest is not None:
            return rest
    return None


def node_sysfs(layout: NodeLayout) -> str | None:
    """The node's own /sys, relative to its folder, when it is a folder; else None."""
    rel = in_node(layout, "/sys")
    found = lookup(layout.root, rel)
    return rel if found is not None and stat.S_ISDIR(found.st_mode) else None


def device_source(layout: NodeLayout, path: str) -> tuple[str, str] | None:
    """Where the node's device `path` is: (base folder, path inside it), a character or
    block device; None when the node has no such device."""
    rel = in_node(layout, path)
    found = lookup(layout.root, rel)
    if found is not None and _is_device(found.st_mode):
        return str(layout.root), rel
    rest = _under(_normal(path), "/dev")
    if rest:
        found = lookup(Path("/dev"), rest)
        if found is not None and _is_device(found.st_mode):
            return "/dev", rest
    return None


def _is_device(mode: int) -> bool:
    return stat.S_ISCHR(mode) or stat.S_ISBLK(mode)


def lookup(base: Path, rel: str) -> os.stat_result | None:
    """What `rel` is inside `base`, links resolved within `base`; None when missing."""
    base_fd = os.open(base, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fd = open_in_root(base_fd, rel)
    except (FileNotFoundError, NotADirectoryError):
        return None
    finally:
        os.close(base_fd)
    try:
        return os.fstat(fd)
    finally:
        os.close(fd)


def make(base: Path, rel: str, *, file: bool = False, mode: int = 0o755) -> None:
    """Make `rel` inside `base` (missing parent folders 0755), following links as if
    `base` were `/` (as `mkdir -p` would inside a chroot), never leaving it.
    OSError: something other than a folder stands in the way, or links loop."""
    pending = [n for n in posixpath.normpath("/" + rel).split("/") if n]
    done: list[str] = []
    links = 0
    base_fd = os.open(base, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        while pending:
            name = pending.pop(0)
            if name in (".", ".."):
                if name == ".." and done:
                    done.pop()
                continue
            parent = open_in_root(base_fd, "/".join(done))
            try:
                target = _link(parent, name)
                if target is not None:
                    links += 1
                    if links > 40:
                        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))
                    done = [] if target.startswith("/") else done
                    pending = [n for n in target.split("/") if n] + pending
                    continue
                _make_entry(parent, name, file and not pending, mode if not pending else 0o755)
                done.append(name)
            finally:
                os.close(parent)
    finally:
        os.close(base_fd)


def _link(parent: int, name: str) -> str | None:
    try:
        return os.readlink(name, dir_fd=parent)
    except (FileNotFoundError, OSError):  # missing, or no link (EINVAL)
        return None


def _make_entry(parent: int, name: str, file: bool, mode: int) -> None:
    try:
        os.stat(name, dir_fd=parent, follow_symlinks=False)
        return
    except FileNotFoundError:
        pass
    if file:
        os.close(os.open(name, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW
                         | os.O_CLOEXEC, mode, dir_fd=parent))
    else:
        os.mkdir(name, mode, dir_fd=parent)
