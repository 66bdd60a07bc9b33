"""Where kind-compat keeps its clusters: one folder per cluster under a state folder
(`$DRAEMU_KIND_HOME`, else `$XDG_DATA_HOME/draemu/kind` or `~/.local/share/draemu/kind`),
holding the background draemu's data dir, its log, its kubeconfig and `cluster.json`."""

from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path


def home() -> Path:
    explicit = os.environ.get("DRAEMU_KIND_HOME")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    return Path(base) / "draemu" / "kind"


@dataclass
class ClusterRecord:
    name: str
    pid: int
    server: str = ""
    nodes: list[str] = field(default_factory=list)
    workers: list[str] = field(default_factory=list)

    @property
    def folder(self) -> Path:
        return home() / self.name

    @property
    def kubeconfig(self) -> Path:
        return self.folder / "kubeconfig"

    @property
    def data_dir(self) -> Path:
        return self.folder / "data"

    def save(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.folder / "cluster.json.tmp"
        tmp.write_text(json.dumps(asdict(self), indent=2))
        tmp.replace(self.folder / "cluster.json")

    def alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM (graceful), then SIGKILL if it does not end in time."""
        for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(self.pid, sig)
            except (ProcessLookupError, PermissionError):
                try:
                    os.kill(self.pid, sig)
                except ProcessLookupError:
                    return
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline:
                if not self.alive():
                    return
                try:  # reap it if it is our child
                    os.waitpid(self.pid, os.WNOHANG)
                except ChildProcessError:
                    pass
                time.sleep(0.05)


def load(name: str) -> ClusterRecord | None:
    path = home() / name / "cluster.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return ClusterRecord(**data)


def all_names() -> list[str]:
    root = home()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "cluster.json").exists())
