"""The default roles and bindings every cluster has (`policy`), and how an existing one
is completed (`reconciled`); `controlplane/bootstraproles.py` writes them at start-up as
kube-apiserver's RBAC bootstrap (the `rbac/bootstrap-roles` post-start hook) does.

`policy.json` holds upstream's bootstrap policy (default feature gates): cluster-admin,
admin/edit/view and their aggregation labels, system:basic-user, system:discovery,
system:public-info-viewer, system:node, system:kube-scheduler,
system:kube-controller-manager, the system:controller:* roles of each controller, ...
with their bindings, and the Roles and RoleBindings of kube-system and kube-public.

Reconciliation only adds: a missing object is created; an existing one whose
`rbac.authorization.kubernetes.io/autoupdate` annotation is not "false" gets the labels,
annotations, rules, aggregation selectors and subjects it lacks. A binding whose roleRef
changed is deleted and created again (roleRef is immutable).
"""

from __future__ import annotations

import json
from pathlib import Path

from draemu.api.types import Obj
from draemu.apiserver.auth.rbac.rules import covers
from draemu.features import FeatureGates

GROUP = "rbac.authorization.k8s.io"
AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"
_POLICY = Path(__file__).with_name("policy.json")
# Policy keys -> (resource, kind).
KINDS = {"clusterRoles": ("clusterroles", "ClusterRole"),
          "clusterRoleBindings": ("clusterrolebindings", "ClusterRoleBinding"),
          "roles": ("roles", "Role"), "roleBindings": ("rolebindings", "RoleBinding")}


# Roles upstream adds only with a feature gate on (controller_policy.go), with their
# bindings to the controller's service account in kube-system.
_EVENTS_RULE = {"apiGroups": ["", "events.k8s.io"], "resources": ["events"],
                "verbs": ["create", "update", "patch"]}
_GATED_CONTROLLER_ROLES: dict[str, dict[str, list[Obj]]] = {
    "DRAResourcePoolStatus": {"resourcepoolstatusrequest-controller": [
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourcepoolstatusrequests"],
         "verbs": ["get", "list", "watch", "delete"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourcepoolstatusrequests/status"],
         "verbs": ["update", "patch"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"],
         "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"],
         "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["devicetaintrules"],
         "verbs": ["get", "list", "watch"]},
        _EVENTS_RULE]},
}


# Rules upstream adds to an existing role with a feature gate on.
_GATED_RULES: dict[str, dict[str, list[Obj]]] = {
    "DRAWorkloadResourceClaims": {"system:controller:resource-claim-controller": [
        {"apiGroups": ["scheduling.k8s.io"], "resources": ["podgroups"],
         "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["scheduling.k8s.io"], "resources": ["podgroups/status"],
         "verbs": ["update", "patch"]}]},
}


def _gated(gates: FeatureGates) -> dict[str, list[Obj]]:
    roles, bindings = [], []
    for gate, controllers in _GATED_CONTROLLER_ROLES.items():
        if not gates.enabled(gate):
            continue
        for controller, rules in controllers.items():
            name = f"system:controller:{controller}"
            roles.append({"name": name, "rules": rules})
            bindings.append({"name": name, "roleRef": {
                "apiGroup": GROUP, "kind": "ClusterRole", "name": name},
                "subjects": [{"kind": "ServiceAccount", "name": controller,
                              "namespace": "kube-system"}]})
    return {"clusterRoles": roles, "clusterRoleBindings": bindings}


def policy(gates: FeatureGates | None = None) -> dict[str, list[Obj]]:
    """Every bootstrap object, whole (kind, metadata with the common label and
    annotation), with the gated controller roles of the gates that are on."""
    gates = gates or FeatureGates()
    data = json.loads(_POLICY.read_text())
    for key, extra in _gated(gates).items():
        data[key] = data[key] + extra
    for gate, roles in _GATED_RULES.items():
        if gates.enabled(gate):
            for item in data["clusterRoles"]:
                if item["name"] in roles:
                    item["rules"] = item.get("rules", []) + roles[item["name"]]
    out: dict[str, list[Obj]] = {}
    for key, (_resource, kind) in KINDS.items():
        objects = []
        for item in data[key]:
            meta: Obj = {"name": item["name"]}
            if "namespace" in item:
                meta["namespace"] = item["namespace"]
            meta["labels"] = {"kubernetes.io/bootstrapping": "rbac-defaults",
                              **item.get("labels", {})}
            meta["annotations"] = {AUTOUPDATE: "true", **item.get("annotations", {})}
            obj: Obj = {"apiVersion": f"{GROUP}/v1", "kind": kind, "metadata": meta}
            for field in ("aggregationRule", "rules", "roleRef", "subjects"):
                if field in item:
                    obj[field] = item[field]
            objects.append(obj)
        out[key] = objects
    return out


def reconciled(expected: Obj, existing: Obj) -> Obj | None:
    """`existing` with what `expected` adds, or None when nothing is missing or the
    object is protected (autoupdate "false")."""
    meta = existing.get("metadata") or {}
    if (meta.get("annotations") or {}).get(AUTOUPDATE) == "false":
        return None
    out = json.loads(json.dumps(existing))
    out_meta = out["metadata"]
    for field in ("labels", "annotations"):
        merged = {**expected["metadata"].get(field, {}), **(out_meta.get(field) or {})}
        if merged != (out_meta.get(field) or {}):
            out_meta[field] = merged
    if "aggregationRule" in expected:
        wanted = expected["aggregationRule"].get("clusterRoleSelectors") or []
        rule = out.setdefault("aggregationRule", {})
        have = rule.setdefault("clusterRoleSelectors", [])
        have.extend(s for s in wanted if s not in have)
    elif expected.get("rules") and out.get("rules") != expected["rules"]:
        # (Equal rules, what every start finds, cover themselves: no covering check.)
        ok, missing = covers(out.get("rules") or [], expected["rules"])
        if not ok:
            out["rules"] = [*(out.get("rules") or []), *missing]
    if "subjects" in expected:
        have = out.setdefault("subjects", [])
        have.extend(s for s in expected["subjects"] if s not in have)
        if not have:
            out.pop("subjects")
    return None if out == existing else out
