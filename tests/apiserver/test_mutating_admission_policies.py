"""MutatingAdmissionPolicies and their bindings (admissionregistration.k8s.io/v1) applied
to writes: ApplyConfiguration (CEL object construction merged as server-side apply) and
JSONPatch mutations, matchConstraints and binding selectors, params, matchConditions,
failurePolicy, reinvocation; the kinds' validation, discovery and Tables."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from apiclient import Client

pytestmark = pytest.mark.unit

ADMISSION = "/apis/admissionregistration.k8s.io/v1"
POLICIES = f"{ADMISSION}/mutatingadmissionpolicies"
BINDINGS = f"{ADMISSION}/mutatingadmissionpolicybindings"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
MERGE = "application/merge-patch+json"


def policy(name: str, *mutations: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {"matchConstraints": {"resourceRules": [{
                "apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
                "mutations": list(mutations), "reinvocationPolicy": "Never", **spec}}


def apply(expression: str) -> dict[str, Any]:
    return {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expression}}


def json_patch(expression: str) -> dict[str, Any]:
    return {"patchType": "JSONPatch", "jsonPatch": {"expression": expression}}


def binding(name: str, policy_name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": name},
            "spec": {"policyName": policy_name, **spec}}


def deployment(name: str, replicas: int = 1, labels: dict[str, str] | None = None
               ) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, **({"labels": labels} if labels else {})},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "i"}]}}}}


async def _bind(client: Client, pol: dict[str, Any], **spec: Any) -> None:
    reply = await client.post(POLICIES, pol)
    assert reply.status == 201, reply.json
    name = pol["metadata"]["name"]
    reply = await client.post(BINDINGS, binding(f"{name}-binding", name, **spec))
    assert reply.status == 201, reply.json


async def test_kinds_are_in_discovery_with_every_verb(client: Client) -> None:
    resources = {r["name"]: r for r in (await client.get(ADMISSION)).json["resources"]}
    for name in ("mutatingadmissionpolicies", "mutatingadmissionpolicybindings"):
        assert set(resources[name]["verbs"]) == {"create", "delete", "deletecollection", "get",
                                                 "list", "patch", "update", "watch"}
        assert resources[name]["categories"] == ["api-extensions"]
    assert "mutatingadmissionpolicies/status" not in resources  # v1 has no status


async def test_apply_configuration_sets_replicas_and_annotations(client: Client) -> None:
    await _bind(client, policy("replicas.example.com",
                               apply("Object{spec: Object.spec{replicas: 1337}}"),
                               apply('Object{metadata: Object.metadata{annotations: '
                                     '{"mutated-by": "admission-policy"}}}')))
    created = (await client.post(DEPLOYMENTS, deployment("web"))).json
    assert created["spec"]["replicas"] == 1337
    assert created["metadata"]["annotations"] == {"mutated-by": "admission-policy"}
    # Server-side apply's merge: the rest of the object is kept.
    assert created["spec"]["template"]["spec"]["containers"][0]["image"] == "i"


async def test_apply_configuration_merges_list_maps_by_key(client: Client) -> None:
    expression = ("Object{spec: Object.spec{template: Object.spec.template{spec: "
                  "Object.spec.template.spec{containers: [Object.spec.template.spec.containers"
                  "{name: 'sidecar', image: 'proxy'}]}}}}")
    await _bind(client, policy("sidecar.example.com", apply(expression)))
    created = (await client.post(DEPLOYMENTS, deployment("web"))).json
    containers = created["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [("c", "i"), ("sidecar", "proxy")]
    # Defaulted after the mutation, as the container the client sent.
    assert containers[1]["terminationMessagePath"] == "/dev/termination-log"


async def test_json_patch_adds_an_escaped_label_and_a_failed_test_changes_nothing(
        client: Client) -> None:
    await _bind(client, policy("labels.example.com", json_patch(
        '[JSONPatch{op: "add", path: "/metadata/labels/" + '
        'jsonpatch.escapeKey("example.com/team"), value: "blue"}]'), json_patch(
        '[JSONPatch{op: "test", path: "/spec/replicas", value: 99}, '
        'JSONPatch{op: "replace", path: "/spec/replicas", value: 5}]')))
    created = (await client.post(DEPLOYMENTS, deployment("web", 2, {"app": "web"}))).json
    assert created["metadata"]["labels"] == {"app": "web", "example.com/team": "blue"}
    assert created["spec"]["replicas"] == 2


async def test_binding_namespace_selector_limits_the_policy(client: Client) -> None:
    await client.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                             "metadata": {"name": "marked",
                                                          "labels": {"e2e": "true"}}})
    await _bind(client, policy("replicas.example.com",
                               apply("Object{spec: Object.spec{replicas: 7}}")),
                matchResources={"namespaceSelector": {"matchLabels": {"e2e": "true"}}})
    outside = (await client.post(DEPLOYMENTS, deployment("web"))).json
    inside = (await client.post("/apis/apps/v1/namespaces/marked/deployments",
                                deployment("web"))).json
    assert (outside["spec"]["replicas"], inside["spec"]["replicas"]) == (1, 7)


async def test_params_and_variables_reach_the_expression(client: Client) -> None:
    await client.post(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": "sizes"}, "data": {"replicas": "4"}})
    pol = policy("sized.example.com", apply("Object{spec: Object.spec{replicas: "
                                            "variables.wanted}}"),
                 paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
                 variables=[{"name": "wanted", "expression": "int(params.data.replicas)"}])
    await _bind(client, pol, paramRef={"name": "sizes", "parameterNotFoundAction": "Deny"})
    assert (await client.post(DEPLOYMENTS, deployment("web"))).json["spec"]["replicas"] == 4


async def test_match_conditions_skip_the_policy(client: Client) -> None:
    await _bind(client, policy("replicas.example.com",
                               apply("Object{spec: Object.spec{replicas: 3}}"),
                               matchConditions=[{"name": "not-exempt", "expression":
                                                 "!has(object.metadata.labels) || "
                                                 "!('exempt' in object.metadata.labels)"}]))
    exempt = (await client.post(DEPLOYMENTS, deployment("a", 1, {"exempt": "y"}))).json
    other = (await client.post(DEPLOYMENTS, deployment("b", 1))).json
    assert (exempt["spec"]["replicas"], other["spec"]["replicas"]) == (1, 3)


async def test_an_atomic_field_is_refused_with_upstreams_status(client: Client) -> None:
    await _bind(client, policy("selector.example.com", apply(
        "Object{spec: Object.spec{selector: Object.spec.selector{matchLabels: "
        "{'app': 'x'}}}}")))
    reply = await client.post(DEPLOYMENTS, deployment("web"))
    assert (reply.status, reply.json["reason"]) == (403, "Invalid")
    message = ("policy 'selector.example.com' with binding 'selector.example.com-binding' "
               "denied request: error applying patch: invalid ApplyConfiguration: may not "
               "mutate atomic arrays, maps or structs: .spec.selector")
    assert reply.json["message"] == message
    assert reply.json["details"] == {"name": "web", "group": "apps", "kind": "deployments",
                                     "causes": [{"message": message}]}


async def test_failure_policy_ignore_lets_the_request_through_unchanged(
        client: Client) -> None:
    await _bind(client, policy("broken.example.com",
                               apply("Object{spec: Object.spec{replicas: 1 / 0}}"),
                               failurePolicy="Ignore"))
    reply = await client.post(DEPLOYMENTS, deployment("web", 2))
    assert reply.status == 201 and reply.json["spec"]["replicas"] == 2


async def test_runtime_errors_and_type_names_are_upstreams(client: Client) -> None:
    await _bind(client, policy("broken.example.com",
                               apply("Object{spec: Object.spec{replicas: 1 / 0}}")))
    reply = await client.post(DEPLOYMENTS, deployment("a"))
    assert reply.status == 403
    assert reply.json["message"].endswith(
        "denied request: expression 'Object{spec: Object.spec{replicas: 1 / 0}}' resulted "
        "in error: division by zero")
    await client.delete(f"{POLICIES}/broken.example.com")
    await _bind(client, policy("named.example.com",
                               apply("Object{spec: Object.template{replicas: 2}}")))
    reply = await client.post(DEPLOYMENTS, deployment("b"))
    assert reply.json["message"].endswith(
        'denied request: type mismatch: unexpected type name "Object.template", expected '
        '"Object.spec", which matches field name path from root Object type')


async def test_unknown_fields_are_not_applied(client: Client) -> None:
    await _bind(client, policy("unknown.example.com",
                               apply("Object{spec: Object.spec{replicaz: 2}}")))
    reply = await client.post(DEPLOYMENTS, deployment("web"))
    assert reply.status == 403
    assert reply.json["message"].endswith(
        "error applying patch: failed to convert patch object to typed object: "
        ".spec.replicaz: field not declared in schema")


async def test_if_needed_policy_sees_what_a_later_policy_changed(client: Client) -> None:
    seen = ("Object{metadata: Object.metadata{annotations: {'seen': "
            "has(object.metadata.labels) && 'late' in object.metadata.labels ? "
            "object.metadata.labels['late'] : 'none'}}}")
    late = apply("Object{metadata: Object.metadata{labels: {'late': 'yes'}}}")
    # Policies run in name order: "a-..." before "b-...".
    await _bind(client, policy("a-seen.example.com", apply(seen),
                               reinvocationPolicy="IfNeeded"))
    await _bind(client, policy("b-late.example.com", late))
    created = (await client.post(DEPLOYMENTS, deployment("web"))).json
    assert created["metadata"]["annotations"] == {"seen": "yes"}


async def test_never_policy_is_not_reinvoked(client: Client) -> None:
    seen = ("Object{metadata: Object.metadata{annotations: {'seen': "
            "has(object.metadata.labels) && 'late' in object.metadata.labels ? "
            "object.metadata.labels['late'] : 'none'}}}")
    late = apply("Object{metadata: Object.metadata{labels: {'late': 'yes'}}}")
    await _bind(client, policy("a-seen.example.com", apply(seen)))
    await _bind(client, policy("b-late.example.com", late))
    created = (await client.post(DEPLOYMENTS, deployment("web"))).json
    assert created["metadata"]["annotations"] == {"seen": "none"}


async def test_updates_are_mutated_and_deletes_are_not_matched(client: Client) -> None:
    await client.post(DEPLOYMENTS, deployment("web"))
    await _bind(client, policy("replicas.example.com",
                               apply("Object{spec: Object.spec{replicas: 9}}")))
    patched = await client.patch(f"{DEPLOYMENTS}/web", {"spec": {"replicas": 2}}, MERGE)
    assert patched.json["spec"]["replicas"] == 9
    assert (await client.delete(f"{DEPLOYMENTS}/web")).status == 200


async def test_policy_validation_has_upstreams_messages(client: Client) -> None:
    bad = policy("bad.example.com", json_patch("Object{}"),
                 {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "1"},
                  "jsonPatch": {"expression": "[]"}})
    bad["spec"]["matchConstraints"]["resourceRules"][0]["operations"] = ["DELETE"]
    del bad["spec"]["reinvocationPolicy"]
    reply = await client.post(POLICIES, bad)
    assert reply.status == 422
    causes = {(c["field"], c["message"]) for c in reply.json["details"]["causes"]}
    assert causes == {
        ("spec.matchConstraints.resourceRules.operations",
         'Unsupported value: "DELETE": supported values: "*", "CONNECT", "CREATE", "UPDATE"'),
        ("spec.mutations[0].jsonPatch.expression",
         'Invalid value: "Object{}": must evaluate to list(JSONPatch) but got Object'),
        ("spec.mutations[1].applyConfiguration.expression",
         'Invalid value: "1": must evaluate to Object but got int'),
        ("spec.mutations[1].jsonPatch",
         'Invalid value: "{jsonPatch}": must not be specified when patchType is '
         'ApplyConfiguration'),
        ("spec.reinvocationPolicy", "Required value")}
    empty = policy("empty.example.com")
    reply = await client.post(POLICIES, empty)
    assert reply.json["details"]["causes"] == [{
        "reason": "FieldValueRequired", "field": "spec.mutations",
        "message": "Required value: mutations must contain at least one item"}]


async def test_message_construction_is_only_for_mutations(client: Client) -> None:
    pol = policy("vars.example.com", apply("Object{}"),
                 variables=[{"name": "o", "expression": "Object{}"}])
    reply = await client.post(POLICIES, pol)
    assert reply.status == 422
    assert "undeclared reference to 'Object'" in reply.json["details"]["causes"][0]["message"]


async def test_defaults_and_crud_of_the_api_operations_spec(client: Client) -> None:
    template = policy("", apply("Object{spec: Object.spec{replicas: 100}}"))
    template["metadata"] = {"generateName": "e2e-example-map-", "labels": {"e2e": "x"}}
    created = (await client.post(POLICIES, copy.deepcopy(template))).json
    spec = created["spec"]
    assert spec["failurePolicy"] == "Fail"
    assert spec["matchConstraints"]["matchPolicy"] == "Equivalent"
    assert spec["matchConstraints"]["resourceRules"][0]["scope"] == "*"
    name = created["metadata"]["name"]
    patched = await client.patch(f"{POLICIES}/{name}",
                                 {"metadata": {"annotations": {"patched": "true"}},
                                  "spec": {"reinvocationPolicy": "IfNeeded"}}, MERGE)
    assert patched.json["spec"]["reinvocationPolicy"] == "IfNeeded"
    assert patched.json["metadata"]["generation"] == 2
    assert (await client.delete(f"{POLICIES}?labelSelector=e2e%3Dx")).status == 200
    assert (await client.get(f"{POLICIES}/{name}")).status == 404
    # A binding needs only its policy's name.
    reply = await client.post(BINDINGS, binding("b.example.com", "replicalimit-policy"))
    assert reply.status == 201
    assert reply.json["spec"] == {"policyName": "replicalimit-policy"}


async def test_reserved_static_suffix_is_refused(client: Client) -> None:
    pol = policy("p.static.k8s.io", apply("Object{}"))
    reply = await client.post(POLICIES, pol)
    assert reply.status == 422
    assert reply.json["details"]["causes"][0]["field"] == "metadata.name"


async def test_param_kind_and_ref_need_read_access(client: Client, apiserver: Any,
                                                   tmp_path: Any) -> None:
    """Upstream's authorization of a policy's paramKind and a binding's paramRef: who
    writes them must be able to read the parameters (here: get and list configmaps)."""
    import asyncio

    import aiohttp
    from apiclient import ssl_context_for

    rbac = "/apis/rbac.authorization.k8s.io/v1"
    role = {"metadata": {"name": "policy-writer"}, "rules": [
        {"apiGroups": ["admissionregistration.k8s.io"], "verbs": ["create"],
         "resources": ["mutatingadmissionpolicies", "mutatingadmissionpolicybindings"]}]}
    assert (await client.post(f"{rbac}/clusterroles", role)).status == 201
    assert (await client.post(f"{rbac}/clusterrolebindings", {
        "metadata": {"name": "bob"}, "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
            "name": "policy-writer"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                      "name": "bob"}]})).status == 201
    await _bind(client, policy("admin.example.com", apply("Object{}"),
                               paramKind={"apiVersion": "v1", "kind": "ConfigMap"}))
    path = apiserver.write_kubeconfig(tmp_path / "bob", user="bob", groups=[])
    async with aiohttp.ClientSession() as session:
        bob = Client(apiserver.url, session, ssl_context_for(path))
        pol = policy("bob.example.com", apply("Object{}"),
                     paramKind={"apiVersion": "v1", "kind": "ConfigMap"})
        for _ in range(50):
            reply = await bob.post(POLICIES, pol)
            if reply.status != 403:
                break
            await asyncio.sleep(0.05)  # the RBAC objects reach the cache
        assert reply.status == 422
        assert reply.json["details"]["causes"] == [{
            "reason": "FieldValueForbidden", "field": "spec.paramKind",
            "message": 'Forbidden: user &{bob  [system:authenticated] map[]} must have "get" '
                       "permission on all objects of the referenced paramKind "
                       "(kind=ConfigMap, apiVersion=v1)"}]
        plain = await bob.post(POLICIES, policy("plain.example.com", apply("Object{}")))
        assert plain.status == 201
        reply = await bob.post(BINDINGS, binding("bob-binding", "admin.example.com",
                                                 paramRef={"name": "sizes",
                                                           "namespace": "default",
                                                           "parameterNotFoundAction": "Deny"}))
        assert reply.status == 422
        assert reply.json["details"]["causes"][0]["message"] == (
            'Forbidden: user get does not have "&{bob  [system:authenticated] map[]}" '
            "permission on the object referenced by paramRef")
