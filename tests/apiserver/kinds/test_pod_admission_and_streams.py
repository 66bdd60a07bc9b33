"""What a pod gets from the kinds around it: priority from its PriorityClass (the
Priority admission plugin), a binding without a managedFields entry, and a clear Status
for the streaming subresources no runtime here can serve."""

from __future__ import annotations

import pytest
from apiclient import PODS, Client, pod

pytestmark = pytest.mark.unit
CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"


def priority_class(name: str, value: int, **extra: object) -> dict:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value, **extra}


async def test_pod_priority_comes_from_its_class(client: Client) -> None:
    assert (await client.post(CLASSES, priority_class("batch", 100,
                                                      preemptionPolicy="Never"))).status == 201
    created = (await client.post(PODS, pod("p1", priorityClassName="batch"))).json
    assert (created["spec"]["priority"], created["spec"]["preemptionPolicy"]) == (100, "Never")


async def test_system_class_priority(client: Client) -> None:
    created = (await client.post(PODS, pod("p2", priorityClassName="system-node-critical"))).json
    assert created["spec"]["priority"] == 2000001000


async def test_unknown_class_is_forbidden(client: Client) -> None:
    reply = await client.post(PODS, pod("p3", priorityClassName="nope"))
    assert reply.status == 403
    assert reply.json["message"] == \
        'pods "p3" is forbidden: no PriorityClass with name nope was found'


async def test_pod_may_not_claim_another_priority(client: Client) -> None:
    reply = await client.post(PODS, pod("p4", priority=5))
    assert reply.status == 403
    assert "the integer value of priority (5) must not be provided in pod spec; priority " \
           "admission controller computed 0 from the given PriorityClass name" in \
           reply.json["message"]


async def test_global_default_class_applies_and_is_unique(client: Client) -> None:
    assert (await client.post(CLASSES, priority_class("default-pc", 7,
                                                      globalDefault=True))).status == 201
    created = (await client.post(PODS, pod("p5"))).json
    assert (created["spec"]["priorityClassName"], created["spec"]["priority"]) == (
        "default-pc", 7)
    second = await client.post(CLASSES, priority_class("other", 8, globalDefault=True))
    assert second.status == 403
    assert "PriorityClass default-pc is already marked as default. Only one default can " \
           "exist" in second.json["message"]


async def test_system_prefix_is_reserved(client: Client) -> None:
    reply = await client.post(CLASSES, priority_class("system-mine", 10))
    assert reply.status == 422
    assert reply.json["details"]["causes"][0]["message"] == (
        "Forbidden: priority class names with 'system-' prefix are reserved for system use "
        "only. error: system-mine is not a known system priority class")


async def test_class_value_is_immutable(client: Client) -> None:
    await client.post(CLASSES, priority_class("fixed", 10))
    current = (await client.get(f"{CLASSES}/fixed")).json
    reply = await client.put(f"{CLASSES}/fixed", dict(current, value=11))
    assert reply.status == 422
    assert "value: Forbidden: may not be changed in an update." in reply.json["message"]


async def test_binding_writes_no_managed_fields_entry(client: Client) -> None:
    await client.post(PODS, pod("b1"))
    before = (await client.get(f"{PODS}/b1")).json["metadata"].get("managedFields", [])
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "b1"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}}
    assert (await client.post(f"{PODS}/b1/binding", binding)).status == 201
    after = (await client.get(f"{PODS}/b1")).json["metadata"].get("managedFields", [])
    assert after == before


async def test_attach_answers_a_clear_status(client: Client) -> None:
    await client.post(PODS, pod("s1", node="n1"))
    reply = await client.post(f"{PODS}/s1/attach")
    assert reply.status == 400 and reply.json["kind"] == "Status"
    assert reply.json["message"].startswith("pods/attach is not supported: draemu's kubelets")
    missing = await client.post(f"{PODS}/nope/attach")
    assert missing.status == 404


async def test_port_forward_without_an_upgrade_is_refused_as_upstream(client: Client) -> None:
    await client.post(PODS, pod("s1", node="n1"))
    reply = await client.post(f"{PODS}/s1/portforward")
    assert reply.status == 400 and reply.json["message"] == (
        "unable to upgrade connection: missing upgrade headers in request")
    missing = await client.post(f"{PODS}/nope/portforward")
    assert missing.status == 404


HPA_V1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
HPA_V2 = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"


async def test_hpa_v1_round_trips_through_v2(client: Client) -> None:
    v1 = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
          "metadata": {"name": "web"},
          "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                      "name": "web"},
                   "maxReplicas": 4, "targetCPUUtilizationPercentage": 60}}
    created = await client.post(HPA_V1, v1)
    assert created.status == 201, created.json
    assert created.json["spec"]["targetCPUUtilizationPercentage"] == 60
    as_v2 = (await client.get(f"{HPA_V2}/web")).json
    assert as_v2["spec"]["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}]
    as_v2["spec"]["metrics"].append({"type": "Pods", "pods": {
        "metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}})
    assert (await client.put(f"{HPA_V2}/web", as_v2)).status == 200
    back = (await client.get(f"{HPA_V1}/web")).json
    assert back["spec"]["targetCPUUtilizationPercentage"] == 60
    assert "autoscaling.alpha.kubernetes.io/metrics" in back["metadata"]["annotations"]
    assert (await client.put(f"{HPA_V1}/web", back)).status == 200
    again = (await client.get(f"{HPA_V2}/web")).json
    assert [m["type"] for m in again["spec"]["metrics"]] == ["Resource", "Pods"]
    assert "annotations" not in again["metadata"]


CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"


async def test_csr_approval_changes_only_conditions(client: Client) -> None:
    import base64

    pem = b"-----BEGIN CERTIFICATE REQUEST-----\nMIIB\n-----END CERTIFICATE REQUEST-----\n"
    csr = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
           "metadata": {"name": "c1"},
           "spec": {"request": base64.b64encode(pem).decode(),
                    "signerName": "example.com/signer", "usages": ["client auth"]}}
    created = (await client.post(CSRS, csr)).json
    approved = dict(created, status={"conditions": [
        {"type": "Approved", "status": "True", "reason": "ok"}]})
    approved["spec"] = dict(created["spec"], usages=["server auth"])
    reply = await client.put(f"{CSRS}/c1/approval", approved)
    assert reply.status == 200, reply.json
    assert reply.json["spec"]["usages"] == ["client auth"]
    both = dict(reply.json, status={"conditions": [
        *reply.json["status"]["conditions"], {"type": "Denied", "status": "True"}]})
    refused = await client.put(f"{CSRS}/c1/approval", both)
    assert refused.status == 422
    assert "Approved and Denied conditions are mutually exclusive" in refused.json["message"]
    via_status = dict(reply.json, status={"conditions": []})
    removed = await client.put(f"{CSRS}/c1/status", via_status)
    assert removed.status == 422
    assert 'updates may not remove a condition of type "Approved"' in removed.json["message"]


LIMITS = "/api/v1/namespaces/default/limitranges"
PVCS = "/api/v1/namespaces/default/persistentvolumeclaims"


async def test_limit_range_defaults_and_bounds_pods(client: Client) -> None:
    lr = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr"},
          "spec": {"limits": [{"type": "Container", "max": {"cpu": "2"},
                               "defaultRequest": {"cpu": "500m"}}]}}
    assert (await client.post(LIMITS, lr)).status == 201
    created = (await client.post(PODS, pod("l1"))).json
    assert created["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "2"}, "requests": {"cpu": "500m"}}
    assert created["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu request for container c; cpu limit for container c")
    big = pod("l2")
    big["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "3"}}
    reply = await client.post(PODS, big)
    assert reply.status == 403
    assert reply.json["message"] == ('pods "l2" is forbidden: maximum cpu usage per Container '
                                     "is 2, but limit is 3")


async def test_limit_range_bounds_claims(client: Client) -> None:
    lr = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "storage"},
          "spec": {"limits": [{"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"},
                               "max": {"storage": "10Gi"}}]}}
    assert (await client.post(LIMITS, lr)).status == 201
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"},
             "spec": {"accessModes": ["ReadWriteOnce"],
                      "resources": {"requests": {"storage": "500Mi"}}}}
    reply = await client.post(PVCS, claim)
    assert reply.status == 403
    assert reply.json["message"] == (
        'persistentvolumeclaims "c" is forbidden: minimum storage usage per '
        "PersistentVolumeClaim is 1Gi, but request is 500Mi")
    claim["spec"]["resources"]["requests"]["storage"] = "2Gi"
    assert (await client.post(PVCS, claim)).status == 201
