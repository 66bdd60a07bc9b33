"""What kubelets (and drivers running with node credentials) may do: Kubernetes' Node
authorizer, simplified (its NodeRestriction admission is `admission/noderestriction.py`).

A node identity (`system:node:<name>` in `system:nodes`) may read and write its own
Node, its Lease and CSINode, the pods bound to it, Events, the ResourceSlices of its
node, and the ResourceClaims its pods use (and, since drivers here run with node credentials, their
status). Upstream's object graph is replaced by lookups in the watch cache: an object is
related to a node when the node can be read off the object (a pod's spec.nodeName, a
slice's spec.nodeName, a claim reserved for a pod bound to the node or allocated to
devices of the node, a Secret or ConfigMap that a pod bound to the node refers to).
Volumes and service account tokens are not served to nodes (no pod here mounts them).

`NodeAuthorizer` decides from the request alone, as upstream's authorizer does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from draemu.api.types import Obj
from draemu.apiserver.auth.authorization import Attributes, Decision
from draemu.apiserver.wire.queryselectors import parse_field_selector
from draemu.identity import UserInfo

# (resource, group, namespace, name) -> the object in the watch cache, or None.
Lookup = Callable[[str, str, str, str], Any]
# (resource, group, namespace) -> every object of the namespace in the watch cache.
NamespaceLookup = Callable[[str, str, str], list[Obj]]

NODE_LEASE_NAMESPACE = "kube-node-lease"
RESOURCE_GROUP = "resource.k8s.io"

_READ = frozenset({"get", "list", "watch"})
# Resources a node reaches uniformly (upstream's static node rules), by (resource, group).
_STATIC_RULES: dict[tuple[str, str], frozenset[str]] = {
    ("events", ""): frozenset({"create", "update", "patch"}),
    ("events", "events.k8s.io"): frozenset({"create", "update", "patch"}),
    ("services", ""): _READ,
    ("endpoints", ""): _READ,
    ("runtimeclasses", "node.k8s.io"): _READ,
    ("csidrivers", "storage.k8s.io"): _READ,
    ("tokenreviews", "authentication.k8s.io"): frozenset({"create"}),
    ("subjectaccessreviews", "authorization.k8s.io"): frozenset({"create"}),
}


def _no(reason: str = "") -> Decision:
    return Decision(False, reason)


_YES = Decision(True, "node")


def _selected(attrs: Attributes, *fields: str) -> str | None:
    selector = parse_field_selector(attrs.field_selector)
    for field in fields:
        value = selector.exact(field)
        if value is not None:
            return value
    return None


def node_of_pod(pod: Obj | None) -> str:
    return ((pod or {}).get("spec") or {}).get("nodeName") or ""


def claim_on_node(claim: Obj, namespace: str, node: str, lookup: Lookup) -> bool:
    """A claim is a node's business when it is reserved for a pod bound to the node, or
    allocated to devices that only this node has."""
    status = claim.get("status") or {}
    for ref in status.get("reservedFor") or []:
        if ref.get("resource") == "pods" and not ref.get("apiGroup"):
            pod = lookup("pods", "", namespace, ref.get("name", ""))
            if node_of_pod(pod) == node:
                return True
    selector = (status.get("allocation") or {}).get("nodeSelector") or {}
    for term in selector.get("nodeSelectorTerms") or []:
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and field.get("operator") == "In" \
                    and node in (field.get("values") or []):
                return True
    return False


def pod_claims(pod: Obj) -> set[str]:
    """The ResourceClaims a pod names: in its spec, in its status (those generated from
    templates) and its extended-resource claim, as upstream's resourceclaim.PodClaims."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    names = {c.get("resourceClaimName") or "" for c in spec.get("resourceClaims") or []}
    names |= {c.get("resourceClaimName") or ""
              for c in status.get("resourceClaimStatuses") or []}
    names.add((status.get("extendedResourceClaimStatus") or {}).get("resourceClaimName") or "")
    names.discard("")
    return names


def _containers(spec: Obj) -> list[Obj]:
    return [*(spec.get("initContainers") or []), *(spec.get("containers") or []),
            *(spec.get("ephemeralContainers") or [])]


# Volume sources that name a Secret beside `secret` and `projected`, by (source, field);
# the field holds the name itself or, as an object, under "name".
_SECRET_VOLUME_REFS = (("azureFile", "secretName"), ("cephfs", "secretRef"),
                       ("cinder", "secretRef"), ("flexVolume", "secretRef"), ("rbd", "secretRef"),
                       ("scaleIO", "secretRef"), ("iscsi", "secretRef"),
                       ("storageos", "secretRef"), ("csi", "nodePublishSecretRef"))


def _volume_secret_names(volume: Obj) -> set[str]:
    names: set[str] = set()
    for source, field in _SECRET_VOLUME_REFS:
        ref = (volume.get(source) or {}).get(field)
        names.add(ref.get("name", "") if isinstance(ref, dict) else ref or "")
    return names


def referenced(pod: Obj, kind: str) -> set[str]:
    """Names of the ConfigMaps (`kind` "configMap") or Secrets ("secret") a pod uses in
    its environment, volumes and (Secrets) image pull secrets."""
    spec = pod.get("spec") or {}
    names: set[str] = set()
    for container in _containers(spec):
        for source in container.get("envFrom") or []:
            names.add((source.get(f"{kind}Ref") or {}).get("name", ""))
        for item in container.get("env") or []:
            names.add(((item.get("valueFrom") or {}).get(f"{kind}KeyRef") or {})
                      .get("name", ""))
    volume_key, name_key = ("configMap", "name") if kind == "configMap" else \
        ("secret", "secretName")
    for volume in spec.get("volumes") or []:
        names.add((volume.get(volume_key) or {}).get(name_key, ""))
        for source in (volume.get("projected") or {}).get("sources") or []:
            names.add((source.get(kind) or {}).get("name", ""))
        if kind == "secret":
            names |= _volume_secret_names(volume)
    if kind == "secret":
        names.update(ref.get("name", "") for ref in spec.get("imagePullSecrets") or [])
    names.discard("")
    return names


class NodeAuthorizer:
    """Allows node identities what kubelets need; no opinion on everyone else."""

    def __init__(self, lookup: Lookup, in_namespace: NamespaceLookup) -> None:
        self.lookup = lookup
        self.in_namespace = in_namespace

    def authorize(self, attrs: Attributes) -> Decision:
        node = attrs.user.node_name
        if node is None:
            return _no()
        if not node:
            return _no(f'unknown node for user "{attrs.user.name}"')
        if attrs.resource_request:
            check = self._SUBDIVIDED.get((attrs.resource, attrs.group))
            if check is not None:
                return check(self, node, attrs)
            if attrs.verb in _STATIC_RULES.get((attrs.resource, attrs.group), ()) \
                    and not attrs.subresource:
                return _YES
        return _no()

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[Obj], list[str]]:
        """Nodes' permissions depend on objects, not rules: a rules review says so."""
        if user.node_name is None:
            return [], []
        return [], ["node authorizer does not support user rule resolution"]

    def _unrelated(self, node: str) -> Decision:
        return _no(f"no relationship found between node '{node}' and this object")

    def _nodes(self, node: str, attrs: Attributes) -> Decision:
        verb = attrs.verb
        if not attrs.subresource:
            if verb in ("create", "update", "patch"):
                return _YES  # admit() holds a node to its own Node
            if verb in _READ:
                if attrs.name == node:
                    return _YES
                if not attrs.name:
                    return _no(f"node '{node}' cannot read all nodes, only its own Node object")
                return _no(f"node '{node}' cannot read '{attrs.name}', only its own Node "
                           "object")
        elif attrs.subresource == "status" and verb in ("update", "patch"):
            return _YES
        return _no()

    def _leases(self, node: str, attrs: Attributes) -> Decision:
        if attrs.verb not in ("get", "create", "update", "patch", "delete"):
            return _no("can only get, create, update, patch, or delete a node lease")
        if attrs.namespace != NODE_LEASE_NAMESPACE:
            return _no(f'can only access leases in the "{NODE_LEASE_NAMESPACE}" system '
                       "namespace")
        if attrs.verb != "create" and attrs.name != node:
            return _no("can only access node lease with the same name as the requesting node")
        return _YES

    def _csi_nodes(self, node: str, attrs: Attributes) -> Decision:
        if attrs.subresource == "status":
            return _no("CSINode status access requires CSIVolumeHealth feature")
        if attrs.subresource:
            return _no("cannot authorize CSINode subresources")
        if attrs.verb not in ("get", "create", "update", "patch", "delete"):
            return _no("can only get, create, update, patch, or delete a CSINode")
        if attrs.verb != "create" and attrs.name != node:
            return _no("can only access CSINode with the same name as the requesting node")
        return _YES  # admit() holds a create to the node's own name

    def _pods(self, node: str, attrs: Attributes) -> Decision:
        verb, sub = attrs.verb, attrs.subresource
        if not sub:
            if verb == "get":
                return self._pod_related(node, attrs)
            if verb in ("list", "watch"):
                if _selected(attrs, "spec.nodeName") == node:
                    return _YES
                if attrs.name:
                    return self._pod_related(node, attrs)
                return _no("can only list/watch pods with spec.nodeName field selector")
            if verb in ("create", "delete"):
                return _YES  # admit() limits these to the node's own (mirror) pods
        elif (sub == "status" and verb in ("update", "patch")) or \
                (sub == "eviction" and verb == "create"):
            return _YES
        return _no()

    def _pod_related(self, node: str, attrs: Attributes) -> Decision:
        pod = self.lookup("pods", "", attrs.namespace, attrs.name)
        return _YES if pod is not None and node_of_pod(pod) == node \
            else self._unrelated(node)

    def _resource_slices(self, node: str, attrs: Attributes) -> Decision:
        if attrs.subresource:
            return _no("cannot authorize ResourceSlice subresources")
        verb = attrs.verb
        if verb == "create":
            return _YES  # admit() checks spec.nodeName in the body
        if verb in ("get", "update", "patch", "delete"):
            found = self.lookup("resourceslices", RESOURCE_GROUP, "", attrs.name)
            if found is not None and (found.get("spec") or {}).get("nodeName") == node:
                return _YES
            return self._unrelated(node)
        if verb in ("list", "watch", "deletecollection"):
            if _selected(attrs, "spec.nodeName", "nodeName") == node:
                return _YES
            return _no("can only list/watch/deletecollection resourceslices with nodeName "
                       "field selector")
        return _no("only the following verbs are allowed for a ResourceSlice: get, watch, "
                   "list, create, update, patch, delete, deletecollection")

    def _resource_claims(self, node: str, attrs: Attributes) -> Decision:
        # Only get, as upstream since 1.36: a node's kubelet reads the claims of its pods;
        # drivers write status.devices under their own identity (resourceclaims/driver,
        # statusauthz in the claim registry), and the scheduler and the resource claim
        # controller own allocation and reservedFor (resourceclaims/binding).
        if attrs.verb != "get":
            return _no("can only get individual resources of this type")
        if attrs.subresource:
            return _no("cannot get subresource")
        if not attrs.name:
            return _no("No Object name found")
        claim = self.lookup("resourceclaims", RESOURCE_GROUP, attrs.namespace, attrs.name)
        if claim is not None and claim_on_node(claim, attrs.namespace, node, self.lookup):
            return _YES
        # As upstream's graph: the claims a pod bound to the node names (its own, those
        # generated for it or for its PodGroup, its extended-resource claim), reserved
        # for the pod or not (a PodGroup's claim is reserved for the PodGroup).
        for pod in self.in_namespace("pods", "", attrs.namespace):
            if node_of_pod(pod) == node and attrs.name in pod_claims(pod):
                return _YES
        return self._unrelated(node)

    def _referenced_by_pods(self, node: str, attrs: Attributes) -> Decision:
        """Secrets and ConfigMaps: single objects that a pod bound to the node uses."""
        if attrs.verb not in _READ:
            return _no("can only read resources of this type")
        if attrs.subresource:
            return _no("cannot read subresource")
        if not attrs.namespace:
            return _no("can only read namespaced object of this type")
        if not attrs.name:
            return _no("No Object name found")
        kind = "configMap" if attrs.resource == "configmaps" else "secret"
        for pod in self.in_namespace("pods", "", attrs.namespace):
            if node_of_pod(pod) == node and attrs.name in referenced(pod, kind):
                return _YES
        return self._unrelated(node)

    def _service_accounts(self, node: str, attrs: Attributes) -> Decision:
        """Tokens for the service accounts of pods bound to the node (the kubelet mints
        the projected tokens of its pods); NodeRestriction then checks the binding."""
        if attrs.verb != "create" or not attrs.name:
            return _no("can only create tokens for individual service accounts")
        if attrs.subresource != "token":
            return _no("can only create token subresource of serviceaccount")
        for pod in self.in_namespace("pods", "", attrs.namespace):
            spec = pod.get("spec") or {}
            if spec.get("nodeName") == node and \
                    (spec.get("serviceAccountName") or "default") == attrs.name:
                return _YES
        return self._unrelated(node)

    _SUBDIVIDED: dict[tuple[str, str], Callable[[NodeAuthorizer, str, Attributes], Decision]] = {
        ("nodes", ""): _nodes,
        ("leases", "coordination.k8s.io"): _leases,
        ("csinodes", "storage.k8s.io"): _csi_nodes,
        ("pods", ""): _pods,
        ("resourceslices", RESOURCE_GROUP): _resource_slices,
        ("resourceclaims", RESOURCE_GROUP): _resource_claims,
        ("configmaps", ""): _referenced_by_pods,
        ("secrets", ""): _referenced_by_pods,
        ("serviceaccounts", ""): _service_accounts,
    }


# NodeRestriction ---------------------------------------------------------------------------
