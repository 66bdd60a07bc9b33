"""Starts one container of the process runtime: `python -I -S launch.py` with a JSON spec
on stdin. Standard library only and no draemu imports, so that it starts in a few
milliseconds and shares nothing with the kubelet but the spec.

Modes (`spec["mode"]`):

- `run`: join the pod's network namespace (`netns`, a /proc/<pid>/ns/net path; absent
  with hostNetwork), enter a new mount namespace whose mounts do not propagate back to
  the host, attach the pod's volumes at their mount paths, switch user if asked, chdir
  and exec the command. A mount path whose parent folders do not exist is created
  inside an overlay of its nearest existing ancestor, upper layer on a tmpfs, so that
  nothing is created on the host's file system (for a top-level folder, / itself is
  overlaid, the mounts below it carried over, and the container chroots into it).
  Sources are cloned as detached mounts (open_tree) before any overlay hides them.
- `sandbox`: the pod's network namespace holder (upstream's pause container): a new
  network namespace with loopback up, then sleep until killed.
- `check`: what `run` needs (new mount and network namespaces, mounting): exit 0 or
  print what is missing and exit 1.

Errors before the exec are printed on stderr prefixed `draemu-launch:` and exit 127.
"""

import ctypes
import errno
import fcntl
import json
import os
import signal
import socket
import struct
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT = 1, 2, 4, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
OPEN_TREE_CLONE, AT_RECURSIVE, O_CLOEXEC = 1, 0x8000, 0o2000000
MOVE_MOUNT_F_EMPTY_PATH = 0x4
AT_FDCWD = -100
SYS_OPEN_TREE, SYS_MOVE_MOUNT = 428, 429  # the same number on every architecture
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
PR_SET_PDEATHSIG = 1

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class LaunchError(Exception):
    pass


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise LaunchError(f"{what}: {os.strerror(err)} (errno {errno.errorcode.get(err, err)})")
    return result


def unshare(flags: int, what: str) -> None:
    _check(_libc.unshare(flags), what)


def setns(path: str, flags: int) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        _check(_libc.setns(fd, flags), f"joining the namespace {path}")
    finally:
        os.close(fd)


def mount(source: str | None, target: str, fstype: str | None, flags: int,
          data: str | None = None) -> None:
    _check(_libc.mount(source.encode() if source else None, target.encode(),
                       fstype.encode() if fstype else None, flags,
                       data.encode() if data else None),
           f"mount {source or fstype} on {target}")


def open_tree(path: str) -> int:
    return _check(_libc.syscall(SYS_OPEN_TREE, AT_FDCWD, path.encode(),
                                OPEN_TREE_CLONE | AT_RECURSIVE | O_CLOEXEC),
                  f"cloning {path} for a bind mount")


def move_mount(fd: int, target: str) -> None:
    _check(_libc.syscall(SYS_MOVE_MOUNT, fd, b"", AT_FDCWD, target.encode(),
                         MOVE_MOUNT_F_EMPTY_PATH), f"bind mount on {target}")


def loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifreq = struct.pack("16sh14x", b"lo", 0)
        flags = struct.unpack("16sh14x", fcntl.ioctl(s, SIOCGIFFLAGS, ifreq))[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sh14x", b"lo", flags | IFF_UP))


def _existing_ancestor(path: str) -> str:
    while not os.path.lexists(path):
        path = os.path.dirname(path)
    return path


def _root_children() -> list[str]:
    """Mount points whose parent is the root mount (from /proc/self/mountinfo)."""
    rows = [line.split() for line in open("/proc/self/mountinfo")]
    roots = [r for r in rows if r[4] == "/"]
    if not roots:
        return []
    root_id = roots[-1][0]
    return [_unescape(r[4]) for r in rows if r[1] == root_id and r[4] != "/"]


def _unescape(path: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    return path.encode().decode("unicode_escape").encode("latin-1").decode()


def overlay_root(scratch: str) -> None:
    """Make / an overlay of itself (upper layer on the tmpfs), every mount below it
    carried over, and chroot into it: mount points may then be made at the top level."""
    new, upper, work = (f"{scratch}/{d}" for d in ("root", "upper-root", "work-root"))
    for d in (new, upper, work):
        os.mkdir(d)
    mount("overlay", new, "overlay", 0, f"lowerdir=/,upperdir={upper},workdir={work}")
    for child in _root_children():
        if os.path.lexists(new + child):
            mount(child, new + child, None, MS_BIND | MS_REC)
    os.chroot(new)
    os.chdir("/")


def attach_mounts(mounts: list[dict], scratch: str) -> None:
    """Each mount: source, target (absolute), readOnly, file (the source is a file)."""
    clones = [open_tree(m["source"]) for m in mounts]
    mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700")
    scratch_fd = os.open(scratch, os.O_PATH | os.O_CLOEXEC)
    overlays: list[str] = []
    targets = [os.path.realpath(m["target"]) for m in mounts]
    if any(_existing_ancestor(t) == "/" for t in targets):
        overlay_root(f"/proc/self/fd/{scratch_fd}")
        overlays.append("/")
    for index, (m, fd, target) in enumerate(zip(mounts, clones, targets, strict=True)):
        if not os.path.lexists(target):
            ancestor = _existing_ancestor(target)
            if not any(ancestor == o or ancestor.startswith(o.rstrip("/") + "/")
                       for o in overlays):
                upper = f"/proc/self/fd/{scratch_fd}/upper{index}"
                work = f"/proc/self/fd/{scratch_fd}/work{index}"
                os.mkdir(upper)
                os.mkdir(work)
                mount("overlay", ancestor, "overlay", 0,
                      f"lowerdir={ancestor},upperdir={upper},workdir={work}")
                overlays.append(ancestor)
            if m.get("file"):
                os.makedirs(os.path.dirname(target), exist_ok=True)
                open(target, "a").close()  # an empty mount point
            else:
                os.makedirs(target, exist_ok=True)
        move_mount(fd, target)
        os.close(fd)
        if m.get("readOnly"):
            mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_REC)
    os.close(scratch_fd)


def die_with_the_kubelet() -> None:
    """SIGKILL when the kubelet's process ends, however it ends: no container outlives
    its kubelet (kept across the exec)."""
    _check(_libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl")
    if os.getppid() == 1:  # the kubelet is already gone
        os._exit(137)


def run(spec: dict) -> None:
    die_with_the_kubelet()
    if spec.get("netns"):
        setns(spec["netns"], CLONE_NEWNET)
    unshare(CLONE_NEWNS, "a new mount namespace")
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    if spec.get("mounts"):
        attach_mounts(spec["mounts"], spec["scratch"])
    if spec.get("gid") is not None:
        os.setgroups(spec.get("groups") or [])
        os.setgid(spec["gid"])
    if spec.get("uid") is not None:
        os.setuid(spec["uid"])
    if spec.get("cwd"):
        try:
            os.chdir(spec["cwd"])
        except OSError as err:
            raise LaunchError(f"working directory {spec['cwd']}: {err.strerror}") from err
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if spec.get("started_fd") is not None:
        # Closed by the exec: the kubelet then knows the command runs in its namespaces.
        os.set_inheritable(spec["started_fd"], False)
    argv, env = spec["argv"], spec["env"]
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as err:
        raise LaunchError(f'exec "{argv[0]}": {err.strerror}') from err


def sandbox() -> None:
    die_with_the_kubelet()
    unshare(CLONE_NEWNET, "a new network namespace")
    loopback_up()
    print("ready", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        signal.pause()


def check() -> None:
    if os.geteuid() != 0:
        raise LaunchError(f"the process runtime runs containers in their own mount and network "
                          f"namespaces and needs root (running as uid {os.geteuid()})")
    pid = os.fork()
    if pid == 0:
        try:
            unshare(CLONE_NEWNS | CLONE_NEWNET, "new mount and network namespaces")
            mount(None, "/", None, MS_REC | MS_PRIVATE)
            scratch = "/tmp"
            mount("tmpfs", scratch, "tmpfs", 0)
            loopback_up()
        except (LaunchError, OSError) as err:
            print(f"draemu-launch: {err}", file=sys.stderr, flush=True)
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise LaunchError("this machine does not let the process runtime create namespaces")


def main() -> None:
    spec = json.load(sys.stdin)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    try:
        {"run": run, "sandbox": lambda _s: sandbox(), "check": lambda _s: check()}[
            spec["mode"]](spec)
    except (LaunchError, OSError) as err:
        print(f"draemu-launch: {err}", file=sys.stderr, flush=True)
        sys.exit(127)


if __name__ == "__main__":
    main()
