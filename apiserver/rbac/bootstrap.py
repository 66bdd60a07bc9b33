"""The default roles and bindings every cluster has, reconciled at start-up as
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

import asyncio
import json
from pathlib import Path
from typing import Any

from draemu.api.errors import StatusError
from draemu.api.types import Obj
from draemu.apiserver.codec import Accept
from draemu.apiserver.rbac.rules import covers
from draemu.apiserver.requestinfo import RequestInfo
from draemu.apiserver.resources import Resource, ResourceTable
from draemu.apiserver.rest_write import create_object, run_update
from draemu.apiserver.scope import Scope
from draemu.apiserver.storage import Storage, Unchanged
from draemu.features import FeatureGates
from draemu.identity import MASTERS, UserInfo

GROUP = "rbac.authorization.k8s.io"
AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"
_POLICY = Path(__file__).with_name("policy.json")
_SYSTEM_USER = UserInfo("system:apiserver", groups=(MASTERS,))
_KINDS = {"clusterRoles": ("clusterroles", "ClusterRole"),
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
    for key, (_resource, kind) in _KINDS.items():
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


def _scope(table: ResourceTable, storage: Storage, resource: Resource, verb: str,
           namespace: str, name: str, gates: FeatureGates) -> Scope:
    def lookup(resource: str, group: str, namespace: str, name: str) -> Any:
        r = table.by_group_resource(group, resource)
        return storage.cache.get(r.key(namespace, name)) if r is not None else None

    version = resource.strategy.storage_version
    info = RequestInfo(f"/apis/{GROUP}/{version}/{resource.name}", verb, True, GROUP, version,
                       namespace, resource.name, name)
    return Scope(None, info, resource, version, namespace, _SYSTEM_USER,  # type: ignore[arg-type]
                 Accept(), gates, lookup)


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


async def _ensure(table: ResourceTable, storage: Storage, gates: FeatureGates,
                  resource: Resource, expected: Obj) -> None:
    meta = expected["metadata"]
    namespace, name = meta.get("namespace", ""), meta["name"]
    existing = storage.cache.get(resource.key(namespace, name))
    if existing is not None and "roleRef" in expected and \
            existing.get("roleRef") != expected["roleRef"] and \
            (existing["metadata"].get("annotations") or {}).get(AUTOUPDATE) != "false":
        await storage.delete(resource, namespace, name,
                             int(existing["metadata"]["resourceVersion"]))
        existing = None
    if existing is None:
        scope = _scope(table, storage, resource, "create", namespace, "", gates)
        try:
            await create_object(scope, storage, json.loads(json.dumps(expected)),
                                dry_run=False, manager="kube-apiserver")
        except StatusError as e:
            if e.reason != "AlreadyExists":  # another apiserver on the same store was first
                raise
        return
    if reconciled(expected, existing) is None:
        return

    async def propose(current: Obj) -> Obj:
        new = reconciled(expected, current)
        if new is None:
            raise Unchanged()
        return new

    scope = _scope(table, storage, resource, "update", namespace, name, gates)
    await run_update(scope, storage, propose,
                     dry_run=False, manager="kube-apiserver", pinned=False)


async def ensure_bootstrap_policy(table: ResourceTable, storage: Storage,
                                  gates: FeatureGates) -> None:
    """Create or complete every bootstrap role, then every binding."""
    objects = policy(gates)
    for keys in (("clusterRoles", "roles"), ("clusterRoleBindings", "roleBindings")):
        work = []
        for key in keys:
            resource = table.by_group_resource(GROUP, _KINDS[key][0])
            if resource is None:
                return
            work += [_ensure(table, storage, gates, resource, obj) for obj in objects[key]]
        await asyncio.gather(*work)
    await storage.caught_up()
