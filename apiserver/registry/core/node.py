"""core/v1 Node (cluster-scoped): created by kubelets with their status, spec changes
limited to what upstream lets node updates change; `kubectl get nodes` columns."""

from __future__ import annotations

import ipaddress
from typing import Any

from draemu.api.errors import (
    FieldError,
    Path,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
)
from draemu.api.names import is_label_value
from draemu.api.types import Obj
from draemu.apiserver.registry.core.common import check_quantities, qualified_name
from draemu.apiserver.registry.core.podspec_validation import TAINT_EFFECTS
from draemu.apiserver.registry.strategy import (
    AGE,
    AGE_COLUMN,
    NAME_COLUMN,
    Column,
    Context,
    Strategy,
)

PODCIDR_CHANGE = 'node updates may not change podCIDR except from "" to valid'
ROLE_LABEL_PREFIX = "node-role.kubernetes.io/"
LEGACY_ROLE_LABEL = "kubernetes.io/role"


def validate_taints(taints: list[Obj], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(taints):
        p = path.index(i)
        key, value, effect = taint.get("key") or "", taint.get("value") or "", \
            taint.get("effect") or ""
        errs += qualified_name(key, p.child("key"))
        msgs = is_label_value(value)
        if msgs:
            errs.append(invalid(p.child("value"), value, ";".join(msgs)))
        if not effect:
            errs.append(required(p.child("effect")))
        elif effect not in TAINT_EFFECTS:
            errs.append(not_supported(p.child("effect"), effect, TAINT_EFFECTS))
        if (key, effect) in seen:
            errs.append(FieldError("Duplicate", str(p), taint,
                                   "taints must be unique by key and effect pair"))
            continue
        seen.add((key, effect))
    return errs


def node_roles(node: Obj) -> list[str]:
    roles: set[str] = set()
    for key, value in ((node.get("metadata") or {}).get("labels") or {}).items():
        if key.startswith(ROLE_LABEL_PREFIX) and key[len(ROLE_LABEL_PREFIX):]:
            roles.add(key[len(ROLE_LABEL_PREFIX):])
        elif key == LEGACY_ROLE_LABEL and value:
            roles.add(value)
    return sorted(roles)


def _address(node: Obj, kind: str) -> str:
    for address in (node.get("status") or {}).get("addresses") or []:
        if address.get("type") == kind:
            return address.get("address") or ""
    return "<none>"


class NodeStrategy(Strategy):
    kind = "Node"
    resource = "nodes"
    singular = "node"
    short_names = ("no",)
    namespaced = False
    versions = ("v1",)
    storage_version = "v1"
    subresources = frozenset({"status"})
    # Upstream's node status strategy resets only the spec: kubelets relabel their Node
    # through nodes/status.
    status_meta_reset = ()
    has_generation = False

    def default(self, obj: Obj, version: str) -> None:
        status = obj.get("status") or {}
        # Upstream's SetDefaults_NodeStatus: no allocatable means all of the capacity.
        if status.get("allocatable") is None and status.get("capacity") is not None:
            status["allocatable"] = dict(status["capacity"])
        check_quantities([*(status.get("capacity") or {}).values(),
                          *(status.get("allocatable") or {}).values()], self.kind, version)

    def prepare_for_create(self, obj: Obj, ctx: Context) -> None:
        """A kubelet registers its node together with its status: nothing is cleared."""

    def validate(self, obj: Obj, ctx: Context) -> list[FieldError]:
        spec = obj.get("spec") or {}
        # Upstream reports taint problems under metadata.taints; clients match on it.
        errs = validate_taints(spec.get("taints") or [], Path("metadata").child("taints"))
        cidr_path = Path("spec").child("podCIDRs")
        for i, cidr in enumerate(spec.get("podCIDRs") or []):
            try:
                ipaddress.ip_network(cidr, strict=False)
            except ValueError:
                errs.append(invalid(cidr_path.index(i), cidr, "must be a valid CIDR value, "
                                    "(e.g. 10.9.8.0/24 or 2001:db8::/64)"))
        return errs

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        errs: list[FieldError] = []
        seen: list[Obj] = []
        for i, address in enumerate((new.get("status") or {}).get("addresses") or []):
            if address in seen:
                errs.append(duplicate(Path("status").child("addresses").index(i), address))
            seen.append(address)
        spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
        old_cidrs, cidrs = old_spec.get("podCIDRs") or [], spec.get("podCIDRs") or []
        cidr_path = Path("spec").child("podCIDRs")
        if old_cidrs and len(old_cidrs) != len(cidrs):
            errs.append(forbidden(cidr_path, PODCIDR_CHANGE))
        elif old_cidrs:
            # One error per changed entry, all at the list's path (as upstream words it).
            errs += [forbidden(cidr_path, PODCIDR_CHANGE)
                     for a, b in zip(old_cidrs, cidrs, strict=True) if a != b]
        old_provider = old_spec.get("providerID") or ""
        if old_provider and old_provider != (spec.get("providerID") or ""):
            errs.append(forbidden(Path("spec").child("providerID"),
                                  'node updates may not change providerID except from "" to '
                                  "valid"))
        return errs + self.validate(new, ctx)

    def validate_status_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        return self.validate_update(new, old, ctx)

    def selectable_fields(self, obj: Obj) -> dict[str, str]:
        unschedulable = bool((obj.get("spec") or {}).get("unschedulable"))
        return {"spec.unschedulable": "true" if unschedulable else "false"}

    def table_columns(self) -> list[Column]:
        return [
            NAME_COLUMN,
            Column("Status", description="The status of the node"),
            Column("Roles", description="The roles of the node"),
            AGE_COLUMN,
            Column("Version", description="Kubelet Version reported by the node."),
            Column("Internal-IP", priority=1, description="List of addresses reachable to the "
                   "node. Queried from cloud provider, if available."),
            Column("External-IP", priority=1, description="List of addresses reachable to the "
                   "node. Queried from cloud provider, if available."),
            Column("OS-Image", priority=1, description="OS Image reported by the node from "
                   "/etc/os-release (e.g. Debian GNU/Linux 7 (wheezy))."),
            Column("Kernel-Version", priority=1, description="Kernel Version reported by the "
                   "node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64)."),
            Column("Container-Runtime", priority=1, description="ContainerRuntime Version "
                   "reported by the node through runtime remote API (e.g. containerd://1.4.2)."),
        ]

    def table_row(self, obj: Obj) -> list[Any]:
        status = obj.get("status") or {}
        ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
        states = ["Ready" if ready[0].get("status") == "True" else "NotReady"] if ready \
            else ["Unknown"]
        if (obj.get("spec") or {}).get("unschedulable"):
            states.append("SchedulingDisabled")
        info = status.get("nodeInfo") or {}
        return [(obj.get("metadata") or {}).get("name", ""), ",".join(states),
                ",".join(node_roles(obj)) or "<none>", AGE, info.get("kubeletVersion") or "",
                _address(obj, "InternalIP"), _address(obj, "ExternalIP"),
                info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
                info.get("containerRuntimeVersion") or "<unknown>"]


STRATEGIES = [NodeStrategy()]
