"""Protobuf request bodies through the apiserver: created, updated and deleted objects,
subresources and reviews behave as with the same JSON body; bad bodies are 400s."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from pb_client import Client
from pb_encode import encode_message, encode_object, envelope

from draemu.apiserver.server.lifecycle import APIServer

pytestmark = pytest.mark.unit

CM = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"
VOLATILE = ("name", "uid", "resourceVersion", "creationTimestamp", "managedFields")


@pytest_asyncio.fixture
async def client(apiserver: APIServer) -> AsyncIterator[Client]:
    async with aiohttp.ClientSession() as session:
        yield Client(apiserver.url, apiserver.kubeconfig_path, session)


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"app": "demo"}},
            "data": {"k": "v", "empty": ""}, "binaryData": {"b": "AAEC/w=="}}


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox"}],
                     "terminationGracePeriodSeconds": 0}}


def stable(obj: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in obj["metadata"].items() if k not in VOLATILE}
    return {**obj, "metadata": meta}


async def test_protobuf_create_stores_what_json_create_stores(client: Client) -> None:
    status, ctype, created = await client.call(
        "POST", CM, encode_object(configmap("from-pb"), "core.v1.ConfigMap"))
    assert (status, ctype) == (201, "application/json")
    await client.call("POST", CM, configmap("from-json"))
    _, _, from_pb = await client.call("GET", f"{CM}/from-pb")
    _, _, from_json = await client.call("GET", f"{CM}/from-json")
    assert created == from_pb
    assert stable(from_pb) == stable(from_json)


async def test_a_protobuf_only_accept_is_answered_with_json(client: Client) -> None:
    # client-go with only ContentType set asks this; it decodes JSON answers as well.
    status, ctype, created = await client.call(
        "POST", CM, encode_object(configmap("pb-only"), "core.v1.ConfigMap"),
        accept="application/vnd.kubernetes.protobuf")
    assert (status, ctype) == (201, "application/json")
    assert created["metadata"]["name"] == "pb-only"


async def test_protobuf_update(client: Client) -> None:
    _, _, created = await client.call("POST", CM, configmap("upd"))
    changed = {**created, "data": {"k": "changed"}}
    status, _, updated = await client.call(
        "PUT", f"{CM}/upd", encode_object(changed, "core.v1.ConfigMap"))
    assert status == 200
    assert updated["data"] == {"k": "changed"}
    assert updated["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]


async def test_malformed_protobuf_is_a_400_status(client: Client) -> None:
    status, _, reply = await client.call("POST", CM, b"k8s\x00\x12\x05ab")
    assert status == 400
    assert reply["kind"] == "Status" and reply["reason"] == "BadRequest"
    assert reply["message"] == ("unable to decode the protobuf body: field 2 is longer than "
                                "the data left (5 > 2 bytes)")


async def test_envelope_kind_must_match_the_url(client: Client) -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
    status, _, reply = await client.call("POST", CM, encode_object(secret, "core.v1.Secret"))
    assert status == 400
    assert reply["message"] == ("the kind in the data (Secret) does not match the expected "
                                "kind (ConfigMap)")


async def test_protobuf_delete_options_are_applied(client: Client) -> None:
    await client.call("POST", CM, configmap("del"))
    wrong_uid = encode_message({"preconditions": {"uid": "not-it"}}, "meta.v1.DeleteOptions")
    status, _, reply = await client.call("DELETE", f"{CM}/del",
                                         envelope(wrong_uid, "v1", "DeleteOptions"))
    assert status == 409, reply
    assert "Precondition failed: UID in precondition: not-it" in reply["message"]


async def test_protobuf_binding_and_eviction(client: Client) -> None:
    await client.call("POST", PODS, encode_object(pod("p"), "core.v1.Pod"))
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
               "target": {"kind": "Node", "name": "node-1"}}
    status, _, _ = await client.call("POST", f"{PODS}/p/binding",
                                     encode_object(binding, "core.v1.Binding"))
    assert status == 201
    _, _, bound = await client.call("GET", f"{PODS}/p")
    assert bound["spec"]["nodeName"] == "node-1"
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction",
                "metadata": {"name": "p", "namespace": "default"}}
    status, _, reply = await client.call("POST", f"{PODS}/p/eviction",
                                         encode_object(eviction, "policy.v1.Eviction"))
    assert status == 201, reply


async def test_protobuf_self_subject_access_review(client: Client) -> None:
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
              "spec": {"resourceAttributes": {"verb": "create", "group": "resource.k8s.io",
                                              "resource": "resourceclaims"}}}
    status, _, reply = await client.call(
        "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        encode_object(review, "authorization.v1.SelfSubjectAccessReview"))
    assert status == 201
    assert reply["status"]["allowed"] is True
    assert reply["spec"] == review["spec"]


async def test_protobuf_resource_claim_in_an_older_version(client: Client) -> None:
    claim = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
             "metadata": {"name": "gpu"},
             "spec": {"devices": {"requests": [{"name": "r", "deviceClassName": "gpu.example.com",
                                                "allocationMode": "ExactCount", "count": 2}]}}}
    status, _, reply = await client.call(
        "POST", "/apis/resource.k8s.io/v1beta1/namespaces/default/resourceclaims",
        encode_object(claim, "resource.v1beta1.ResourceClaim"))
    assert status == 201, reply
    _, _, stored = await client.call(
        "GET", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/gpu")
    assert stored["spec"]["devices"]["requests"] == [
        {"name": "r", "exactly": {"deviceClassName": "gpu.example.com",
                                  "allocationMode": "ExactCount", "count": 2}}]


async def test_protobuf_status_update_of_a_resource_claim(client: Client) -> None:
    claims = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "c"},
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                 "deviceClassName": "gpu.example.com"}}]}}}
    _, _, created = await client.call("POST", claims,
                                      encode_object(claim, "resource.v1.ResourceClaim"))
    allocation = {"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com",
                                           "pool": "node-1", "device": "gpu-0"}]}}
    created["status"] = {"allocation": allocation}
    status, _, updated = await client.call(
        "PUT", f"{claims}/c/status", encode_object(created, "resource.v1.ResourceClaim"))
    assert status == 200, updated
    assert updated["status"]["allocation"] == allocation


async def test_protobuf_crd_is_established_and_its_schema_kept(client: Client) -> None:
    """e2e.test's apiextensions client creates CRDs with protobuf bodies."""
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "size": {"type": "integer", "maximum": 5, "default": 1},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}}}}}}
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "gizmos.pb.example.com"},
           "spec": {"group": "pb.example.com", "scope": "Namespaced",
                    "names": {"plural": "gizmos", "kind": "Gizmo"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": schema}}]}}
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    status, _, created = await client.call(
        "POST", path, encode_object(crd, "apiextensions.v1.CustomResourceDefinition"))
    assert status == 201, created
    assert created["spec"]["versions"][0]["schema"]["openAPIV3Schema"] == schema


@pytest.mark.parametrize(("resource", "obj", "message"), [
    ("flowschemas", {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
                     "metadata": {"name": "pb-fs"},
                     "spec": {"priorityLevelConfiguration": {"name": "global-default"},
                              "matchingPrecedence": 9000,
                              "rules": [{"subjects": [{"kind": "User",
                                                       "user": {"name": "pb-user"}}],
                                         "nonResourceRules": [{
                                             "verbs": ["get"], "nonResourceURLs": ["/x"]}]}]}},
     "flowcontrol.v1.FlowSchema"),
    ("prioritylevelconfigurations",
     {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
      "metadata": {"name": "pb-pl"},
      "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 0,
                                              "limitResponse": {"type": "Reject"}}}},
     "flowcontrol.v1.PriorityLevelConfiguration"),
])
async def test_protobuf_flowcontrol_kinds(client: Client, resource: str, obj: dict[str, Any],
                                          message: str) -> None:
    path = f"/apis/flowcontrol.apiserver.k8s.io/v1/{resource}"
    status, _, created = await client.call("POST", path, encode_object(obj, message))
    assert status == 201, created
    # Defaulting may add fields; every field sent is kept as sent (a zero share too).
    assert contains(created["spec"], obj["spec"])


def contains(full: Any, part: Any) -> bool:
    if isinstance(part, dict):
        return isinstance(full, dict) and all(k in full and contains(full[k], v)
                                              for k, v in part.items())
    return bool(full == part)
