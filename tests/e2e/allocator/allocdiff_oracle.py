"""The allocator oracle (tests/e2e/go/cmd/allocoracle) as one long-lived process: a case
in, upstream's decision out, one JSON line each, so a session of thousands of cases
pays for one Go start-up."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

GO_DIR = Path(__file__).parents[1] / "go"
REPO = Path(__file__).resolve().parents[3]
GO_CACHE = Path(os.environ.get("DRAEMU_GO_CACHE") or REPO / ".cache" / "go")


def build() -> Path:
    """tests/e2e/go/build.sh (seconds when its caches are warm); the oracle's path."""
    if shutil.which("go") is None and not Path("/usr/local/go/bin/go").exists():
        raise FileNotFoundError("Go is not installed (needed to build tests/e2e/go)")
    result = subprocess.run(["bash", str(GO_DIR / "build.sh")], capture_output=True,
                            text=True, timeout=1500, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"tests/e2e/go/build.sh failed:\n{result.stdout}\n{result.stderr}")
    return GO_CACHE / "bin" / "allocoracle"


class Oracle:
    """Upstream's allocator, asked one case at a time."""

    def __init__(self, binary: Path) -> None:
        self.proc = subprocess.Popen([str(binary)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        self.asked = 0

    def decide(self, case: dict[str, Any], *, runs: int = 1,
               timeout_ms: int = 10000) -> dict[str, Any]:
        request = {"id": str(self.asked), "gates": case["gates"], "classes": case["classes"],
                   "slices": case["slices"], "allocated": case["allocated"],
                   "claims": case["claims"], "node": case["node"], "runs": runs,
                   "timeoutMillis": timeout_ms}
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"allocoracle exited ({self.proc.poll()})")
        self.asked += 1
        answer = json.loads(line)
        if answer["status"] == "BadInput":
            raise ValueError(f"allocoracle refused the case: {answer['error']}")
        return answer

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
