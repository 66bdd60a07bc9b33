"""kind's cluster configuration (`kind.x-k8s.io/v1alpha4` Cluster): strict decoding with
kind's error texts, defaulting, validation, and the node names kind would give."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

import draemu
from draemu.api import yamlload
from draemu.api.yamlerror import one_line

API_VERSION = "kind.x-k8s.io/v1alpha4"
DEFAULT_NAME = "kind"
# the node image kind would use for the Kubernetes release draemu serves
DEFAULT_IMAGE = f"kindest/node:{draemu.KUBERNETES_VERSION}"
_NAME_RE = re.compile(r"^[a-z0-9.-]+$")

# Field names of each v1alpha4 type, for kind's strict decoding (yaml.v3 KnownFields).
_FIELDS: dict[str, dict[str, str | None]] = {
    "Cluster": {"kind": None, "apiVersion": None, "name": None, "featureGates": None,
                "runtimeConfig": None, "nodes": "[]Node", "networking": "Networking",
                "kubeadmConfigPatches": None, "kubeadmConfigPatchesJSON6902": "[]PatchJSON6902",
                "containerdConfigPatches": None, "containerdConfigPatchesJSON6902": None},
    "Node": {"role": None, "image": None, "labels": None, "extraMounts": "[]Mount",
             "extraPortMappings": "[]PortMapping", "kubeadmConfigPatches": None,
             "kubeadmConfigPatchesJSON6902": "[]PatchJSON6902"},
    "Networking": {"ipFamily": None, "apiServerPort": None, "apiServerAddress": None,
                   "podSubnet": None, "serviceSubnet": None, "disableDefaultCNI": None,
                   "kubeProxyMode": None, "dnsSearch": None},
    "Mount": {"containerPath": None, "hostPath": None, "readOnly": None,
              "selinuxRelabel": None, "propagation": None},
    "PortMapping": {"containerPort": None, "hostPort": None, "listenAddress": None,
                    "protocol": None},
    "PatchJSON6902": {"group": None, "version": None, "kind": None, "patch": None},
}


class ConfigError(Exception):
    pass


@dataclass
class KindNode:
    name: str
    role: str  # "control-plane" or "worker"
    labels: dict[str, str] = field(default_factory=dict)


@dataclass
class KindCluster:
    name: str = DEFAULT_NAME
    feature_gates: dict[str, bool] = field(default_factory=dict)
    runtime_config: dict[str, str] = field(default_factory=dict)
    roles: list[tuple[str, dict[str, str]]] = field(
        default_factory=lambda: [("control-plane", {})])
    api_server_port: int = 0
    api_server_address: str = "127.0.0.1"
    ignored: list[str] = field(default_factory=list)  # what draemu cannot honour

    def nodes(self) -> list[KindNode]:
        """Names as kind gives them: <name>-control-plane, -control-plane2, ...,
        <name>-worker, -worker2, ..."""
        counts: dict[str, int] = {}
        out = []
        for role, labels in self.roles:
            counts[role] = counts.get(role, 0) + 1
            n = counts[role]
            out.append(KindNode(f"{self.name}-{role}{'' if n == 1 else n}", role, dict(labels)))
        return out


def _unknown_fields(node: yaml.Node, type_name: str, errors: list[str]) -> None:
    spec = _FIELDS[type_name]
    if not isinstance(node, yaml.MappingNode):
        return
    for key_node, value_node in node.value:
        key = key_node.value
        if key not in spec:
            errors.append(f"  line {key_node.start_mark.line + 1}: field {key} not found in "
                          f"type v1alpha4.{type_name}")
            continue
        child = spec[key]
        if child is None:
            continue
        if child.startswith("[]"):
            if isinstance(value_node, yaml.SequenceNode):
                for item in value_node.value:
                    _unknown_fields(item, child[2:], errors)
        else:
            _unknown_fields(value_node, child, errors)


def parse(raw: str, name: str | None = None) -> KindCluster:
    """Decode a kind config as kind does; raise ConfigError with kind's message."""
    try:
        doc = yamlload.load_file_text(raw) or {}  # limits first: compose below expands aliases
        tree = yaml.compose(raw)
    except yaml.YAMLError as e:
        raise ConfigError(f"could not determine kind / apiVersion for config: "
                          f"yaml: {one_line(e)}") from None
    if not isinstance(doc, dict):
        raise ConfigError("could not determine kind / apiVersion for config: not a mapping")
    api_version, kind = doc.get("apiVersion", ""), doc.get("kind", "")
    if api_version not in (API_VERSION, "kind.sigs.k8s.io/v1alpha3"):
        raise ConfigError(f"unknown apiVersion: {api_version}")
    if kind != "Cluster":
        # kind prints the two values in this (swapped) order.
        raise ConfigError(f"unknown kind {api_version} for apiVersion: {kind}")
    errors: list[str] = []
    if tree is not None:
        _unknown_fields(tree, "Cluster", errors)
    if errors:
        raise ConfigError("unable to decode config: yaml: unmarshal errors:\n"
                          + "\n".join(errors))
    cluster = KindCluster(name=name or doc.get("name") or DEFAULT_NAME)
    cluster.feature_gates = {str(k): bool(v) for k, v in (doc.get("featureGates") or {}).items()}
    cluster.runtime_config = {str(k): str(v) for k, v in
                              (doc.get("runtimeConfig") or {}).items()}
    nodes = doc.get("nodes")
    if nodes:
        cluster.roles = [(n.get("role") or "control-plane",
                          {str(k): str(v) for k, v in (n.get("labels") or {}).items()})
                         for n in nodes]
        for i, n in enumerate(nodes):
            if n.get("extraMounts") or n.get("extraPortMappings"):
                cluster.ignored.append(f"nodes[{i}] extraMounts/extraPortMappings")
            if n.get("kubeadmConfigPatches") or n.get("kubeadmConfigPatchesJSON6902"):
                cluster.ignored.append(f"nodes[{i}] kubeadmConfigPatches")
    net = doc.get("networking") or {}
    cluster.api_server_port = int(net.get("apiServerPort") or 0)
    cluster.api_server_address = str(net.get("apiServerAddress") or "127.0.0.1")
    if doc.get("kubeadmConfigPatches") or doc.get("kubeadmConfigPatchesJSON6902"):
        cluster.ignored.append("kubeadmConfigPatches")
    if any(not _is_cdi_patch(p) for p in doc.get("containerdConfigPatches") or []):
        cluster.ignored.append("containerdConfigPatches (CDI is always enabled)")
    validate(cluster, net)
    return cluster


def _is_cdi_patch(patch: str) -> bool:
    return "enable_cdi" in patch or "cdi_spec_dirs" in patch


def validate(cluster: KindCluster, net: dict[str, Any] | None = None) -> None:
    net = net or {}
    errs: list[str] = []
    if not _NAME_RE.match(cluster.name):
        errs.append(f"'{cluster.name}' is not a valid cluster name, cluster names must match "
                    f"`{_NAME_RE.pattern}`")
    if cluster.api_server_port and not -1 <= cluster.api_server_port <= 65535:
        errs.append(f"invalid apiServerPort: invalid port number: {cluster.api_server_port}")
    family = net.get("ipFamily") or "ipv4"
    if family not in ("ipv4", "ipv6", "dual"):
        errs.append(f"invalid ipFamily: {family}")
    mode = net.get("kubeProxyMode") or "iptables"
    if mode not in ("iptables", "ipvs", "none", "nftables"):
        errs.append(f"invalid kubeProxyMode: {mode}")
    for label, subnet in (("pod", net.get("podSubnet")), ("service", net.get("serviceSubnet"))):
        for cidr in str(subnet).split(",") if subnet else []:
            try:
                ipaddress.ip_network(cidr.strip(), strict=False)
            except ValueError as e:
                errs.append(f'invalid {label} subnet failed to parse cidr value:"{cidr}" '
                            f"with error: {e}")
    for i, (role, _) in enumerate(cluster.roles):
        if role not in ("control-plane", "worker"):
            errs.append(f'invalid configuration for node {i}: "{role}" is not a valid node role')
    if not any(role == "control-plane" for role, _ in cluster.roles):
        errs.append("must have at least one control-plane node")
    if errs:
        raise ConfigError(errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]")
