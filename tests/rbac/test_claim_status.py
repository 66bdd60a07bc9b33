"""1.37's granular ResourceClaim status authorization: status.allocation and reservedFor
need resourceclaims/binding, each driver's status.devices entries need
associated-node:<verb> or arbitrary-node:<verb> on resourceclaims/driver."""

from __future__ import annotations

import asyncio

import pytest
from test_rbac_api import RBAC

pytestmark = pytest.mark.unit
NS = "/api/v1/namespaces/default"
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
MERGE = {"Content-Type": "application/merge-patch+json"}
DRIVER = "gpu.example.com"


async def _setup(admin) -> tuple[dict, dict]:
    assert (await admin.post(f"{NS}/serviceaccounts", {
        "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "drv"}})).status == 201
    pod = (await admin.post(f"{NS}/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1"},
        "spec": {"nodeName": "n1", "serviceAccountName": "drv",
                 "containers": [{"name": "c", "image": "x"}]}})).json
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "c"}, "spec": {"devices": {"requests": [
                 {"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}
    assert (await admin.post(CLAIMS, claim)).status == 201
    status = {"status": {
        "allocation": {"devices": {"results": [
            {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"},
            {"request": "gpu", "driver": "nic.example.com", "pool": "n1", "device": "nic-0"}]},
                       "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                           {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}},
        "reservedFor": [{"resource": "pods", "name": "p1", "uid": pod["metadata"]["uid"]}]}}
    reply = await admin.request("PATCH", f"{CLAIMS}/c/status", status, headers=MERGE)
    assert reply.status == 200, reply.json
    rules = [{"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"],
              "verbs": ["get"]},
             {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/status"],
              "verbs": ["patch", "update"]},
             {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/driver"],
              "verbs": ["associated-node:patch"], "resourceNames": [DRIVER]}]
    assert (await admin.post(f"{RBAC}/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "driver"}, "rules": rules})).status == 201
    assert (await admin.post(f"{RBAC}/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "driver"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "driver"},
        "subjects": [{"kind": "ServiceAccount", "name": "drv", "namespace": "default"}]}
    )).status == 201
    await asyncio.sleep(0.1)
    return pod, status


async def _token(admin, pod: dict | None) -> str:
    spec: dict = {}
    if pod is not None:
        spec["boundObjectRef"] = {"apiVersion": "v1", "kind": "Pod", "name": "p1",
                                  "uid": pod["metadata"]["uid"]}
    reply = await admin.post(f"{NS}/serviceaccounts/drv/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec})
    return reply.json["status"]["token"]


def _devices(driver: str) -> dict:
    device = "gpu-0" if driver == DRIVER else "nic-0"
    return {"status": {"devices": [{"driver": driver, "pool": "n1", "device": device,
                                    "conditions": [{"type": "Ready", "status": "True",
                                                    "reason": "Prepared", "message": "",
                                                    "lastTransitionTime":
                                                        "2026-01-01T00:00:00Z"}]}]}}


async def test_a_driver_on_the_claims_node_writes_its_own_device_status(as_user) -> None:
    admin = as_user()
    pod, _ = await _setup(admin)
    driver = as_user(token=await _token(admin, pod))
    ok = await driver.request("PATCH", f"{CLAIMS}/c/status", _devices(DRIVER), headers=MERGE)
    assert ok.status == 200, ok.json
    other = await driver.request("PATCH", f"{CLAIMS}/c/status", _devices("nic.example.com"),
                                 headers=MERGE)
    assert other.status == 422
    assert other.json["details"]["causes"][0]["message"].startswith(
        'Forbidden: changing status.devices requires resource="resourceclaims/driver", '
        'verb="[associated-node:patch arbitrary-node:patch]" permission: resourceclaims.'
        'resource.k8s.io "nic.example.com" is forbidden: User '
        '"system:serviceaccount:default:drv" cannot associated-node:patch resource '
        '"resourceclaims/driver" in API group "resource.k8s.io" in the namespace "default"')


async def test_a_driver_elsewhere_needs_the_arbitrary_node_verb(as_user) -> None:
    admin = as_user()
    await _setup(admin)
    driver = as_user(token=await _token(admin, None))
    reply = await driver.request("PATCH", f"{CLAIMS}/c/status", _devices(DRIVER),
                                 headers=MERGE)
    assert reply.status == 422
    assert 'verb="[arbitrary-node:patch]"' in reply.json["message"]


async def test_reserved_for_needs_the_binding_subresource(as_user) -> None:
    admin = as_user()
    pod, _ = await _setup(admin)
    driver = as_user(token=await _token(admin, pod))
    reply = await driver.request("PATCH", f"{CLAIMS}/c/status",
                                 {"status": {"reservedFor": None}}, headers=MERGE)
    assert reply.status == 422
    assert reply.json["message"] == (
        'ResourceClaim.resource.k8s.io "c" is invalid: status.allocation: Forbidden: changing '
        'status.allocation or status.reservedFor requires resource="resourceclaims/binding", '
        'verb="patch" permission: resourceclaims.resource.k8s.io is forbidden: User '
        '"system:serviceaccount:default:drv" cannot patch resource "resourceclaims/binding" '
        'in API group "resource.k8s.io" at the cluster scope')


async def test_the_scheduler_and_claim_controller_roles_may_bind(as_user) -> None:
    admin = as_user()
    await _setup(admin)
    scheduler = as_user(None, Impersonate_User="system:kube-scheduler")
    reply = await scheduler.request("PATCH", f"{CLAIMS}/c/status",
                                    {"status": {"reservedFor": None}}, headers=MERGE)
    assert reply.status == 200, reply.json
