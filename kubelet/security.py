"""The container's securityContext as the process runtime applies it, and what it does
not apply, said before the container runs.

Each pod runs in a user namespace of its own (kubelet/runtime/userns.py): its root is
an unprivileged user of this machine. In it the runtime applies `runAsUser`,
`runAsGroup`, `supplementalGroups` and `fsGroup`; capabilities as containerd computes
them (its default set, `add` and `drop`, "ALL" in either) in the bounding set, effective
for uid 0 only; `allowPrivilegeEscalation: false` (no_new_privs); `readOnlyRootFilesystem`;
`procMount: Unmasked`; `privileged` gives every capability and unmasked /proc and /sys,
inside the pod's user namespace only: no device of the machine, no mounts, no change to
the network. `runAsNonRoot` without a non-zero `runAsUser` is refused (the runtime's
images run as root). Not applied, and named in a pod event: seccomp, AppArmor and SELinux
profiles, Windows options.
"""

from __future__ import annotations

import socket

from draemu.api.types import Obj
from draemu.kubelet.runtime.base import ContainerSecurity, RuntimeError_
from draemu.netns import in_netns

# Linux's capability numbers, by name without CAP_.
CAPABILITIES = (
    "CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID",
    "SETUID", "SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST",
    "NET_ADMIN", "NET_RAW", "IPC_LOCK", "IPC_OWNER", "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT",
    "SYS_PTRACE", "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE",
    "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL",
    "SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM", "BLOCK_SUSPEND",
    "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE")
# containerd's default set for a container that is not privileged.
DEFAULT_CAPABILITIES = ("CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW",
                        "SETGID", "SETUID", "SETFCAP", "SETPCAP", "NET_BIND_SERVICE",
                        "SYS_CHROOT", "KILL", "AUDIT_WRITE")

# Settings that narrow what the container may do and that are not applied.
_RESTRICTIONS = {
    "seccompProfile": lambda v: v.get("type") not in (None, "Unconfined"),
    "appArmorProfile": lambda v: v.get("type") not in (None, "Unconfined"),
    "seLinuxOptions": bool,
    "windowsOptions": bool,
}


def _capability(name: str, where: str) -> str:
    bare = name.upper().removeprefix("CAP_")
    if bare not in CAPABILITIES:
        raise RuntimeError_(f'unknown capability "{name}" in securityContext.capabilities.{where}')
    return bare


def capabilities(sc: Obj) -> list[int] | None:
    """The bounding set (numbers) of a container, as containerd computes it; None: all."""
    if sc.get("privileged"):
        return None
    wanted = sc.get("capabilities") or {}
    add = [c for c in wanted.get("add") or [] if c.upper() != "ALL"]
    drop = [c for c in wanted.get("drop") or [] if c.upper() != "ALL"]
    caps = set(DEFAULT_CAPABILITIES)
    if any(c.upper() == "ALL" for c in wanted.get("add") or []):
        caps = set(CAPABILITIES)
    if any(c.upper() == "ALL" for c in wanted.get("drop") or []):
        caps = set()
    caps |= {_capability(c, "add") for c in add}
    caps -= {_capability(c, "drop") for c in drop}
    return sorted(CAPABILITIES.index(c) for c in caps)


def container_security(pod: Obj, container: Obj) -> ContainerSecurity:
    spec = pod.get("spec") or {}
    pod_sc, sc = spec.get("securityContext") or {}, container.get("securityContext") or {}
    groups = [int(g) for g in pod_sc.get("supplementalGroups") or []]
    if pod_sc.get("fsGroup") is not None:
        groups.append(int(pod_sc["fsGroup"]))
    privileged = bool(sc.get("privileged"))
    user, group = sc.get("runAsUser", pod_sc.get("runAsUser")), \
        sc.get("runAsGroup", pod_sc.get("runAsGroup"))
    return ContainerSecurity(
        run_as_user=None if user is None else int(user),
        run_as_group=None if group is None else int(group),
        groups=list(dict.fromkeys(groups)),
        capabilities=capabilities(sc),
        no_new_privs=sc.get("allowPrivilegeEscalation") is False and not privileged,
        read_only_root=bool(sc.get("readOnlyRootFilesystem")),
        masked_paths=not privileged and sc.get("procMount", "Default") != "Unmasked",
        host_pid=bool(spec.get("hostPID")), host_ipc=bool(spec.get("hostIPC")))


def unenforced_settings(pod: Obj, container: Obj) -> str:
    """A sentence naming the container's security settings that are not applied, or ''."""
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
    return "not enforced by the process runtime: " + ", ".join(names)


def host_port_conflicts(container: Obj, netns: str | None = None) -> list[str]:
    """The container's ports (hostNetwork: its host ports) that something already listens
    on, on this machine or in the network namespace `netns` (its node's)."""
    if netns is not None:
        return in_netns(netns, lambda: host_port_conflicts(container))
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
