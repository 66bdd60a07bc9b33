"""What kubelets (and drivers running with node credentials) may do: Kubernetes' Node
authorizer and NodeRestriction admission, simplified.

A node identity (`system:node:<name>` in `system:nodes`) may read and write its own
Node, its Lease and CSINode, the pods bound to it, Events, the ResourceSlices of its
node, and the ResourceClaims its pods use (and, since drivers here run with node credentials, their
status). Upstream's object graph is replaced by lookups in the watch cache: an object is
related to a node when the node can be read off the object (a pod's spec.nodeName, a
slice's spec.nodeName, a claim reserved for a pod bound to the node or allocated to
devices of the node, a Secret or ConfigMap that a pod bound to the node refers to).
Volumes and service account tokens are not served to nodes (no pod here mounts them).

`NodeAuthorizer` decides from the request alone, as upstream's authorizer does;
`admit` is the part of NodeRestriction that needs the object in the request body (on
create) or the stored object, and words its refusals as that admission plugin does. On
an update of its Node (main resource or /status) a node may not change its taints, owner
references or config source, nor labels outside what kubelets set (`kubelet_may_set_label`);
on an update of a pod's status, neither its labels nor its resourceClaimStatuses; a pod it
creates must be a mirror pod owned by its Node that refers to no other object.
`admit_update` holds these update rules: `admit` applies them to a PUT (the body is the
whole new object, compared with the watch cache's). A PATCH's result exists only inside
the update pipeline, which does not call `admit_update` yet: patches are not checked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from draemu.api.errors import StatusError, forbidden_error, not_found_error
from draemu.api.nodelabels import kubelet_may_set_label
from draemu.api.types import Obj
from draemu.apiserver.auth import Attributes, Decision
from draemu.apiserver.selectors import parse_field_selector
from draemu.identity import UserInfo

# (resource, group, namespace, name) -> the object in the watch cache, or None.
Lookup = Callable[[str, str, str, str], Any]
# (resource, group, namespace) -> every object of the namespace in the watch cache.
NamespaceLookup = Callable[[str, str, str], list[Obj]]

NODE_LEASE_NAMESPACE = "kube-node-lease"
RESOURCE_GROUP = "resource.k8s.io"
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"

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


def _node_of_pod(pod: Obj | None) -> str:
    return ((pod or {}).get("spec") or {}).get("nodeName") or ""


def claim_on_node(claim: Obj, namespace: str, node: str, lookup: Lookup) -> bool:
    """A claim is a node's business when it is reserved for a pod bound to the node, or
    allocated to devices that only this node has."""
    status = claim.get("status") or {}
    for ref in status.get("reservedFor") or []:
        if ref.get("resource") == "pods" and not ref.get("apiGroup"):
            pod = lookup("pods", "", namespace, ref.get("name", ""))
            if _node_of_pod(pod) == node:
                return True
    selector = (status.get("allocation") or {}).get("nodeSelector") or {}
    for term in selector.get("nodeSelectorTerms") or []:
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and field.get("operator") == "In" \
                    and node in (field.get("values") or []):
                return True
    return False


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
        return _YES if pod is not None and _node_of_pod(pod) == node \
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
            if _node_of_pod(pod) == node and attrs.name in referenced(pod, kind):
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
def _forbidden_labels(new: Obj, old: Obj) -> str:
    """The labels a node changed (added, removed or given another value) that it may
    not, sorted and comma-separated as upstream lists them."""
    new_labels = (new.get("metadata") or {}).get("labels") or {}
    old_labels = (old.get("metadata") or {}).get("labels") or {}
    changed = {k for k in new_labels.keys() | old_labels.keys()
               if new_labels.get(k) != old_labels.get(k)}
    return ", ".join(sorted(k for k in changed if not kubelet_may_set_label(k)))


def _semantic(value: Any) -> Any:
    """A JSON value as Go compares the typed object: absent, null and empty are alike."""
    if isinstance(value, dict):
        kept = {k: _semantic(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in (None, "", [], {})}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def needs_body(attrs: Attributes) -> bool:
    """Whether `admit` must see the request's object: the creates it checks. (Updates
    and patches are checked by `admit_update` in the update pipeline, on the proposed
    object against the stored one.)"""
    if attrs.user.node_name is None or attrs.verb != "create":
        return False
    if (attrs.resource, attrs.group, attrs.subresource) == ("serviceaccounts", "", "token"):
        return True
    return not attrs.subresource and (attrs.resource, attrs.group) in _CREATE_CHECKED


_CREATE_CHECKED = frozenset({("nodes", ""), ("pods", ""), ("leases", "coordination.k8s.io"),
                             ("csinodes", "storage.k8s.io"),
                             ("resourceslices", RESOURCE_GROUP)})


def admit(attrs: Attributes, lookup: Lookup, obj: Obj | None) -> None:
    """Refuse (403) what an authorized node request may still not do to these objects.
    `obj` is the request's object when `needs_body` asked for it."""
    node = attrs.user.node_name
    if not node:
        return
    name = attrs.name or ((obj or {}).get("metadata") or {}).get("name", "")
    key = (attrs.resource, attrs.group)
    message = ""
    if key == ("nodes", ""):
        message = _admit_node(node, attrs, name, lookup, obj)
    elif key == ("pods", ""):
        message = _admit_pod(node, attrs, lookup, obj)
    elif key == ("serviceaccounts", "") and attrs.subresource == "token":
        message = _token_refusal(node, attrs, lookup, obj)
    elif key == ("leases", "coordination.k8s.io") and name != node:
        message = "can only access node lease with the same name as the requesting node"
    elif key == ("csinodes", "storage.k8s.io") and name != node:
        message = "can only access CSINode with the same name as the requesting node"
    elif key == ("resourceslices", RESOURCE_GROUP) and attrs.verb == "create" and \
            ((obj or {}).get("spec") or {}).get("nodeName") != node:
        message = "can only create ResourceSlice with the same NodeName as the requesting node"
    if message:
        raise _forbidden(attrs, name, message)


def _token_refusal(node: str, attrs: Attributes, lookup: Lookup, obj: Obj | None) -> str:
    """A node's token must be bound to a pod of its own (the apiserver adds the node)."""
    ref = ((obj or {}).get("spec") or {}).get("boundObjectRef")
    if not ref:
        return "node requested token not bound to a pod"
    if not ref.get("uid"):
        return "node requested token with a pod binding without a uid"
    if ref.get("kind") != "Pod":
        return "node requested token not bound to a pod"
    pod = lookup("pods", "", attrs.namespace, ref.get("name", ""))
    if pod is None:
        raise not_found_error("pods", "", ref.get("name", ""))
    if ref["uid"] != (pod.get("metadata") or {}).get("uid"):
        return (f"the UID in the bound object reference ({ref['uid']}) does not match the UID "
                "in record. The object might have been deleted and then recreated")
    if _node_of_pod(pod) != node:
        return "node requested token bound to a pod scheduled on a different node"
    return ""


def admit_update(attrs: Attributes, new: Obj, old: Obj) -> None:
    """NodeRestriction on an update of a Node (main resource or a subresource) or of a
    pod's status: `new` is the proposed object (the body of a PUT, or a patch applied to
    `old`) before the strategy resets what the subresource may not change, as upstream
    admits it."""
    node = attrs.user.node_name
    if not node:
        return
    if (attrs.resource, attrs.group) == ("nodes", ""):
        message = _node_update_refusal(node, new, old)
    elif (attrs.resource, attrs.group, attrs.subresource) == ("pods", "", "status"):
        message = _pod_status_update_refusal(node, new, old)
    else:
        return
    if message:
        raise _forbidden(attrs, attrs.name, message)


def _admit_node(node: str, attrs: Attributes, name: str, lookup: Lookup,
                obj: Obj | None) -> str:
    if name != node:
        return f'node "{node}" is not allowed to modify node "{name}"'
    if attrs.verb == "create" and obj is not None:
        return _node_create_refusal(node, obj)
    return ""


def _node_create_refusal(node: str, obj: Obj) -> str:
    # A node's access is scoped by its Node's spec: a config source of its own choosing
    # would widen what it may read. (Upstream's message says "pods"; kept as it is.)
    if (obj.get("spec") or {}).get("configSource") is not None:
        return f'node "{node}" is not allowed to create pods with a non-nil configSource'
    forbidden = _forbidden_labels(obj, {})
    if forbidden:
        return f'node "{node}" is not allowed to set the following labels: {forbidden}'
    return ""


def _node_update_refusal(node: str, new: Obj, old: Obj) -> str:
    spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    # A kubelet that drops configSource on a status update changes nothing.
    source = spec.get("configSource")
    if source is not None and _semantic(source) != _semantic(old_spec.get("configSource")):
        return f'node "{node}" is not allowed to update configSource to a new non-nil ' \
            "configSource"
    # Taints are the administrator's (and the node lifecycle controller's) tool to keep
    # workloads off a node; a node sets them only when it registers.
    if _semantic(spec.get("taints") or []) != _semantic(old_spec.get("taints") or []):
        return f'node "{node}" is not allowed to modify taints'
    # An owner that goes away would have the garbage collector delete the Node, which the
    # node could then register again with labels and taints of its choosing.
    owners = (new.get("metadata") or {}).get("ownerReferences") or []
    old_owners = (old.get("metadata") or {}).get("ownerReferences") or []
    if _semantic(owners) != _semantic(old_owners):
        return f'node "{node}" is not allowed to modify ownerReferences'
    forbidden = _forbidden_labels(new, old)
    if forbidden:
        return f"is not allowed to modify labels: {forbidden}"
    return ""


def _pod_status_update_refusal(node: str, new: Obj, old: Obj) -> str:
    if _node_of_pod(old) != node:
        return f'node "{node}" can only update pod status for pods with spec.nodeName set ' \
            "to itself"
    if ((new.get("metadata") or {}).get("labels") or {}) != \
            ((old.get("metadata") or {}).get("labels") or {}):
        return f'node "{node}" cannot update labels through pod status'
    if _claim_statuses(new) != _claim_statuses(old):
        # Which claim a pod's claim entry resolved to is the resource claim controller's
        # to say; the node only reads it. (Upstream's typo kept.)
        return f'node "{node}" cannot update resource claim statues'
    return ""


def _claim_statuses(pod: Obj) -> list[tuple[str, str | None]]:
    return [(s.get("name") or "", s.get("resourceClaimName"))
            for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []]


def _admit_pod(node: str, attrs: Attributes, lookup: Lookup, obj: Obj | None) -> str:
    verb, sub = attrs.verb, attrs.subresource
    if verb == "create" and not sub:
        return _mirror_pod_refusal(node, obj or {}, lookup)
    existing = lookup("pods", "", attrs.namespace, attrs.name)
    if existing is None:
        return ""  # the handler answers NotFound
    if _node_of_pod(existing) == node:
        return ""
    if verb == "delete" and not sub:
        return f'node "{node}" can only delete pods with spec.nodeName set to itself'
    if sub == "status":
        return f'node "{node}" can only update pod status for pods with spec.nodeName set ' \
            "to itself"
    if sub == "eviction":
        return f"node {node} can only evict pods with spec.nodeName set to itself"
    return ""


def _mirror_pod_refusal(node: str, pod: Obj, lookup: Lookup) -> str:
    """A node creates only mirror pods of its static pods: bound to itself, owned (as
    controller) by its own Node, and referring to no other API object it could use to
    reach data it is not given otherwise."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    if MIRROR_POD_ANNOTATION not in (meta.get("annotations") or {}):
        return (f'pod does not have "{MIRROR_POD_ANNOTATION}" annotation, node "{node}" '
                "can only create mirror pods")
    if _node_of_pod(pod) != node:
        return f'node "{node}" can only create pods with spec.nodeName set to itself'
    refusal = _mirror_pod_owner_refusal(node, meta.get("ownerReferences") or [], lookup)
    if refusal:
        return refusal
    if spec.get("serviceAccountName") or spec.get("serviceAccount"):
        return f'node "{node}" can not create pods that reference a service account'
    if referenced(pod, "secret"):
        return f'node "{node}" can not create pods that reference secrets'
    if referenced(pod, "configMap"):
        return f'node "{node}" can not create pods that reference configmaps'
    volumes = spec.get("volumes") or []
    if any(source.get("clusterTrustBundle") is not None
           for volume in volumes
           for source in (volume.get("projected") or {}).get("sources") or []):
        return f'node "{node}" can not create pods that reference clustertrustbundles'
    if any(volume.get("persistentVolumeClaim") is not None for volume in volumes):
        return f'node "{node}" can not create pods that reference persistentvolumeclaims'
    return ""


def _mirror_pod_owner_refusal(node: str, owners: list[Obj], lookup: Lookup) -> str:
    if len(owners) > 1:
        return f'node "{node}" can only create pods with a single owner reference set to itself'
    if not owners:
        return f'node "{node}" can only create pods with an owner reference set to itself'
    owner = owners[0]
    if (owner.get("apiVersion"), owner.get("kind"), owner.get("name")) != ("v1", "Node", node):
        return f'node "{node}" can only create pods with an owner reference set to itself'
    if owner.get("controller") is not True:
        return (f'node "{node}" can only create pods with a controller owner reference set to '
                "itself")
    if owner.get("blockOwnerDeletion") is True:
        return f'node "{node}" must not set blockOwnerDeletion on an owner reference'
    found = lookup("nodes", "", "", node)
    if found is None:
        raise not_found_error("nodes", "", node)
    uid = (found.get("metadata") or {}).get("uid", "")
    if owner.get("uid", "") != uid:
        # Upstream words it with the owner's uid as the expected one.
        return f"node {node} UID mismatch: expected {owner.get('uid', '')} got {uid}"
    return ""


def _forbidden(attrs: Attributes, name: str, message: str) -> StatusError:
    qualified = f"{attrs.resource}.{attrs.group}" if attrs.group else attrs.resource
    details: dict[str, Any] = {"name": name, "kind": attrs.resource}
    if attrs.group:
        details["group"] = attrs.group
    return forbidden_error(f'{qualified} "{name}" is forbidden: {message}', details)
