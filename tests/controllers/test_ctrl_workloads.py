
import pytest
from controller_fakes import context

from draemu.api.meta import format_time, now
from draemu.controllers.deployment import DeploymentController, resolve, template_hash
from draemu.controllers.job import TRACKING, JobController, format_indexes, parse_indexes
from draemu.controllers.replicaset import ReplicaSetController

pytestmark = pytest.mark.unit

TEMPLATE = {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def _owned_pod(name, owner_kind, owner, phase="Running", ready=True, finalizers=()):
    conds = [{"type": "Ready", "status": "True" if ready else "False"}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                         "labels": {"app": "web"}, "finalizers": list(finalizers),
                         "creationTimestamp": format_time(now()),
                         "ownerReferences": [{"kind": owner_kind, "name": owner["metadata"]["name"],
                                              "uid": owner["metadata"]["uid"],
                                              "controller": True}]},
            "spec": {"nodeName": "n1"}, "status": {"phase": phase, "conditions": conds}}


def _rs(replicas):
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "web", "namespace": "ns", "uid": "uid-rs", "generation": 1},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": TEMPLATE}}


async def test_replicaset_creates_missing_pods_from_its_template():
    ctx, client, inf = context()
    ctrl = ReplicaSetController(ctx)
    inf.informer("apps/v1", "replicasets").put(_rs(3))
    await ctrl.reconcile("ns/web")
    pods = client.of("create", "pods")
    assert len(pods) == 3
    assert all(p["metadata"]["ownerReferences"][0]["uid"] == "uid-rs" for p in pods)
    assert all(p["metadata"]["labels"] == {"app": "web"} for p in pods)


async def test_replicaset_scales_down_unready_pods_first():
    ctx, client, inf = context()
    ctrl = ReplicaSetController(ctx)
    rs = inf.informer("apps/v1", "replicasets").put(_rs(1))
    pods = inf.informer("v1", "pods")
    pods.put(_owned_pod("ready", "ReplicaSet", rs))
    pods.put(_owned_pod("unready", "ReplicaSet", rs, ready=False))
    await ctrl.reconcile("ns/web")
    assert [c[1] for c in client.of("delete", "pods")] == ["unready"]


async def test_replicaset_adopts_a_matching_orphan():
    ctx, client, inf = context()
    ctrl = ReplicaSetController(ctx)
    inf.informer("apps/v1", "replicasets").put(_rs(1))
    orphan = _owned_pod("orphan", "ReplicaSet", {"metadata": {"name": "x", "uid": "y"}})
    orphan["metadata"]["ownerReferences"] = []
    inf.informer("v1", "pods").put(orphan)
    await ctrl.reconcile("ns/web")
    [(name, patch)] = client.of("patch", "pods")
    assert name == "orphan"
    assert patch["metadata"]["ownerReferences"][0]["uid"] == "uid-rs"
    assert client.of("create", "pods") == []


def test_template_hash_is_stable_and_uses_the_safe_alphabet():
    h = template_hash(TEMPLATE)
    assert h == template_hash(TEMPLATE)
    assert h != template_hash(TEMPLATE, collision_count=1)
    assert set(h) <= set("bcdfghjklmnpqrstvwxz2456789")


def test_surge_rounds_up_and_unavailable_rounds_down():
    assert resolve("25%", 3, True) == 1
    assert resolve("25%", 3, False) == 0
    assert resolve(2, 10, True) == 2


async def test_deployment_creates_a_replicaset_named_by_template_hash():
    ctx, client, inf = context()
    ctrl = DeploymentController(ctx)
    inf.informer("apps/v1", "deployments").put({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns", "uid": "uid-d", "generation": 1},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": TEMPLATE}})
    await ctrl.reconcile("ns/web")
    [rs] = client.of("create", "replicasets")
    h = template_hash(TEMPLATE)
    assert rs["metadata"]["name"] == f"web-{h}"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": h}
    assert rs["spec"]["replicas"] == 2
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    # The Deployment carries its new ReplicaSet's revision too.
    # The Deployment carries its new ReplicaSet's revision too, written by an update (the
    # controller's role may not patch Deployments).
    [updated] = client.of("update", "deployments")
    assert updated["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    assert client.of("patch", "deployments") == []


def _job(**spec):
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "train", "namespace": "ns", "uid": "uid-job"},
            "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 6,
                     "template": TEMPLATE, **spec}, "status": {}}


async def test_job_starts_a_tracked_pod():
    ctx, client, inf = context()
    ctrl = JobController(ctx)
    inf.informer("batch/v1", "jobs").put(_job())
    await ctrl.reconcile("ns/train")
    [pod] = client.of("create", "pods")
    assert pod["metadata"]["name"].startswith("train-")
    assert TRACKING in pod["metadata"]["finalizers"]
    [status] = client.of("update/status", "jobs")
    assert status["status"]["startTime"]


async def test_succeeded_pod_is_counted_once_and_the_job_completes():
    ctx, client, inf = context()
    ctrl = JobController(ctx)
    job = inf.informer("batch/v1", "jobs").put(_job())
    inf.informer("v1", "pods").put(
        _owned_pod("train-1", "Job", job, phase="Succeeded", finalizers=(TRACKING,)))
    await ctrl.reconcile("ns/train")
    updates = [u["status"] for u in client.of("update/status", "jobs")]
    assert updates[0]["uncountedTerminatedPods"] == {"succeeded": ["uid-train-1"]}
    assert updates[1]["succeeded"] == 1
    assert client.of("patch", "pods")[0] == ("train-1", {"metadata": {"finalizers": None}})
    final = updates[-1]
    types = {c["type"]: c["status"] for c in final["conditions"]}
    assert types["SuccessCriteriaMet"] == "True"
    assert client.of("create", "pods") == []


async def test_job_fails_after_backoff_limit():
    ctx, client, inf = context()
    ctrl = JobController(ctx)
    job = _job(backoffLimit=0)
    job["status"] = {"failed": 1, "startTime": format_time(now())}
    inf.informer("batch/v1", "jobs").put(job)
    await ctrl.reconcile("ns/train")
    final = client.of("update/status", "jobs")[-1]["status"]
    conds = {c["type"]: c for c in final["conditions"]}
    assert conds["FailureTarget"]["reason"] == "BackoffLimitExceeded"
    assert conds["Failed"]["reason"] == "BackoffLimitExceeded"


def test_completed_indexes_are_written_as_intervals():
    assert format_indexes({0, 1, 2, 4, 6, 7}) == "0-2,4,6-7"
    assert parse_indexes("0-2,4,6-7") == {0, 1, 2, 4, 6, 7}
