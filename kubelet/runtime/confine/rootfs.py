"""The container's root file system, assembled in a mount namespace of its own and
entered with pivot_root: the machine's root is gone from the container's view, not
hidden under it.

The root is either the image's folder (an overlay: the folder below, a tmpfs above for
what the container writes) or, for an image that is a single program or no image at
all, a tmpfs with the machine's system folders (`/usr`, `/bin`, `/lib*`, ...) mounted
read-only and an `/etc` of its own (a few copied files, no secrets). Then, in every
root: `/dev` (a tmpfs with null, zero, full, random, urandom, tty, a private `pts`,
`shm` and `mqueue`, and the devices the kubelet names), `/sys` (this machine's sysfs
read-only, or the node's own /sys folder when the kubelet names one), a fresh
`/proc` of the container's PID namespace with upstream's masked and read-only paths,
an empty `/tmp`, and the pod's mounts as the kubelet lists them.

Mount sources are opened below a base folder the kubelet names, with symbolic links
and `..` resolved as if the base were `/` (openat2 RESOLVE_IN_ROOT), so a link a pod
wrote into a volume or a node folder cannot lead anywhere else; mount points are made
the same way inside the new root. With a user namespace (`userns_fd`), volumes are
ID-mapped mounts: files the kubelet wrote as root belong to the pod's root, and what the
pod's root writes lands as root in the node's folders, as on a real node.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
from typing import Any

from . import syscalls as sc

DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
DEV_LINKS = {"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
             "stderr": "/proc/self/fd/2", "ptmx": "pts/ptmx", "core": "/proc/kcore"}
# Upstream's defaults (containerd's MaskedPaths and ReadonlyPaths) for a container that is
# not privileged and has the Default procMount.
MASKED = ("/proc/acpi", "/proc/asound", "/proc/interrupts", "/proc/kcore", "/proc/keys",
          "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
          "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap")
READ_ONLY = ("/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger")
SKELETON = {"/proc": 0o555, "/sys": 0o555, "/dev": 0o755, "/tmp": 0o1777, "/run": 0o755,
            "/var": 0o755, "/var/tmp": 0o1777, "/root": 0o700, "/etc": 0o755}


def _fd_path(fd: int) -> str:
    return f"/proc/self/fd/{fd}"


class RootBuilder:
    """Builds the root under `spec["scratch"]` in the launcher's mount namespace."""

    def __init__(self, spec: dict[str, Any], userns_fd: int | None) -> None:
        self.spec = spec
        self.root_spec: dict[str, Any] = spec["root"]
        self.userns_fd = userns_fd
        self.owner = int((spec.get("userns") or {}).get("base", 0))
        self.scratch = ""
        self.root = ""
        self.root_fd = -1
        self.layers = 0

    # ---- the whole root

    def build(self) -> str:
        mounts = sorted(self.spec.get("mounts") or [],
                        key=lambda m: posixpath.normpath("/" + m["target"]).count("/"))
        # Every source is cloned before anything is mounted over a path it may go through.
        sources = [self.clone(m) for m in mounts]
        sysfs = self.clone(self.spec["sysfs"]) if self.spec.get("sysfs") else None
        devices = [(self.clone_device(d["base"], d["path"]), d["target"])
                   for d in self.spec.get("devices") or []]
        self.scratch_area()
        os.mkdir(self.root, 0o755)
        image = self.root_spec.get("image")
        if image:
            self.image_root(image)
        else:
            self.system_root()
        self.root_fd = os.open(self.root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        for path, mode in SKELETON.items():
            self.mount_point(path, True, mode)
        self.dev(devices)
        if sysfs is not None:  # the node's own /sys (a fake one a mock laid out)
            self.attach(sysfs[0], "/sys", True)
        else:
            self.mount_fs("sysfs", "/sys",
                          sc.MS_RDONLY | sc.MS_NOSUID | sc.MS_NODEV | sc.MS_NOEXEC)
        if image:
            flags = sc.MS_NOSUID | sc.MS_NODEV | (sc.MS_RDONLY if self.read_only else 0)
            self.mount_fs("tmpfs", "/tmp", flags, self.owned("mode=1777"))
        for m, (fd, _is_dir) in zip(mounts, sources, strict=True):
            self.attach(fd, m["target"], _is_dir)
        if self.spec.get("cwd"):
            self.mount_point(self.spec["cwd"], True, 0o755)
        return self.root

    def scratch_area(self) -> None:
        """A private tmpfs for the root and its layers, hung on the kubelet's scratch folder
        in this mount namespace only and reached through its descriptor from then on (so
        no path on the machine's file system, which a pod might have swapped for a link,
        is walked again)."""
        os.umask(0)
        area = sc.fsmount("tmpfs", {"mode": "0700"}, sc.MOUNT_ATTR_NOSUID | sc.MOUNT_ATTR_NODEV)
        hook = os.open(self.spec["scratch"], os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        sc.move_mount(area, hook, "the scratch folder")
        os.close(hook)
        self.scratch = _fd_path(area)
        self.root = f"{self.scratch}/root"

    @property
    def read_only(self) -> bool:
        return bool(self.root_spec.get("readOnly"))

    def owned(self, options: str) -> str:
        return f"{options},uid={self.owner},gid={self.owner}"

    def image_root(self, image: str) -> None:
        upper, work = f"{self.scratch}/upper", f"{self.scratch}/work"
        os.mkdir(upper, 0o755)
        os.mkdir(work, 0o700)
        os.chown(upper, self.owner, self.owner)
        lower = os.open(image, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        sc.mount("overlay", self.root, "overlay", 0,
                 f"lowerdir={_fd_path(lower)},upperdir={upper},workdir={work}")
        os.close(lower)

    def system_root(self) -> None:
        sc.mount("tmpfs", self.root, "tmpfs", sc.MS_NOSUID | sc.MS_NODEV,
                 self.owned("mode=0755"))
        for path in self.root_spec.get("system") or []:
            self.system_entry(path)
        etc = f"{self.root}/etc"
        os.mkdir(etc, 0o755)
        os.chown(etc, self.owner, self.owner)
        for path in self.root_spec.get("etc") or []:
            self.system_entry(path)
        for name, text in (self.root_spec.get("etcFiles") or {}).items():
            target = f"{etc}/{name}"
            fd = os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o644)
            with open(fd, "w") as file:
                file.write(text)
            os.chown(target, self.owner, self.owner)

    def system_entry(self, path: str) -> None:
        """A folder or file of the machine's system, read-only (links are copied)."""
        target = self.root + path
        os.makedirs(os.path.dirname(target), 0o755, exist_ok=True)
        if os.path.islink(path):
            os.symlink(os.readlink(path), target)
            return
        if not os.path.exists(path):
            return
        if os.path.isdir(path):
            os.mkdir(target, 0o755)
        else:
            os.close(os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o644))
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        tree = sc.open_tree(fd, recursive=True)
        os.close(fd)
        sc.mount_setattr(tree, sc.MOUNT_ATTR_RDONLY | sc.MOUNT_ATTR_NOSUID | sc.MOUNT_ATTR_NODEV,
                         recursive=True, what=path)
        into = os.open(target, os.O_PATH | os.O_CLOEXEC)
        sc.move_mount(tree, into, path)
        os.close(into)
        os.close(tree)

    # ---- mounts

    def clone(self, m: dict[str, Any]) -> tuple[int, bool]:
        """A detached bind mount of the mount's source (ID-mapped, read-only as asked)."""
        base = os.open(m["base"], os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fd = sc.open_in_root(base, m.get("path") or "")
        except OSError as err:
            raise sc.LaunchError(f"mount source for {m['target']}: "
                                 f"{os.strerror(err.errno or 0)}") from err
        finally:
            os.close(base)
        is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
        tree = sc.open_tree(fd, recursive=False)
        os.close(fd)
        attrs = sc.MOUNT_ATTR_RDONLY if m.get("readOnly") else 0
        if m.get("idmap", True) and self.userns_fd is not None:
            attrs |= sc.MOUNT_ATTR_IDMAP
        if attrs:
            sc.mount_setattr(tree, attrs, self.userns_fd or 0, what=m["target"])
        return tree, is_dir

    def clone_device(self, base: str, path: str) -> int:
        """A detached bind mount of the device `path` inside `base` (links resolved there)."""
        dev = os.open(base, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fd = sc.open_in_root(dev, path)
        except OSError as err:
            raise sc.LaunchError(f"device {base}/{path}: {os.strerror(err.errno or 0)}") from err
        finally:
            os.close(dev)
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISCHR(mode) or stat.S_ISBLK(mode)):
            os.close(fd)
            raise sc.LaunchError(f"device {base}/{path}: not a device node")
        tree = sc.open_tree(fd, recursive=False)
        os.close(fd)
        return tree

    def attach(self, tree: int, target: str, is_dir: bool) -> None:
        into = self.mount_point(target, is_dir, 0o755 if is_dir else 0o644)
        try:
            sc.move_mount(tree, into, target)
        finally:
            os.close(into)
            os.close(tree)

    def mount_fs(self, fstype: str, target: str, flags: int, data: str | None = None) -> None:
        into = self.mount_point(target, True, 0o755)
        try:
            sc.mount(fstype, _fd_path(into), fstype, flags, data)
        finally:
            os.close(into)

    def mount_point(self, target: str, is_dir: bool, mode: int) -> int:
        """An O_PATH descriptor of `target` in the root, made (with its parents) if missing;
        a folder that cannot be written to (a read-only system folder) gets a tmpfs-backed
        overlay first, so nothing is ever made on the machine's file system."""
        target = posixpath.normpath("/" + target)
        try:
            return sc.open_in_root(self.root_fd, target)
        except FileNotFoundError:
            pass
        parent_path, name = posixpath.split(target)
        parent = self.mount_point(parent_path, True, 0o755)
        try:
            try:
                self.make(parent, name, is_dir, mode)
            except OSError as err:
                if err.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
                    raise
                os.close(parent)
                parent = self.layer(parent_path)
                self.make(parent, name, is_dir, mode)
        except FileExistsError as err:
            raise sc.LaunchError(f"mount point {target}: a dangling symbolic link") from err
        except OSError as err:
            raise sc.LaunchError(f"mount point {target}: {os.strerror(err.errno or 0)}") from err
        finally:
            os.close(parent)
        return sc.open_in_root(self.root_fd, target)

    def make(self, parent: int, name: str, is_dir: bool, mode: int) -> None:
        if is_dir:
            os.mkdir(name, mode, dir_fd=parent)
        else:
            os.close(os.open(name, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW
                             | os.O_CLOEXEC, mode, dir_fd=parent))
        os.chown(name, self.owner, self.owner, dir_fd=parent, follow_symlinks=False)

    def layer(self, path: str) -> int:
        """Overlay `path` (in the root) with a writable tmpfs layer; its new descriptor."""
        self.layers += 1
        upper = f"{self.scratch}/upper{self.layers}"
        work = f"{self.scratch}/work{self.layers}"
        os.mkdir(upper, 0o755)
        os.mkdir(work, 0o700)
        below = sc.open_in_root(self.root_fd, path)
        try:
            sc.mount("overlay", _fd_path(below), "overlay", 0,
                     f"lowerdir={_fd_path(below)},upperdir={upper},workdir={work}")
        finally:
            os.close(below)
        return sc.open_in_root(self.root_fd, path)

    # ---- /dev

    def dev(self, devices: list[tuple[int, str]]) -> None:
        self.mount_fs("tmpfs", "/dev", sc.MS_NOSUID | sc.MS_NOEXEC, self.owned("mode=0755"))
        for name in DEVICES:
            if os.path.exists(f"/dev/{name}"):
                self.attach(self.clone_device("/dev", name), f"/dev/{name}", False)
        for tree, target in devices:
            self.attach(tree, target, False)
        dev = sc.open_in_root(self.root_fd, "/dev")
        try:
            for name, link in DEV_LINKS.items():
                os.symlink(link, name, dir_fd=dev)
                os.chown(name, self.owner, self.owner, dir_fd=dev, follow_symlinks=False)
        finally:
            os.close(dev)
        try:
            self.mount_fs("devpts", "/dev/pts", sc.MS_NOSUID | sc.MS_NOEXEC,
                          f"newinstance,ptmxmode=0666,mode=0620,gid={self.owner + 5}")
        except sc.LaunchError:  # the tty group is not a group here: the terminals are root's
            self.mount_fs("devpts", "/dev/pts", sc.MS_NOSUID | sc.MS_NOEXEC,
                          "newinstance,ptmxmode=0666,mode=0620")
        self.mount_fs("tmpfs", "/dev/shm", sc.MS_NOSUID | sc.MS_NODEV | sc.MS_NOEXEC,
                      self.owned("mode=1777,size=65536k"))
        self.mount_fs("mqueue", "/dev/mqueue", sc.MS_NOSUID | sc.MS_NODEV | sc.MS_NOEXEC)


def finish(spec: dict[str, Any], root: str) -> None:
    """In the container's PID namespace, still as the machine's root: its /proc, then
    pivot_root into the root and let the machine's go."""
    proc = f"{root}/proc"
    sc.mount("proc", proc, "proc", sc.MS_NOSUID | sc.MS_NODEV | sc.MS_NOEXEC)
    if spec["root"].get("masked", True):
        mask(root)
    os.chdir(root)
    sc.pivot_root(".", ".")
    sc.umount(".", sc.MNT_DETACH)
    os.chdir("/")
    if spec["root"].get("readOnly"):
        fd = os.open("/", os.O_PATH | os.O_CLOEXEC)
        sc.mount_setattr(fd, sc.MOUNT_ATTR_RDONLY, what="the root file system")
        os.close(fd)


def mask(root: str) -> None:
    for path in MASKED:
        where = root + path
        if os.path.isdir(where):
            sc.mount("tmpfs", where, "tmpfs", sc.MS_RDONLY | sc.MS_NOSUID | sc.MS_NODEV
                     | sc.MS_NOEXEC, "size=0")
        elif os.path.exists(where):
            sc.mount(f"{root}/dev/null", where, None, sc.MS_BIND)
    for path in READ_ONLY:
        where = root + path
        if os.path.exists(where):
            sc.mount(where, where, None, sc.MS_BIND | sc.MS_REC)
            sc.mount(None, where, None, sc.MS_REMOUNT | sc.MS_BIND | sc.MS_RDONLY | sc.MS_REC
                     | sc.MS_NOSUID | sc.MS_NODEV | sc.MS_NOEXEC)
