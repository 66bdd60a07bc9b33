"""ResourceQuota admission: a create that would exceed a quota's hard limits is refused
with upstream's message; one within them passes."""

from __future__ import annotations

import pytest
from apiclient import Client, configmap, pod

QUOTAS = "/api/v1/namespaces/default/resourcequotas"
CMS = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"

pytestmark = pytest.mark.unit


def quota(name: str, hard: dict[str, str]) -> dict:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name},
            "spec": {"hard": hard}}


async def test_an_object_count_over_the_limit_is_forbidden(client: Client) -> None:
    assert (await client.post(QUOTAS, quota("cms", {"count/configmaps": "2"}))).status == 201
    existing = len((await client.get(CMS)).json["items"])
    for i in range(2 - existing):
        assert (await client.post(CMS, configmap(f"ok-{i}"))).status == 201
    reply = await client.post(CMS, configmap("one-too-many"))
    assert reply.status == 403, reply.json
    assert reply.json["reason"] == "Forbidden"
    assert reply.json["message"] == (
        'configmaps "one-too-many" is forbidden: exceeded quota: cms, requested: '
        "count/configmaps=1, used: count/configmaps=2, limited: count/configmaps=2")


async def test_compute_requests_are_summed_over_the_namespace(client: Client) -> None:
    assert (await client.post(QUOTAS, quota("cpu", {"requests.cpu": "1"}))).status == 201

    def asking(name: str, cpu: str) -> dict:
        p = pod(name)
        for c in p["spec"]["containers"]:
            c["resources"] = {"requests": {"cpu": cpu}}
        return p

    assert (await client.post(PODS, asking("a", "600m"))).status == 201
    reply = await client.post(PODS, asking("b", "500m"))
    assert reply.status == 403
    assert reply.json["message"].endswith(
        "exceeded quota: cpu, requested: requests.cpu=500m, used: requests.cpu=600m, "
        "limited: requests.cpu=1")
    assert (await client.post(PODS, asking("c", "400m"))).status == 201
