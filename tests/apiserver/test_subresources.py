"""status, binding, eviction, scale and log subresources."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from apiclient import PODS, Client, pod

from draemu.apiserver.endpoints.subresources import LogOptions
from draemu.apiserver.server.lifecycle import APIServer

pytestmark = pytest.mark.unit

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


def deployment(name: str, replicas: int = 1) -> dict:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "i"}]}}}}


async def test_main_update_keeps_status_and_status_update_keeps_spec(client: Client) -> None:
    created = (await client.post(PODS, pod("s1"))).json
    with_status = dict(created, status={**created.get("status", {}), "phase": "Running"})
    after_status = (await client.put(f"{PODS}/s1/status", with_status)).json
    assert after_status["status"]["phase"] == "Running"
    changed = dict(after_status, status={**after_status["status"], "phase": "Failed"})
    changed["metadata"] = dict(after_status["metadata"], labels={"a": "b"})
    main = (await client.put(f"{PODS}/s1", changed)).json
    assert main["status"]["phase"] == "Running"
    assert main["metadata"]["labels"] == {"a": "b"}


async def test_generation_bumps_on_spec_changes_only(client: Client) -> None:
    created = (await client.post(DEPLOYMENTS, deployment("g1"))).json
    assert created["metadata"]["generation"] == 1
    labelled = (await client.patch(f"{DEPLOYMENTS}/g1", {"metadata": {"labels": {"x": "y"}}},
                                   "application/merge-patch+json")).json
    assert labelled["metadata"]["generation"] == 1
    scaled = (await client.patch(f"{DEPLOYMENTS}/g1", {"spec": {"replicas": 3}},
                                 "application/merge-patch+json")).json
    assert scaled["metadata"]["generation"] == 2


async def test_binding_assigns_the_node_and_marks_pod_scheduled(client: Client) -> None:
    await client.post(PODS, pod("b1"))
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "b1"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}}
    reply = await client.post(f"{PODS}/b1/binding", binding)
    assert reply.status == 201
    assert reply.json["status"] == "Success"
    bound = (await client.get(f"{PODS}/b1")).json
    assert bound["spec"]["nodeName"] == "node-1"
    assert {"type": "PodScheduled", "status": "True"}.items() <= \
        bound["status"]["conditions"][0].items()
    again = await client.post(f"{PODS}/b1/binding", binding)
    assert again.status == 409
    assert 'pod b1 is already assigned to node "node-1"' in again.json["message"]


async def test_binding_clears_the_nominated_node(client: Client) -> None:
    await client.post(PODS, pod("b2"))
    status = {"status": {"nominatedNodeName": "node-2"}}
    assert (await client.patch(f"{PODS}/b2/status", status,
                               "application/merge-patch+json")).status == 200
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "b2"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}}
    assert (await client.post(f"{PODS}/b2/binding", binding)).status == 201
    assert "nominatedNodeName" not in (await client.get(f"{PODS}/b2")).json["status"]


async def test_eviction_deletes_the_pod_with_201_success(client: Client) -> None:
    await client.post(PODS, pod("e1"))
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "e1"}}
    reply = await client.post(f"{PODS}/e1/eviction", eviction)
    assert reply.status == 201 and reply.json["status"] == "Success"
    assert (await client.get(f"{PODS}/e1")).status == 404


async def test_scale_reads_and_writes_replicas(client: Client) -> None:
    await client.post(DEPLOYMENTS, deployment("web", 2))
    scale = (await client.get(f"{DEPLOYMENTS}/web/scale")).json
    assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"] == {"replicas": 2}
    assert scale["status"]["selector"] == "app=web"
    scale["spec"]["replicas"] = 5
    assert (await client.put(f"{DEPLOYMENTS}/web/scale", scale)).json["spec"]["replicas"] == 5
    patched = await client.patch(f"{DEPLOYMENTS}/web/scale", {"spec": {"replicas": 1}},
                                 "application/merge-patch+json")
    assert patched.json["spec"]["replicas"] == 1
    assert (await client.get(f"{DEPLOYMENTS}/web")).json["spec"]["replicas"] == 1


async def test_pod_log_on_a_node_that_does_not_exist_is_not_found(client: Client) -> None:
    # Without an in-process provider the apiserver proxies to the Node's kubelet.
    await client.post(PODS, pod("l1", node="far"))
    reply = await client.get(f"{PODS}/l1/log")
    assert reply.status == 404
    assert reply.json["message"] == 'nodes "far" not found'


class _Provider:
    def __init__(self) -> None:
        self.asked: LogOptions | None = None

    async def pod_log(self, namespace: str, pod: str, uid: str, options: LogOptions
                      ) -> AsyncIterator[bytes]:
        self.asked = options
        yield f"{namespace}/{pod}/{options.container}\n".encode()


async def test_pod_log_streams_from_the_nodes_provider(client: Client,
                                                      apiserver: APIServer) -> None:
    provider = _Provider()
    apiserver.register_log_provider("n1", provider)
    await client.post(PODS, pod("l2", node="n1"))
    reply = await client.get(f"{PODS}/l2/log?tailLines=5")
    assert reply.status == 200
    assert reply.body == b"default/l2/c\n"
    assert provider.asked is not None and provider.asked.tail_lines == 5


async def test_pod_log_for_an_unknown_container_is_400(client: Client,
                                                      apiserver: APIServer) -> None:
    apiserver.register_log_provider("n1", _Provider())
    await client.post(PODS, pod("l3", node="n1"))
    reply = await client.get(f"{PODS}/l3/log?container=nope")
    assert reply.status == 400
    assert reply.json["message"] == "container nope is not valid for pod l3"
