"""Accept negotiation of resource requests as kube-apiserver 1.37 answers it: a Table
only from endpoints that print tables (a review or a binding is a 406), an Accept
nothing of which can be served is a 406, a later plain range is taken instead."""

from __future__ import annotations

import pytest
from apiclient import CM, PODS, Client, configmap

pytestmark = pytest.mark.unit

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
SSAR = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
REVIEW = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
          "spec": {"nonResourceAttributes": {"path": "/", "verb": "get"}}}
MESSAGE = ("only the following media types are accepted: application/json, application/yaml, "
           "application/vnd.kubernetes.protobuf")


async def test_a_review_as_a_table_is_not_acceptable(client: Client) -> None:
    reply = await client.post(SSAR, REVIEW, headers={"Accept": TABLE})
    assert reply.status == 406
    assert reply.json == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                          "status": "Failure", "message": MESSAGE, "reason": "NotAcceptable",
                          "code": 406}


async def test_a_review_with_json_after_the_table_is_answered_in_json(client: Client) -> None:
    reply = await client.post(SSAR, REVIEW, headers={"Accept": f"{TABLE}, application/json"})
    assert reply.status == 201
    assert reply.json["kind"] == "SelfSubjectAccessReview" and reply.json["status"]["allowed"]


@pytest.mark.parametrize("subresource", ["binding", "eviction"])
async def test_bindings_and_evictions_print_no_tables(client: Client, subresource: str) -> None:
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
            "target": {"name": "n"}} if subresource == "binding" else \
        {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p"}}
    reply = await client.post(f"{PODS}/p/{subresource}", body, headers={"Accept": TABLE})
    assert (reply.status, reply.json["reason"]) == (406, "NotAcceptable")


async def test_an_unservable_accept_is_406_and_a_list_still_prints(client: Client) -> None:
    await client.post(CM, configmap("t1"))
    bad = await client.get(CM, headers={"Accept": "application/json;as=Table;v=v2;g=meta.k8s.io"})
    assert (bad.status, bad.json["message"]) == (406, MESSAGE)
    table = await client.get(CM, headers={"Accept": TABLE})
    assert table.status == 200 and table.json["kind"] == "Table"
    plain = await client.get(CM, headers={"Accept": "*/*"})
    assert plain.json["kind"] == "ConfigMapList"
