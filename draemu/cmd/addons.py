"""The add-ons kubeadm installs on a new cluster, which `draemu up --runtime process`
deploys on its pod network (draemu/podnetwork.py): kube-proxy and CoreDNS, the real
programs, run by the process runtime as pods.

- kube-proxy: a DaemonSet in kube-system (hostNetwork, privileged: one per node, in the
  node's namespace, where it writes the node's nftables), its ServiceAccount bound to
  `system:node-proxier` (kubeadm's `kubeadm:node-proxier`), and the `kube-proxy`
  ConfigMap with its KubeProxyConfiguration (nftables mode, the cluster CIDR) and a
  kubeconfig that reaches the apiserver at its address on the node network with the
  pod's ServiceAccount token.
- CoreDNS: the `coredns` Deployment (two replicas) with its ConfigMap (kubeadm's
  Corefile), ServiceAccount and `system:coredns` ClusterRole and binding, and the
  `kube-dns` Service at the 10th address of the service CIDR, which each kubelet writes
  into its pods' resolv.conf.

The images are mapped to the programs (ImageMap defaults, after the user's entries):
`kube-proxy` and `coredns` on PATH, or where tests/e2e/realk8s/build.sh builds them
(`build.sh network`; ~/.cache/draemu/realk8s/bin, or $DRAEMU_REALK8S_BIN, or
$DRAEMU_REALK8S_CACHE/bin). Without them the add-ons are still
deployed as kubeadm deploys them, and their pods say that their image is not mapped.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from draemu import KUBERNETES_VERSION
from draemu.api.types import Obj
from draemu.client import ApiError, Client
from draemu.log import get_logger

log = get_logger("addons")

KUBE_PROXY_IMAGE = "registry.k8s.io/kube-proxy"
COREDNS_IMAGE = "registry.k8s.io/coredns/coredns"
COREDNS_VERSION = "v1.14.6"  # kubeadm 1.37's
PROGRAMS = {KUBE_PROXY_IMAGE: "kube-proxy", COREDNS_IMAGE: "coredns"}
CLUSTER_DOMAIN = "cluster.local"
NAMESPACE = "kube-system"


def build_cache() -> Path:
    """Where tests/e2e/realk8s/build.sh puts the programs it builds."""
    if os.environ.get("DRAEMU_REALK8S_BIN"):
        return Path(os.environ["DRAEMU_REALK8S_BIN"])
    root = os.environ.get("DRAEMU_REALK8S_CACHE") or Path.home() / ".cache/draemu/realk8s"
    return Path(root) / "bin"


def find_programs(mapped: Any) -> tuple[dict[str, Path], list[str]]:
    """The add-on images `mapped` (an ImageMap) does not map yet, and the program found
    for each (on PATH, then in build.sh's cache); and the programs not found."""
    found: dict[str, Path] = {}
    missing: list[str] = []
    for image, program in PROGRAMS.items():
        if mapped is not None and mapped.lookup(image) is not None:
            continue
        on_path = shutil.which(program)
        cached = build_cache() / program
        if on_path:
            found[image] = Path(on_path)
        elif cached.is_file() and os.access(cached, os.X_OK):
            found[image] = cached
        else:
            missing.append(program)
    return found, missing


def _meta(name: str, **labels: str) -> Obj:
    out: Obj = {"name": name, "namespace": NAMESPACE}
    if labels:
        out["labels"] = dict(labels)
    return out


def _kubeconfig(server: str) -> str:
    account = "/var/run/secrets/kubernetes.io/serviceaccount"
    return (f"apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n"
            f"    certificate-authority: {account}/ca.crt\n    server: {server}\n"
            f"  name: default\ncontexts:\n- context:\n    cluster: default\n"
            f"    namespace: default\n    user: default\n  name: default\n"
            f"current-context: default\nusers:\n- name: default\n  user:\n"
            f"    tokenFile: {account}/token\n")


def _kube_proxy_config(cluster_cidr: str) -> str:
    # maxPerCore 0: kube-proxy leaves the machine-wide conntrack table size alone (as in
    # kind, whose nodes cannot change it either).
    return ("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n"
            "bindAddress: 0.0.0.0\nclientConnection:\n"
            "  kubeconfig: /var/lib/kube-proxy/kubeconfig.conf\n"
            f"clusterCIDR: {cluster_cidr}\nconntrack:\n  maxPerCore: 0\n"
            "mode: nftables\n")


def kube_proxy(server: str, cluster_cidr: str) -> list[tuple[str, str, Obj]]:
    """kube-proxy as kubeadm deploys it: (API version, resource, object) in order."""
    labels = {"k8s-app": "kube-proxy"}
    pod = {
        "metadata": {"labels": labels},
        "spec": {
            "containers": [{
                "name": "kube-proxy",
                "image": f"{KUBE_PROXY_IMAGE}:{KUBERNETES_VERSION}",
                "command": ["/usr/local/bin/kube-proxy",
                            "--config=/var/lib/kube-proxy/config.conf",
                            "--hostname-override=$(NODE_NAME)"],
                "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {
                    "apiVersion": "v1", "fieldPath": "spec.nodeName"}}}],
                "securityContext": {"privileged": True},
                "volumeMounts": [
                    {"name": "kube-proxy", "mountPath": "/var/lib/kube-proxy"},
                    {"name": "xtables-lock", "mountPath": "/run/xtables.lock"},
                    {"name": "lib-modules", "mountPath": "/lib/modules", "readOnly": True}]}],
            "hostNetwork": True,
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "priorityClassName": "system-node-critical",
            "serviceAccountName": "kube-proxy",
            "tolerations": [{"operator": "Exists"}],
            "volumes": [
                {"name": "kube-proxy", "configMap": {"name": "kube-proxy"}},
                {"name": "xtables-lock",
                 "hostPath": {"path": "/run/xtables.lock", "type": "FileOrCreate"}},
                {"name": "lib-modules", "hostPath": {"path": "/lib/modules"}}]}}
    return [
        ("v1", "serviceaccounts", {"metadata": _meta("kube-proxy")}),
        ("rbac.authorization.k8s.io/v1", "clusterrolebindings", {
            "metadata": {"name": "kubeadm:node-proxier"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "system:node-proxier"},
            "subjects": [{"kind": "ServiceAccount", "name": "kube-proxy",
                          "namespace": NAMESPACE}]}),
        ("v1", "configmaps", {"metadata": _meta("kube-proxy", app="kube-proxy"), "data": {
            "config.conf": _kube_proxy_config(cluster_cidr),
            "kubeconfig.conf": _kubeconfig(server)}}),
        ("apps/v1", "daemonsets", {
            "metadata": _meta("kube-proxy", **labels),
            "spec": {"selector": {"matchLabels": labels}, "template": pod,
                     "updateStrategy": {"type": "RollingUpdate"}}}),
    ]


COREFILE = """.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes %(domain)s in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30 {
       disable success %(domain)s
       disable denial %(domain)s
    }
    loop
    reload
    loadbalance
}
"""


def _coredns_pod(labels: dict[str, str]) -> Obj:
    probe = {"httpGet": {"path": "/health", "port": 8080, "scheme": "HTTP"},
             "initialDelaySeconds": 60, "timeoutSeconds": 5, "successThreshold": 1,
             "failureThreshold": 5}
    return {
        "metadata": {"labels": labels},
        "spec": {
            "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": {
                    "labelSelector": {"matchExpressions": [
                        {"key": "k8s-app", "operator": "In", "values": ["kube-dns"]}]},
                    "topologyKey": "kubernetes.io/hostname"}}]}},
            "containers": [{
                "name": "coredns",
                "image": f"{COREDNS_IMAGE}:{COREDNS_VERSION}",
                "args": ["-conf", "/etc/coredns/Corefile"],
                "ports": [{"name": "dns", "containerPort": 53, "protocol": "UDP"},
                          {"name": "dns-tcp", "containerPort": 53, "protocol": "TCP"},
                          {"name": "metrics", "containerPort": 9153, "protocol": "TCP"},
                          {"name": "liveness-probe", "containerPort": 8080,
                           "protocol": "TCP"},
                          {"name": "readiness-probe", "containerPort": 8181,
                           "protocol": "TCP"}],
                "livenessProbe": probe,
                "readinessProbe": {"httpGet": {"path": "/ready", "port": 8181,
                                               "scheme": "HTTP"}},
                "resources": {"limits": {"memory": "170Mi"},
                              "requests": {"cpu": "100m", "memory": "70Mi"}},
                "securityContext": {"allowPrivilegeEscalation": False,
                                    "capabilities": {"add": ["NET_BIND_SERVICE"],
                                                     "drop": ["ALL"]},
                                    "readOnlyRootFilesystem": True},
                "volumeMounts": [{"name": "config-volume", "mountPath": "/etc/coredns",
                                  "readOnly": True}]}],
            "dnsPolicy": "Default",
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "priorityClassName": "system-cluster-critical",
            "serviceAccountName": "coredns",
            "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"},
                            {"key": "node-role.kubernetes.io/control-plane",
                             "effect": "NoSchedule"}],
            "volumes": [{"name": "config-volume", "configMap": {
                "name": "coredns", "items": [{"key": "Corefile", "path": "Corefile"}]}}]}}


def coredns(dns_ip: str, domain: str = CLUSTER_DOMAIN) -> list[tuple[str, str, Obj]]:
    """CoreDNS as kubeadm deploys it: (API version, resource, object) in order."""
    labels = {"k8s-app": "kube-dns"}
    rbac = "rbac.authorization.k8s.io/v1"
    return [
        ("v1", "serviceaccounts", {"metadata": _meta("coredns")}),
        (rbac, "clusterroles", {"metadata": {"name": "system:coredns"}, "rules": [
            {"apiGroups": [""], "resources": ["endpoints", "services", "pods", "namespaces"],
             "verbs": ["list", "watch"]},
            {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
             "verbs": ["list", "watch"]}]}),
        (rbac, "clusterrolebindings", {
            "metadata": {"name": "system:coredns"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "system:coredns"},
            "subjects": [{"kind": "ServiceAccount", "name": "coredns",
                          "namespace": NAMESPACE}]}),
        ("v1", "configmaps", {"metadata": _meta("coredns"),
                              "data": {"Corefile": COREFILE % {"domain": domain}}}),
        ("apps/v1", "deployments", {
            "metadata": _meta("coredns", **labels),
            "spec": {"replicas": 2, "selector": {"matchLabels": labels},
                     "strategy": {"type": "RollingUpdate",
                                  "rollingUpdate": {"maxUnavailable": 1}},
                     "template": _coredns_pod(labels)}}),
        ("v1", "services", {
            "metadata": {**_meta("kube-dns", **labels, **{
                "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "CoreDNS"}),
                "annotations": {"prometheus.io/port": "9153", "prometheus.io/scrape": "true"}},
            "spec": {"clusterIP": dns_ip, "selector": labels, "ports": [
                {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
                {"name": "metrics", "port": 9153, "protocol": "TCP", "targetPort": 9153}]}}),
    ]


async def deploy(client: Client, objects: list[tuple[str, str, Obj]]) -> None:
    """Create what is missing; ConfigMaps are kept current (the apiserver's address may
    have changed since a data dir's last start), the rest is left as the user has it."""
    for api_version, resource, obj in objects:
        namespace = obj["metadata"].get("namespace")
        try:
            await client.create(api_version, resource, obj, namespace=namespace)
            continue
        except ApiError as err:
            if err.code != 409:
                raise
        if resource == "configmaps":
            await client.patch(api_version, resource, obj["metadata"]["name"],
                               {"data": obj["data"]}, namespace=namespace)
