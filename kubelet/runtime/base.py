"""What a runtime is given to start a container, and the container handle it returns."""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from draemu.api.meta import micro_time_now, time_now
from draemu.kubelet.cdi import ContainerEdits


class RuntimeError_(Exception):
    """Creating or starting a container failed (reported as CreateContainerError)."""


class NetworkNotReady(RuntimeError_):
    """The runtime's pod network cannot take pods yet (the node has no podCIDR)."""

    def __init__(self) -> None:
        super().__init__("network is not ready: container runtime network not ready: "
                         "NetworkReady=false reason:NetworkPluginNotReady message:Network "
                         "plugin returns error: cni plugin not initialized")


@dataclass
class ContainerSecurity:
    """The container's securityContext as the kubelet resolves it (pod and container
    levels merged, capabilities as containerd computes them)."""

    run_as_user: int | None = None
    run_as_group: int | None = None
    # supplementalGroups, then fsGroup
    groups: list[int] = field(default_factory=list)
    # Capability numbers kept in the bounding set; None: every one (privileged).
    capabilities: list[int] | None = None
    no_new_privs: bool = False
    read_only_root: bool = False
    # /proc and /sys paths hidden or read-only (not privileged, procMount Default)
    masked_paths: bool = True
    host_pid: bool = False
    host_ipc: bool = False


@dataclass
class ContainerConfig:
    pod_namespace: str
    pod_name: str
    name: str
    image: str
    command: list[str]
    args: list[str]
    env: dict[str, str]  # in the order the container sees it (spec env, then CDI edits)
    working_dir: str | None
    cdi_devices: list[str]
    edits: ContainerEdits
    log_path: Path
    restart_count: int = 0
    annotations: dict[str, str] = field(default_factory=dict)  # the pod's
    pod_uid: str = ""
    host_network: bool = False
    # The pod's volumes, the kubelet's /etc files and CDI mounts as this container mounts
    # them (kubelet/volumes.py Mount.spec()).
    mounts: list[dict[str, Any]] = field(default_factory=list)
    # CDI device nodes as this container gets them (kubelet/volumes.py cdi_devices).
    devices: list[dict[str, Any]] = field(default_factory=list)
    # The node's own /sys as a mount (kubelet/volumes.py sysfs); None: this machine's.
    sysfs: dict[str, Any] | None = None
    # CDI hooks as the runtime runs them (kubelet/volumes.py cdi_hooks).
    hooks: list[dict[str, Any]] = field(default_factory=list)
    security: ContainerSecurity = field(default_factory=ContainerSecurity)
    hostname: str = ""
    # TCP hostPorts of a pod with its own network: (host IP, host port, container port).
    host_ports: list[tuple[str, int, int]] = field(default_factory=list)


@dataclass
class Container:
    """A started container; `exit_code` resolves when it ends."""

    id: str = field(default_factory=lambda: secrets.token_hex(32))
    started_at: str = field(default_factory=time_now)
    finished_at: str | None = None
    exit_code: asyncio.Future[int] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future())
    reason: str = ""
    message: str = ""
    pid: int | None = None
    env: dict[str, str] = field(default_factory=dict)  # what the process started with
    # Warnings for the pod's events (e.g. why an image does not run).
    notes: list[str] = field(default_factory=list)

    def finish(self, code: int, reason: str, message: str = "") -> None:
        if not self.exit_code.done():
            self.finished_at = time_now()
            self.reason = reason
            self.message = message
            self.exit_code.set_result(code)


class Runtime(Protocol):
    name: str

    async def start(self, config: ContainerConfig, init: bool = False) -> Container: ...

    async def kill(self, container: Container, grace_seconds: float) -> None: ...

    async def run_pod_sandbox(self, pod_uid: str, host_network: bool) -> str | None:
        """Make the pod's sandbox before its containers: its IP on the runtime's pod
        network, or None when the runtime has none (the kubelet then picks one)."""
        ...

    async def remove_pod(self, pod_uid: str) -> None:
        """The pod is gone: release what the runtime kept for it (its sandbox)."""
        ...

    async def exec(self, container: Container, argv: list[str], timeout: float
                   ) -> tuple[int, bytes]:
        """Run a command in the container (exec probes): exit code and output."""
        ...

    def exec_argv(self, container: Container, argv: list[str]) -> list[str]:
        """The command line that runs `argv` in the container (kubectl exec)."""
        ...


class CRILogWriter:
    """Container logs in the CRI file format the kubelet reads: `<time> <stream> F <line>`."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("a", encoding="utf-8")

    def write_line(self, line: str, stream: str = "stdout") -> None:
        # CRI log lines carry nanoseconds; Python has microseconds, padded.
        self._file.write(f"{micro_time_now()[:-1]}000Z {stream} F {line}\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()
