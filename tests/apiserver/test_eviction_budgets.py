"""pods/eviction against PodDisruptionBudgets, with upstream's answers."""

from __future__ import annotations

import pytest
from apiclient import PODS, Client, pod

pytestmark = pytest.mark.unit

PDBS = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
MERGE = "application/merge-patch+json"
EVICTION = {"apiVersion": "policy/v1", "kind": "Eviction"}


async def running(client: Client, name: str, ready: bool = True) -> None:
    body = pod(name)
    body["metadata"]["labels"] = {"app": "web"}
    assert (await client.post(PODS, body)).status == 201
    status = {"status": {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True" if ready else "False"}]}}
    assert (await client.patch(f"{PODS}/{name}/status", status, MERGE)).status == 200


async def budget(client: Client, name: str, **status: object) -> dict:
    reply = await client.post(PDBS, {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                                     "metadata": {"name": name},
                                     "spec": {"minAvailable": 1, "selector": {
                                         "matchLabels": {"app": "web"}}}})
    assert reply.status == 201, reply.json
    if status:
        full = {"observedGeneration": reply.json["metadata"]["generation"], **status}
        patched = await client.patch(f"{PDBS}/{name}/status", {"status": full}, MERGE)
        assert patched.status == 200, patched.json
    return reply.json


async def evict(client: Client, name: str):
    return await client.post(f"{PODS}/{name}/eviction", {**EVICTION, "metadata": {"name": name}})


async def test_an_eviction_takes_one_allowed_disruption(client: Client) -> None:
    await running(client, "a")
    await running(client, "b")
    await budget(client, "web", currentHealthy=2, desiredHealthy=1, expectedPods=2,
                 disruptionsAllowed=1)
    assert (await evict(client, "a")).status == 201
    status = (await client.get(f"{PDBS}/web")).json["status"]
    assert status["disruptionsAllowed"] == 0 and "a" in status["disruptedPods"]
    refused = await evict(client, "b")
    assert refused.status == 429
    assert refused.json["message"] == ("Cannot evict pod as it would violate the pod's "
                                       "disruption budget.")
    assert refused.json["details"]["causes"] == [{
        "reason": "DisruptionBudget",
        "message": "The disruption budget web does not allow evicting pods currently"}]
    assert (await client.get(f"{PODS}/b")).status == 200


async def test_a_budget_at_its_minimum_says_how_many_pods_it_needs(client: Client) -> None:
    await running(client, "a")
    await budget(client, "web", currentHealthy=1, desiredHealthy=1, expectedPods=1,
                 disruptionsAllowed=0)
    refused = await evict(client, "a")
    assert refused.status == 429
    assert refused.json["details"]["causes"][0]["message"] == (
        "The disruption budget web needs 1 healthy pods and has 1 currently")


async def test_a_budget_not_yet_processed_asks_to_retry(client: Client) -> None:
    await running(client, "a")
    await budget(client, "web")
    refused = await evict(client, "a")
    assert refused.status == 429
    assert refused.json["details"]["retryAfterSeconds"] == 10
    assert refused.json["details"]["causes"][0]["message"] == (
        "The disruption budget web is still being processed by the server.")


async def test_pending_and_unready_pods_may_go(client: Client) -> None:
    pending = pod("p")
    pending["metadata"]["labels"] = {"app": "web"}
    await client.post(PODS, pending)
    await running(client, "sick", ready=False)
    await running(client, "ok")
    await budget(client, "web", currentHealthy=1, desiredHealthy=1, expectedPods=2,
                 disruptionsAllowed=0)
    assert (await evict(client, "p")).status == 201
    assert (await evict(client, "sick")).status == 201


async def test_two_budgets_for_one_pod_cannot_be_honoured(client: Client) -> None:
    await running(client, "a")
    await budget(client, "one")
    await budget(client, "two")
    reply = await evict(client, "a")
    assert reply.status == 500
    assert reply.json["message"] == ("This pod has more than one PodDisruptionBudget, which "
                                     "the eviction subresource does not support.")
