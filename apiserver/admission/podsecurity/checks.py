"""The Pod Security Standards' checks, each with the Kubernetes version from which each
of its variants applies (as upstream's `k8s.io/pod-security-admission/policy`), and
upstream's words for what a pod does wrong.

A check takes the pod's (or template's) metadata and spec as JSON and returns whether
it passes, the forbidden reason and its detail. Containers are visited as upstream
visits them: init containers, containers, then ephemeral containers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from draemu.api.errors import go_quote
from draemu.api.types import Obj
from draemu.apiserver.admission.podsecurity.levels import BASELINE, RESTRICTED, Version


@dataclass(frozen=True)
class CheckResult:
    allowed: bool = True
    reason: str = ""
    detail: str = ""


PASS = CheckResult()
CheckFn = Callable[[Obj, Obj], CheckResult]


@dataclass(frozen=True)
class Variant:
    since: Version
    check: CheckFn
    overrides: tuple[str, ...] = ()  # baseline checks a restricted one replaces


@dataclass(frozen=True)
class Check:
    id: str
    level: str
    variants: tuple[Variant, ...] = field(default_factory=tuple)


def v(minor: int) -> Version:
    return Version(minor)


def containers(spec: Obj) -> Iterator[Obj]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        yield from spec.get(key) or []


def sc_of(container: Obj) -> Obj | None:
    return container.get("securityContext")


def join_quote(items: list[str]) -> str:
    return '"' + '", "'.join(items) + '"' if items else ""


def plural(singular: str, many: str, count: int) -> str:
    return singular if count == 1 else many


def named(kind: str, names: list[str]) -> str:
    """`container "a"`, `containers "a", "b"`."""
    return f"{plural(kind, kind + 's', len(names))} {join_quote(names)}"


def windows(spec: Obj) -> bool:
    return ((spec.get("os") or {}).get("name")) == "windows"


def user_namespace(spec: Obj) -> bool:
    return spec.get("hostUsers") is False


def not_on_windows(check: CheckFn) -> CheckFn:
    """From 1.25, pods that say they run on Windows are exempt (validation forbids the
    field on them)."""
    def variant(meta: Obj, spec: Obj) -> CheckResult:
        return PASS if windows(spec) else check(meta, spec)
    return variant


def relaxed_in_user_namespace(check: CheckFn) -> CheckFn:
    """From 1.35, pods with `hostUsers: false` are exempt."""
    def variant(meta: Obj, spec: Obj) -> CheckResult:
        return PASS if user_namespace(spec) else check(meta, spec)
    return variant


# ---- baseline

def app_armor_profile(meta: Obj, spec: Obj) -> CheckResult:
    allowed_types = ("RuntimeDefault", "Localhost")
    setters: list[str] = []
    values: set[str] = set()
    profile = (spec.get("securityContext") or {}).get("appArmorProfile")
    if profile is not None and profile.get("type") not in allowed_types:
        setters.append("pod")
        values.add(profile.get("type") or "")
    bad = []
    for c in containers(spec):
        profile = (sc_of(c) or {}).get("appArmorProfile")
        if profile is not None and profile.get("type") not in allowed_types:
            bad.append(c["name"])
            values.add(profile.get("type") or "")
    if bad:
        setters.append(named("container", bad))
    annotations = sorted(
        f"{k}={go_quote(val)}" for k, val in (meta.get("annotations") or {}).items()
        if k.startswith("container.apparmor.security.beta.kubernetes.io/")
        and not (val == "" or val == "runtime/default" or val.startswith("localhost/")))
    listed = sorted(values) + annotations
    if annotations:
        setters.append(plural("annotation", "annotations", len(annotations)))
    if not setters:
        return PASS
    return CheckResult(False, plural("forbidden AppArmor profile", "forbidden AppArmor profiles",
                                     len(listed)),
                       f"{' and '.join(setters)} must not set AppArmor profile type to "
                       f"{join_quote(listed)}")


BASELINE_CAPABILITIES = frozenset({
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
    "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"})


def capabilities_baseline(meta: Obj, spec: Obj) -> CheckResult:
    bad, added = [], set()
    for c in containers(spec):
        caps = (sc_of(c) or {}).get("capabilities")
        if caps is None:
            continue
        extra = [cap for cap in caps.get("add") or [] if cap not in BASELINE_CAPABILITIES]
        if extra:
            bad.append(c["name"])
            added.update(extra)
    if not bad:
        return PASS
    return CheckResult(False, "non-default capabilities",
                       f"{named('container', bad)} must not include "
                       f"{join_quote(sorted(added))} in securityContext.capabilities.add")


def host_namespaces(meta: Obj, spec: Obj) -> CheckResult:
    used = [f"{key}=true" for key in ("hostNetwork", "hostPID", "hostIPC") if spec.get(key)]
    return CheckResult(False, "host namespaces", ", ".join(used)) if used else PASS


def host_path_volumes(meta: Obj, spec: Obj) -> CheckResult:
    names = [vol["name"] for vol in spec.get("volumes") or [] if vol.get("hostPath") is not None]
    return CheckResult(False, "hostPath volumes", named("volume", names)) if names else PASS


def host_ports(meta: Obj, spec: Obj) -> CheckResult:
    bad, ports = [], set()
    for c in containers(spec):
        used = [str(p["hostPort"]) for p in c.get("ports") or [] if p.get("hostPort")]
        if used:
            bad.append(c["name"])
            ports.update(used)
    if not bad:
        return PASS
    return CheckResult(False, "hostPort",
                       f"{named('container', bad)} {plural('uses', 'use', len(bad))} "
                       f"{plural('hostPort', 'hostPorts', len(ports))} "
                       f"{', '.join(sorted(ports))}")


def _hosts(handler: Obj | None) -> list[str]:
    if handler is None:
        return []
    return [handler[kind]["host"] for kind in ("httpGet", "tcpSocket")
            if (handler.get(kind) or {}).get("host")]


def host_probes_and_lifecycle(meta: Obj, spec: Obj) -> CheckResult:
    bad: set[str] = set()
    hosts: set[str] = set()
    for c in containers(spec):
        lifecycle = c.get("lifecycle") or {}
        found = [h for probe in ("livenessProbe", "readinessProbe", "startupProbe")
                 for h in _hosts(c.get(probe))]
        found += [h for hook in ("postStart", "preStop") for h in _hosts(lifecycle.get(hook))]
        if found:
            bad.add(c["name"])
            hosts.update(found)
    if not bad:
        return PASS
    what = plural("probe or lifecycle host", "probe or lifecycle hosts", len(hosts))
    return CheckResult(False, "probe or lifecycle host",
                       f"{named('container', sorted(bad))} {plural('uses', 'use', len(bad))} "
                       f"{what} {join_quote(sorted(hosts))}")


def privileged(meta: Obj, spec: Obj) -> CheckResult:
    bad = [c["name"] for c in containers(spec) if (sc_of(c) or {}).get("privileged") is True]
    if not bad:
        return PASS
    return CheckResult(False, "privileged",
                       f"{named('container', bad)} must not set securityContext.privileged=true")


def proc_mount(meta: Obj, spec: Obj) -> CheckResult:
    bad, kinds = [], set()
    for c in containers(spec):
        mount = (sc_of(c) or {}).get("procMount")
        if mount is not None and mount != "Default":
            bad.append(c["name"])
            kinds.add(mount)
    if not bad:
        return PASS
    return CheckResult(False, "procMount",
                       f"{named('container', bad)} must not set securityContext.procMount to "
                       f"{join_quote(sorted(kinds))}")


SELINUX_TYPES_1_0 = frozenset({"", "container_t", "container_init_t", "container_kvm_t"})
SELINUX_TYPES_1_31 = SELINUX_TYPES_1_0 | {"container_engine_t"}


def se_linux_options(allowed_types: frozenset[str]) -> CheckFn:
    def check(meta: Obj, spec: Obj) -> CheckResult:
        types: set[str] = set()
        flags = {"user": False, "role": False}

        def valid(opts: Obj) -> bool:
            ok = True
            if (opts.get("type") or "") not in allowed_types:
                ok = False
                types.add(opts.get("type") or "")
            for key in flags:
                if opts.get(key):
                    ok = False
                    flags[key] = True
            return ok

        setters = []
        pod_opts = (spec.get("securityContext") or {}).get("seLinuxOptions")
        if pod_opts is not None and not valid(pod_opts):
            setters.append("pod")
        bad = [c["name"] for c in containers(spec)
               if (sc_of(c) or {}).get("seLinuxOptions") is not None
               and not valid(sc_of(c)["seLinuxOptions"])]  # type: ignore[index]
        if bad:
            setters.append(named("container", bad))
        if not setters:
            return PASS
        data = [f"{plural('type', 'types', len(types))} {join_quote(sorted(types))}"] \
            if types else []
        data += [f"{key} may not be set" for key, was_set in flags.items() if was_set]
        return CheckResult(False, "seLinuxOptions",
                           f"{' and '.join(setters)} set forbidden "
                           f"securityContext.seLinuxOptions: {'; '.join(data)}")
    return check


SECCOMP_POD_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod"
SECCOMP_CONTAINER_ANNOTATION = "container.seccomp.security.alpha.kubernetes.io/"


def _seccomp_annotation_ok(value: str) -> bool:
    return value in ("runtime/default", "docker/default") or value.startswith("localhost/")


def seccomp_baseline_1_0(meta: Obj, spec: Obj) -> CheckResult:
    annotations = meta.get("annotations") or {}
    bad = set()
    if SECCOMP_POD_ANNOTATION in annotations and \
            not _seccomp_annotation_ok(annotations[SECCOMP_POD_ANNOTATION]):
        bad.add(f"{SECCOMP_POD_ANNOTATION}={go_quote(annotations[SECCOMP_POD_ANNOTATION])}")
    for c in containers(spec):
        key = SECCOMP_CONTAINER_ANNOTATION + c["name"]
        if key in annotations and not _seccomp_annotation_ok(annotations[key]):
            bad.add(f"{key}={go_quote(annotations[key])}")
    if not bad:
        return PASS
    return CheckResult(False, "seccompProfile",
                       f"forbidden {plural('annotation', 'annotations', len(bad))} "
                       f"{', '.join(sorted(bad))}")


def _seccomp_ok(profile: Obj) -> bool:
    return profile.get("type") in ("Localhost", "RuntimeDefault")


def seccomp_profile(restricted: bool) -> CheckFn:
    def check(meta: Obj, spec: Obj) -> CheckResult:
        setters, values = [], set()
        pod_set = False
        profile = (spec.get("securityContext") or {}).get("seccompProfile")
        if profile is not None:
            if not _seccomp_ok(profile):
                setters.append("pod")
                values.add(profile.get("type") or "")
            else:
                pod_set = True
        explicit, implicit = [], []
        for c in containers(spec):
            profile = (sc_of(c) or {}).get("seccompProfile")
            if profile is not None:
                if not _seccomp_ok(profile):
                    explicit.append(c["name"])
                    values.add(profile.get("type") or "")
            elif not pod_set:
                implicit.append(c["name"])
        if explicit:
            setters.append(named("container", explicit))
        if setters:
            return CheckResult(False, "seccompProfile",
                               f"{' and '.join(setters)} must not set "
                               f"securityContext.seccompProfile.type to "
                               f"{join_quote(sorted(values))}")
        if restricted and implicit:
            return CheckResult(False, "seccompProfile",
                               f"pod or {named('container', implicit)} must set "
                               'securityContext.seccompProfile.type to "RuntimeDefault" or '
                               '"Localhost"')
        return PASS
    return check


SYSCTLS_1_0 = frozenset({"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
                         "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range",
                         "net.ipv4.ip_unprivileged_port_start"})
SYSCTLS_1_27 = SYSCTLS_1_0 | {"net.ipv4.ip_local_reserved_ports"}
SYSCTLS_1_29 = SYSCTLS_1_27 | {"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
                               "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"}
SYSCTLS_1_32 = SYSCTLS_1_29 | {"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"}
SYSCTLS_1_37 = SYSCTLS_1_32 | {"net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_notsent_lowat"}


def sysctls(allowed: frozenset[str]) -> CheckFn:
    def check(meta: Obj, spec: Obj) -> CheckResult:
        bad = [s.get("name", "") for s in (spec.get("securityContext") or {}).get("sysctls") or []
               if s.get("name", "") not in allowed]
        return CheckResult(False, "forbidden sysctls", ", ".join(bad)) if bad else PASS
    return check


def windows_host_process(meta: Obj, spec: Obj) -> CheckResult:
    def host_process(sc: Obj | None) -> bool:
        return ((sc or {}).get("windowsOptions") or {}).get("hostProcess") is True

    setters = ["pod"] if host_process(spec.get("securityContext")) else []
    bad = [c["name"] for c in containers(spec) if host_process(sc_of(c))]
    if bad:
        setters.append(named("container", bad))
    if not setters:
        return PASS
    return CheckResult(False, "hostProcess",
                       f"{' and '.join(setters)} must not set "
                       "securityContext.windowsOptions.hostProcess=true")


# ---- restricted

def allow_privilege_escalation(meta: Obj, spec: Obj) -> CheckResult:
    bad = [c["name"] for c in containers(spec)
           if (sc_of(c) or {}).get("allowPrivilegeEscalation") is not False]
    if not bad:
        return PASS
    return CheckResult(False, "allowPrivilegeEscalation != false",
                       f"{named('container', bad)} must set "
                       "securityContext.allowPrivilegeEscalation=false")


def capabilities_restricted(meta: Obj, spec: Obj) -> CheckResult:
    missing_drop, adding, added = [], [], set()
    for c in containers(spec):
        caps = (sc_of(c) or {}).get("capabilities")
        if caps is None:
            missing_drop.append(c["name"])
            continue
        if "ALL" not in (caps.get("drop") or []):
            missing_drop.append(c["name"])
        extra = [cap for cap in caps.get("add") or [] if cap != "NET_BIND_SERVICE"]
        if extra:
            adding.append(c["name"])
            added.update(extra)
    details = []
    if missing_drop:
        details.append(f'{named("container", missing_drop)} must set '
                       'securityContext.capabilities.drop=["ALL"]')
    if adding:
        details.append(f"{named('container', adding)} must not include "
                       f"{join_quote(sorted(added))} in securityContext.capabilities.add")
    return CheckResult(False, "unrestricted capabilities", "; ".join(details)) if details \
        else PASS


ALLOWED_VOLUMES = ("configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image",
                   "persistentVolumeClaim", "projected", "secret")
RESTRICTED_VOLUMES = ("hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs",
                      "iscsi", "glusterfs", "rbd", "flexVolume", "cinder", "cephfs", "flocker",
                      "fc", "azureFile", "vsphereVolume", "quobyte", "azureDisk",
                      "photonPersistentDisk", "portworxVolume", "scaleIO", "storageos")


def restricted_volumes(meta: Obj, spec: Obj) -> CheckResult:
    bad, kinds = [], set()
    for vol in spec.get("volumes") or []:
        if any(vol.get(k) is not None for k in ALLOWED_VOLUMES):
            continue
        bad.append(vol["name"])
        kinds.add(next((k for k in RESTRICTED_VOLUMES if vol.get(k) is not None), "unknown"))
    if not bad:
        return PASS
    return CheckResult(False, "restricted volume types",
                       f"{named('volume', bad)} {plural('uses', 'use', len(bad))} "
                       f"{plural('restricted volume type', 'restricted volume types', len(kinds))}"
                       f" {join_quote(sorted(kinds))}")


def run_as_non_root(meta: Obj, spec: Obj) -> CheckResult:
    setters = []
    pod_value = (spec.get("securityContext") or {}).get("runAsNonRoot")
    if pod_value is False:
        setters.append("pod")
    explicit, implicit = [], []
    for c in containers(spec):
        value = (sc_of(c) or {}).get("runAsNonRoot")
        if value is not None:
            if value is False:
                explicit.append(c["name"])
        elif pod_value is not True:
            implicit.append(c["name"])
    if explicit:
        setters.append(named("container", explicit))
    if setters:
        return CheckResult(False, "runAsNonRoot != true",
                           f"{' and '.join(setters)} must not set "
                           "securityContext.runAsNonRoot=false")
    if implicit:
        return CheckResult(False, "runAsNonRoot != true",
                           f"pod or {named('container', implicit)} must set "
                           "securityContext.runAsNonRoot=true")
    return PASS


def run_as_user(meta: Obj, spec: Obj) -> CheckResult:
    setters = ["pod"] if (spec.get("securityContext") or {}).get("runAsUser") == 0 else []
    bad = [c["name"] for c in containers(spec) if (sc_of(c) or {}).get("runAsUser") == 0]
    if bad:
        setters.append(named("container", bad))
    if not setters:
        return PASS
    return CheckResult(False, "runAsUser=0", f"{' and '.join(setters)} must not set runAsUser=0")


CHECKS = (
    Check("appArmorProfile", BASELINE, (Variant(v(0), app_armor_profile),)),
    Check("capabilities_baseline", BASELINE, (Variant(v(0), capabilities_baseline),)),
    Check("hostNamespaces", BASELINE, (Variant(v(0), host_namespaces),)),
    Check("hostPathVolumes", BASELINE, (Variant(v(0), host_path_volumes),)),
    Check("hostPorts", BASELINE, (Variant(v(0), host_ports),)),
    Check("hostProbesAndHostLifecycle", BASELINE, (Variant(v(34), host_probes_and_lifecycle),)),
    Check("privileged", BASELINE, (Variant(v(0), privileged),)),
    Check("procMount", BASELINE, (Variant(v(0), proc_mount),
                                  Variant(v(35), relaxed_in_user_namespace(proc_mount)))),
    Check("seLinuxOptions", BASELINE, (Variant(v(0), se_linux_options(SELINUX_TYPES_1_0)),
                                       Variant(v(31), se_linux_options(SELINUX_TYPES_1_31)))),
    Check("seccompProfile_baseline", BASELINE, (Variant(v(0), seccomp_baseline_1_0),
                                                Variant(v(19), seccomp_profile(False)))),
    Check("sysctls", BASELINE, (Variant(v(0), sysctls(SYSCTLS_1_0)),
                                Variant(v(27), sysctls(SYSCTLS_1_27)),
                                Variant(v(29), sysctls(SYSCTLS_1_29)),
                                Variant(v(32), sysctls(SYSCTLS_1_32)),
                                Variant(v(37), sysctls(SYSCTLS_1_37)))),
    Check("windowsHostProcess", BASELINE, (Variant(v(0), windows_host_process),)),
    Check("allowPrivilegeEscalation", RESTRICTED, (
        Variant(v(8), allow_privilege_escalation),
        Variant(v(25), not_on_windows(allow_privilege_escalation)))),
    Check("capabilities_restricted", RESTRICTED, (
        Variant(v(22), capabilities_restricted, ("capabilities_baseline",)),
        Variant(v(25), not_on_windows(capabilities_restricted), ("capabilities_baseline",)))),
    Check("procMount_restricted", RESTRICTED, (Variant(v(35), proc_mount, ("procMount",)),)),
    Check("restrictedVolumes", RESTRICTED, (
        Variant(v(0), restricted_volumes, ("hostPathVolumes",)),)),
    Check("runAsNonRoot", RESTRICTED, (Variant(v(0), run_as_non_root),
                                       Variant(v(35), relaxed_in_user_namespace(run_as_non_root)))),
    Check("runAsUser", RESTRICTED, (Variant(v(23), run_as_user),
                                    Variant(v(35), relaxed_in_user_namespace(run_as_user)))),
    Check("seccompProfile_restricted", RESTRICTED, (
        Variant(v(19), seccomp_profile(True), ("seccompProfile_baseline",)),
        Variant(v(25), not_on_windows(seccomp_profile(True)), ("seccompProfile_baseline",)))),
)
