"""RBAC through the API: bootstrap policy, the authorizer's decisions and 403 texts,
escalation prevention, validation."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from draemu.cmd.testing.e2e import eventually

pytestmark = pytest.mark.unit

RBAC = "/apis/rbac.authorization.k8s.io/v1"
CM = "/api/v1/namespaces/default/configmaps"


def role(name: str, *rules: dict[str, Any], kind: str = "Role") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if kind == "Role":
        meta["namespace"] = "default"
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta,
            "rules": list(rules)}


def binding(name: str, role_name: str, user: str, *, kind: str = "RoleBinding",
            role_kind: str = "Role") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if kind == "RoleBinding":
        meta["namespace"] = "default"
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind,
                        "name": role_name},
            "subjects": [{"kind": "User", "name": user}]}


def rule(resources: list[str], verbs: list[str], group: str = "") -> dict[str, Any]:
    return {"apiGroups": [group], "resources": resources, "verbs": verbs}


async def grant(admin: Any, name: str, user: str, *rules: dict[str, Any]) -> None:
    assert (await admin.post(f"{RBAC}/namespaces/default/roles", role(name, *rules))).status == 201
    reply = await admin.post(f"{RBAC}/namespaces/default/rolebindings",
                             binding(name, name, user))
    assert reply.status == 201, reply.json


async def test_bootstrap_roles_and_bindings_exist(as_user) -> None:
    admin = as_user()
    names = {r["metadata"]["name"] for r in (await admin.get(f"{RBAC}/clusterroles")).json["items"]}
    assert {"cluster-admin", "admin", "edit", "view", "system:basic-user", "system:discovery",
            "system:public-info-viewer", "system:node", "system:node-proxier",
            "system:kube-scheduler", "system:kube-controller-manager",
            "system:volume-scheduler", "system:auth-delegator", "system:monitoring",
            "system:controller:resource-claim-controller"} <= names
    edit = (await admin.get(f"{RBAC}/clusterroles/edit")).json
    assert edit["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-admin"] == "true"
    assert edit["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"] == "true"
    masters = (await admin.get(f"{RBAC}/clusterrolebindings/cluster-admin")).json
    assert masters["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                                    "name": "system:masters"}]
    leader = await admin.get(f"{RBAC}/namespaces/kube-system/roles/"
                             "system::leader-locking-kube-scheduler")
    assert leader.status == 200


async def test_a_user_without_bindings_may_discover_and_review_itself_only(as_user) -> None:
    bob = as_user("bob")
    assert (await bob.get("/apis")).status == 200
    assert (await bob.get("/version")).status == 200
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
              "spec": {"resourceAttributes": {"verb": "get", "resource": "pods",
                                              "namespace": "default"}}}
    reply = await bob.post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review)
    assert reply.status == 201 and reply.json["status"]["allowed"] is False
    denied = await bob.get(CM)
    assert denied.status == 403
    assert denied.json["message"] == ('configmaps is forbidden: User "bob" cannot list '
                                      'resource "configmaps" in API group "" in the namespace '
                                      '"default"')


async def test_a_role_limited_to_configmaps_get(as_user) -> None:
    admin, bob = as_user(), as_user("bob")
    assert (await admin.post(CM, {"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": "c"}})).status == 201
    await grant(admin, "cm-reader", "bob", rule(["configmaps"], ["get"]))
    got = await eventually(lambda: _status_is(bob, f"{CM}/c", 200))
    assert got
    secret = await bob.get("/api/v1/namespaces/default/secrets/s")
    assert secret.status == 403
    assert secret.json["message"] == ('secrets "s" is forbidden: User "bob" cannot get '
                                      'resource "secrets" in API group "" in the namespace '
                                      '"default"')
    assert secret.json["details"] == {"name": "s", "kind": "secrets"}
    other_ns = await bob.get("/api/v1/namespaces/kube-system/configmaps/c")
    assert other_ns.status == 403


async def _status_is(client: Any, path: str, status: int) -> bool:
    return (await client.get(path)).status == status


async def test_a_binding_to_a_missing_role_is_accepted_and_grants_nothing(as_user) -> None:
    admin, bob = as_user(), as_user("bob")
    reply = await admin.post(f"{RBAC}/namespaces/default/rolebindings",
                             binding("b", "missing", "bob"))
    assert reply.status == 201
    await asyncio.sleep(0.1)
    denied = await bob.get(f"{CM}/x")
    assert denied.status == 403
    assert denied.json["message"].endswith(
        'in the namespace "default": RBAC: role.rbac.authorization.k8s.io "missing" not found')


async def test_a_role_granting_more_than_its_author_holds_is_refused(as_user) -> None:
    admin, bob = as_user(), as_user("bob")
    await grant(admin, "role-writer", "bob", rule(["roles"], ["create", "update", "get"],
                                                   "rbac.authorization.k8s.io"),
                rule(["configmaps"], ["get", "list"]))
    await eventually(lambda: _status_is(bob, f"{CM}", 200))
    ok = await bob.post(f"{RBAC}/namespaces/default/roles",
                        role("fine", rule(["configmaps"], ["get"])))
    assert ok.status == 201, ok.json
    refused = await bob.post(f"{RBAC}/namespaces/default/roles",
                             role("greedy", rule(["configmaps", "secrets"], ["get", "delete"])))
    assert refused.status == 403
    assert refused.json["message"] == (
        'roles.rbac.authorization.k8s.io "greedy" is forbidden: user "bob" '
        '(groups=["system:authenticated"]) is attempting to grant RBAC permissions not '
        'currently held:\n'
        '{APIGroups:[""], Resources:["configmaps"], Verbs:["delete"]}\n'
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "delete"]}')
    assert refused.json["details"] == {"name": "greedy", "group": "rbac.authorization.k8s.io",
                                       "kind": "roles"}
    # An update that adds a permission is checked too.
    current = (await bob.get(f"{RBAC}/namespaces/default/roles/fine")).json
    current["rules"].append(rule(["secrets"], ["get"]))
    assert (await bob.put(f"{RBAC}/namespaces/default/roles/fine", current)).status == 403


async def test_escalate_verb_lifts_the_check(as_user) -> None:
    admin, bob = as_user(), as_user("bob")
    await grant(admin, "escalator", "bob", rule(["roles"], ["create", "escalate"],
                                                 "rbac.authorization.k8s.io"))
    await asyncio.sleep(0.1)
    reply = await bob.post(f"{RBAC}/namespaces/default/roles",
                           role("any", rule(["secrets"], ["*"])))
    assert reply.status == 201, reply.json


async def test_binding_a_role_needs_its_permissions_or_bind(as_user) -> None:
    admin, bob = as_user(), as_user("bob")
    await grant(admin, "binder", "bob", rule(["rolebindings"], ["create"],
                                             "rbac.authorization.k8s.io"))
    assert (await admin.post(f"{RBAC}/namespaces/default/roles",
                             role("secret-reader", rule(["secrets"], ["get"])))).status == 201
    await asyncio.sleep(0.1)
    refused = await bob.post(f"{RBAC}/namespaces/default/rolebindings",
                             binding("mine", "secret-reader", "bob"))
    assert refused.status == 403
    assert refused.json["message"] == (
        'rolebindings.rbac.authorization.k8s.io "mine" is forbidden: user "bob" '
        '(groups=["system:authenticated"]) is attempting to grant RBAC permissions not '
        'currently held:\n{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}')
    missing = await bob.post(f"{RBAC}/namespaces/default/rolebindings",
                             binding("nothing", "no-such-role", "bob"))
    assert missing.status == 403
    assert missing.json["message"] == (
        'rolebindings.rbac.authorization.k8s.io "nothing" is forbidden: '
        'role.rbac.authorization.k8s.io "no-such-role" not found')
    await grant(admin, "bind-it", "bob", {"apiGroups": ["rbac.authorization.k8s.io"],
                                          "resources": ["roles"], "verbs": ["bind"],
                                          "resourceNames": ["secret-reader"]})
    await asyncio.sleep(0.1)
    allowed = await bob.post(f"{RBAC}/namespaces/default/rolebindings",
                             binding("mine", "secret-reader", "bob"))
    assert allowed.status == 201, allowed.json


async def test_an_aggregation_rule_needs_every_permission(as_user) -> None:
    admin, bob = as_user(), as_user("bob")
    assert (await admin.post(f"{RBAC}/clusterroles", role(
        "cr-writer", rule(["clusterroles"], ["create"], "rbac.authorization.k8s.io"),
        kind="ClusterRole"))).status == 201
    assert (await admin.post(f"{RBAC}/clusterrolebindings", binding(
        "cr-writer", "cr-writer", "bob", kind="ClusterRoleBinding",
        role_kind="ClusterRole"))).status == 201
    await asyncio.sleep(0.1)
    aggregated = role("gather", kind="ClusterRole")
    aggregated["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}
    refused = await bob.post(f"{RBAC}/clusterroles", aggregated)
    assert refused.status == 403
    assert refused.json["message"] == (
        'clusterroles.rbac.authorization.k8s.io "gather" is forbidden: must have '
        'cluster-admin privileges to use the aggregationRule')


async def test_validation_of_rules_and_bindings(as_user) -> None:
    admin = as_user()
    bad = await admin.post(f"{RBAC}/namespaces/default/roles", role(
        "bad", {"apiGroups": [""], "resources": ["pods"]},
        {"verbs": ["get"], "nonResourceURLs": ["/healthz"]}))
    assert bad.status == 422
    assert [c["field"] for c in bad.json["details"]["causes"]] == [
        "rules[0].verbs", "rules[1].nonResourceURLs"]
    assert "namespaced rules cannot apply to non-resource URLs" in bad.json["message"]
    wrong_kind = binding("x", "r", "u", kind="ClusterRoleBinding")
    reply = await admin.post(f"{RBAC}/clusterrolebindings", wrong_kind)
    assert reply.status == 422
    assert 'roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"' in \
        reply.json["message"]
    made = await admin.post(f"{RBAC}/namespaces/default/rolebindings", binding("b", "r", "u"))
    assert made.json["subjects"][0]["apiGroup"] == "rbac.authorization.k8s.io"
    changed = made.json
    changed["roleRef"]["name"] = "other"
    reply = await admin.put(f"{RBAC}/namespaces/default/rolebindings/b", changed)
    assert reply.status == 422
    assert reply.json["details"]["causes"][0]["message"] == (
        'Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"Role", '
        'Name:"other"}: field is immutable')


async def test_service_account_subjects_match_service_account_users(server, as_user) -> None:
    from draemu.apiserver.auth.rbac.authorizer import applies_to
    from draemu.identity import UserInfo

    sa = UserInfo("system:serviceaccount:ns1:driver")
    assert applies_to(sa, {"kind": "ServiceAccount", "name": "driver", "namespace": "ns1"}, "")
    assert applies_to(sa, {"kind": "ServiceAccount", "name": "driver"}, "ns1")
    assert not applies_to(sa, {"kind": "ServiceAccount", "name": "driver"}, "ns2")
