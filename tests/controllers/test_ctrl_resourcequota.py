"""Quota usage (draemu.api.quota) and the resource quota controller's status.used."""

from fractions import Fraction

import pytest
from controller_fakes import context

from draemu.api.quota import usage
from draemu.controllers.resourcequota import ResourceQuotaController

pytestmark = pytest.mark.unit


def pod(name, cpu="500m", memory="1Gi", phase="Running", **spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns"},
            "spec": {"containers": [{"name": "c", "resources": {
                "requests": {"cpu": cpu, "memory": memory, "nvidia.com/gpu": "1"},
                "limits": {"cpu": "1", "memory": memory}}}], **spec},
            "status": {"phase": phase}}


def test_a_pod_counts_its_requests_limits_and_extended_resources():
    u = usage("pods", "", pod("a"))
    assert u["pods"] == 1 and u["count/pods"] == 1
    assert u["cpu"] == u["requests.cpu"] == Fraction(1, 2)
    assert u["limits.cpu"] == 1
    assert u["requests.memory"] == 2**30
    assert u["requests.nvidia.com/gpu"] == 1


def test_a_terminal_pod_counts_only_as_an_object():
    assert usage("pods", "", pod("a", phase="Succeeded")) == {"count/pods": 1}


def test_init_containers_count_with_their_largest_request():
    p = pod("a", cpu="100m")
    p["spec"]["initContainers"] = [{"name": "i", "resources": {"requests": {"cpu": "2"}}}]
    assert usage("pods", "", p)["requests.cpu"] == 2


def test_a_resource_claim_counts_devices_per_device_class():
    claim = {"spec": {"devices": {"requests": [
        {"name": "a", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}},
        {"name": "b", "exactly": {"deviceClassName": "gpu.nvidia.com",
                                  "allocationMode": "All"}},
        {"name": "c", "firstAvailable": [
            {"name": "x", "deviceClassName": "nic.mellanox.com", "count": 3},
            {"name": "y", "deviceClassName": "nic.mellanox.com"}]}]}}}
    u = usage("resourceclaims", "resource.k8s.io", claim)
    assert u == {"count/resourceclaims.resource.k8s.io": 1,
                 "gpu.nvidia.com.deviceclass.resource.k8s.io/devices": 34,
                 "nic.mellanox.com.deviceclass.resource.k8s.io/devices": 3}


def test_a_claim_counts_storage_per_storage_class():
    pvc = {"spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "5Gi"}}}}
    u = usage("persistentvolumeclaims", "", pvc)
    assert u["persistentvolumeclaims"] == 1
    assert u["fast.storageclass.storage.k8s.io/requests.storage"] == 5 * 2**30
    assert u["fast.storageclass.storage.k8s.io/persistentvolumeclaims"] == 1


def test_node_port_services_count_their_ports():
    svc = {"spec": {"type": "NodePort", "ports": [{"port": 80}, {"port": 443}]}}
    assert usage("services", "", svc) == {"count/services": 1, "services": 1,
                                          "services.nodeports": 2}


def quota(hard, **spec):
    return {"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": "q", "namespace": "ns"}, "spec": {"hard": hard, **spec}}


async def _status(q, *pods):
    ctx, client, inf = context()
    ctrl = ResourceQuotaController(ctx)
    inf.informer("v1", "resourcequotas").put(q)
    for p in pods:
        inf.informer("v1", "pods").put(p)
    await ctrl.reconcile("ns/q")
    [status] = [o["status"] for o in client.of("update/status", "resourcequotas")]
    return status


async def test_status_used_sums_the_namespace_for_every_hard_key():
    status = await _status(quota({"pods": "10", "requests.cpu": "4", "limits.memory": "8Gi",
                                  "count/pods": "20"}),
                           pod("a"), pod("b"), pod("c", phase="Failed"))
    assert status["hard"] == {"pods": "10", "requests.cpu": "4", "limits.memory": "8Gi",
                              "count/pods": "20"}
    assert status["used"] == {"pods": "2", "requests.cpu": "1", "limits.memory": "2Gi",
                              "count/pods": "3"}


async def test_a_scoped_quota_counts_only_the_pods_its_scopes_select():
    status = await _status(quota({"pods": "5"}, scopes=["Terminating"]),
                           pod("a"), pod("b", activeDeadlineSeconds=30))
    assert status["used"] == {"pods": "1"}
