"""Validation of a pod spec's structure, shared by Pods and pod templates.

Paths, rule order and messages follow upstream's ValidatePodSpec: volumes, resource
claims, containers, init containers, then the pod-level fields. The DRA pieces
(`spec.resourceClaims`, containers' `resources.claims`) follow dra-api.md §9.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from draemu.api.errors import (
    FieldError,
    Path,
    duplicate,
    forbidden,
    invalid,
    not_found,
    not_supported,
    required,
)
from draemu.api.names import is_qualified_name
from draemu.api.quantity import Quantity
from draemu.api.types import Obj
from draemu.apiserver.registry.core.common import (
    IS_NEGATIVE,
    MAX_INT32,
    dns_label,
    dns_subdomain,
    inclusive_range,
    label_value,
    parse_quantity,
    qualified_name,
)
from draemu.apiserver.registry.core.nodeselector_validation import (
    validate_node_selector,
    validate_node_selector_term,
)
from draemu.apiserver.registry.meta import validate_labels

# Volume sources in the order upstream checks them; a second one is Forbidden.
VOLUME_SOURCES = (
    "hostPath", "emptyDir", "gitRepo", "gcePersistentDisk", "awsElasticBlockStore", "secret",
    "nfs", "iscsi", "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder",
    "cephfs", "flocker", "downwardAPI", "fc", "azureFile", "configMap", "vsphereVolume",
    "quobyte", "azureDisk", "photonPersistentDisk", "portworxVolume", "scaleIO", "projected",
    "storageos", "csi", "ephemeral", "image",
)
FILE_MODE_ERROR = "must be a number between 0 and 0777 (octal), both inclusive"
RESTART_POLICIES = ["Always", "OnFailure", "Never"]
DNS_POLICIES = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"]
PULL_POLICIES = ["Always", "IfNotPresent", "Never"]
TERMINATION_MESSAGE_POLICIES = ["File", "FallbackToLogsOnError"]
PORT_PROTOCOLS = ["SCTP", "TCP", "UDP"]
TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
_STANDARD_CONTAINER_RESOURCES = {"cpu", "memory", "ephemeral-storage"}
_STANDARD_RESOURCES = _STANDARD_CONTAINER_RESOURCES | {
    "storage", "pods", "services", "replicationcontrollers", "resourcequotas", "secrets",
    "configmaps", "persistentvolumeclaims", "services.nodeports", "services.loadbalancers"}
_PORT_NAME_CHARSET = re.compile(r"^[-a-z0-9]+$")
_PORT_NAME_LETTER = re.compile(r"[a-z]")
_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
_PROBE_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")
_LIFECYCLE_HANDLERS = ("exec", "httpGet", "tcpSocket", "sleep")
_SOURCE_WRAPPER_KEYS = ("resourceClaimName", "resourceClaimTemplateName")


@dataclass(frozen=True)
class Options:
    """What differs between validating a Pod and a pod template."""

    is_pod: bool
    # The stored pod's required node affinity already had values that are no label
    # values: an update may keep them (AllowInvalidLabelValueInRequiredNodeAffinity).
    allow_invalid_affinity_values: bool = False


# Names ---------------------------------------------------------------------------

def port_name_errors(name: str) -> list[str]:
    errs: list[str] = []
    if len(name) > 15:
        errs.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARSET.match(name):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    elif not _PORT_NAME_LETTER.search(name):
        errs.append("must contain at least one letter (a-z)")
    if "--" in name:
        errs.append("must not contain consecutive hyphens")
    if name and (name[0] == "-" or name[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def env_var_name_errors(name: str) -> list[str]:
    """The relaxed rule (printable ASCII but '='), on by default since 1.32."""
    for ch in name:
        if ord(ch) > 0x7E or ord(ch) < 0x20 or ch == "=":
            return ["a valid environment variable name must consist only of printable "
                    "ASCII characters other than '='"]
    return []


# Volumes -------------------------------------------------------------------------

def _validate_file_mode(mode: Any, path: Path) -> list[FieldError]:
    if mode is not None and not 0 <= mode <= 0o777:
        return [invalid(path, mode, FILE_MODE_ERROR)]
    return []


def _validate_volume_source(name: str, source: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    if name == "hostPath" and not source.get("path"):
        errs.append(required(path.child("path")))
    elif name == "secret":
        if not source.get("secretName"):
            errs.append(required(path.child("secretName")))
        errs += _validate_file_mode(source.get("defaultMode"), path.child("defaultMode"))
    elif name == "configMap":
        if not source.get("name"):
            errs.append(required(path.child("name")))
        errs += _validate_file_mode(source.get("defaultMode"), path.child("defaultMode"))
    elif name == "persistentVolumeClaim" and not source.get("claimName"):
        errs.append(required(path.child("claimName")))
    elif name in ("projected", "downwardAPI"):
        errs += _validate_file_mode(source.get("defaultMode"), path.child("defaultMode"))
    return errs


def validate_volumes(volumes: list[Obj], path: Path) -> tuple[set[str], list[FieldError]]:
    names: set[str] = set()
    errs: list[FieldError] = []
    for i, vol in enumerate(volumes):
        p = path.index(i)
        errors: list[FieldError] = []
        present = [s for s in VOLUME_SOURCES if vol.get(s) is not None]
        if not present:
            errors.append(required(p, "must specify a volume type"))
        for n, source in enumerate(present):
            if n:
                errors.append(forbidden(p.child(source), "may not specify more than 1 volume type"))
            elif isinstance(vol[source], dict):
                errors += _validate_volume_source(source, vol[source], p.child(source))
        name = vol.get("name") or ""
        if not name:
            errors.append(required(p.child("name")))
        else:
            errors += dns_label(name, p.child("name"))
        if name in names:
            errors.append(duplicate(p.child("name"), name))
        if errors:
            errs += errors
        else:
            names.add(name)
    return names, errs


# Resource claims -----------------------------------------------------------------

def validate_pod_resource_claims(claims: list[Obj], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, claim in enumerate(claims):
        p = path.index(i)
        name = claim.get("name") or ""
        if not name:
            errs.append(required(p.child("name")))
        elif name in seen:
            errs.append(duplicate(p.child("name"), name))
        else:
            errs += dns_label(name, p.child("name"))
            seen.add(name)
        claim_name = claim.get("resourceClaimName")
        template_name = claim.get("resourceClaimTemplateName")
        if claim_name is not None and template_name is not None:
            errs.append(invalid(p, claim, "at most one of `resourceClaimName` or "
                                "`resourceClaimTemplateName` may be specified"))
        if claim_name is None and template_name is None:
            errs.append(invalid(p, claim, "must specify one of: `resourceClaimName`, "
                                "`resourceClaimTemplateName`"))
        if claim_name is not None:
            errs += dns_subdomain(claim_name, p.child("resourceClaimName"))
        if template_name is not None:
            errs += dns_subdomain(template_name, p.child("resourceClaimTemplateName"))
    return errs


def obsolete_claim_source_errors(spec: Any, path: Path) -> list[FieldError]:
    """`spec.resourceClaims[i].source.{resourceClaimName,resourceClaimTemplateName}` was
    the 1.26-1.30 shape; say which field replaced the one that was used. Runs before the
    body's types are checked, so `spec` may be anything."""
    errs: list[FieldError] = []
    claims = spec.get("resourceClaims") if isinstance(spec, dict) else None
    for i, claim in enumerate(claims if isinstance(claims, list) else []):
        source = claim.get("source") if isinstance(claim, dict) else None
        if not isinstance(source, dict):
            continue
        p = path.child("resourceClaims").index(i)
        used = [k for k in _SOURCE_WRAPPER_KEYS if k in source]
        if not used:
            errs.append(invalid(p.child("source"), source,
                                "the `source` wrapper was removed in Kubernetes 1.31: set "
                                "`resourceClaimName` or `resourceClaimTemplateName` directly on "
                                "the entry"))
        errs += [invalid(p.child("source", key), source[key], f"`source.{key}` was removed in "
                         f"Kubernetes 1.31: use `{p}.{key}` instead") for key in used]
    return errs


def _validate_claim_references(claims: list[Obj], pod_claims: set[str],
                               path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    keys: set[str] = set()
    for i, claim in enumerate(claims):
        p = path.index(i)
        name = claim.get("name") or ""
        if not name:
            errs.append(required(p))
            continue
        key = name
        request = claim.get("request") or ""
        if request:
            errs += dns_label(request, p.child("request"))
            key = f"{name}/{request}"
        if key in keys:
            errs.append(duplicate(p, key))
        else:
            keys.add(key)
        if name not in pod_claims:
            detail = "must be one of the names in pod.spec.resourceClaims"
            detail += (": " + ", ".join(sorted(pod_claims))) if pod_claims else " which is empty"
            errs.append(FieldError("NotFound", str(p), name, detail))
    return errs


# Resources -----------------------------------------------------------------------

def _is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _is_hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def _is_extended(name: str) -> bool:
    if _is_native(name) or name.startswith("requests."):
        return False
    return not is_qualified_name("requests." + name)


def _validate_resource_name(name: str, path: Path) -> list[FieldError]:
    errs = qualified_name(name, path)
    if errs:
        return errs
    if "/" not in name:
        standard = (name in _STANDARD_RESOURCES or _is_hugepages(name)
                    or name.startswith("requests.") or name.startswith("limits."))
        if not standard:
            errs.append(invalid(path, name, "must be a standard resource type or fully qualified"))
        if not (name in _STANDARD_CONTAINER_RESOURCES or _is_hugepages(name)):
            errs.append(invalid(path, name, "must be a standard resource for containers"))
    elif not _is_native(name) and not _is_extended(name):
        errs.append(invalid(path, name, "doesn't follow extended resource name standard"))
    return errs


def _validate_quantity(name: str, q: Quantity, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    if q.value < 0:
        errs.append(invalid(path, q.canonical(), IS_NEGATIVE))
    if _is_extended(name) and q.value.denominator != 1:
        errs.append(invalid(path, q.canonical(), "must be an integer"))
    return errs


def validate_resources(resources: Obj, pod_claims: set[str], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    limits_path, requests_path = path.child("limits"), path.child("requests")
    limits: dict[str, Quantity] = {}
    for name, raw in (resources.get("limits") or {}).items():
        p = limits_path.key(name)
        errs += _validate_resource_name(name, p)
        # Decoding already refused malformed quantities (check_quantities).
        q = parse_quantity(raw)
        limits[name] = q
        errs += _validate_quantity(name, q, p)
    for name, raw in (resources.get("requests") or {}).items():
        p = requests_path.key(name)
        errs += _validate_resource_name(name, p)
        q = parse_quantity(raw)
        errs += _validate_quantity(name, q, p)
        overcommit = _is_native(name) and not _is_hugepages(name)
        limit = limits.get(name)
        if limit is not None:
            if q.value != limit.value and not overcommit:
                errs.append(invalid(requests_path, q.canonical(),
                                    f"must be equal to {name} limit of {limit.canonical()}"))
            elif q.value > limit.value:
                errs.append(invalid(requests_path, q.canonical(), "must be less than or equal "
                                    f"to {name} limit of {limit.canonical()}"))
        elif not overcommit:
            errs.append(required(limits_path, "Limit must be set for non overcommitable resources"))
    errs += _validate_claim_references(resources.get("claims") or [], pod_claims,
                                       path.child("claims"))
    return errs


# Containers ----------------------------------------------------------------------

def _validate_ports(ports: list[Obj], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, port in enumerate(ports):
        p = path.index(i)
        name = port.get("name") or ""
        if name:
            msgs = port_name_errors(name)
            if msgs:
                errs += [invalid(p.child("name"), name, m) for m in msgs]
            elif name in names:
                errs.append(duplicate(p.child("name"), name))
            else:
                names.add(name)
        container_port = port.get("containerPort") or 0
        if not container_port:
            errs.append(required(p.child("containerPort")))
        elif not 1 <= container_port <= 65535:
            errs.append(invalid(p.child("containerPort"), container_port,
                                inclusive_range(1, 65535)))
        host_port = port.get("hostPort") or 0
        if host_port and not 1 <= host_port <= 65535:
            errs.append(invalid(p.child("hostPort"), host_port, inclusive_range(1, 65535)))
        protocol = port.get("protocol") or ""
        if not protocol:
            errs.append(required(p.child("protocol")))
        elif protocol not in PORT_PROTOCOLS:
            errs.append(not_supported(p.child("protocol"), protocol, PORT_PROTOCOLS))
    return errs


def _validate_key_ref(ref: Obj, path: Path) -> list[FieldError]:
    errs = dns_subdomain(ref.get("name") or "", path.child("name")) if ref.get("name") else []
    if not ref.get("key"):
        errs.append(required(path.child("key")))
    return errs


def _validate_env(env: list[Obj], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, var in enumerate(env):
        p = path.index(i)
        name = var.get("name") or ""
        if not name:
            errs.append(required(p.child("name")))
        else:
            errs += [invalid(p.child("name"), name, m) for m in env_var_name_errors(name)]
        value_from = var.get("valueFrom")
        if value_from is None:
            continue
        vp = p.child("valueFrom")
        sources = [k for k in ("fieldRef", "resourceFieldRef", "configMapKeyRef",
                               "secretKeyRef", "fileKeyRef") if value_from.get(k) is not None]
        for key in ("configMapKeyRef", "secretKeyRef"):
            if key in sources:
                errs += _validate_key_ref(value_from[key], vp.child(key))
        if "fieldRef" in sources and not value_from["fieldRef"].get("fieldPath"):
            errs.append(required(vp.child("fieldRef", "fieldPath")))
        if not sources:
            errs.append(invalid(vp, "", "must specify one of: `fieldRef`, `resourceFieldRef`, "
                                "`configMapKeyRef` or `secretKeyRef`"))
        elif var.get("value"):
            errs.append(invalid(vp, "", "may not be specified when `value` is not empty"))
        elif len(sources) > 1:
            errs.append(invalid(vp, "", "may not have more than one field specified at a time"))
    return errs


def _validate_env_from(sources: list[Obj], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, source in enumerate(sources):
        p = path.index(i)
        prefix = source.get("prefix") or ""
        if prefix:
            errs += [invalid(p.child("prefix"), prefix, m) for m in env_var_name_errors(prefix)]
        refs = [k for k in ("configMapRef", "secretRef") if source.get(k) is not None]
        for key in refs:
            name = source[key].get("name") or ""
            if not name:
                errs.append(required(p.child(key, "name")))
            else:
                errs += dns_subdomain(name, p.child(key, "name"))
        # Upstream reports these two at the list, not the entry.
        if not refs:
            errs.append(invalid(path, "", "must specify one of: `configMapRef` or `secretRef`"))
        elif len(refs) > 1:
            errs.append(invalid(path, "", "may not have more than one field specified at a time"))
    return errs


def validate_port_num_or_name(port: Any, path: Path) -> list[FieldError]:
    if isinstance(port, int):
        if not 1 <= port <= 65535:
            return [invalid(path, port, inclusive_range(1, 65535))]
        return []
    if not port:
        return [required(path)]
    return [invalid(path, port, m) for m in port_name_errors(str(port))]


def _validate_handler(handler: Obj, path: Path, kinds: tuple[str, ...]) -> list[FieldError]:
    """Exactly one of `kinds` (exec, httpGet, ...) in a probe or lifecycle hook."""
    errs: list[FieldError] = []
    count = 0
    for kind in kinds:
        action = handler.get(kind)
        if action is None:
            continue
        if count:
            errs.append(forbidden(path.child(kind), "may not specify more than 1 handler type"))
            continue
        count += 1
        p = path.child(kind)
        if kind == "exec" and not action.get("command"):
            errs.append(required(p.child("command")))
        elif kind == "httpGet":
            if not action.get("path"):
                errs.append(required(p.child("path")))
            errs += validate_port_num_or_name(action.get("port"), p.child("port"))
            scheme = action.get("scheme") or ""
            if scheme not in ("HTTP", "HTTPS"):
                errs.append(not_supported(p.child("scheme"), scheme, ["HTTP", "HTTPS"]))
        elif kind == "tcpSocket":
            errs += validate_port_num_or_name(action.get("port"), p.child("port"))
        elif kind == "grpc":
            port = action.get("port") or 0
            if not 1 <= port <= 65535:
                errs.append(invalid(p.child("port"), port, inclusive_range(1, 65535)))
    if not count:
        errs.append(required(path, "must specify a handler type"))
    return errs


def _validate_probe(probe: Obj, path: Path, *, success_must_be_one: bool) -> list[FieldError]:
    errs = _validate_handler(probe, path, _PROBE_HANDLERS)
    for name in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold",
                 "failureThreshold"):
        value = probe.get(name)
        if value is not None and value < 0:
            errs.append(invalid(path.child(name), value, IS_NEGATIVE))
    grace = probe.get("terminationGracePeriodSeconds")
    if grace is not None and grace <= 0:
        errs.append(invalid(path.child("terminationGracePeriodSeconds"), grace,
                            "must be greater than 0"))
    if success_must_be_one and probe.get("successThreshold", 1) != 1:
        errs.append(invalid(path.child("successThreshold"), probe["successThreshold"],
                            "must be 1"))
    return errs


def _validate_probes_and_lifecycle(ctr: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for name in _PROBES:
        if ctr.get(name) is not None:
            errs += _validate_probe(ctr[name], path.child(name),
                                    success_must_be_one=name != "readinessProbe")
    lifecycle = ctr.get("lifecycle") or {}
    for hook in ("postStart", "preStop"):
        if lifecycle.get(hook) is not None:
            errs += _validate_handler(lifecycle[hook], path.child("lifecycle", hook),
                                      _LIFECYCLE_HANDLERS)
    return errs


def _validate_volume_mounts(mounts: list[Obj], volumes: set[str], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    mount_paths: set[str] = set()
    for i, mount in enumerate(mounts):
        p = path.index(i)
        name = mount.get("name") or ""
        if not name:
            errs.append(required(p.child("name")))
        if name not in volumes:
            errs.append(not_found(p.child("name"), name))
        mount_path = mount.get("mountPath") or ""
        if not mount_path:
            errs.append(required(p.child("mountPath")))
        if mount_path in mount_paths:
            errs.append(invalid(p.child("mountPath"), mount_path, "must be unique"))
        mount_paths.add(mount_path)
    return errs


def _validate_enum(value: str, supported: list[str], path: Path) -> list[FieldError]:
    if not value:
        return [required(path)]
    if value not in supported:
        return [not_supported(path, value, supported)]
    return []


def _validate_container_common(ctr: Obj, volumes: set[str], pod_claims: set[str],
                               path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    name = ctr.get("name") or ""
    if not name:
        errs.append(required(path.child("name")))
    else:
        errs += dns_label(name, path.child("name"))
    if not ctr.get("image"):
        errs.append(required(path.child("image")))
    errs += _validate_enum(ctr.get("terminationMessagePolicy") or "",
                           TERMINATION_MESSAGE_POLICIES, path.child("terminationMessagePolicy"))
    errs += _validate_ports(ctr.get("ports") or [], path.child("ports"))
    errs += _validate_env(ctr.get("env") or [], path.child("env"))
    errs += _validate_env_from(ctr.get("envFrom") or [], path.child("envFrom"))
    errs += _validate_volume_mounts(ctr.get("volumeMounts") or [], volumes,
                                    path.child("volumeMounts"))
    errs += _validate_enum(ctr.get("imagePullPolicy") or "", PULL_POLICIES,
                           path.child("imagePullPolicy"))
    errs += validate_resources(ctr.get("resources") or {}, pod_claims, path.child("resources"))
    return errs


def _validate_containers(containers: list[Obj], volumes: set[str], pod_claims: set[str],
                         path: Path) -> list[FieldError]:
    if not containers:
        return [required(path)]
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, ctr in enumerate(containers):
        p = path.index(i)
        errs += _validate_container_common(ctr, volumes, pod_claims, p)
        if ctr.get("name") in names:
            errs.append(duplicate(p.child("name"), ctr.get("name")))
        else:
            names.add(ctr.get("name") or "")
        errs += _validate_probes_and_lifecycle(ctr, p)
    return errs


def _validate_init_containers(init: list[Obj], containers: list[Obj], volumes: set[str],
                              pod_claims: set[str], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    names = {c.get("name") for c in containers}
    for i, ctr in enumerate(init):
        p = path.index(i)
        errs += _validate_container_common(ctr, volumes, pod_claims, p)
        restart_policy = ctr.get("restartPolicy")
        if restart_policy is not None and restart_policy != "Always":
            errs.append(not_supported(p.child("restartPolicy"), restart_policy, ["Always"]))
        if restart_policy != "Always":
            for field in ("lifecycle", *_PROBES):
                if ctr.get(field) is not None:
                    errs.append(forbidden(p.child(field), "may not be set for init containers "
                                          "without restartPolicy=Always"))
        else:
            errs += _validate_probes_and_lifecycle(ctr, p)
        name = ctr.get("name") or ""
        if name in names:
            errs.append(duplicate(p.child("name"), name))
        elif name:
            names.add(name)
    return errs


def _validate_images_only_for_pod(spec: Obj, path: Path) -> list[FieldError]:
    """Templates may hold placeholder images such as " "; pods may not."""
    errs: list[FieldError] = []
    for key in ("containers", "initContainers"):
        for i, ctr in enumerate(spec.get(key) or []):
            image = ctr.get("image") or ""
            if image != image.strip():
                errs.append(invalid(path.child(key).index(i).child("image"), image,
                                    "must not have leading or trailing whitespace"))
    return errs


def _validate_host_ports(spec: Obj, path: Path, opts: Options) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    host_network = bool(spec.get("hostNetwork"))
    for i, ctr in enumerate(spec.get("containers") or []):
        for j, port in enumerate(ctr.get("ports") or []):
            p = path.child("containers").index(i).child("ports").index(j)
            host_port, container_port = port.get("hostPort") or 0, port.get("containerPort")
            if host_network and (opts.is_pod or host_port) and host_port != container_port:
                errs.append(invalid(p.child("hostPort"), host_port,
                                    "must match `containerPort` when `hostNetwork` is true"))
            if host_port:
                key = f"{port.get('hostIP') or ''}/{port.get('protocol') or ''}/{host_port}"
                if key in seen:
                    errs.append(duplicate(p.child("hostPort"), key))
                seen.add(key)
    return errs


# Pod-level fields -----------------------------------------------------------------

def validate_tolerations(tolerations: list[Obj], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, tol in enumerate(tolerations):
        p = path.index(i)
        key, operator = tol.get("key") or "", tol.get("operator") or ""
        effect, value = tol.get("effect") or "", tol.get("value") or ""
        if key:
            errs += qualified_name(key, p.child("key"))
        if not key and operator != "Exists":
            errs.append(invalid(p.child("operator"), operator, "operator must be Exists when "
                                '`key` is empty, which means "match all values and all keys"'))
        if tol.get("tolerationSeconds") is not None and effect != "NoExecute":
            errs.append(invalid(p.child("effect"), effect,
                                "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        if operator in ("Equal", ""):
            msgs = [e.detail for e in label_value(value, p)]
            if msgs:
                errs.append(invalid(p.child("operator"), value, ";".join(msgs)))
        elif operator == "Exists":
            if value:
                errs.append(invalid(p.child("operator"), tol,
                                    "value must be empty when `operator` is 'Exists'"))
        else:
            errs.append(not_supported(p.child("operator"), operator, ["Equal", "Exists"]))
        if effect and effect not in TAINT_EFFECTS:
            errs.append(not_supported(p.child("effect"), effect, TAINT_EFFECTS))
    return errs


def _validate_node_affinity(affinity: Obj, path: Path, opts: Options) -> list[FieldError]:
    node_affinity = affinity.get("nodeAffinity")
    if not node_affinity:
        return []
    errs: list[FieldError] = []
    path = path.child("nodeAffinity")
    required_selector = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required_selector is not None:
        errs += validate_node_selector(
            required_selector, path.child("requiredDuringSchedulingIgnoredDuringExecution"),
            label_values=not opts.allow_invalid_affinity_values)
    preferred_path = path.child("preferredDuringSchedulingIgnoredDuringExecution")
    for i, term in enumerate(node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution")
                             or []):
        weight = term.get("weight") or 0
        if not 0 < weight <= 100:
            errs.append(invalid(preferred_path.index(i).child("weight"), weight,
                                "must be in the range 1-100"))
        # Upstream checks label values in required terms only.
        errs += validate_node_selector_term(term.get("preference") or {},
                                            preferred_path.index(i).child("preference"),
                                            label_values=False)
    return errs


def _validate_scheduling_gates(gates: list[Obj], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, gate in enumerate(gates):
        name = gate.get("name") or ""
        errs += qualified_name(name, path.index(i))
        if name in seen:
            errs.append(duplicate(path.index(i), name))
        seen.add(name)
    return errs


def claim_names(spec: Obj) -> set[str]:
    return {c.get("name") for c in spec.get("resourceClaims") or [] if c.get("name")}


def validate_pod_spec(spec: Obj, path: Path, opts: Options) -> list[FieldError]:
    errs: list[FieldError] = []
    if spec.get("terminationGracePeriodSeconds") is None:
        errs.append(required(path.child("terminationGracePeriodSeconds")))
    volumes, volume_errs = validate_volumes(spec.get("volumes") or [], path.child("volumes"))
    errs += volume_errs
    pod_claims = claim_names(spec)
    errs += validate_pod_resource_claims(spec.get("resourceClaims") or [],
                                         path.child("resourceClaims"))
    containers = spec.get("containers") or []
    errs += _validate_containers(containers, volumes, pod_claims, path.child("containers"))
    errs += _validate_init_containers(spec.get("initContainers") or [], containers, volumes,
                                      pod_claims, path.child("initContainers"))
    pod_resources = spec.get("resources")
    if pod_resources:
        if pod_resources.get("claims"):
            errs.append(forbidden(path.child("resources", "claims"),
                                  "claims may not be set for Resources at pod-level"))
        errs += validate_resources({k: v for k, v in pod_resources.items() if k != "claims"},
                                   pod_claims, path.child("resources"))
    errs += _validate_host_ports(spec, path, opts)
    if opts.is_pod:
        errs += _validate_images_only_for_pod(spec, path)
    errs += _validate_enum(spec.get("restartPolicy") or "", RESTART_POLICIES,
                           path.child("restartPolicy"))
    errs += _validate_enum(spec.get("dnsPolicy") or "", DNS_POLICIES, path.child("dnsPolicy"))
    errs += validate_labels(spec.get("nodeSelector"), path.child("nodeSelector"))
    errs += _validate_node_affinity(spec.get("affinity") or {}, path.child("affinity"), opts)
    for i, gate in enumerate(spec.get("readinessGates") or []):
        errs += qualified_name(gate.get("conditionType") or "",
                               path.child("readinessGates").index(i).child("conditionType"))
    errs += _validate_scheduling_gates(spec.get("schedulingGates") or [],
                                       path.child("schedulingGates"))
    for field in ("serviceAccountName", "nodeName"):
        if spec.get(field):
            errs += dns_subdomain(spec[field], path.child(field))
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and not 1 <= deadline <= MAX_INT32:
        errs.append(invalid(path.child("activeDeadlineSeconds"), deadline,
                            inclusive_range(1, MAX_INT32)))
    for field in ("hostname", "subdomain"):
        if spec.get(field):
            errs += dns_label(spec[field], path.child(field))
    errs += validate_tolerations(spec.get("tolerations") or [], path.child("tolerations"))
    if spec.get("priorityClassName"):
        errs += dns_subdomain(spec["priorityClassName"], path.child("priorityClassName"))
    preemption = spec.get("preemptionPolicy")
    if preemption is not None and preemption not in ("PreemptLowerPriority", "Never"):
        errs.append(not_supported(path.child("preemptionPolicy"), preemption,
                                  ["PreemptLowerPriority", "Never"]))
    return errs
