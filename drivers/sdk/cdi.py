"""Writing CDI spec files (Container Device Interface 1.1.0) for a driver's devices.

Files are written atomically (a temp file in the same directory, then rename), so a
runtime scanning the directory never reads half a spec. Names ending in `.json` are
written as JSON, anything else as YAML with a leading `---`, like the Go library.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import yaml

CDI_VERSION = "0.6.0"


class CDIWriter:
    def __init__(self, cdi_dir: str | Path, kind: str) -> None:
        """`kind` is `<vendor>/<class>`, e.g. `k8s.gpu.example.com/gpu`."""
        self.dir = Path(cdi_dir)
        self.kind = kind
        self.vendor, _, self.cls = kind.partition("/")

    def device_id(self, device: str) -> str:
        return f"{self.kind}={device}"

    def spec_path(self, name: str, ext: str = "yaml") -> Path:
        return self.dir / f"{self.vendor}-{self.cls}_{name}.{ext}"

    def write(self, name: str, devices: dict[str, dict[str, Any]],
              container_edits: dict[str, Any] | None = None, ext: str = "yaml") -> Path:
        """Write one spec; `devices` maps device name → containerEdits."""
        spec: dict[str, Any] = {"cdiVersion": CDI_VERSION, "kind": self.kind,
                                "devices": [{"name": n, "containerEdits": edits}
                                            for n, edits in devices.items()]}
        if container_edits:
            spec["containerEdits"] = container_edits
        path = self.spec_path(name, ext)
        self.dir.mkdir(parents=True, exist_ok=True)
        text = (json.dumps(spec, indent=2) if ext == "json"
                else "---\n" + yaml.safe_dump(spec, sort_keys=False))
        fd, tmp = tempfile.mkstemp(prefix="spec.", suffix=".tmp", dir=self.dir)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
        return path

    def delete(self, name: str) -> None:
        for ext in ("yaml", "json"):
            self.spec_path(name, ext).unlink(missing_ok=True)
