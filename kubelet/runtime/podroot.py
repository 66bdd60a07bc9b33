"""What a container's root file system is made of, by what its image stands for
(kubelet/runtime/imagemap.py); the launcher assembles it (confine/rootfs.py).

- An image mapped to a folder: the folder is the root (its files below, a tmpfs layer
  above for what the container writes, gone when the container ends). The files keep
  their owners on this machine: those of root and other users outside the pod's ID
  range are seen as nobody (65534), readable only as their permissions let anybody
  read them, and written to only where they let anybody write.
- An image mapped to an executable, and every image when there is no image map: a
  tmpfs root with this machine's system folders (`SYSTEM_DIRS`) read-only, the
  executable read-only at its own path, and an `/etc` of its own: the entries of
  `ETC_ENTRIES` that exist here (read-only), and a `passwd` and `group` that name only
  root and nobody. No home folder, data dir, key or kubeconfig of this machine is in it.

Either root is read-only with `readOnlyRootFilesystem`; `/tmp` is empty at start.
"""

from __future__ import annotations

import glob
import os
from typing import Any

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_ENTRIES = (
    "/etc/alternatives", "/etc/ca-certificates", "/etc/ca-certificates.conf",
    "/etc/ssl/certs", "/etc/ssl/openssl.cnf", "/etc/pki/ca-trust", "/etc/pki/tls/certs",
    "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/nsswitch.conf",
    "/etc/host.conf", "/etc/gai.conf", "/etc/protocols", "/etc/services", "/etc/networks",
    "/etc/localtime", "/etc/timezone", "/etc/os-release", "/etc/debian_version",
    "/etc/lsb-release", "/etc/shells", "/etc/profile", "/etc/profile.d", "/etc/bash.bashrc",
    "/etc/inputrc", "/etc/mime.types")
ETC_PATTERNS = ("/etc/python3*",)  # the system Python's site configuration
ETC_FILES = {
    "passwd": "root:x:0:0:root:/root:/bin/sh\n"
              "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
    "group": "root:x:0:\ntty:x:5:\nnogroup:x:65534:\n",
}


def etc_entries() -> list[str]:
    found = [p for p in ETC_ENTRIES if os.path.lexists(p)]
    for pattern in ETC_PATTERNS:
        found += sorted(glob.glob(pattern))
    return found


def root_spec(image_folder: str | None, read_only: bool, masked: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {"image": image_folder, "readOnly": read_only, "masked": masked}
    if image_folder is None:
        spec.update(system=[p for p in SYSTEM_DIRS if os.path.lexists(p)], etc=etc_entries(),
                    etcFiles=ETC_FILES)
    return spec


def in_system_dirs(path: str) -> bool:
    """Whether the system root shows `path` already (it lies in a system folder)."""
    real = os.path.realpath(path)
    return any(real.startswith(os.path.realpath(d) + "/") for d in SYSTEM_DIRS
               if os.path.isdir(d))


def executable_mount(path: str) -> dict[str, Any] | None:
    """The mapped executable at its own path, read-only, unless the root has it."""
    if in_system_dirs(path):
        return None
    return {"base": "/", "path": path, "target": path, "readOnly": True, "idmap": False}
