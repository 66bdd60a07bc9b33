"""A node's kubelet directory, with the usual layout under one root:

    <root>/plugins_registry/   registration sockets (watched)
    <root>/plugins/<driver>/   driver data and DRA sockets
    <root>/cdi/                CDI specs written by drivers (the node's /var/run/cdi)
    <root>/pods/<uid>/         container logs
    <root>/dra_manager_state   the DRA manager's checkpoint

Unix socket paths must stay under 108 bytes. When the root is too long for
`<root>/plugins/<driver>/dra-<uid>.sock` to fit, the socket-bearing directories are
addressed through a short alias: a symlink `/tmp/draemu-<uid>/<10 hex of sha256(root)>`
pointing at the root. Drivers and the kubelet both use the alias paths; the files
live in the real root.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

# Room left for `/plugins/<driver name>/dra-<pod uid>.sock` with a long driver name.
MAX_ROOT_FOR_SOCKETS = 30
# Per user, so that another user can neither block nor redirect our aliases.
ALIAS_DIR = Path(f"/tmp/draemu-{os.getuid()}")


class NodeLayout:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).absolute()
        self.alias: Path | None = None
        self.socket_root = self.root
        if len(str(self.root)) > MAX_ROOT_FOR_SOCKETS:
            digest = hashlib.sha256(str(self.root).encode()).hexdigest()[:10]
            self.alias = ALIAS_DIR / digest
            self.socket_root = self.alias

    @property
    def registry_dir(self) -> Path:
        return self.socket_root / "plugins_registry"

    @property
    def plugins_dir(self) -> Path:
        return self.socket_root / "plugins"

    def plugin_dir(self, driver: str) -> Path:
        return self.plugins_dir / driver

    @property
    def cdi_dir(self) -> Path:
        return self.root / "cdi"

    @property
    def pods_dir(self) -> Path:
        return self.root / "pods"

    @property
    def checkpoint_file(self) -> Path:
        return self.root / "dra_manager_state"

    def create(self) -> None:
        for d in (self.root / "plugins_registry", self.root / "plugins", self.cdi_dir,
                  self.pods_dir):
            d.mkdir(parents=True, exist_ok=True, mode=0o755)
        if self.alias is not None:
            ALIAS_DIR.mkdir(mode=0o700, exist_ok=True)
            if ALIAS_DIR.stat().st_uid != os.getuid() or ALIAS_DIR.is_symlink():
                raise PermissionError(f"{ALIAS_DIR} is not a directory of this user")
            if not (self.alias.is_symlink() and self.alias.resolve() == self.root.resolve()):
                tmp = self.alias.with_name(f".{self.alias.name}.{os.getpid()}")
                tmp.unlink(missing_ok=True)
                tmp.symlink_to(self.root)
                os.replace(tmp, self.alias)

    def remove_alias(self) -> None:
        if self.alias is not None and self.alias.is_symlink():
            self.alias.unlink(missing_ok=True)
