"""core/v1 Pod: defaults (including those the default admission plugins add), spec
validation and the narrow set of spec changes an update may make, status updates,
field selectors and the `kubectl get pods` columns. (The binding and eviction
subresources are served by the apiserver's subresource handlers.)"""

from __future__ import annotations

import ipaddress
import json
import secrets
from typing import Any

from draemu.api.errors import (
    FieldError,
    Path,
    duplicate,
    forbidden,
    invalid,
    required,
)
from draemu.api.meta import time_now
from draemu.api.types import Obj
from draemu.apiserver.registry.core import limitranger
from draemu.apiserver.registry.core.common import (
    MAX_INT32,
    check_quantities,
    copy_or_drop,
    dns_subdomain,
    immutable,
    inclusive_range,
    qualified_name,
)
from draemu.apiserver.registry.core.nodeselector_validation import has_invalid_label_values
from draemu.apiserver.registry.core.pod_status import pod_row_cells, qos_class, readiness_gates_cell
from draemu.apiserver.registry.core.podspec_defaults import default_pod_spec, quantities
from draemu.apiserver.registry.core.podspec_validation import (
    Options,
    obsolete_claim_source_errors,
    validate_pod_spec,
)
from draemu.apiserver.registry.scheduling.priorityclass import resolve_priority
from draemu.apiserver.registry.strategy import (
    AGE,
    AGE_COLUMN,
    NAME_COLUMN,
    Column,
    Context,
    Strategy,
)
from draemu.apiserver.wire.jsoncopy import clone

# The DefaultTolerationSeconds admission plugin's tolerations.
DEFAULT_TOLERATION_SECONDS = 300
_NOT_READY = "node.kubernetes.io/not-ready"
_UNREACHABLE = "node.kubernetes.io/unreachable"
SPEC_UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
    "set to 1 if it was previously negative)")
_POD_CONDITIONS = {"PodScheduled", "Ready", "Initialized", "ContainersReady",
                   "DisruptionTarget", "PodReadyToStartContainers", "PodResizePending",
                   "PodResizeInProgress"}


def _tolerates(tolerations: list[Obj], key: str) -> bool:
    """Whether a NoExecute taint `key` is already tolerated (an empty key matches all)."""
    return any(t.get("key") in (key, "", None) and t.get("effect") in ("NoExecute", "", None)
               for t in tolerations)


def add_default_tolerations(spec: Obj) -> None:
    tolerations = spec.get("tolerations") or []
    for key in (_NOT_READY, _UNREACHABLE):
        if not _tolerates(tolerations, key):
            tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute",
                                "tolerationSeconds": DEFAULT_TOLERATION_SECONDS})
    spec["tolerations"] = tolerations


class PodStrategy(Strategy):
    kind = "Pod"
    resource = "pods"
    singular = "pod"
    short_names = ("po",)
    categories = ("all",)
    versions = ("v1",)
    storage_version = "v1"
    subresources = frozenset({"status", "binding", "eviction"})
    # pods/status may change labels, annotations and finalizers; not the owners, which
    # old kubelets corrupted.
    status_meta_reset = ("ownerReferences",)

    def default(self, obj: Obj, version: str) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            check_quantities(quantities(spec), self.kind, version)
            default_pod_spec(spec, is_pod=True)

    # Writes -------------------------------------------------------------------------
    def prepare_for_create(self, obj: Obj, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        spec = obj.setdefault("spec", {})
        # What the default admission chain adds to every new pod; the ServiceAccount
        # admission leaves a node's mirror pods alone.
        mirror = "kubernetes.io/config.mirror" in (
            (obj.get("metadata") or {}).get("annotations") or {})
        if not spec.get("serviceAccountName") and not mirror:
            spec["serviceAccountName"] = spec["serviceAccount"] = "default"
        if not mirror:
            mount_service_account_token(obj, ctx)
        resolve_priority(obj, ctx)
        ranges = limitranger.limit_ranges(ctx, (obj.get("metadata") or {}).get("namespace", ""))
        if ranges:
            limitranger.default_resources(obj, ranges)
            limitranger.refuse("pods", obj, limitranger.pod_violations(obj, ranges))
        add_default_tolerations(spec)
        status: Obj = {"phase": "Pending", "qosClass": qos_class(spec)}
        if spec.get("schedulingGates"):
            status["conditions"] = [{
                "type": "PodScheduled", "status": "False", "lastProbeTime": None,
                "lastTransitionTime": time_now(), "reason": "SchedulingGated",
                "message": "Scheduling is blocked due to non-empty scheduling gates"}]
        obj["status"] = status

    def obsolete_field_errors(self, obj: Obj, version: str) -> list[FieldError]:
        return obsolete_claim_source_errors(obj.get("spec") or {}, Path("spec"))

    def validate(self, obj: Obj, ctx: Context) -> list[FieldError]:
        spec = obj.get("spec") or {}
        path = Path("spec")
        errs = validate_pod_spec(spec, path, Options(is_pod=True))
        if spec.get("ephemeralContainers"):
            errs.append(forbidden(path.child("ephemeralContainers"), "cannot be set on create"))
        if spec.get("nodeName") and spec.get("schedulingGates"):
            errs.append(forbidden(path.child("nodeName"),
                                  "cannot be set until all schedulingGates have been cleared"))
        return errs

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
        required_affinity = ((old_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution")
        opts = Options(is_pod=True,
                       allow_invalid_affinity_values=has_invalid_label_values(required_affinity))
        errs = validate_pod_spec(new_spec, Path("spec"), opts)
        return errs + validate_pod_spec_update(new_spec, old_spec, Path("spec"))

    def validate_status_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        return validate_pod_status_update(new, old)

    # Reads --------------------------------------------------------------------------
    def selectable_fields(self, obj: Obj) -> dict[str, str]:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        ips = status.get("podIPs") or []
        return {
            "spec.nodeName": spec.get("nodeName") or "",
            "spec.restartPolicy": spec.get("restartPolicy") or "",
            "spec.schedulerName": spec.get("schedulerName") or "",
            "spec.serviceAccountName": spec.get("serviceAccountName") or "",
            "spec.hostNetwork": "true" if spec.get("hostNetwork") else "false",
            "status.phase": status.get("phase") or "",
            "status.podIP": (ips[0].get("ip") or "") if ips else "",
            "status.nominatedNodeName": status.get("nominatedNodeName") or "",
        }

    def table_columns(self) -> list[Column]:
        return [
            NAME_COLUMN,
            Column("Ready", description="The aggregate readiness state of this pod for "
                   "accepting traffic."),
            Column("Status", description="The aggregate status of the containers in this pod."),
            Column("Restarts", description="The number of times the containers in this pod "
                   "have been restarted and when the last container in this pod has restarted."),
            AGE_COLUMN,
            Column("IP", priority=1, description="IP address allocated to the pod. Routable "
                   "at least within the cluster. Empty if not yet allocated."),
            Column("Node", priority=1, description="NodeName indicates in which node this pod "
                   "is scheduled."),
            Column("Nominated Node", priority=1, description="nominatedNodeName is set only "
                   "when this pod preempts other pods on the node."),
            Column("Readiness Gates", priority=1, description="If specified, all readiness "
                   "gates will be evaluated for pod readiness."),
        ]

    def table_row(self, obj: Obj) -> list[Any]:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        ready, reason, restarts = pod_row_cells(obj)
        ips = status.get("podIPs") or []
        ip = (ips[0].get("ip") if ips else "") or "<none>"
        return [obj.get("metadata", {}).get("name", ""), ready, reason, restarts, AGE, ip,
                spec.get("nodeName") or "<none>", status.get("nominatedNodeName") or "<none>",
                readiness_gates_cell(obj)]


# Update rules ----------------------------------------------------------------------

def _container_updates(new: list[Obj], old: list[Obj], path: Path) -> tuple[list[FieldError],
                                                                             bool]:
    if len(new) != len(old):
        return [forbidden(path, "pod updates may not add or remove containers")], True
    errs: list[FieldError] = []
    for i, ctr in enumerate(new):
        image = ctr.get("image") or ""
        if not image:
            errs.append(required(path.index(i).child("image")))
        if image != image.strip():
            errs.append(invalid(path.index(i).child("image"), image,
                                "must not have leading or trailing whitespace"))
    return errs, False


def _only_added_tolerations(new: list[Obj], old: list[Obj], path: Path) -> list[FieldError]:
    """Existing tolerations stay (only their tolerationSeconds may change); one error."""
    def without_seconds(toleration: Obj) -> Obj:
        return {k: v for k, v in toleration.items() if k != "tolerationSeconds"}

    kept = [without_seconds(t) for t in new]
    for toleration in old:
        if without_seconds(toleration) not in kept:
            return [forbidden(path, "existing toleration can not be modified except its "
                              "tolerationSeconds")]
    return []


def _only_deleted_gates(new: list[Obj], old: list[Obj], path: Path) -> list[FieldError]:
    old_names = {g.get("name") for g in old}
    return [forbidden(path.index(i).child("name"), "only deletion is allowed, but found new "
                      f"scheduling gate '{g.get('name')}'")
            for i, g in enumerate(new) if g.get("name") not in old_names]


def _diff(old: Any, new: Any, path: str, out: list[str]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            _diff(old.get(key), new.get(key), f"{path}.{key}" if path else key, out)
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            _diff(a, b, f"{path}[{i}]", out)
    elif old != new:
        out.append(f"  {path}: {json.dumps(old)} -> {json.dumps(new)}")


def validate_pod_spec_update(new: Obj, old: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for key in ("containers", "initContainers"):
        found, stop = _container_updates(new.get(key) or [], old.get(key) or [], path.child(key))
        errs += found
        if stop:
            return errs
    deadline, old_deadline = new.get("activeDeadlineSeconds"), old.get("activeDeadlineSeconds")
    deadline_path = path.child("activeDeadlineSeconds")
    if deadline is not None:
        if not 0 <= deadline <= MAX_INT32:
            return errs + [invalid(deadline_path, deadline, inclusive_range(0, MAX_INT32))]
        if old_deadline is not None and old_deadline < deadline:
            return errs + [invalid(deadline_path, deadline,
                                   "must be less than or equal to previous value")]
    elif old_deadline is not None:
        errs.append(invalid(deadline_path, None, "must not update from a positive integer to "
                            "nil value"))
    munged = clone(new)
    for key in ("containers", "initContainers"):
        for ctr, old_ctr in zip(munged.get(key) or [], old.get(key) or [], strict=True):
            ctr["image"] = old_ctr.get("image")
    copy_or_drop(munged, old, "activeDeadlineSeconds")
    errs += _only_added_tolerations(new.get("tolerations") or [], old.get("tolerations") or [],
                                    path.child("tolerations"))
    copy_or_drop(munged, old, "tolerations")
    old_grace = old.get("terminationGracePeriodSeconds")
    if old_grace is not None and old_grace < 0 and munged.get(
            "terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    if old.get("schedulingGates"):
        # A gated pod may gain node selector entries (but not lose or change them).
        old_selector = old.get("nodeSelector") or {}
        new_selector = munged.get("nodeSelector") or {}
        if all(new_selector.get(k) == v for k, v in old_selector.items()):
            copy_or_drop(munged, old, "nodeSelector")
    errs += _only_deleted_gates(new.get("schedulingGates") or [], old.get("schedulingGates")
                                or [], path.child("schedulingGates"))
    copy_or_drop(munged, old, "schedulingGates")
    if _normalized(munged) != _normalized(old):
        lines: list[str] = []
        _diff(old, munged, "", lines)
        errs.append(forbidden(path, SPEC_UPDATE_FORBIDDEN + "\n" + "\n".join(lines)))
    return errs


def _is_unset(value: Any) -> bool:
    # `is False`, not `== False`: a 0 is a value.
    return value is None or value is False or value in ("", [], {})


def _normalized(value: Any) -> Any:
    """What Go's semantic equality compares: empty lists and maps equal unset ones, and a
    zero string or false is what an unset (non-pointer) field holds anyway."""
    if isinstance(value, dict):
        out = {k: _normalized(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if not _is_unset(v)}
    if isinstance(value, list):
        return [_normalized(v) for v in value]
    return value


def _state_transitions(new: list[Obj], old: list[Obj], restart_policy: str,
                       path: Path) -> list[FieldError]:
    """A container that will not restart stays terminated."""
    if restart_policy == "Always":
        return []
    errs: list[FieldError] = []
    for i, old_status in enumerate(old):
        terminated = (old_status.get("state") or {}).get("terminated")
        if terminated is None:
            continue
        if terminated.get("exitCode", 0) != 0 and restart_policy == "OnFailure":
            continue
        for new_status in new:
            if new_status.get("name") == old_status.get("name") and \
                    (new_status.get("state") or {}).get("terminated") is None:
                errs.append(forbidden(path.index(i).child("state"),
                                      "may not be transitioned to non-terminated state"))
    return errs


def _ip_errors(value: str, path: Path) -> list[FieldError]:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return [invalid(path, value, "must be a valid IP address, (e.g. 10.9.8.7 or "
                        "2001:db8::ffff)")]
    return []


def _validate_ips(status: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, entry in enumerate(status.get("podIPs") or []):
        errs += _ip_errors(entry.get("ip") or "", path.child("podIPs").index(i))
    host_ips = status.get("hostIPs") or []
    if host_ips and host_ips[0].get("ip") != (status.get("hostIP") or ""):
        errs.append(invalid(path.child("hostIPs").index(0).child("ip"), host_ips[0].get("ip"),
                            "must be equal to `hostIP`"))
    for i, entry in enumerate(host_ips):
        errs += _ip_errors(entry.get("ip") or "", path.child("hostIPs").index(i))
    return errs


def validate_pod_status_update(new: Obj, old: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    new_status, old_status = new.get("status") or {}, old.get("status") or {}
    path = Path("status")
    for i, cond in enumerate(new_status.get("conditions") or []):
        if cond.get("type") not in _POD_CONDITIONS:
            errs += qualified_name(cond.get("type") or "",
                                   Path("status").child("conditions").index(i).child("type"))
    if (new.get("spec") or {}).get("nodeName") != (old.get("spec") or {}).get("nodeName"):
        errs.append(forbidden(path.child("nodeName"), "may not be changed directly"))
    nominated = new_status.get("nominatedNodeName") or ""
    if nominated and nominated != old_status.get("nominatedNodeName"):
        errs += dns_subdomain(nominated, path.child("nominatedNodeName"))
    errs += immutable(new_status.get("qosClass"), old_status.get("qosClass"),
                      path.child("qosClass"))
    restart_policy = (old.get("spec") or {}).get("restartPolicy") or "Always"
    for key in ("containerStatuses", "initContainerStatuses"):
        errs += _state_transitions(new_status.get(key) or [], old_status.get(key) or [],
                                   restart_policy, path.child(key))
    errs += _validate_ips(new_status, path)
    claims = {c.get("name") for c in (new.get("spec") or {}).get("resourceClaims") or []}
    seen: set[str] = set()
    for i, entry in enumerate(new_status.get("resourceClaimStatuses") or []):
        p = path.child("resourceClaimStatuses").index(i)
        name = entry.get("name") or ""
        if name not in claims:
            errs.append(invalid(p.child("name"), name,
                                "must match the name of an entry in `spec.resourceClaims`"))
        if name in seen:
            errs.append(duplicate(p.child("name"), name))
        seen.add(name)
        if entry.get("resourceClaimName") is not None:
            errs += dns_subdomain(entry["resourceClaimName"], p.child("name"))
    return errs


STRATEGIES = [PodStrategy()]


TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"


def mount_service_account_token(pod: Obj, ctx: Context) -> None:
    """Upstream's ServiceAccount admission: unless the pod or its ServiceAccount opts out
    (automountServiceAccountToken: false), a projected `kube-api-access-<5>` volume (a
    bound token for the account, the cluster's CA from kube-root-ca.crt, the namespace)
    is mounted read-only at /var/run/secrets/kubernetes.io/serviceaccount in every
    container that mounts nothing there. Upstream rejects a pod whose ServiceAccount does
    not exist; here such a pod is admitted without the volume (a bare apiserver, with no
    service account controller, keeps serving pods)."""
    spec = pod["spec"]
    if ctx.lookup is None:
        return
    account = ctx.lookup("serviceaccounts", "", (pod.get("metadata") or {}).get(
        "namespace", ""), spec.get("serviceAccountName") or "default")
    if account is None:
        return
    automount = spec.get("automountServiceAccountToken")
    if automount is None:
        automount = account.get("automountServiceAccountToken")
    if automount is False:
        return
    containers = [c for key in ("initContainers", "containers")
                  for c in spec.get(key) or [] if isinstance(c, dict)]
    needing = [c for c in containers if not any(
        isinstance(m, dict) and m.get("mountPath") == TOKEN_MOUNT_PATH
        for m in c.get("volumeMounts") or [])]
    if not needing:
        return
    volumes = spec.setdefault("volumes", [])
    names = {v.get("name") for v in volumes if isinstance(v, dict)}
    name = ""
    while not name or name in names:
        name = "kube-api-access-" + "".join(secrets.choice(_NAME_CHARS) for _ in range(5))
    volumes.append({"name": name, "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt",
                       "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}})
    for container in needing:
        container.setdefault("volumeMounts", []).append(
            {"name": name, "readOnly": True, "mountPath": TOKEN_MOUNT_PATH})


# utilrand.String's alphabet (no vowels, no confusable characters).
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
