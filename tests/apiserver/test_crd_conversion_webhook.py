"""CRD conversion webhooks: a CRD with `conversion.strategy: Webhook` has its objects
converted by a real HTTPS webhook (a ConversionReview) when they are written and read in
another version than stored, lists of objects stored in several versions included; a
webhook that answers wrongly fails the request with upstream's message."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from apiclient import Client

from draemu import pki

pytestmark = pytest.mark.unit

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
GROUP = "stable.example.com"


def _convert(obj: dict[str, Any], desired: str) -> dict[str, Any]:
    """v1 keeps `hostPort: host:port`; v2 splits it into `host` and `port`, as the
    e2e conversion webhook (agnhost crd-conversion-webhook) does."""
    out = {k: v for k, v in obj.items() if k not in ("hostPort", "host", "port")}
    out["apiVersion"] = desired
    if desired.endswith("/v2") and "hostPort" in obj:
        out["host"], _, out["port"] = obj["hostPort"].partition(":")
    elif desired.endswith("/v1") and "host" in obj:
        out["hostPort"] = f"{obj['host']}:{obj['port']}"
    return out


class _Handler(BaseHTTPRequestHandler):
    broken = False

    def do_POST(self) -> None:
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        req = review["request"]
        converted = [_convert(o, req["desiredAPIVersion"]) for o in req["objects"]]
        if type(self).broken:
            converted = converted[:0]
        body = json.dumps({"apiVersion": review["apiVersion"], "kind": "ConversionReview",
                           "response": {"uid": req["uid"], "result": {"status": "Success"},
                                        "convertedObjects": converted}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def webhook() -> Iterator[tuple[str, str]]:
    """An HTTPS conversion webhook in a thread of its own: its URL and caBundle."""
    ca = pki.make_ca("conversion-ca")
    pair = pki.make_serving_cert(ca, "127.0.0.1")
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    with tempfile.TemporaryDirectory() as d:
        cert, key = Path(d) / "c.crt", Path(d) / "c.key"
        cert.write_bytes(pair.cert_pem)
        key.write_bytes(pair.key_pem)
        ctx.load_cert_chain(cert, key)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield (f"https://127.0.0.1:{server.server_address[1]}/crdconvert",
               base64.b64encode(ca.cert_pem).decode())
    finally:
        _Handler.broken = False
        server.shutdown()
        server.server_close()


def _crd(url: str, bundle: str, storage: str) -> dict[str, Any]:
    schema = {"openAPIV3Schema": {"type": "object",
                                  "x-kubernetes-preserve-unknown-fields": True}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"widgets.{GROUP}"},
            "spec": {"group": GROUP, "scope": "Namespaced",
                     "names": {"kind": "Widget", "plural": "widgets"},
                     "versions": [{"name": v, "served": True, "storage": v == storage,
                                   "schema": schema} for v in ("v1", "v2")],
                     "conversion": {"strategy": "Webhook", "webhook": {
                         "clientConfig": {"url": url, "caBundle": bundle},
                         "conversionReviewVersions": ["v1", "v1beta1"]}}}}


def _path(version: str, name: str = "") -> str:
    return f"/apis/{GROUP}/{version}/namespaces/default/widgets" + (f"/{name}" if name else "")


async def _established(client: Client) -> None:
    for _ in range(100):
        if (await client.get(_path("v2"))).status == 200:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the CRD was never served")


async def test_objects_are_converted_by_the_webhook(client: Client,
                                                    webhook: tuple[str, str]) -> None:
    url, bundle = webhook
    assert (await client.post(CRDS, _crd(url, bundle, "v1"))).status == 201
    await _established(client)
    obj = {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "w1"},
           "hostPort": "localhost:8080"}
    assert (await client.post(_path("v1"), obj)).status == 201
    got = (await client.get(_path("v2", "w1"))).json
    assert (got["apiVersion"], got["host"], got["port"]) == (f"{GROUP}/v2", "localhost",
                                                            "8080")
    assert "hostPort" not in got and got["metadata"]["name"] == "w1"
    # Stored in v2 from now on: a list holds one object stored in each version.
    crd = (await client.get(f"{CRDS}/widgets.{GROUP}")).json
    crd["spec"] = _crd(url, bundle, "v2")["spec"]
    assert (await client.put(f"{CRDS}/widgets.{GROUP}", crd)).status == 200
    await asyncio.sleep(0.2)
    second = {**obj, "metadata": {"name": "w2"}, "hostPort": "example.com:80"}
    assert (await client.post(_path("v1"), second)).status == 201
    listed = (await client.get(_path("v2"))).json["items"]
    assert [(o["apiVersion"], o["host"]) for o in listed] == [
        (f"{GROUP}/v2", "localhost"), (f"{GROUP}/v2", "example.com")]
    listed = (await client.get(_path("v1"))).json["items"]
    assert [o["hostPort"] for o in listed] == ["localhost:8080", "example.com:80"]


async def test_a_wrong_answer_fails_the_request(client: Client,
                                               webhook: tuple[str, str]) -> None:
    url, bundle = webhook
    assert (await client.post(CRDS, _crd(url, bundle, "v1"))).status == 201
    await _established(client)
    _Handler.broken = True
    obj = {"apiVersion": f"{GROUP}/v2", "kind": "Widget", "metadata": {"name": "w1"},
           "host": "a", "port": "1"}
    reply = await client.post(_path("v2"), obj)
    assert reply.status == 500
    assert reply.json["message"] == (
        f"Internal error occurred: conversion webhook for {GROUP}/v2, Kind=Widget returned 0 "
        "objects, expected 1")


async def test_an_object_stored_in_an_older_version_is_patched_in_the_new_one(
        client: Client) -> None:
    """Without a webhook (strategy None): an object stored while v1 was the storage
    version is served, and JSON-patched, as v2 once v2 is."""
    crd = _crd("https://unused.invalid", "", "v1")
    del crd["spec"]["conversion"]
    assert (await client.post(CRDS, crd)).status == 201
    await _established(client)
    obj = {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "w1"},
           "data": {"a": "b"}}
    assert (await client.post(_path("v1"), obj)).status == 201
    stored = (await client.get(f"{CRDS}/widgets.{GROUP}")).json
    for version in stored["spec"]["versions"]:
        version["storage"] = version["name"] == "v2"
    assert (await client.put(f"{CRDS}/widgets.{GROUP}", stored)).status == 200
    await asyncio.sleep(0.2)
    reply = await client.patch(_path("v2", "w1"), [{"op": "add", "path": "/dummy",
                                                    "value": "test"}],
                               content_type="application/json-patch+json")
    assert reply.status == 200, reply.json
    assert (reply.json["apiVersion"], reply.json["dummy"]) == (f"{GROUP}/v2", "test")
    assert (await client.get(_path("v2", "w1"))).json["apiVersion"] == f"{GROUP}/v2"


async def test_field_selectors_are_the_request_versions_on_converted_objects(
        client: Client, webhook: tuple[str, str]) -> None:
    """As the CustomResourceFieldSelectors conformance spec: v1 selects by hostPort, v2 by
    host and port, whatever the version objects are stored in."""
    url, bundle = webhook
    crd = _crd(url, bundle, "v1")
    for version, fields in zip(crd["spec"]["versions"], (["hostPort"], ["host", "port"]),
                               strict=True):
        version["schema"] = {"openAPIV3Schema": {"type": "object", "properties": {
            f: {"type": "string"} for f in fields}}}
        version["selectableFields"] = [{"jsonPath": f".{f}"} for f in fields]
    assert (await client.post(CRDS, crd)).status == 201
    await _established(client)
    for name, host_port in (("a", "host1:80"), ("b", "host1:8080"), ("c", "host2:80")):
        obj = {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": name},
               "hostPort": host_port}
        assert (await client.post(_path("v1"), obj)).status == 201

    async def names(version: str, selector: str) -> list[str]:
        reply = await client.get(f"{_path(version)}?fieldSelector={selector}")
        assert reply.status == 200, reply.json
        return [o["metadata"]["name"] for o in reply.json["items"]]

    assert await names("v2", "host%3Dhost1") == ["a", "b"]
    assert await names("v2", "host%3Dhost1,port%3D80") == ["a"]
    assert await names("v1", "hostPort%3Dhost1:80") == ["a"]
    unknown = await client.get(f"{_path('v1')}?fieldSelector=host%3Dhost1")
    assert unknown.status == 400
