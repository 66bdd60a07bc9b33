"""SubjectAccessReview, LocalSubjectAccessReview and SelfSubjectRulesReview answer as
RBAC decides."""

from __future__ import annotations

import asyncio

import pytest
from test_rbac_api import grant, rule

pytestmark = pytest.mark.unit
AUTHZ = "/apis/authorization.k8s.io/v1"


def sar(kind: str = "SubjectAccessReview", **spec: object) -> dict:
    return {"apiVersion": "authorization.k8s.io/v1", "kind": kind, "spec": spec}


async def test_subject_access_review_reflects_rbac(as_user) -> None:
    admin = as_user()
    await grant(admin, "cm", "bob", rule(["configmaps"], ["get"]))
    await asyncio.sleep(0.1)
    yes = await admin.post(f"{AUTHZ}/subjectaccessreviews", sar(
        user="bob", resourceAttributes={"verb": "get", "resource": "configmaps",
                                        "namespace": "default"}))
    assert yes.status == 201
    assert yes.json["status"] == {
        "allowed": True, "reason": 'RBAC: allowed by RoleBinding "cm/default" of Role "cm" '
                                   'to User "bob"'}
    no = await admin.post(f"{AUTHZ}/subjectaccessreviews", sar(
        user="bob", resourceAttributes={"verb": "get", "resource": "secrets",
                                        "namespace": "default"}))
    assert no.json["status"] == {"allowed": False}
    masters = await admin.post(f"{AUTHZ}/subjectaccessreviews", sar(
        user="x", groups=["system:masters"], nonResourceAttributes={"verb": "get",
                                                                   "path": "/metrics"}))
    assert masters.json["status"]["allowed"] is True


async def test_subject_access_review_validation(as_user) -> None:
    admin = as_user()
    reply = await admin.post(f"{AUTHZ}/subjectaccessreviews", sar(
        resourceAttributes={"verb": "get", "resource": "pods"}))
    assert reply.status == 422
    assert reply.json["message"] == (
        'SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: Invalid value: '
        '"": at least one of user or group must be specified')
    both = await admin.post(f"{AUTHZ}/subjectaccessreviews", sar(user="u"))
    assert both.status == 422
    assert "exactly one of nonResourceAttributes or resourceAttributes must be specified" in \
        both.json["message"]


async def test_local_subject_access_review_must_name_its_namespace(as_user) -> None:
    admin = as_user()
    path = f"{AUTHZ}/namespaces/default/localsubjectaccessreviews"
    body = sar("LocalSubjectAccessReview", user="bob", resourceAttributes={
        "verb": "get", "resource": "pods", "namespace": "other"})
    body["metadata"] = {"namespace": "default"}
    reply = await admin.post(path, body)
    assert reply.status == 422
    assert "spec.resourceAttributes.namespace: Invalid value: \"other\": must match " \
           "metadata.namespace" in reply.json["message"]
    body["spec"]["resourceAttributes"]["namespace"] = "default"
    ok = await admin.post(path, body)
    assert ok.status == 201 and ok.json["status"]["allowed"] is False


async def test_a_plain_user_may_not_review_others(as_user) -> None:
    reply = await as_user("bob").post(f"{AUTHZ}/subjectaccessreviews", sar(
        user="bob", resourceAttributes={"verb": "get", "resource": "pods"}))
    assert reply.status == 403


async def test_rules_review_lists_the_rules_of_the_users_roles(as_user) -> None:
    admin, bob = as_user(), as_user("bob")
    await grant(admin, "cm", "bob", rule(["configmaps"], ["get"]))
    await asyncio.sleep(0.1)
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
            "spec": {"namespace": "default"}}
    reply = await bob.post(f"{AUTHZ}/selfsubjectrulesreviews", body)
    status = reply.json["status"]
    assert {"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]} in \
        status["resourceRules"]
    assert {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
            "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]} in \
        status["resourceRules"]
    assert status["incomplete"] is False
    other = await bob.post(f"{AUTHZ}/selfsubjectrulesreviews",
                           {**body, "spec": {"namespace": "kube-system"}})
    assert {"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]} not in \
        other.json["status"]["resourceRules"]
    missing = await bob.post(f"{AUTHZ}/selfsubjectrulesreviews", {**body, "spec": {}})
    assert missing.status == 400 and missing.json["message"] == "no namespace on request"
