"""What the process runtime cannot give a pod, said before it runs.

The process runtime isolates mounts and the network; it applies `runAsUser`,
`runAsGroup` and `supplementalGroups`, and refuses `runAsNonRoot` without a non-zero
`runAsUser` (its images run as root). A container runs with the kubelet's own
privileges otherwise, so `privileged: true` is granted as asked, and settings that
would take privileges away (capabilities dropped, a read-only root, seccomp, AppArmor,
SELinux, no privilege escalation, ...) are not enforced: the pod's events name each.
Containers share the machine's PID and IPC namespaces (as with hostPID and hostIPC).
"""

from __future__ import annotations

import socket

from draemu.api.types import Obj

# Settings that narrow what the container may do; none is enforced here.
_RESTRICTIONS = {
    "capabilities": lambda v: bool(v.get("drop") or v.get("add")),
    "readOnlyRootFilesystem": bool,
    "allowPrivilegeEscalation": lambda v: v is False,
    "seccompProfile": lambda v: v.get("type") not in (None, "Unconfined"),
    "appArmorProfile": lambda v: v.get("type") not in (None, "Unconfined"),
    "seLinuxOptions": bool,
    "procMount": lambda v: v not in (None, "Default"),
}


def unenforced_settings(pod: Obj, container: Obj) -> str:
    """A sentence naming the container's security settings that are not enforced, or ''."""
    spec = pod.get("spec") or {}
    names = []
    for where, sc in (("securityContext", spec.get("securityContext") or {}),
                      (f"containers[{container['name']}].securityContext",
                       container.get("securityContext") or {})):
        for field, asked in _RESTRICTIONS.items():
            if field in sc and asked(sc[field]):
                names.append(f"{where}.{field}")
    if not names:
        return ""
    return ("the process runtime gives mount and network namespaces only; not enforced: "
            + ", ".join(names))


def host_port_conflicts(container: Obj) -> list[str]:
    """The container's ports (hostNetwork: its host ports) that something on this machine
    already listens on."""
    taken = []
    for port in container.get("ports") or []:
        number = port.get("hostPort") or port.get("containerPort")
        protocol = (port.get("protocol") or "TCP").upper()
        if not number or protocol == "SCTP":
            continue
        kind = socket.SOCK_STREAM if protocol == "TCP" else socket.SOCK_DGRAM
        with socket.socket(socket.AF_INET, kind) as probe:
            try:
                probe.bind((port.get("hostIP") or "0.0.0.0", int(number)))
            except OSError:
                taken.append(f"{number}/{protocol}")
    return taken
