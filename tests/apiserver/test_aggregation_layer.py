"""The aggregation layer against a real HTTPS extension apiserver (an aiohttp server
behind a Service and an EndpointSlice): the APIService becomes Available once the
server answers discovery ("all checks passed"), requests for its group-version are
relayed with the front-proxy client certificate and the user in X-Remote-* headers, and
its group and resources appear in discovery; without endpoints it is not Available and
requests get 503."""

from __future__ import annotations

import asyncio
import base64
import ssl
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import web
from apiclient import Client

from draemu import pki
from draemu.apiserver.server.lifecycle import APIServer

pytestmark = pytest.mark.unit

APISERVICES = "/apis/apiregistration.k8s.io/v1/apiservices"
GV = "/apis/wardle.example.com/v1alpha1"
RESOURCES = {"kind": "APIResourceList", "apiVersion": "v1",
             "groupVersion": "wardle.example.com/v1alpha1",
             "resources": [{"name": "flunders", "singularName": "flunder", "namespaced": True,
                            "kind": "Flunder", "verbs": ["create", "get", "list"]},
                           {"name": "flunders/status", "singularName": "", "namespaced": True,
                            "kind": "Flunder", "verbs": ["get"]}]}


class Extension:
    """An HTTPS server with a certificate for sample-api.default.svc that requires a
    client certificate of the front-proxy CA, as a sample-apiserver does."""

    def __init__(self, front_proxy_ca: Path) -> None:
        self.ca = pki.make_ca("extension-ca")
        self.front_proxy_ca = front_proxy_ca
        self.seen: list[dict[str, Any]] = []
        self.port = 0
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        pair = pki.make_serving_cert(self.ca, "127.0.0.1", ["sample-api.default.svc"])
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=self.front_proxy_ca)
        ctx.verify_mode = ssl.CERT_REQUIRED
        with tempfile.TemporaryDirectory() as d:
            cert, key = Path(d) / "c.crt", Path(d) / "c.key"
            cert.write_bytes(pair.cert_pem)
            key.write_bytes(pair.key_pem)
            ctx.load_cert_chain(cert, key)
        app = web.Application()
        app.router.add_get(GV, self.discovery)
        app.router.add_get(GV + "/namespaces/default/flunders", self.flunders)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=ctx)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def _record(self, request: web.Request) -> None:
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        self.seen.append({"user": request.headers.get("X-Remote-User"),
                          "groups": request.headers.getall("X-Remote-Group", []),
                          "authorization": request.headers.get("Authorization"),
                          "peer": dict(x[0] for x in (peer or {}).get("subject", ()))})

    async def discovery(self, request: web.Request) -> web.Response:
        self._record(request)
        return web.json_response(RESOURCES)

    async def flunders(self, request: web.Request) -> web.Response:
        self._record(request)
        return web.json_response({"kind": "FlunderList",
                                  "apiVersion": "wardle.example.com/v1alpha1",
                                  "metadata": {"resourceVersion": "1"}, "items": []})


@pytest_asyncio.fixture
async def extension(apiserver: APIServer) -> AsyncIterator[Extension]:
    assert apiserver.pki is not None
    server = Extension(apiserver.pki.directory / "front-proxy-ca.crt")
    await server.start()
    yield server
    await server.stop()


async def _condition(client: Client, wanted: str) -> dict[str, Any]:
    for _ in range(200):
        svc = (await client.get(f"{APISERVICES}/v1alpha1.wardle.example.com")).json
        found = [c for c in (svc.get("status") or {}).get("conditions") or []
                 if c["type"] == "Available"]
        if found and found[0]["status"] == wanted:
            return found[0]
        await asyncio.sleep(0.05)
    raise AssertionError(f"never Available={wanted}: {svc}")


async def _register(client: Client, extension: Extension) -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "sample-api"},
               "spec": {"ports": [{"port": 7443, "targetPort": 443}]}}
    assert (await client.post("/api/v1/namespaces/default/services", service)).status == 201
    eps = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
           "metadata": {"name": "sample-api-1",
                        "labels": {"kubernetes.io/service-name": "sample-api"}},
           "addressType": "IPv4", "ports": [{"port": extension.port, "protocol": "TCP"}],
           "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": True}}]}
    assert (await client.post("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
                              eps)).status == 201
    apiservice = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                  "metadata": {"name": "v1alpha1.wardle.example.com"},
                  "spec": {"group": "wardle.example.com", "version": "v1alpha1",
                           "groupPriorityMinimum": 2000, "versionPriority": 200,
                           "caBundle": base64.b64encode(extension.ca.cert_pem).decode(),
                           "service": {"namespace": "default", "name": "sample-api",
                                       "port": 7443}}}
    assert (await client.post(APISERVICES, apiservice)).status == 201


async def test_extension_apiserver_is_available_proxied_and_discovered(
        client: Client, extension: Extension) -> None:
    await _register(client, extension)
    condition = await _condition(client, "True")
    assert (condition["reason"], condition["message"]) == ("Passed", "all checks passed")
    assert extension.seen[0]["user"] == "system:kube-aggregator"
    listed = await client.get(GV + "/namespaces/default/flunders")
    assert listed.status == 200 and listed.json["kind"] == "FlunderList"
    seen = extension.seen[-1]
    assert seen["peer"]["commonName"] == "front-proxy-client"
    assert seen["user"] == "kubernetes-admin" and "system:masters" in seen["groups"]
    assert seen["authorization"] is None
    groups = (await client.get("/apis")).json["groups"]
    assert "wardle.example.com" in [g["name"] for g in groups]
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    doc = (await client.get("/apis", headers={"Accept": accept})).json
    [wardle] = [i for i in doc["items"] if i["metadata"]["name"] == "wardle.example.com"]
    [resource] = wardle["versions"][0]["resources"]
    assert (resource["resource"], resource["scope"], resource["responseKind"]["kind"],
            resource["subresources"][0]["subresource"]) == ("flunders", "Namespaced",
                                                            "Flunder", "status")


async def test_without_endpoints_the_apiservice_is_unavailable(
        client: Client, extension: Extension) -> None:
    await _register(client, extension)
    await _condition(client, "True")
    assert (await client.delete("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/"
                                "sample-api-1")).status == 200
    condition = await _condition(client, "False")
    assert (condition["reason"], condition["message"]) == (
        "EndpointsNotFound", 'cannot find endpointslices for service/sample-api in "default"')
    reply = await client.get(GV + "/namespaces/default/flunders")
    assert reply.status == 503
