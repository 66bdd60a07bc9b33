"""The PodSecurity admission plugin served by the apiserver: an administrator forbids
privileged pods per namespace with `pod-security.kubernetes.io/*` labels; enforce
denies with upstream's 403, warn answers with a Warning, audit annotates the audit
event, a pinned version runs that release's checks, pod templates are warned about
only, and a namespace's bad labels or stricter enforce level are answered as
kube-apiserver answers them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from apiclient import Client, own_apiserver

pytestmark = pytest.mark.unit

PRIVILEGED_POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "root"},
                  "spec": {"containers": [{"name": "c", "image": "busybox",
                                           "securityContext": {"privileged": True}}]}}
DENIED = ('pods "root" is forbidden: violates PodSecurity "baseline:latest": privileged '
          '(container "c" must not set securityContext.privileged=true)')


async def namespace(client: Client, name: str, labels: dict[str, str]) -> None:
    reply = await client.post("/api/v1/namespaces", {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
    assert reply.status == 201, reply.json


def warnings(reply: Any) -> list[str]:
    return [w.removeprefix('299 - "').removesuffix('"').replace('\\"', '"')
            for w in reply.headers.getall("Warning", [])]


async def test_enforce_forbids_a_privileged_pod_with_upstreams_status(client: Client):
    await namespace(client, "tenant", {"pod-security.kubernetes.io/enforce": "baseline"})
    reply = await client.post("/api/v1/namespaces/tenant/pods", PRIVILEGED_POD)
    assert reply.status == 403
    assert reply.json == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                          "status": "Failure", "message": DENIED, "reason": "Forbidden",
                          "details": {"name": "root", "kind": "pods"}, "code": 403}
    fine = {**PRIVILEGED_POD, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    assert (await client.post("/api/v1/namespaces/tenant/pods", fine)).status == 201


async def test_warn_admits_with_a_warning_and_namespaces_without_labels_admit_anything(
        client: Client):
    await namespace(client, "warned", {"pod-security.kubernetes.io/warn": "baseline"})
    reply = await client.post("/api/v1/namespaces/warned/pods", PRIVILEGED_POD)
    assert reply.status == 201
    assert warnings(reply) == ['would violate PodSecurity "baseline:latest": privileged '
                               '(container "c" must not set securityContext.privileged=true)']
    reply = await client.post("/api/v1/namespaces/default/pods", PRIVILEGED_POD)
    assert (reply.status, warnings(reply)) == (201, [])


async def test_a_pinned_version_runs_the_checks_of_that_release(client: Client):
    await namespace(client, "pinned", {"pod-security.kubernetes.io/enforce": "restricted",
                                       "pod-security.kubernetes.io/enforce-version": "v1.21"})
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "app"}, "spec": {
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"name": "c", "image": "app",
                        "securityContext": {"allowPrivilegeEscalation": False}}]}}
    # capabilities.drop: ["ALL"] is restricted's from 1.22 on
    assert (await client.post("/api/v1/namespaces/pinned/pods", pod)).status == 201
    await namespace(client, "latest", {"pod-security.kubernetes.io/enforce": "restricted"})
    reply = await client.post("/api/v1/namespaces/latest/pods", pod)
    assert reply.status == 403
    assert reply.json["message"] == (
        'pods "app" is forbidden: violates PodSecurity "restricted:latest": unrestricted '
        'capabilities (container "c" must set securityContext.capabilities.drop=["ALL"])')


async def test_a_deployment_is_warned_about_and_admitted(client: Client):
    await namespace(client, "apps", {"pod-security.kubernetes.io/enforce": "baseline"})
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                  "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
                      "metadata": {"labels": {"app": "web"}},
                      "spec": PRIVILEGED_POD["spec"]}}}
    reply = await client.post("/apis/apps/v1/namespaces/apps/deployments", deployment)
    assert reply.status == 201
    assert warnings(reply) == ['would violate PodSecurity "baseline:latest": privileged '
                               '(container "c" must not set securityContext.privileged=true)']


async def test_bad_labels_are_refused_and_a_stricter_level_names_the_pods_it_would_deny(
        client: Client):
    reply = await client.post("/api/v1/namespaces", {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": "typo", "labels": {"pod-security.kubernetes.io/enforce": "strict"}}})
    assert reply.status == 422
    assert reply.json["message"] == (
        'Namespace "typo" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: '
        'Invalid value: "strict": must be one of privileged, baseline, restricted')
    await namespace(client, "team", {})
    for name in ("b", "a"):
        pod = {**PRIVILEGED_POD, "metadata": {"name": name}}
        assert (await client.post("/api/v1/namespaces/team/pods", pod)).status == 201
    reply = await client.request(
        "PATCH", "/api/v1/namespaces/team",
        {"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "baseline"}}},
        content_type="application/merge-patch+json")
    assert reply.status == 200
    assert warnings(reply) == [
        'existing pods in namespace "team" violate the new PodSecurity enforce level '
        '"baseline:latest"',
        "a (and 1 other pod): privileged"]


async def test_the_audit_event_carries_the_policy_and_its_violations(tmp_path: Path):
    log = tmp_path / "audit.log"
    async with own_apiserver(tmp_path, audit_log=log) as (client, _server):
        await namespace(client, "audited", {"pod-security.kubernetes.io/enforce": "baseline",
                                            "pod-security.kubernetes.io/audit": "restricted"})
        await client.post("/api/v1/namespaces/audited/pods", PRIVILEGED_POD)
    events = [json.loads(line) for line in log.read_text().splitlines()]
    (event,) = [e for e in events if e["verb"] == "create"
                and e.get("objectRef", {}).get("resource") == "pods"]
    notes = event["annotations"]
    assert notes["pod-security.kubernetes.io/enforce-policy"] == "baseline:latest"
    assert notes["pod-security.kubernetes.io/audit-violations"].startswith(
        'would violate PodSecurity "restricted:latest": privileged (container "c" must not')
    assert event["responseStatus"]["code"] == 403
