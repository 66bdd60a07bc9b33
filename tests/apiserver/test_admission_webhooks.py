"""Admission webhooks called over HTTPS with the configuration's caBundle: a validating
webhook's denial and warnings, a mutating webhook's JSONPatch, failurePolicy when the
webhook cannot be reached (a Service without endpoints, as emulated pods serve
nothing), matchConditions."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from aiohttp import web
from apiclient import Client

from draemu import pki

pytestmark = pytest.mark.unit

CONFIGS = "/apis/admissionregistration.k8s.io/v1"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


class Hook:
    """An HTTPS admission webhook on a free local port."""

    def __init__(self) -> None:
        self.ca = pki.make_ca("webhook-ca")
        self.reviews: list[dict[str, Any]] = []
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        pair = pki.make_serving_cert(self.ca, "127.0.0.1")
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        with tempfile.TemporaryDirectory() as d:
            cert, key = Path(d) / "c.crt", Path(d) / "c.key"
            cert.write_bytes(pair.cert_pem)
            key.write_bytes(pair.key_pem)
            ctx.load_cert_chain(cert, key)
        app = web.Application()
        app.router.add_post("/validate", self.validate)
        app.router.add_post("/mutate", self.mutate)
        app.router.add_post("/add-init-container", self.add_init_container)
        app.router.add_post("/deny-attach", self.deny_attach)
        app.router.add_post("/add-data", self.add_data)
        app.router.add_post("/observe", self.observe)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=ctx)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"https://127.0.0.1:{port}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode(self.ca.cert_pem).decode()

    async def validate(self, request: web.Request) -> web.Response:
        review = await request.json()
        self.reviews.append(review)
        req = review["request"]
        obj = req.get("object") or {}
        allowed = (obj.get("data") or {}).get("color") != "red"
        response: dict[str, Any] = {"uid": req["uid"], "allowed": allowed,
                                    "warnings": ["checked by the test webhook"]}
        if not allowed:
            response["status"] = {"code": 403, "reason": "Forbidden",
                                  "message": "red is not allowed"}
        return web.json_response({"apiVersion": "admission.k8s.io/v1",
                                  "kind": "AdmissionReview", "response": response})

    async def observe(self, request: web.Request) -> web.Response:
        """Records the object it was shown and allows it unchanged."""
        review = await request.json()
        self.reviews.append(review)
        return web.json_response({"apiVersion": "admission.k8s.io/v1",
                                  "kind": "AdmissionReview", "response": {
                                      "uid": review["request"]["uid"], "allowed": True}})

    async def mutate(self, request: web.Request) -> web.Response:
        review = await request.json()
        req = review["request"]
        patch = [{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}]
        return web.json_response({"apiVersion": "admission.k8s.io/v1",
                                  "kind": "AdmissionReview", "response": {
                                      "uid": req["uid"], "allowed": True,
                                      "patchType": "JSONPatch",
                                      "patch": base64.b64encode(
                                          json.dumps(patch).encode()).decode()}})


    async def add_init_container(self, request: web.Request) -> web.Response:
        """The e2e webhook's pod mutation: an init container with only a name and an
        image."""
        req = (await request.json())["request"]
        patch = [{"op": "add", "path": "/spec/initContainers",
                  "value": [{"name": "webhook-added-init-container", "image": "busybox"}]}]
        return web.json_response({"apiVersion": "admission.k8s.io/v1",
                                  "kind": "AdmissionReview", "response": {
                                      "uid": req["uid"], "allowed": True,
                                      "patchType": "JSONPatch",
                                      "patch": base64.b64encode(
                                          json.dumps(patch).encode()).decode()}})


    async def add_data(self, request: web.Request) -> web.Response:
        """Adds two keys to `data`, one of which a custom resource's schema prunes."""
        req = (await request.json())["request"]
        patch = [{"op": "add", "path": "/data/stage-1", "value": "yes"},
                 {"op": "add", "path": "/data/stage-2", "value": "yes"}]
        return web.json_response({"apiVersion": "admission.k8s.io/v1",
                                  "kind": "AdmissionReview", "response": {
                                      "uid": req["uid"], "allowed": True,
                                      "patchType": "JSONPatch",
                                      "patch": base64.b64encode(
                                          json.dumps(patch).encode()).decode()}})

    async def deny_attach(self, request: web.Request) -> web.Response:
        review = await request.json()
        self.reviews.append(review)
        return web.json_response({"apiVersion": "admission.k8s.io/v1",
                                  "kind": "AdmissionReview", "response": {
                                      "uid": review["request"]["uid"], "allowed": False,
                                      "status": {"code": 403, "reason": "Forbidden",
                                                 "message": "attaching is not allowed"}}})


@pytest_asyncio.fixture
async def hook() -> AsyncIterator[Hook]:
    server = Hook()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def configuration(kind: str, name: str, client_config: dict[str, Any],
                  **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": name},
            "webhooks": [{"name": f"{name}.hooks.example.com", "clientConfig": client_config,
                          "admissionReviewVersions": ["v1"], "sideEffects": "None",
                          "rules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                     "operations": ["CREATE", "UPDATE"],
                                     "resources": ["configmaps"]}], **extra}]}


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


async def test_validating_webhook_denies_with_upstreams_message(client: Client,
                                                                 hook: Hook) -> None:
    config = configuration("ValidatingWebhookConfiguration", "colors",
                           {"url": f"{hook.url}/validate", "caBundle": hook.ca_bundle})
    assert (await client.post(f"{CONFIGS}/validatingwebhookconfigurations", config)
            ).status == 201
    reply = await client.post(CONFIGMAPS, configmap("red", color="red"))
    assert (reply.status, reply.json["reason"]) == (403, "Forbidden")
    assert reply.json["message"] == ('admission webhook "colors.hooks.example.com" denied '
                                     "the request: red is not allowed")
    ok = await client.post(CONFIGMAPS, configmap("blue", color="blue"))
    assert ok.status == 201
    assert ok.headers.getall("Warning") == ['299 - "checked by the test webhook"']
    request = hook.reviews[-1]["request"]
    assert (request["operation"], request["kind"], request["resource"]["resource"],
            request["namespace"], request["object"]["data"], request["oldObject"]) == (
        "CREATE", {"group": "", "version": "v1", "kind": "ConfigMap"}, "configmaps",
        "default", {"color": "blue"}, None)


async def test_mutating_webhook_patch_is_applied(client: Client, hook: Hook) -> None:
    config = configuration("MutatingWebhookConfiguration", "labels",
                           {"url": f"{hook.url}/mutate", "caBundle": hook.ca_bundle})
    assert (await client.post(f"{CONFIGS}/mutatingwebhookconfigurations", config)
            ).status == 201
    reply = await client.post(CONFIGMAPS, configmap("plain"))
    assert reply.status == 201, reply.body
    assert reply.json["metadata"]["labels"] == {"mutated": "yes"}


async def test_a_webhooks_patch_is_defaulted(client: Client, hook: Hook) -> None:
    """As upstream's mutating dispatcher decodes and defaults each webhook's result: the
    init container a webhook adds gets its defaults, or the pod would be invalid."""
    config = configuration("MutatingWebhookConfiguration", "init",
                           {"url": f"{hook.url}/add-init-container",
                            "caBundle": hook.ca_bundle})
    config["webhooks"][0]["rules"][0]["resources"] = ["pods"]
    config["webhooks"][0]["rules"][0]["operations"] = ["CREATE"]
    assert (await client.post(f"{CONFIGS}/mutatingwebhookconfigurations", config)).status == 201
    await asyncio.sleep(0.2)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "mutated"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    reply = await client.post("/api/v1/namespaces/default/pods", pod)
    assert reply.status == 201, reply.json
    [init] = reply.json["spec"]["initContainers"]
    assert (init["terminationMessagePolicy"], init["imagePullPolicy"]) == ("File", "Always")


async def test_a_connect_to_pods_attach_goes_through_validating_webhooks(
        client: Client, hook: Hook) -> None:
    config = configuration("ValidatingWebhookConfiguration", "attach",
                           {"url": f"{hook.url}/deny-attach", "caBundle": hook.ca_bundle})
    config["webhooks"][0]["rules"] = [{"apiGroups": [""], "apiVersions": ["v1"],
                                       "operations": ["CONNECT"], "resources": ["pods/attach"]}]
    assert (await client.post(f"{CONFIGS}/validatingwebhookconfigurations", config)
            ).status == 201
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "attached"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    assert (await client.post("/api/v1/namespaces/default/pods", pod)).status == 201
    await asyncio.sleep(0.2)
    reply = await client.post("/api/v1/namespaces/default/pods/attached/attach?stdin=true"
                              "&container=c", None)
    assert reply.status == 403, reply.body
    assert reply.json["message"] == ('admission webhook "attach.hooks.example.com" denied the '
                                     "request: attaching is not allowed")
    request = hook.reviews[-1]["request"]
    assert (request["operation"], request["subResource"], request["name"]) == (
        "CONNECT", "attach", "attached")
    assert request["object"] == {"kind": "PodAttachOptions", "apiVersion": "v1",
                                 "stdin": True, "container": "c"}


async def test_a_webhooks_patch_of_a_custom_resource_is_pruned(client: Client,
                                                                hook: Hook) -> None:
    schema = {"type": "object", "properties": {"data": {"type": "object", "properties": {
        "start": {"type": "string"}, "stage-1": {"type": "string"}}}}}
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "things.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"kind": "Thing", "plural": "things"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": schema}}]}}
    assert (await client.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                              crd)).status == 201
    config = configuration("MutatingWebhookConfiguration", "things",
                           {"url": f"{hook.url}/add-data", "caBundle": hook.ca_bundle})
    config["webhooks"][0]["rules"] = [{"apiGroups": ["example.com"], "apiVersions": ["v1"],
                                       "operations": ["CREATE"], "resources": ["things"]}]
    assert (await client.post(f"{CONFIGS}/mutatingwebhookconfigurations", config)).status == 201
    await asyncio.sleep(0.3)
    thing = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"},
             "data": {"start": "yes"}}
    reply = await client.post("/apis/example.com/v1/namespaces/default/things", thing)
    assert reply.status == 201, reply.json
    assert reply.json["data"] == {"start": "yes", "stage-1": "yes"}


async def test_unknown_ca_fails_closed(client: Client, hook: Hook) -> None:
    other = base64.b64encode(pki.make_ca("other").cert_pem).decode()
    config = configuration("ValidatingWebhookConfiguration", "strict",
                           {"url": f"{hook.url}/validate", "caBundle": other})
    assert (await client.post(f"{CONFIGS}/validatingwebhookconfigurations", config)
            ).status == 201
    reply = await client.post(CONFIGMAPS, configmap("any"))
    assert reply.status == 500
    assert reply.json["message"].startswith(
        'Internal error occurred: failed calling webhook "strict.hooks.example.com": '
        f'failed to call webhook: Post "{hook.url}/validate?timeout=10s": tls: ')


async def test_service_without_endpoints_follows_failure_policy(client: Client) -> None:
    service = {"service": {"name": "hook", "namespace": "default", "path": "/validate"}}
    config = configuration("ValidatingWebhookConfiguration", "pods", service)
    assert (await client.post(f"{CONFIGS}/validatingwebhookconfigurations", config)
            ).status == 201
    reply = await client.post(CONFIGMAPS, configmap("blocked"))
    assert reply.status == 500
    assert reply.json["message"] == (
        'Internal error occurred: failed calling webhook "pods.hooks.example.com": failed '
        'to call webhook: Post "https://hook.default.svc:443/validate?timeout=10s": no '
        'endpoints available for service "hook"')
    current = (await client.get(f"{CONFIGS}/validatingwebhookconfigurations/pods")).json
    current["webhooks"][0]["failurePolicy"] = "Ignore"
    assert (await client.put(f"{CONFIGS}/validatingwebhookconfigurations/pods", current)
            ).status == 200
    assert (await client.post(CONFIGMAPS, configmap("through"))).status == 201


async def test_match_conditions_skip_the_call(client: Client, hook: Hook) -> None:
    config = configuration("ValidatingWebhookConfiguration", "cond",
                           {"url": f"{hook.url}/validate", "caBundle": hook.ca_bundle},
                           matchConditions=[{"name": "only-checked",
                                             "expression": "has(object.metadata.labels) && "
                                                           "'check' in object.metadata.labels"}])
    assert (await client.post(f"{CONFIGS}/validatingwebhookconfigurations", config)
            ).status == 201
    assert (await client.post(CONFIGMAPS, configmap("unchecked", color="red"))).status == 201
    assert hook.reviews == []
    checked = configmap("checked", color="red")
    checked["metadata"]["labels"] = {"check": "1"}
    assert (await client.post(CONFIGMAPS, checked)).status == 403


async def test_a_webhook_that_never_answers_does_not_starve_another(client: Client,
                                                                    hook: Hook) -> None:
    """120 creates hang on a webhook that accepts TCP and never answers; a create through
    a healthy webhook is still decided by it at once (issue 35, defect 5: one shared pool
    of 100 connections made it fail, or with failurePolicy Ignore pass unchecked)."""
    hole = await asyncio.start_server(_never_answer, "127.0.0.1", 0)
    port = hole.sockets[0].getsockname()[1]
    try:
        stuck = configuration("ValidatingWebhookConfiguration", "hole",
                              {"url": f"https://127.0.0.1:{port}/validate",
                               "caBundle": hook.ca_bundle}, timeoutSeconds=30,
                              namespaceSelector=_namespace_is("stuck"))
        healthy = configuration("ValidatingWebhookConfiguration", "colors",
                                {"url": f"{hook.url}/validate", "caBundle": hook.ca_bundle},
                                failurePolicy="Ignore",
                                namespaceSelector=_namespace_is("default"))
        for config in (stuck, healthy):
            assert (await client.post(f"{CONFIGS}/validatingwebhookconfigurations", config)
                    ).status == 201
        assert (await client.post("/api/v1/namespaces", {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "stuck"}})
        ).status == 201
        hanging = [asyncio.create_task(client.post(
            "/api/v1/namespaces/stuck/configmaps", configmap(f"c{i}"))) for i in range(120)]
        await asyncio.sleep(1.0)  # every one is waiting on the hole now
        started = time.monotonic()
        async with aiohttp.ClientSession() as session:  # the hanging ones fill client's pool
            other = Client(client.base, session, client.ssl)
            reply = await other.post(CONFIGMAPS, configmap("red", color="red"))
        assert (reply.status, reply.json["reason"]) == (403, "Forbidden")
        assert time.monotonic() - started < 10
        assert not any(task.done() for task in hanging)
        for task in hanging:
            task.cancel()
        await asyncio.gather(*hanging, return_exceptions=True)
    finally:
        hole.close()


async def _never_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        await reader.read()  # until the caller gives up
    finally:
        writer.close()


def _namespace_is(name: str) -> dict[str, Any]:
    return {"matchLabels": {"kubernetes.io/metadata.name": name}}


async def _mutating(client: Client, name: str, url: str, hook: Hook, policy: str) -> None:
    config = configuration("MutatingWebhookConfiguration", name,
                           {"url": url, "caBundle": hook.ca_bundle},
                           reinvocationPolicy=policy)
    assert (await client.post(f"{CONFIGS}/mutatingwebhookconfigurations", config)
            ).status == 201


@pytest.mark.parametrize("policy,calls", [("IfNeeded", 2), ("Never", 1)])
async def test_if_needed_webhook_is_called_again_after_a_later_patch(
        client: Client, hook: Hook, policy: str, calls: int) -> None:
    """Configurations run in name order: the observer, then the one that patches."""
    await _mutating(client, "a-observer", f"{hook.url}/observe", hook, policy)
    await _mutating(client, "b-labels", f"{hook.url}/mutate", hook, "Never")
    reply = await client.post(CONFIGMAPS, configmap("plain"))
    assert reply.status == 201 and reply.json["metadata"]["labels"] == {"mutated": "yes"}
    assert len(hook.reviews) == calls
    if calls == 2:
        assert hook.reviews[1]["request"]["object"]["metadata"]["labels"] == {"mutated": "yes"}


async def test_if_needed_mutating_policy_sees_a_webhooks_patch(client: Client,
                                                               hook: Hook) -> None:
    policy = {"apiVersion": "admissionregistration.k8s.io/v1",
              "kind": "MutatingAdmissionPolicy", "metadata": {"name": "seen.example.com"},
              "spec": {"matchConstraints": {"resourceRules": [{
                  "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                  "resources": ["configmaps"]}]},
                  "reinvocationPolicy": "IfNeeded",
                  "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
                      "expression": "Object{metadata: Object.metadata{annotations: {'seen': "
                                    "has(object.metadata.labels) ? 'labels' : 'none'}}}"}}]}}
    assert (await client.post(f"{CONFIGS}/mutatingadmissionpolicies", policy)).status == 201
    binding = {"apiVersion": "admissionregistration.k8s.io/v1",
               "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": "seen"},
               "spec": {"policyName": "seen.example.com"}}
    assert (await client.post(f"{CONFIGS}/mutatingadmissionpolicybindings", binding)
            ).status == 201
    await _mutating(client, "labels", f"{hook.url}/mutate", hook, "Never")
    created = (await client.post(CONFIGMAPS, configmap("plain"))).json
    assert created["metadata"]["labels"] == {"mutated": "yes"}
    assert created["metadata"]["annotations"] == {"seen": "labels"}
