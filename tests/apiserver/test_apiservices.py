"""apiregistration.k8s.io/v1 APIServices over HTTP: one Local, Available APIService per
built-in group-version at start, one per group-version a CRD serves (gone with the
CRD), and kube-aggregator's validation of the name, priorities and service."""

from __future__ import annotations

import asyncio

import pytest
from apiclient import Client

pytestmark = pytest.mark.unit

APISERVICES = "/apis/apiregistration.k8s.io/v1/apiservices"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


async def _wait_for(client: Client, name: str, present: bool) -> None:
    for _ in range(100):
        if ((await client.get(f"{APISERVICES}/{name}")).status == 200) == present:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{name} {'never came' if present else 'never went'}")


async def test_builtin_group_versions_have_local_available_apiservices(client: Client) -> None:
    items = {i["metadata"]["name"]: i for i in (await client.get(APISERVICES)).json["items"]}
    core, apps = items["v1."], items["v1.apps"]
    assert core["spec"] == {"group": "", "version": "v1", "groupPriorityMinimum": 18000,
                            "versionPriority": 1}
    assert apps["spec"]["groupPriorityMinimum"] == 17800
    assert apps["metadata"]["labels"] == {"kube-aggregator.kubernetes.io/automanaged":
                                          "onstart"}
    condition = apps["status"]["conditions"][0]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "Available", "True", "Local")
    assert "v1.resource.k8s.io" in items and "v2.autoscaling" in items


async def test_a_crds_group_version_gets_an_apiservice_while_served(client: Client) -> None:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"kind": "Widget", "plural": "widgets"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object"}}}]}}
    assert (await client.post(CRDS, crd)).status == 201
    await _wait_for(client, "v1.example.com", True)
    svc = (await client.get(f"{APISERVICES}/v1.example.com")).json
    assert (svc["spec"]["groupPriorityMinimum"], svc["spec"]["versionPriority"]) == (1000, 100)
    assert (await client.delete(f"{CRDS}/widgets.example.com")).status == 200
    await _wait_for(client, "v1.example.com", False)


async def test_validation_is_kube_aggregators(client: Client) -> None:
    bad = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
           "metadata": {"name": "v1.wrong.io"},
           "spec": {"group": "example.io", "version": "v1alpha1", "groupPriorityMinimum": 0,
                    "versionPriority": 2000, "service": {"namespace": "x", "name": ""},
                    "insecureSkipTLSVerify": True, "caBundle": "YWJj"}}
    reply = await client.post(APISERVICES, bad)
    assert reply.status == 422
    assert [(c["field"], c["message"]) for c in reply.json["details"]["causes"]] == [
        ("metadata.name", 'Invalid value: "v1.wrong.io": must be `spec.version+"."+spec.group`'
                          ': "v1alpha1.example.io"'),
        ("spec.groupPriorityMinimum", "Invalid value: 0: must be positive and less than 20000"),
        ("spec.versionPriority", "Invalid value: 2000: must be positive and less than 1000"),
        ("spec.service.name", "Required value"),
        ("spec.insecureSkipTLSVerify", "Invalid value: true: may not be true if caBundle is "
                                       "present")]


async def test_a_service_backed_apiservice_starts_without_status_and_keeps_it(
        client: Client) -> None:
    svc = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
           "metadata": {"name": "v1alpha1.wardle.example.com"},
           "spec": {"group": "wardle.example.com", "version": "v1alpha1",
                    "groupPriorityMinimum": 2000, "versionPriority": 200,
                    "service": {"namespace": "default", "name": "sample-api"},
                    "insecureSkipTLSVerify": True}}
    created = await client.post(APISERVICES, svc)
    assert created.status == 201, created.json
    assert created.json["spec"]["service"]["port"] == 443
    assert created.json["status"] == {}
    status = {**created.json, "status": {"conditions": [{"type": "Available",
                                                         "status": "Maybe"}]}}
    reply = await client.put(f"{APISERVICES}/v1alpha1.wardle.example.com/status", status)
    assert reply.status == 422
    assert reply.json["details"]["causes"][0]["message"] == (
        'Unsupported value: "Maybe": supported values: "True", "False", "Unknown"')
