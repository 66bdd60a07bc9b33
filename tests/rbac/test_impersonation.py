"""Impersonation headers: who may impersonate whom, and what the request then is."""

from __future__ import annotations

import asyncio

import pytest
from test_rbac_api import RBAC, binding, grant, role, rule

pytestmark = pytest.mark.unit
CM = "/api/v1/namespaces/default/configmaps"
SSR = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
WHOAMI = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}


async def test_an_admin_impersonating_a_user_gets_that_users_rights(as_user) -> None:
    alice = as_user(None, Impersonate_User="alice")
    denied = await alice.get("/api/v1/namespaces/default/secrets")
    assert denied.status == 403
    assert denied.json["message"] == ('secrets is forbidden: User "alice" cannot list '
                                      'resource "secrets" in API group "" in the namespace '
                                      '"default"')
    who = await alice.post(SSR, WHOAMI)
    assert who.json["status"]["userInfo"] == {"username": "alice",
                                              "groups": ["system:authenticated"]}


async def test_groups_uid_and_extra_are_impersonated(as_user) -> None:
    who = await as_user(None, Impersonate_User="alice", Impersonate_Group="devs",
                        Impersonate_Uid="u-1",
                        **{"Impersonate-Extra-Team%2Fname": "gpu"}).post(SSR, WHOAMI)
    assert who.status == 201, who.json
    assert who.json["status"]["userInfo"] == {
        "username": "alice", "uid": "u-1", "groups": ["devs", "system:authenticated"],
        "extra": {"team/name": ["gpu"]}}


async def test_a_service_account_gets_its_groups(as_user) -> None:
    who = await as_user(None, Impersonate_User="system:serviceaccount:ns1:sa").post(SSR, WHOAMI)
    assert who.json["status"]["userInfo"]["groups"] == [
        "system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"]


async def test_groups_without_a_user_are_a_bad_request(as_user) -> None:
    reply = await as_user(None, Impersonate_Group="devs").get(CM)
    assert reply.status == 400
    assert reply.json["message"] == (
        'requested &user.DefaultInfo{Name:"", UID:"", Groups:[]string{"devs"}, '
        'Extra:map[string][]string(nil)} without impersonating a user name')


async def test_a_user_without_the_impersonate_verb_is_refused(as_user) -> None:
    reply = await as_user("bob", Impersonate_User="alice").get(CM)
    assert reply.status == 403
    # The first constrained mode that applies (user-info) answers.
    assert reply.json["message"] == (
        'configmaps is forbidden: User "bob" cannot impersonate-on:user-info:list resource '
        '"configmaps" in API group "" in the namespace "default"')


async def test_the_legacy_impersonate_verb_allows_it(as_user) -> None:
    admin = as_user()
    assert (await admin.post(f"{RBAC}/clusterroles", role(
        "impersonator", rule(["users"], ["impersonate"]), kind="ClusterRole"))).status == 201
    assert (await admin.post(f"{RBAC}/clusterrolebindings", binding(
        "impersonator", "impersonator", "bob", kind="ClusterRoleBinding",
        role_kind="ClusterRole"))).status == 201
    await grant(admin, "alice-cm", "alice", rule(["configmaps"], ["list"]))
    await asyncio.sleep(0.1)
    assert (await as_user("bob", Impersonate_User="alice").get(CM)).status == 200
    assert (await as_user("bob").get(CM)).status == 403
    groups = await as_user("bob", Impersonate_User="alice", Impersonate_Group="x").get(CM)
    assert groups.status == 403
    assert groups.json["message"] == (
        'configmaps is forbidden: User "bob" cannot impersonate-on:user-info:list resource '
        '"configmaps" in API group "" in the namespace "default"')


async def test_constrained_impersonation_of_a_service_account(as_user) -> None:
    admin = as_user()
    assert (await admin.post(f"{RBAC}/clusterroles", role(
        "sa-impersonator",
        rule(["configmaps"], ["impersonate-on:serviceaccount:list"]),
        rule(["serviceaccounts"], ["impersonate:serviceaccount"], "authentication.k8s.io"),
        kind="ClusterRole"))).status == 201
    assert (await admin.post(f"{RBAC}/clusterrolebindings", binding(
        "sa-impersonator", "sa-impersonator", "bob", kind="ClusterRoleBinding",
        role_kind="ClusterRole"))).status == 201
    await asyncio.sleep(0.1)
    sa = "system:serviceaccount:default:driver"
    reply = await as_user("bob", Impersonate_User=sa).get(CM)
    assert reply.status == 403  # impersonation allowed, but the account may not list
    assert reply.json["message"] == (
        'configmaps is forbidden: User "system:serviceaccount:default:driver" cannot list '
        'resource "configmaps" in API group "" in the namespace "default"')
    # Only list was granted: a get is not.
    other = await as_user("bob", Impersonate_User=sa).get(f"{CM}/x")
    assert other.status == 403
    assert 'cannot impersonate-on:serviceaccount:get' in other.json["message"]
