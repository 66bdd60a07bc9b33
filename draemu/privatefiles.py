"""Files that hold secrets, kept from this machine's other users.

A data directory holds the store (every Secret, every token's claims), the cluster's
private keys, admin and node kubeconfigs and the pods' volumes (Secrets, projected
ServiceAccount tokens): the directory is 0700 and the store, keys and kubeconfigs in it
0600, as kubeadm keeps /etc/kubernetes and etcd's data. `tighten` fixes a data
directory made by an earlier draemu, whose files were readable by anyone.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

# Inside a data directory, in these folders (one level of `*`), these names are secrets.
SECRET_NAMES = ("state.db", "state.db-wal", "state.db-shm", "state.db-journal", "*.key",
                "kubeconfig", "*.kubeconfig", "token", "*.token")
FOLDERS = (".", "pki", "nodes/*", "nodes/*/pki")


def private_dir(path: Path) -> Path:
    """`path` made (with its parents) if missing, 0700; an existing one loses what group
    and others may do (and keeps what its owner may)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    _private(path)
    return path


def _private(path: Path) -> None:
    mode = path.stat().st_mode & 0o7777
    if mode & 0o077:
        path.chmod(mode & ~0o077)


def private_file(path: Path) -> None:
    """`path` made empty if missing (so that what writes it later keeps 0600), private."""
    os.close(os.open(path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))
    _private(path)


def tighten(data_dir: Path) -> None:
    """The data directory, and its store, keys and kubeconfigs, private."""
    private_dir(data_dir)
    for pattern in FOLDERS:
        for folder in data_dir.glob(pattern) if pattern != "." else [data_dir]:
            if not folder.is_dir() or folder.is_symlink():
                continue
            for entry in folder.iterdir():
                if not any(fnmatch.fnmatchcase(entry.name, n) for n in SECRET_NAMES):
                    continue
                if entry.is_file() and not entry.is_symlink():
                    _private(entry)
    volumes = data_dir.glob("nodes/*/volumes")
    for folder in volumes:
        if folder.is_dir() and not folder.is_symlink():
            private_dir(folder)
