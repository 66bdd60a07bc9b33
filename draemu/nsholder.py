"""Holds one network namespace of the pod network (draemu/podnetwork.py) for as long as
draemu runs: `python -I -S nsholder.py` with a JSON spec on stdin. Standard library
only and no draemu imports, so that it starts in a few milliseconds.

The namespace is this process's: it ends when the process ends, and with it every
address, route, link and nftables rule in it. The process dies with its parent
(PR_SET_PDEATHSIG), so a draemu that is killed leaves nothing behind.

Spec: `{"userns": false, "sysctls": {"net/ipv4/ip_forward": "1", ...}}`. With
`userns`, the namespace is made inside a new user namespace (an emulated node's: its
privileged hostNetwork pods, kube-proxy's, may change the node's network and nothing of
this machine's): the holder prints `userns`, waits for its parent to write its uid and
gid maps and to answer a line, then goes on. It prints `ready` once the namespace is
made, loopback up and the sysctls written, then sleeps until SIGTERM.
"""

import ctypes
import fcntl
import json
import os
import signal
import socket
import struct
import sys

CLONE_NEWUSER, CLONE_NEWNET = 0x10000000, 0x40000000
PR_SET_PDEATHSIG = 1
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
_libc = ctypes.CDLL(None, use_errno=True)


def fail(what: str) -> None:
    err = ctypes.get_errno()
    print(f"{what}: {os.strerror(err)}", file=sys.stderr, flush=True)
    sys.exit(1)


def loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifreq = struct.pack("16sh14x", b"lo", 0)
        flags = struct.unpack("16sh14x", fcntl.ioctl(s, SIOCGIFFLAGS, ifreq))[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sh14x", b"lo", flags | IFF_UP))


def main() -> None:
    if _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        fail("prctl")
    if os.getppid() == 1:  # the parent is already gone
        sys.exit(1)
    spec = json.loads(sys.stdin.readline())
    if spec.get("userns"):
        if _libc.unshare(CLONE_NEWUSER) != 0:
            fail("a user namespace")
        print("userns", flush=True)
        if not sys.stdin.readline():
            sys.exit(1)
    if _libc.unshare(CLONE_NEWNET) != 0:
        fail("a network namespace")
    loopback_up()
    for name, value in (spec.get("sysctls") or {}).items():
        with open(f"/proc/sys/{name}", "w") as file:
            file.write(str(value))
    print("ready", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        signal.pause()


if __name__ == "__main__":
    main()
