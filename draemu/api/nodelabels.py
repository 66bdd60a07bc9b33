"""Which labels a kubelet may set on its own Node (NodeRestriction's rule): the apiserver
enforces it, and draemu's kubelets register with only those, leaving the others to the
administrator as kubeadm does."""

from __future__ import annotations

NODE_RESTRICTION_LABEL_DOMAIN = "node-restriction.kubernetes.io"
# Labels in the kubernetes.io and k8s.io namespaces that a kubelet may set on its own Node
# (upstream's kubelet label list), and the namespaces (with their subdomains) it may use.
KUBELET_LABELS = frozenset({
    "kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch",
    "beta.kubernetes.io/os", "beta.kubernetes.io/arch",
    "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    "node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type",
})
KUBELET_LABEL_DOMAINS = ("kubelet.kubernetes.io", "node.kubernetes.io")
_KUBERNETES_LABEL_DOMAINS = ("kubernetes.io", "k8s.io")


def _in_domain(namespace: str, domain: str) -> bool:
    return namespace == domain or namespace.endswith("." + domain)


def kubelet_may_set_label(key: str) -> bool:
    """Whether a node may add, change or remove label `key` on its own Node: not in the
    node-restriction domain (kept for administrators to steer workloads), and in the
    kubernetes.io / k8s.io namespaces only what kubelets themselves set."""
    namespace = key.split("/", 1)[0] if "/" in key else ""
    if _in_domain(namespace, NODE_RESTRICTION_LABEL_DOMAIN):
        return False
    if any(_in_domain(namespace, d) for d in _KUBERNETES_LABEL_DOMAINS):
        return key in KUBELET_LABELS or any(_in_domain(namespace, d)
                                             for d in KUBELET_LABEL_DOMAINS)
    return True
