"""NodeRestriction admission for node identities (`system:node:<name>`), simplified:
what the Node authorizer (`auth/nodeauthorizer.py`) lets a node request, refused again
when the object itself says the node may not (upstream's messages).

The plugin (`NodeRestriction`, mutating phase) runs `admit` on a node's creates (with the
object it sends), updates and deletes: a node may create only its own Node (without
labels a kubelet may not set), its own Lease, CSINode and ResourceSlices, mirror pods
owned by its Node that refer to no other object, and tokens bound to its own pods.
`admit_update` holds the update rules, on the proposed object of a PUT or PATCH (before
the mutating webhooks) against the stored one: on its
Node (main resource or /status) a node may not change its taints, owner references or
config source, nor labels outside what kubelets set (`kubelet_may_set_label`); on a
pod's status, neither its labels nor its resourceClaimStatuses.
"""

from __future__ import annotations

from typing import Any

from draemu.api.errors import StatusError, forbidden_error, not_found_error
from draemu.api.nodelabels import kubelet_may_set_label
from draemu.api.types import Obj
from draemu.apiserver.admission.chain import AdmissionServices
from draemu.apiserver.admission.chain import Attributes as AdmissionAttributes
from draemu.apiserver.auth.authorization import Attributes
from draemu.apiserver.auth.nodeauthorizer import (
    RESOURCE_GROUP,
    Lookup,
    node_of_pod,
    referenced,
)


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


MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"


def admit(attrs: Attributes, lookup: Lookup, obj: Obj | None) -> None:
    """Refuse (403) what an authorized node request may still not do to these objects.
    `obj` is the request's object on a create."""
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
    if node_of_pod(pod) != node:
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
    if node_of_pod(old) != node:
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
    if node_of_pod(existing) == node:
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
    if node_of_pod(pod) != node:
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


class NodeRestriction:
    """The admission plugin: a node's creates (on the object it sends), updates (the
    proposed object against the stored one) and deletes."""

    operations = frozenset({"CREATE", "UPDATE", "DELETE"})

    def __init__(self, services: AdmissionServices) -> None:
        self.lookup = services.objects.lookup

    async def admit(self, attrs: AdmissionAttributes) -> None:
        if attrs.user.node_name is None:
            return
        request, resource = attrs.request, attrs.resource
        node_attrs = Attributes(attrs.user, request.verb, resource.group, request.version,
                                resource.name, attrs.subresource, attrs.namespace,
                                attrs.name)
        if attrs.operation == "CREATE":
            admit(node_attrs, self.lookup, attrs.served(attrs.obj))
            return
        admit(node_attrs, self.lookup, None)
        if attrs.operation == "UPDATE" and attrs.obj is not None and attrs.old is not None:
            admit_update(node_attrs, attrs.obj, attrs.old)
