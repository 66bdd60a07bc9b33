"""The ServiceAccount admission's token volume: every new pod whose ServiceAccount exists
gets a projected kube-api-access volume mounted where client-go's in-cluster config reads
it, unless the pod or its account opts out."""

from __future__ import annotations

from typing import Any

import pytest
from apiclient import Client

pytestmark = pytest.mark.unit

ACCOUNTS = "/api/v1/namespaces/default/serviceaccounts"
PODS = "/api/v1/namespaces/default/pods"
MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"serviceAccountName": "driver",
                     "initContainers": [{"name": "init", "image": "i"}],
                     "containers": [{"name": "c", "image": "i"}], **spec}}


async def account(client: Client, **fields: Any) -> None:
    reply = await client.post(ACCOUNTS, {"metadata": {"name": "driver"}, **fields})
    assert reply.status == 201, reply.body


async def test_a_pod_gets_its_accounts_token_ca_and_namespace(client: Client) -> None:
    await account(client)
    reply = await client.post(PODS, pod("p"))
    assert reply.status == 201, reply.body
    spec = reply.json["spec"]
    (volume,) = spec["volumes"]
    assert volume["name"].startswith("kube-api-access-") and len(volume["name"]) == 21
    assert volume["projected"] == {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt",
                       "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}
    for container in spec["initContainers"] + spec["containers"]:
        assert container["volumeMounts"] == [
            {"name": volume["name"], "readOnly": True, "mountPath": MOUNT}]


async def test_the_pod_or_its_account_may_opt_out(client: Client) -> None:
    await account(client, automountServiceAccountToken=False)
    reply = await client.post(PODS, pod("quiet"))
    assert "volumes" not in reply.json["spec"]
    reply = await client.post(PODS, pod("loud", automountServiceAccountToken=True))
    assert len(reply.json["spec"]["volumes"]) == 1
    reply = await client.post(PODS, pod("own", automountServiceAccountToken=True, containers=[
        {"name": "c", "image": "i", "volumeMounts": [{"name": "mine", "mountPath": MOUNT}]}],
        initContainers=[], volumes=[{"name": "mine", "emptyDir": {}}]))
    assert reply.json["spec"]["volumes"] == [{"name": "mine", "emptyDir": {}}]


async def test_a_pod_of_an_account_that_does_not_exist_gets_no_token(client: Client) -> None:
    reply = await client.post(PODS, pod("orphan"))
    assert reply.status == 201
    assert "volumes" not in reply.json["spec"]
