"""Starts one container of the process runtime: `python -I -S launch.py` with a JSON spec
on stdin (`exec`: as the second argument). Standard library only and no draemu imports
(its `confine/` modules are found beside it), so that it starts in a few milliseconds and
shares nothing with the kubelet but the spec.

Modes (`spec["mode"]`):

- `run`: the launcher joins the pod's network namespace (`netns`, a /proc/<pid>/ns/net
  path; with hostNetwork its node's, or absent), makes the pod's user namespace
  (`userns`: root inside is `base` outside, `size` ids mapped; `path`: an existing one,
  the node's for a hostNetwork pod on the pod network; absent when unconfined) and new
  mount, PID, IPC and UTS namespaces (`namespaces.pid`/`ipc` false: hostPID/hostIPC),
  assembles the container's root (confine/rootfs.py), runs the CDI hooks that come
  before pivot_root (`hooks`, confine/hooks.py) and forks the container's init: it
  mounts /proc, pivots into the root, enters the user namespace as its root, forks the command's
  process (which takes the container's user, groups and capabilities, confine/
  identity.py, and execs the command) and stays as PID 1, passing signals on and reaping
  orphans; it ends with the command's exit code, and the whole PID namespace with it.
  The launcher waits for it and ends the same way. Before the exec it writes the init's
  PID (as this machine sees it) to `started_fd`, which closes at the exec: the kubelet
  then knows the command runs in its namespaces.
- `exec`: a command in a running container: joins the namespaces of its init (`pid`),
  takes the container's identity and runs `argv` in the container's working directory,
  with the environment the launcher was given.
- `sandbox`: the pod's network namespace holder (upstream's pause container): a new
  network namespace with loopback up, then sleep until killed.
- `check`: what `run` needs: exit 0, or print what is missing and exit 1 (no namespaces
  at all) or 3 (no user namespaces or ID-mapped mounts on `idmap`, a folder: only an
  unconfined runtime could run).

Errors before the command's exec are printed on stderr prefixed `draemu-launch:` and
exit 127.
"""

import json
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from confine import hooks, identity, rootfs
from confine import syscalls as sc
from confine.syscalls import LaunchError

SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
             signal.SIGUSR2, signal.SIGWINCH)
CHECK_USERNS_BASE = 100000
USERNS_REFUSALS = {
    "ENOSPC": ": user namespaces are disabled or used up here (sysctl user.max_user_namespaces)",
    "EPERM": ": this machine forbids them (a sysctl such as kernel.unprivileged_userns_clone, "
             "a security module or a seccomp filter)",
    "EINVAL": ": the kernel has no user namespaces (CONFIG_USER_NS)"}
UNCONFINED = 3


def loopback_up() -> None:
    import fcntl  # here: only the sandbox and the check need them
    import socket
    import struct

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifreq = struct.pack("16sh14x", b"lo", 0)
        flags = struct.unpack("16sh14x", fcntl.ioctl(s, SIOCGIFFLAGS, ifreq))[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sh14x", b"lo", flags | IFF_UP))


def die_with_the_kubelet() -> None:
    """SIGKILL when the kubelet's process ends, however it ends: no container outlives
    its kubelet."""
    sc.prctl(sc.PR_SET_PDEATHSIG, signal.SIGKILL, "prctl")
    if os.getppid() == 1:  # the kubelet is already gone
        os._exit(137)


def join(path: str, flag: int) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        sc.setns(fd, flag, f"joining the namespace {path}")
    finally:
        os.close(fd)


def make_userns(userns: dict) -> int:
    """A user namespace whose root is `base` on this machine (`size` ids mapped), held
    by the descriptor returned (a child makes it and leaves; we write its maps); or, with
    `path`, that existing one (a hostNetwork pod's: its node's)."""
    if userns.get("path"):
        return os.open(userns["path"], os.O_RDONLY | os.O_CLOEXEC)
    ready_r, ready_w = os.pipe()
    done_r, done_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(ready_r)
        os.close(done_w)
        try:
            sc.unshare(sc.CLONE_NEWUSER, "a user namespace")
            os.write(ready_w, b"ok")
        except LaunchError as err:
            reason = USERNS_REFUSALS.get(next((e for e in USERNS_REFUSALS if e in str(err)), ""))
            os.write(ready_w, f"{err}{reason}".encode())
        os.read(done_r, 1)
        os._exit(0)
    os.close(ready_w)
    os.close(done_r)
    try:
        answer = os.read(ready_r, 4096).decode(errors="replace")
        if answer != "ok":
            raise LaunchError(answer or "a user namespace: the helper process died")
        line = f"0 {int(userns['base'])} {int(userns['size'])}\n"
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{pid}/{name}", "w") as file:
                file.write(line)
        return os.open(f"/proc/{pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.close(ready_r)
        os.close(done_w)
        os.waitpid(pid, 0)


def exit_code(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


def run(spec: dict) -> None:
    die_with_the_kubelet()
    if spec.get("netns"):
        join(spec["netns"], sc.CLONE_NEWNET)
    userns_fd = make_userns(spec["userns"]) if spec.get("userns") else None
    namespaces = spec.get("namespaces") or {}
    flags = sc.CLONE_NEWNS | sc.CLONE_NEWUTS
    flags |= sc.CLONE_NEWIPC if namespaces.get("ipc", True) else 0
    sc.unshare(flags, "the container's namespaces")
    sc.mount(None, "/", None, sc.MS_REC | sc.MS_PRIVATE)
    if spec.get("hostname"):
        sc.sethostname(spec["hostname"])
    builder = rootfs.RootBuilder(spec, userns_fd)
    root = builder.build()
    # The hooks are children of ours in this PID namespace: the container's, the next
    # child's, begins with its init.
    hooks.run_before_pivot(spec, builder.scratch)
    if namespaces.get("pid", True):
        sc.unshare(sc.CLONE_NEWPID, "the container's PID namespace")
    pid = os.fork()
    if pid == 0:
        try:
            init(spec, root, userns_fd)
        except (LaunchError, OSError) as err:
            print(f"draemu-launch: {err}", file=sys.stderr, flush=True)
        os._exit(127)
    for sig in FORWARDED:
        signal.signal(sig, signal.SIG_IGN)  # for the init, which passes them on
    started = spec.get("started_fd")
    if started is not None:
        os.write(started, f"{pid}\n".encode())
        os.close(started)
    _, status = os.waitpid(pid, 0)
    sys.exit(exit_code(status))


def init(spec: dict, root: str, userns_fd: int | None) -> None:
    """The container's PID 1: its root, its user namespace, then the command's process."""
    sc.prctl(sc.PR_SET_PDEATHSIG, signal.SIGKILL, "prctl")
    rootfs.finish(spec, root)
    if userns_fd is not None:
        sc.setns(userns_fd, sc.CLONE_NEWUSER, "joining the pod's user namespace")
        os.close(userns_fd)
        identity.become({"caps": None})  # the namespace's root, until it drops everything
        sc.prctl(sc.PR_SET_PDEATHSIG, signal.SIGKILL, "prctl")  # cleared by a new uid
    os.umask(0o022)
    child = os.fork()
    if child == 0:
        command(spec)
    # Nothing of the launcher's stays open in the container's PID 1 (the root's and the
    # scratch area's descriptors, the start pipe): only its output.
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))
    identity.drop_everything()
    supervise(child)


def command(spec: dict) -> None:
    """The command's process: the container's identity, then the exec."""
    try:
        identity.become(spec.get("user") or {})
        enter(spec.get("cwd") or "/")
        if spec.get("started_fd") is not None:
            # Closed by the exec: the kubelet then knows the command runs.
            os.set_inheritable(spec["started_fd"], False)
        execute(spec["argv"], spec["env"])
    except (LaunchError, OSError) as err:
        print(f"draemu-launch: {err}", file=sys.stderr, flush=True)
    os._exit(127)


def enter(cwd: str) -> None:
    try:
        os.chdir(cwd)
    except OSError as err:
        raise LaunchError(f"working directory {cwd}: {err.strerror}") from err


def execute(argv: list[str], env: dict[str, str]) -> None:
    for sig in (signal.SIGPIPE, signal.SIGXFSZ, *FORWARDED):
        signal.signal(sig, signal.SIG_DFL)
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as err:
        raise LaunchError(f'exec "{argv[0]}": {err.strerror}') from err


def supervise(child: int) -> None:
    """Pass signals on to the command, reap whatever ends, end with the command."""
    def forward(sig: int, _frame: object) -> None:
        try:
            os.kill(child, sig)
        except ProcessLookupError:
            pass

    for sig in FORWARDED:
        signal.signal(sig, forward)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(0)
        if pid == child:
            os._exit(exit_code(status))


NAMESPACES = (("ipc", sc.CLONE_NEWIPC), ("uts", sc.CLONE_NEWUTS), ("net", sc.CLONE_NEWNET),
              ("pid", sc.CLONE_NEWPID), ("mnt", sc.CLONE_NEWNS), ("user", sc.CLONE_NEWUSER))


def exec_(spec: dict) -> None:
    die_with_the_kubelet()
    pid = int(spec["pid"])
    targets = []
    for name, flag in NAMESPACES:
        path = f"/proc/{pid}/ns/{name}"
        try:
            if os.stat(path).st_ino == os.stat(f"/proc/self/ns/{name}").st_ino:
                continue
            targets.append((os.open(path, os.O_RDONLY | os.O_CLOEXEC), flag, name))
        except FileNotFoundError as err:
            raise LaunchError("container is not running") from err
    for fd, flag, name in targets:  # the user namespace last: until then we are root here
        sc.setns(fd, flag, f"joining the container's {name} namespace")
        os.close(fd)
    child = os.fork()
    if child == 0:
        try:
            identity.become(spec.get("user") or {})
            sc.prctl(sc.PR_SET_PDEATHSIG, signal.SIGKILL, "prctl")
            enter(spec.get("cwd") or "/")
            execute(spec["argv"], dict(os.environ))
        except (LaunchError, OSError) as err:
            print(f"draemu-launch: {err}", file=sys.stderr, flush=True)
        os._exit(127)
    _, status = os.waitpid(child, 0)
    sys.exit(exit_code(status))


def sandbox() -> None:
    die_with_the_kubelet()
    sc.unshare(sc.CLONE_NEWNET, "a new network namespace")
    loopback_up()
    # As container runtimes set them for a pod (containerd's enable_unprivileged_ports and
    # _icmp): the pod's root is not the machine's, and may still bind port 80 and ping.
    with open("/proc/sys/net/ipv4/ip_unprivileged_port_start", "w") as file:
        file.write("0")
    try:
        with open("/proc/sys/net/ipv4/ping_group_range", "w") as file:
            file.write("0 2147483647")
    except OSError:
        pass  # ids this (user) namespace does not map: no unprivileged ping, nothing else
    print("ready", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        signal.pause()


def check(spec: dict) -> None:
    if os.geteuid() != 0:
        raise LaunchError(f"the process runtime runs containers in their own user, mount, PID "
                          f"and network namespaces and needs root (running as uid "
                          f"{os.geteuid()})")
    if not in_child(namespaces_work):
        raise LaunchError("this machine does not let the process runtime create namespaces")
    if not in_child(lambda: confinement_works(spec.get("idmap") or "/")):
        sys.exit(UNCONFINED)


def in_child(test: object) -> bool:
    pid = os.fork()
    if pid == 0:
        try:
            test()  # type: ignore[operator]
        except (LaunchError, OSError) as err:
            print(f"draemu-launch: {err}", file=sys.stderr, flush=True)
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def namespaces_work() -> None:
    sc.unshare(sc.CLONE_NEWNS | sc.CLONE_NEWNET | sc.CLONE_NEWPID | sc.CLONE_NEWIPC
               | sc.CLONE_NEWUTS, "new mount, network, PID, IPC and UTS namespaces")
    sc.mount(None, "/", None, sc.MS_REC | sc.MS_PRIVATE)
    sc.mount("tmpfs", "/tmp", "tmpfs", 0)
    loopback_up()


def confinement_works(folder: str) -> None:
    """A user namespace, and an ID-mapped mount of `folder` (the node's file system)."""
    userns_fd = make_userns({"base": CHECK_USERNS_BASE, "size": 65536})
    sc.unshare(sc.CLONE_NEWNS, "a new mount namespace")
    fd = os.open(folder, os.O_PATH | os.O_CLOEXEC)
    tree = sc.open_tree(fd, recursive=False)
    try:
        sc.mount_setattr(tree, sc.MOUNT_ATTR_IDMAP, userns_fd,
                         what=f"{folder} (an ID-mapped mount)")
    finally:
        os.close(tree)
        os.close(fd)


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "exec":
        spec = json.loads(sys.argv[2])
        spec["mode"] = "exec"
    else:
        spec = json.load(sys.stdin)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
    try:
        {"run": run, "exec": exec_, "sandbox": lambda _s: sandbox(), "check": check}[
            spec["mode"]](spec)
    except (LaunchError, OSError) as err:
        print(f"draemu-launch: {err}", file=sys.stderr, flush=True)
        sys.exit(127)


if __name__ == "__main__":
    main()
