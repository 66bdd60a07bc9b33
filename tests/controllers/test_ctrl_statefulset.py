"""The StatefulSet controller's decisions, against fake informers and a recording client."""

import pytest
from controller_fakes import context

from draemu.controllers.statefulset import StatefulSetController

pytestmark = pytest.mark.unit

TEMPLATE = {"metadata": {"labels": {"app": "db"}},
            "spec": {"containers": [{"name": "c", "image": "db"}]}}


def sts(replicas=3, **spec):
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "ns", "uid": "uid-sts", "generation": 1},
            "spec": {"replicas": replicas, "serviceName": "db",
                     "selector": {"matchLabels": {"app": "db"}}, "template": TEMPLATE,
                     **spec}}


def pod(name, revision, ready=True, phase="Running"):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                         "labels": {"app": "db", "controller-revision-hash": revision},
                         "ownerReferences": [{"kind": "StatefulSet", "name": "db",
                                              "uid": "uid-sts", "controller": True}]},
            "spec": {}, "status": {"phase": phase, "conditions": [
                {"type": "Ready", "status": "True" if ready else "False"}]}}


async def _first_sync(spec_sts):
    ctx, client, inf = context()
    ctrl = StatefulSetController(ctx)
    inf.informer("apps/v1", "statefulsets").put(spec_sts)
    await ctrl.reconcile("ns/db")
    return ctrl, client, inf


async def test_ordered_ready_creates_only_the_first_pod_with_its_identity():
    _, client, _ = await _first_sync(sts())
    [p] = client.of("create", "pods")
    [revision] = client.of("create", "controllerrevisions")
    assert p["metadata"]["name"] == "db-0"
    assert p["spec"]["hostname"] == "db-0" and p["spec"]["subdomain"] == "db"
    assert p["metadata"]["labels"] == {
        "app": "db", "statefulset.kubernetes.io/pod-name": "db-0",
        "apps.kubernetes.io/pod-index": "0",
        "controller-revision-hash": revision["metadata"]["name"]}
    assert "controller.kubernetes.io/hash" in revision["metadata"]["labels"]


async def test_parallel_creates_every_pod_at_once():
    _, client, _ = await _first_sync(sts(podManagementPolicy="Parallel"))
    assert [p["metadata"]["name"] for p in client.of("create", "pods")] == [
        "db-0", "db-1", "db-2"]


async def test_ordinals_start_where_the_spec_says():
    _, client, _ = await _first_sync(sts(replicas=1, ordinals={"start": 5}))
    assert [p["metadata"]["name"] for p in client.of("create", "pods")] == ["db-5"]


async def test_claims_from_volume_claim_templates_come_before_the_pod():
    template = {"metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": "1Gi"}}}}
    _, client, _ = await _first_sync(sts(replicas=1, volumeClaimTemplates=[template]))
    [pvc] = client.of("create", "persistentvolumeclaims")
    assert pvc["metadata"]["name"] == "data-db-0"
    assert pvc["metadata"]["labels"] == {"app": "db"}
    [p] = client.of("create", "pods")
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}} in \
        p["spec"]["volumes"]
    kinds = [c[1] for c in client.calls if c[0] == "create"]
    assert kinds.index("persistentvolumeclaims") < kinds.index("pods")


async def test_the_next_pod_waits_until_the_previous_is_ready():
    ctrl, client, inf = await _first_sync(sts(replicas=2))
    rev = client.of("create", "controllerrevisions")[0]
    inf.informer("apps/v1", "controllerrevisions").put(rev)
    inf.informer("v1", "pods").put(pod("db-0", rev["metadata"]["name"], ready=False))
    client.calls.clear()
    await ctrl.reconcile("ns/db")
    assert client.of("create", "pods") == []
    inf.informer("v1", "pods").put(pod("db-0", rev["metadata"]["name"]))
    await ctrl.reconcile("ns/db")
    assert [p["metadata"]["name"] for p in client.of("create", "pods")] == ["db-1"]


async def test_scale_down_removes_the_highest_ordinal_first():
    ctrl, client, inf = await _first_sync(sts(replicas=1))
    rev = client.of("create", "controllerrevisions")[0]
    inf.informer("apps/v1", "controllerrevisions").put(rev)
    for i in range(3):
        inf.informer("v1", "pods").put(pod(f"db-{i}", rev["metadata"]["name"]))
    client.calls.clear()
    await ctrl.reconcile("ns/db")
    assert [c[1] for c in client.of("delete", "pods")] == ["db-2"]


async def test_rolling_update_replaces_the_highest_ordinal_above_the_partition():
    ctrl, client, inf = await _first_sync(sts(
        replicas=3, updateStrategy={"type": "RollingUpdate",
                                    "rollingUpdate": {"partition": 1}}))
    rev = client.of("create", "controllerrevisions")[0]
    inf.informer("apps/v1", "controllerrevisions").put(rev)
    for i in range(3):
        inf.informer("v1", "pods").put(pod(f"db-{i}", "db-oldrevision"))
    client.calls.clear()
    await ctrl.reconcile("ns/db")
    assert [c[1] for c in client.of("delete", "pods")] == ["db-2"]
    [status] = [o["status"] for o in client.of("update/status", "statefulsets")]
    assert status["replicas"] == 3 and status["readyReplicas"] == 3
    assert status["updateRevision"] == rev["metadata"]["name"]
    assert "updatedReplicas" not in status


async def test_max_unavailable_replaces_several_pods_at_once():
    ctrl, client, inf = await _first_sync(sts(
        replicas=4, updateStrategy={"type": "RollingUpdate",
                                    "rollingUpdate": {"maxUnavailable": 2}}))
    rev = client.of("create", "controllerrevisions")[0]
    inf.informer("apps/v1", "controllerrevisions").put(rev)
    for i in range(4):
        inf.informer("v1", "pods").put(pod(f"db-{i}", "db-oldrevision"))
    client.calls.clear()
    await ctrl.reconcile("ns/db")
    assert [c[1] for c in client.of("delete", "pods")] == ["db-3", "db-2"]


async def test_without_the_gate_one_pod_is_replaced_at_a_time():
    from draemu.features import FeatureGates
    ctx, client, inf = context()
    ctx.gates = FeatureGates.parse("MaxUnavailableStatefulSet=false")
    ctrl = StatefulSetController(ctx)
    inf.informer("apps/v1", "statefulsets").put(sts(
        replicas=4, updateStrategy={"type": "RollingUpdate",
                                    "rollingUpdate": {"maxUnavailable": 2}}))
    await ctrl.reconcile("ns/db")
    rev = client.of("create", "controllerrevisions")[0]
    inf.informer("apps/v1", "controllerrevisions").put(rev)
    for i in range(4):
        inf.informer("v1", "pods").put(pod(f"db-{i}", "db-oldrevision"))
    client.calls.clear()
    await ctrl.reconcile("ns/db")
    assert [c[1] for c in client.of("delete", "pods")] == ["db-3"]
