"""ValidatingAdmissionPolicies and their bindings enforced on writes of any served kind:
validations with messages and messageExpressions, params through paramRef, variables,
matchConditions, namespace and object selectors, Deny/Warn actions, failurePolicy,
DELETE and custom resources; and the validation of the policy kinds and webhook
configurations."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest
from apiclient import Client

pytestmark = pytest.mark.unit

ADMISSION = "/apis/admissionregistration.k8s.io/v1"
POLICIES = f"{ADMISSION}/validatingadmissionpolicies"
BINDINGS = f"{ADMISSION}/validatingadmissionpolicybindings"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"

POLICY: dict[str, Any] = {
    "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
    "metadata": {"name": "replicas.example.com"},
    "spec": {
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "matchConstraints": {"resourceRules": [{
            "apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
            "resources": ["deployments"]}]},
        "matchConditions": [{"name": "not-exempt",
                             "expression": "!has(object.metadata.labels) || "
                                           "!('exempt' in object.metadata.labels)"}],
        "variables": [{"name": "limit", "expression": "int(params.data.maxReplicas)"}],
        "validations": [
            {"expression": "object.spec.replicas <= variables.limit",
             "messageExpression": "'replicas must be no greater than ' + "
                                  "string(variables.limit)"},
            {"expression": "object.metadata.name != 'forbidden'", "reason": "Forbidden"}]}}


def binding(name: str, actions: list[str], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": name},
            "spec": {"policyName": "replicas.example.com", "validationActions": actions,
                     "paramRef": {"name": "limits", "parameterNotFoundAction": "Deny"},
                     **spec}}


def deployment(name: str, replicas: int, labels: dict[str, str] | None = None
               ) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "i"}]}}}}


async def _setup(client: Client, actions: list[str], **spec: Any) -> None:
    assert (await client.post(POLICIES, POLICY)).status == 201
    reply = await client.post(BINDINGS, binding("replicas-binding.example.com", actions,
                                                **spec))
    assert reply.status == 201, reply.body


async def _limits(client: Client, value: str = "5") -> None:
    reply = await client.post(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                           "metadata": {"name": "limits"},
                                           "data": {"maxReplicas": value}})
    assert reply.status == 201


async def test_deny_has_upstreams_message_and_status(client: Client) -> None:
    await _setup(client, ["Deny"])
    await _limits(client)
    reply = await client.post(DEPLOYMENTS, deployment("big", 7))
    assert reply.status == 422
    message = ("ValidatingAdmissionPolicy 'replicas.example.com' with binding "
               "'replicas-binding.example.com' denied request: replicas must be no greater "
               "than 5")
    assert reply.json["reason"] == "Invalid"
    assert reply.json["message"] == f'deployments.apps "big" is forbidden: {message}'
    assert reply.json["details"] == {"name": "big", "group": "apps", "kind": "deployments",
                                     "causes": [{"message": message}]}
    assert (await client.post(DEPLOYMENTS, deployment("small", 3))).status == 201


async def test_policy_status_observes_its_generation(client: Client) -> None:
    await _setup(client, ["Deny"])
    for _ in range(100):
        status = (await client.get(f"{POLICIES}/replicas.example.com")).json.get("status")
        if status:
            break
        await asyncio.sleep(0.02)
    assert status == {"observedGeneration": 1, "typeChecking": {}}


async def test_validation_reason_sets_the_code_and_default_message(client: Client) -> None:
    await _setup(client, ["Deny"])
    await _limits(client)
    reply = await client.post(DEPLOYMENTS, deployment("forbidden", 1))
    assert (reply.status, reply.json["reason"]) == (403, "Forbidden")
    assert reply.json["message"].endswith(
        "denied request: failed expression: object.metadata.name != 'forbidden'")


async def test_updates_are_admitted_with_old_object(client: Client) -> None:
    await _setup(client, ["Deny"])
    await _limits(client)
    assert (await client.post(DEPLOYMENTS, deployment("grow", 2))).status == 201
    reply = await client.patch(f"{DEPLOYMENTS}/grow", {"spec": {"replicas": 9}},
                               "application/merge-patch+json")
    assert reply.status == 422 and "no greater than 5" in reply.json["message"]


async def test_missing_params_deny_or_allow_by_parameter_not_found_action(
        client: Client) -> None:
    await _setup(client, ["Deny"])
    reply = await client.post(DEPLOYMENTS, deployment("noparams", 1))
    assert reply.status == 422
    assert reply.json["message"].endswith(
        "no params found for policy binding with `Deny` parameterNotFoundAction")
    allow = binding("replicas-binding.example.com", ["Deny"],
                    paramRef={"name": "limits", "parameterNotFoundAction": "Allow"})
    current = (await client.get(f"{BINDINGS}/replicas-binding.example.com")).json
    allow["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    assert (await client.put(f"{BINDINGS}/replicas-binding.example.com", allow)).status == 200
    assert (await client.post(DEPLOYMENTS, deployment("noparams", 1))).status == 201


async def test_warn_action_sends_a_warning_and_admits(client: Client) -> None:
    await _setup(client, ["Warn", "Audit"])
    await _limits(client)
    reply = await client.post(DEPLOYMENTS, deployment("warned", 6))
    assert reply.status == 201
    assert reply.headers.getall("Warning") == [
        "299 - \"Validation failed for ValidatingAdmissionPolicy 'replicas.example.com' with "
        "binding 'replicas-binding.example.com': replicas must be no greater than 5\""]


async def test_match_conditions_and_selectors_narrow_what_is_admitted(client: Client) -> None:
    await _setup(client, ["Deny"], matchResources={
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "default"}},
        "objectSelector": {"matchExpressions": [{"key": "tier", "operator": "NotIn",
                                                 "values": ["batch"]}]}})
    await _limits(client)
    assert (await client.post(DEPLOYMENTS, deployment("exempt", 9, {"exempt": "y"}))
            ).status == 201
    assert (await client.post(DEPLOYMENTS, deployment("batch", 9, {"tier": "batch"}))
            ).status == 201
    other = "/apis/apps/v1/namespaces/kube-system/deployments"
    assert (await client.post(other, deployment("elsewhere", 9))).status == 201
    assert (await client.post(DEPLOYMENTS, deployment("web", 9, {"tier": "web"}))
            ).status == 422


async def test_runtime_errors_follow_the_failure_policy(client: Client) -> None:
    policy = copy.deepcopy(POLICY)
    del policy["spec"]["paramKind"]
    del policy["spec"]["variables"]
    policy["spec"]["validations"] = [{"expression": "object.spec.paused == false"}]
    assert (await client.post(POLICIES, policy)).status == 201
    spec = {"policyName": "replicas.example.com", "validationActions": ["Deny"]}
    assert (await client.post(BINDINGS, {"metadata": {"name": "b"}, "spec": spec})
            ).status == 201
    reply = await client.post(DEPLOYMENTS, deployment("nopause", 1))
    assert reply.status == 422
    assert reply.json["message"].endswith(
        "denied request: expression 'object.spec.paused == false' resulted in error: "
        "no such key: paused")
    current = (await client.get(f"{POLICIES}/replicas.example.com")).json
    current["spec"]["failurePolicy"] = "Ignore"
    assert (await client.put(f"{POLICIES}/replicas.example.com", current)).status == 200
    assert (await client.post(DEPLOYMENTS, deployment("nopause", 1))).status == 201


async def test_delete_is_admitted_with_old_object_only(client: Client) -> None:
    policy = {"metadata": {"name": "keep.example.com"}, "spec": {
        "matchConstraints": {"resourceRules": [{
            "apiGroups": [""], "apiVersions": ["v1"], "operations": ["DELETE"],
            "resources": ["configmaps"]}]},
        "validations": [{"expression": "object == null && "
                                       "!('keep' in oldObject.metadata.labels)",
                         "message": "this one stays"}]}}
    assert (await client.post(POLICIES, policy)).status == 201
    assert (await client.post(BINDINGS, {"metadata": {"name": "keep"}, "spec": {
        "policyName": "keep.example.com", "validationActions": ["Deny"]}})).status == 201
    kept = {"metadata": {"name": "kept", "labels": {"keep": "1"}}, "data": {}}
    assert (await client.post(CONFIGMAPS, kept)).status == 201
    reply = await client.delete(f"{CONFIGMAPS}/kept")
    assert reply.status == 422 and reply.json["message"].endswith("this one stays")


async def test_policy_and_binding_validation(client: Client) -> None:
    bad = {"metadata": {"name": "bad"}, "spec": {
        "matchConstraints": {"resourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"],
                                                "operations": ["PATCH"],
                                                "resources": ["*"]}]},
        "validations": [{"expression": "object.spec.replicas +", "reason": "Teapot"}]}}
    reply = await client.post(POLICIES, bad)
    assert reply.status == 422
    fields = {c["field"]: c["message"] for c in reply.json["details"]["causes"]}
    assert fields["spec.matchConstraints.resourceRules[0].operations[0]"].startswith(
        'Unsupported value: "PATCH"')
    assert "compilation failed: ERROR: <input>:1:" in fields["spec.validations[0].expression"]
    assert fields["spec.validations[0].reason"].startswith('Unsupported value: "Teapot"')
    reply = await client.post(BINDINGS, {"metadata": {"name": "b"}, "spec": {
        "policyName": "p", "validationActions": ["Deny", "Warn"],
        "paramRef": {"name": "x", "selector": {}}}})
    fields = {c["field"]: c["message"] for c in reply.json["details"]["causes"]}
    assert fields["spec.paramRef.name"] == "Forbidden: name and selector are mutually exclusive"
    assert fields["spec.paramRef.parameterNotFoundAction"] == "Required value"
    assert "must not contain both Deny and Warn" in fields["spec.validationActions"]


async def test_webhook_configurations_are_defaulted_and_validated(client: Client) -> None:
    hook = {"name": "validate.example.com", "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "clientConfig": {"service": {"name": "hook", "namespace": "default"}},
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                       "resources": ["pods"]}]}
    reply = await client.post(f"{ADMISSION}/validatingwebhookconfigurations",
                              {"metadata": {"name": "hooks"}, "webhooks": [hook]})
    assert reply.status == 201, reply.body
    stored = reply.json["webhooks"][0]
    assert (stored["failurePolicy"], stored["matchPolicy"], stored["timeoutSeconds"],
            stored["clientConfig"]["service"]["port"], stored["rules"][0]["scope"]) == (
        "Fail", "Equivalent", 10, 443, "*")
    bad = dict(hook, name="short.name", sideEffects="Some",
               clientConfig={"url": "http://x.example.com?q=1"})
    reply = await client.post(f"{ADMISSION}/mutatingwebhookconfigurations",
                              {"metadata": {"name": "bad"}, "webhooks": [bad]})
    fields = {c["field"]: c["message"] for c in reply.json["details"]["causes"]}
    assert fields["webhooks[0].name"].endswith(
        "should be a domain with at least three segments separated by dots")
    assert fields["webhooks[0].sideEffects"].startswith('Unsupported value: "Some"')
    url_errors = [c["message"] for c in reply.json["details"]["causes"]
                  if c["field"] == "webhooks[0].clientConfig.url"]
    assert url_errors == [
        'Invalid value: "http": \'https\' is the only allowed URL scheme; desired format: '
        'https://host[/path]',
        'Invalid value: "q=1": query parameters are not permitted in the URL']


async def test_custom_resources_are_admitted_too(client: Client) -> None:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "gadgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "gadgets", "kind": "Gadget"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {
                                      "type": "object",
                                      "x-kubernetes-preserve-unknown-fields": True}}}]}}
    assert (await client.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                              crd)).status == 201
    policy = {"metadata": {"name": "gadgets.example.com"}, "spec": {
        "matchConstraints": {"resourceRules": [{
            "apiGroups": ["example.com"], "apiVersions": ["*"], "operations": ["*"],
            "resources": ["gadgets"]}]},
        "validations": [{"expression": "has(object.color)"}]}}
    assert (await client.post(POLICIES, policy)).status == 201
    assert (await client.post(BINDINGS, {"metadata": {"name": "g"}, "spec": {
        "policyName": "gadgets.example.com", "validationActions": ["Deny"]}})).status == 201
    path = "/apis/example.com/v1/namespaces/default/gadgets"
    body = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}}
    reply = await client.post(path, body)
    assert reply.status == 422
    assert reply.json["message"] == (
        "gadgets.example.com \"g\" is forbidden: ValidatingAdmissionPolicy "
        "'gadgets.example.com' with binding 'g' denied request: failed expression: "
        "has(object.color)")
    assert (await client.post(path, {**body, "color": "red"})).status == 201


async def test_policies_see_the_users_uid_and_extra(client: Client) -> None:
    # As the dra-example-driver chart's policy reads a service account's node:
    # request.userInfo.extra[?'authentication.kubernetes.io/node-name'][0].orValue('').
    policy = {"metadata": {"name": "node.example.com"}, "spec": {
        "matchConstraints": {"resourceRules": [{
            "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
            "resources": ["configmaps"]}]},
        "variables": [{"name": "node", "expression":
                       "request.userInfo.extra[?'authentication.kubernetes.io/node-name']"
                       "[0].orValue('')"}],
        "validations": [{"expression": "variables.node != ''",
                         "messageExpression": "'no node for ' + request.userInfo.username + "
                                              "' (uid ' + request.userInfo.uid + ')'"}]}}
    assert (await client.post(POLICIES, policy)).status == 201
    spec = {"policyName": "node.example.com", "validationActions": ["Deny"]}
    assert (await client.post(BINDINGS, {"metadata": {"name": "node"}, "spec": spec})
            ).status == 201
    reply = await client.post(CONFIGMAPS, {"metadata": {"name": "nodeless"}})
    assert reply.status == 422, reply.body
    assert reply.json["message"].endswith(
        "denied request: no node for kubernetes-admin (uid )")


async def test_authorizer_variable_checks_what_the_user_may_do(
        client: Client, apiserver: Any, tmp_path: Any) -> None:
    import aiohttp
    from apiclient import ssl_context_for

    policy = {"metadata": {"name": "secret-readers.example.com"}, "spec": {
        "matchConstraints": {"resourceRules": [{
            "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
            "resources": ["configmaps"]}]},
        "validations": [{
            "expression": "authorizer.group('').resource('secrets')"
                          ".namespace(object.metadata.namespace).check('list').allowed()",
            "messageExpression": "'only secret readers: ' + authorizer.requestResource"
                                 ".check('create').reason()"}]}}
    assert (await client.post(POLICIES, policy)).status == 201, "policy"
    assert (await client.post(BINDINGS, {"metadata": {"name": "readers"}, "spec": {
        "policyName": "secret-readers.example.com", "validationActions": ["Deny"]}})
            ).status == 201
    rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/default"
    role = {"metadata": {"name": "cm-writer"}, "rules": [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}]}
    assert (await client.post(f"{rbac}/roles", role)).status == 201
    assert (await client.post(f"{rbac}/rolebindings", {
        "metadata": {"name": "alice"}, "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-writer"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                      "name": "alice"}]})).status == 201
    assert (await client.post(CONFIGMAPS, {"metadata": {"name": "admin"}, "data": {}})
            ).status == 201
    path = apiserver.write_kubeconfig(tmp_path / "alice", user="alice", groups=[])
    async with aiohttp.ClientSession() as session:
        alice = Client(apiserver.url, session, ssl_context_for(path))
        for _ in range(50):
            reply = await alice.post(CONFIGMAPS, {"metadata": {"name": "alice"}, "data": {}})
            if reply.status != 403 or "forbidden: User" not in reply.json["message"]:
                break
            await asyncio.sleep(0.05)  # the RBAC objects reach the cache
    assert reply.status == 422, reply.body
    assert reply.json["message"].startswith(
        'configmaps "alice" is forbidden: ValidatingAdmissionPolicy '
        "'secret-readers.example.com' with binding 'readers' denied request: only secret "
        "readers: ")


async def test_audit_action_annotates_the_audit_event(tmp_path: Any) -> None:
    import json

    import aiohttp
    from apiclient import ssl_context_for

    from draemu.cmd.testing.apiserver import start_apiserver

    log = tmp_path / "audit.log"
    server = await start_apiserver(tmp_path / "srv", audit_log=log)
    try:
        async with aiohttp.ClientSession() as session:
            client = Client(server.url, session, ssl_context_for(server.kubeconfig_path))
            await _setup(client, ["Audit"])
            await _limits(client)
            assert (await client.post(DEPLOYMENTS, deployment("audited", 8))).status == 201
    finally:
        await server.stop()
    events = [json.loads(line) for line in log.read_text().splitlines()]
    created = next(e for e in events if e["verb"] == "create" and
                   e.get("objectRef", {}).get("resource") == "deployments")
    failures = json.loads(created["annotations"][
        "validation.policy.admission.k8s.io/validation_failure"])
    assert failures == [{"message": "replicas must be no greater than 5",
                         "policy": "replicas.example.com",
                         "binding": "replicas-binding.example.com", "expressionIndex": 0,
                         "validationActions": ["Audit"]}]
