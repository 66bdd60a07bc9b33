"""The objects kube-apiserver keeps from start-up: system PriorityClasses, the default
ServiceCIDR, `default/kubernetes` with its Endpoints and EndpointSlice, and the
extension-apiserver-authentication ConfigMap."""

from __future__ import annotations

import json

import pytest
from apiclient import Client

from draemu.apiserver.controlplane.systemobjects import advertise_address
from draemu.apiserver.server.lifecycle import APIServer

pytestmark = pytest.mark.unit


async def test_system_priority_classes(client: Client) -> None:
    items = (await client.get("/apis/scheduling.k8s.io/v1/priorityclasses")).json["items"]
    assert {(i["metadata"]["name"], i["value"]) for i in items} == {
        ("system-node-critical", 2000001000), ("system-cluster-critical", 2000000000)}


async def test_kubernetes_service_points_at_the_apiserver(client: Client,
                                                          apiserver: APIServer) -> None:
    svc = (await client.get("/api/v1/namespaces/default/services/kubernetes")).json
    assert svc["spec"]["clusterIP"] == "10.96.0.1"
    assert svc["spec"]["ports"] == [{"name": "https", "port": 443, "protocol": "TCP",
                                     "targetPort": apiserver.port}]
    assert svc["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}
    address = advertise_address("127.0.0.1")
    if address == "127.0.0.1":
        pytest.skip("no routable address on this machine: no endpoints are published")
    ep = (await client.get("/api/v1/namespaces/default/endpoints/kubernetes")).json
    assert ep["subsets"] == [{"addresses": [{"ip": address}], "ports": [
        {"name": "https", "port": apiserver.port, "protocol": "TCP"}]}]
    assert ep["metadata"]["labels"] == {"endpointslice.kubernetes.io/skip-mirror": "true"}
    eps = (await client.get(
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes")).json
    assert eps["endpoints"] == [{"addresses": [address], "conditions": {"ready": True}}]
    assert eps["metadata"]["labels"] == {"kubernetes.io/service-name": "kubernetes"}


async def test_kubernetes_service_is_corrected_at_start(tmp_path) -> None:
    from draemu.cmd.testing.apiserver import start_apiserver

    first = await start_apiserver(tmp_path / "a", store_url=f"sqlite:///{tmp_path}/s.db")
    await first.stop()
    second = await start_apiserver(tmp_path / "a", store_url=f"sqlite:///{tmp_path}/s.db")
    try:
        svc = second.api.store.objects.lookup("services", "", "default", "kubernetes")
        assert svc["spec"]["ports"][0]["targetPort"] == second.port
    finally:
        await second.stop()


async def test_default_service_cidr_is_ready(client: Client) -> None:
    cidr = (await client.get("/apis/networking.k8s.io/v1/servicecidrs/kubernetes")).json
    assert cidr["spec"]["cidrs"] == ["10.96.0.0/12"]
    assert [(c["type"], c["status"]) for c in cidr["status"]["conditions"]] == [
        ("Ready", "True")]


async def test_authentication_configmap(client: Client, apiserver: APIServer) -> None:
    cm = (await client.get(
        "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication")).json
    data = cm["data"]
    assert data["client-ca-file"] == apiserver.pki.ca.cert_pem.decode()
    assert data["requestheader-client-ca-file"].startswith("-----BEGIN CERTIFICATE-----")
    assert data["requestheader-client-ca-file"] != data["client-ca-file"]
    assert json.loads(data["requestheader-allowed-names"]) == ["front-proxy-client"]
    assert json.loads(data["requestheader-username-headers"]) == ["X-Remote-User"]
    assert json.loads(data["requestheader-group-headers"]) == ["X-Remote-Group"]
    assert json.loads(data["requestheader-extra-headers-prefix"]) == ["X-Remote-Extra-"]


async def _eventually(check, seconds: float = 10.0):  # a test helper
    import asyncio

    for _ in range(int(seconds * 20)):
        found = await check()
        if found:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError("condition not met")


IPS = "/apis/networking.k8s.io/v1/ipaddresses"
SVCS = "/api/v1/namespaces/default/services"


async def test_each_cluster_ip_has_an_ip_address_object(client: Client) -> None:
    async def kubernetes_ip() -> dict | None:
        reply = await client.get(f"{IPS}/10.96.0.1")
        return reply.json if reply.status == 200 else None

    found = await _eventually(kubernetes_ip)
    assert found["spec"]["parentRef"] == {"group": "", "resource": "services",
                                          "namespace": "default", "name": "kubernetes"}
    assert found["metadata"]["labels"] == {"ipaddress.kubernetes.io/ip-family": "IPv4",
                                           "ipaddress.kubernetes.io/managed-by":
                                               "ipallocator.k8s.io"}
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
           "spec": {"clusterIP": "10.96.0.40", "ports": [{"port": 80}]}}
    assert (await client.post(SVCS, svc)).status == 201

    async def web_ip() -> bool:
        return (await client.get(f"{IPS}/10.96.0.40")).status == 200

    await _eventually(web_ip)
    assert (await client.delete(f"{SVCS}/web")).status == 200

    async def web_ip_gone() -> bool:
        return (await client.get(f"{IPS}/10.96.0.40")).status == 404

    await _eventually(web_ip_gone)
    # The address is free again at once, even before its IPAddress goes.
    assert (await client.post(SVCS, svc)).status == 201


async def test_an_address_held_by_another_ip_address_is_taken(client: Client) -> None:
    other = {"apiVersion": "networking.k8s.io/v1", "kind": "IPAddress",
             "metadata": {"name": "10.96.0.50"},
             "spec": {"parentRef": {"group": "gateway.networking.k8s.io",
                                    "resource": "gateways", "namespace": "default",
                                    "name": "gw"}}}
    assert (await client.post(IPS, other)).status == 201
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "taken"},
           "spec": {"clusterIP": "10.96.0.50", "ports": [{"port": 80}]}}
    reply = await client.post(SVCS, svc)
    assert reply.status == 422
    assert "failed to allocate IP 10.96.0.50: provided IP is already allocated" in \
        reply.json["message"]
