"""What the vendor chart tests share: the builds (tests/e2e/vendors/build.sh, cached in
~/.cache/draemu/vendors), a real helm (tests/e2e/helm/build.sh), and small waits on a
`draemu up` cluster driven with kubectl."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from draemu.cmd.testing.process import RunningDraemu

HERE = Path(__file__).parent
REPO = HERE.parents[2]
GO_CACHE = Path(os.environ.get("DRAEMU_GO_CACHE") or REPO / ".cache" / "go")
HELM = GO_CACHE / "bin" / "helm"
VENDORS = Path(os.environ.get("DRAEMU_VENDORS_CACHE")
               or Path.home() / ".cache" / "draemu" / "vendors")
SRC = VENDORS / "src"


def build(target: str) -> Path:
    """Run build.sh TARGET (and helm's build); skipped without Go, failed under CI."""
    if shutil.which("go") is None and not Path("/usr/local/go/bin/go").exists():
        if os.environ.get("CI") == "true":
            pytest.fail("Go is required under CI=true: no `go` on PATH")
        pytest.skip("Go is not installed (needed to build the vendor's driver and helm)")
    for script, args in ((HERE / "build.sh", [target]),
                         (REPO / "tests" / "e2e" / "helm" / "build.sh", [])):
        started = time.monotonic()
        result = subprocess.run(["nice", "bash", str(script), *args], capture_output=True,
                                text=True, timeout=3000, check=False)
        if result.returncode != 0:
            pytest.fail(f"{script} {' '.join(args)} failed:\n{result.stdout[-3000:]}\n"
                        f"{result.stderr[-3000:]}")
        print(f"{script.parent.name}/build.sh {' '.join(args)}: "
              f"{time.monotonic() - started:.0f}s")
    return VENDORS


def helm(cluster: RunningDraemu, *args: str, check: bool = True
         ) -> subprocess.CompletedProcess[str]:
    home = cluster.kubeconfig.parent / "helm-home"
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig), "HOME": str(home),
           "HELM_CACHE_HOME": str(home / "cache"), "HELM_CONFIG_HOME": str(home / "config"),
           "HELM_DATA_HOME": str(home / "data")}
    result = subprocess.run([str(HELM), *args], env=env, capture_output=True, text=True,
                            timeout=300, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} exited {result.returncode}:\n"
                             f"{result.stdout}\n{result.stderr}")
    return result


def get_json(cluster: RunningDraemu, *args: str) -> dict[str, Any]:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def wait_for(what: str, check: Callable[[], Any], timeout: float = 120,
             explain: Callable[[], str] | None = None) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.5)
    detail = f"\n{explain()}" if explain is not None else ""
    raise AssertionError(f"timed out waiting for {what} (last: {last!r}){detail}")


def driver_slices(cluster: RunningDraemu, driver: str) -> list[dict[str, Any]]:
    return [s for s in get_json(cluster, "resourceslices")["items"]
            if s["spec"]["driver"] == driver]


def pod_ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def node_host(cluster: RunningDraemu, node: str) -> Path:
    """The emulated node's own file system (its `/`) on this machine."""
    return cluster.kubeconfig.parent / "data" / "nodes" / node / "host"


def cdi_specs(cluster: RunningDraemu, node: str, prefix: str) -> list[dict[str, Any]]:
    """The CDI specs a driver wrote into the node's /var/run/cdi (JSON or YAML)."""
    import yaml

    folder = cluster.kubeconfig.parent / "data" / "nodes" / node / "cdi"
    return [yaml.safe_load(p.read_text()) for p in sorted(folder.glob(f"{prefix}*"))]


def pods_state(cluster: RunningDraemu, namespace: str) -> str:
    return cluster.kubectl("get", "pods", "-n", namespace, "-o", "wide", check=False).stdout


def container_env(log: str) -> dict[str, str]:
    """`env`'s output (one NAME=value a line) as a dict."""
    return dict(line.split("=", 1) for line in log.splitlines() if "=" in line)
