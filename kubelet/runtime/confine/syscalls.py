"""The Linux system calls the launcher needs and Python's os module lacks (ctypes on
libc): namespaces, the new mount API (open_tree, move_mount, mount_setattr), openat2's
scoped path resolution, pivot_root, capabilities."""

from __future__ import annotations

import ctypes
import errno
import os

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
MNT_DETACH = 2

AT_FDCWD, AT_EMPTY_PATH, AT_RECURSIVE = -100, 0x1000, 0x8000
OPEN_TREE_CLONE = 1
MOVE_MOUNT_F_EMPTY_PATH, MOVE_MOUNT_T_EMPTY_PATH = 0x4, 0x40
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV = 0x1, 0x2, 0x4
MOUNT_ATTR_NOEXEC, MOUNT_ATTR_IDMAP = 0x8, 0x00100000
RESOLVE_NO_MAGICLINKS, RESOLVE_IN_ROOT = 0x02, 0x10

PR_SET_PDEATHSIG, PR_SET_KEEPCAPS, PR_CAPBSET_DROP = 1, 8, 24
PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 38, 47, 4

# The same number on every architecture (added after the tables were unified) ...
SYS_OPEN_TREE, SYS_MOVE_MOUNT, SYS_OPENAT2, SYS_MOUNT_SETATTR = 428, 429, 437, 442
SYS_FSOPEN, SYS_FSCONFIG, SYS_FSMOUNT = 430, 431, 432
# ... but not pivot_root.
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "s390x": 217,
                  "ppc64le": 203, "ppc64": 203, "i686": 217, "armv7l": 218}

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class LaunchError(Exception):
    """What stops a container from starting, said in one line."""


def check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise LaunchError(f"{what}: {os.strerror(err)} (errno {errno.errorcode.get(err, err)})")
    return result


def _os_error(what: str) -> OSError:
    err = ctypes.get_errno()
    return OSError(err, f"{what}: {os.strerror(err)}")


def unshare(flags: int, what: str) -> None:
    check(_libc.unshare(flags), what)


def setns(fd: int, flags: int, what: str) -> None:
    check(_libc.setns(fd, flags), what)


def mount(source: str | None, target: str, fstype: str | None, flags: int,
          data: str | None = None) -> None:
    check(_libc.mount(source.encode() if source else None, target.encode(),
                      fstype.encode() if fstype else None, flags,
                      data.encode() if data else None),
          f"mount {source or fstype} on {target}")


def umount(target: str, flags: int) -> None:
    check(_libc.umount2(target.encode(), flags), f"unmounting {target}")


def sethostname(name: str) -> None:
    raw = name.encode()
    check(_libc.sethostname(raw, len(raw)), f"setting the hostname {name}")


def pivot_root(new_root: str, put_old: str) -> None:
    machine = os.uname().machine
    number = SYS_PIVOT_ROOT.get(machine)
    if number is None:
        raise LaunchError(f"pivot_root: unknown system call number on {machine}")
    check(_libc.syscall(number, new_root.encode(), put_old.encode()), "pivot_root")


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64),
                ("resolve", ctypes.c_uint64)]


def open_in_root(root_fd: int, path: str, flags: int = os.O_PATH) -> int:
    """Open `path` as if `root_fd` were `/`: symbolic links and `..` never leave it
    (openat2 RESOLVE_IN_ROOT). OSError as open(2) raises it."""
    how = _OpenHow(flags | os.O_CLOEXEC, 0, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)
    fd = _libc.syscall(SYS_OPENAT2, root_fd, (path.lstrip("/") or ".").encode(),
                       ctypes.byref(how), ctypes.sizeof(how))
    if fd < 0:
        raise _os_error(f"opening {path}")
    return int(fd)


def open_tree(fd: int, recursive: bool) -> int:
    """A detached copy of the mount at `fd` (an O_PATH descriptor), to attach elsewhere."""
    flags = AT_EMPTY_PATH | OPEN_TREE_CLONE | os.O_CLOEXEC | (AT_RECURSIVE if recursive else 0)
    return check(int(_libc.syscall(SYS_OPEN_TREE, fd, b"", flags)), "cloning a mount")


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def mount_setattr(fd: int, attrs: int, userns_fd: int = 0, recursive: bool = False,
                  what: str = "a mount") -> None:
    attr = _MountAttr(attrs, 0, 0, userns_fd)
    check(int(_libc.syscall(SYS_MOUNT_SETATTR, fd, b"",
                            AT_EMPTY_PATH | (AT_RECURSIVE if recursive else 0),
                            ctypes.byref(attr), ctypes.sizeof(attr))),
          f"setting the attributes of {what}")


def fsmount(fstype: str, options: dict[str, str], attrs: int) -> int:
    """A new, detached file system mount (not attached anywhere yet)."""
    fs = check(int(_libc.syscall(SYS_FSOPEN, fstype.encode(), 1)), f"opening {fstype}")
    try:
        for key, value in options.items():
            check(int(_libc.syscall(SYS_FSCONFIG, fs, 1, key.encode(), value.encode(), 0)),
                  f"{fstype} option {key}={value}")
        check(int(_libc.syscall(SYS_FSCONFIG, fs, 6, None, None, 0)), f"creating {fstype}")
        return check(int(_libc.syscall(SYS_FSMOUNT, fs, 1, attrs)), f"mounting {fstype}")
    finally:
        os.close(fs)


def move_mount(fd: int, target_fd: int, what: str) -> None:
    check(int(_libc.syscall(SYS_MOVE_MOUNT, fd, b"", target_fd, b"",
                            MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH)),
          f"mounting on {what}")


def prctl(option: int, arg: int, what: str) -> None:
    check(_libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0), what)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def capset(caps: list[int]) -> None:
    """The calling thread's effective and permitted sets become `caps`, inheritable empty."""
    mask = 0
    for cap in caps:
        mask |= 1 << cap
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)(_CapData(mask & 0xFFFFFFFF, mask & 0xFFFFFFFF, 0),
                          _CapData(mask >> 32, mask >> 32, 0))
    check(_libc.capset(ctypes.byref(header), data), "setting capabilities")


def last_cap() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as file:
            return int(file.read())
    except OSError:
        return 40  # CAP_CHECKPOINT_RESTORE, Linux 5.9
