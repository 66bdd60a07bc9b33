"""PodDisruptionBudget status and the TTL-after-finished controller (fake informers)."""

from datetime import timedelta

import pytest
from controller_fakes import context

from draemu.api.meta import format_time, now
from draemu.controllers.disruption import DisruptionController
from draemu.controllers.ttlafterfinished import TTLAfterFinishedController

pytestmark = pytest.mark.unit


def pdb(**spec):
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "ns", "generation": 2},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec}}


def pod(name, ready=True, owner=None):
    md = {"name": name, "namespace": "ns", "labels": {"app": "web"}}
    if owner:
        md["ownerReferences"] = [{"kind": "ReplicaSet", "name": owner, "uid": "uid-rs",
                                  "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md,
            "status": {"phase": "Running", "conditions": [
                {"type": "Ready", "status": "True" if ready else "False"}]}}


async def _status(budget, *objs):
    ctx, client, inf = context()
    ctrl = DisruptionController(ctx)
    inf.informer("policy/v1", "poddisruptionbudgets").put(budget)
    for o in objs:
        inf.informer(o["apiVersion"], o.get("resource", "pods")).put(o)
    await ctrl.reconcile("ns/web")
    [status] = [o["status"] for o in client.of("update/status", "poddisruptionbudgets")]
    return status


async def test_min_available_counts_selected_pods():
    status = await _status(pdb(minAvailable=2), pod("a"), pod("b"), pod("c", ready=False))
    assert {k: status[k] for k in ("currentHealthy", "desiredHealthy", "expectedPods",
                                   "disruptionsAllowed", "observedGeneration")} == {
        "currentHealthy": 2, "desiredHealthy": 2, "expectedPods": 3, "disruptionsAllowed": 0,
        "observedGeneration": 2}
    [cond] = status["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == (
        "DisruptionAllowed", "False", "InsufficientPods")


async def test_max_unavailable_uses_the_controllers_scale():
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "resource": "replicasets",
          "metadata": {"name": "web-1", "namespace": "ns", "uid": "uid-rs"},
          "spec": {"replicas": 4}}
    status = await _status(pdb(maxUnavailable="50%"), rs, pod("a", owner="web-1"),
                           pod("b", owner="web-1"), pod("c", owner="web-1"))
    assert (status["expectedPods"], status["desiredHealthy"], status["currentHealthy"],
            status["disruptionsAllowed"]) == (4, 2, 3, 1)
    assert status["conditions"][0]["reason"] == "SufficientPods"


def job(ttl, finished_ago):
    done = format_time(now() - timedelta(seconds=finished_ago))
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "ns", "uid": "uid-j"},
            "spec": {"ttlSecondsAfterFinished": ttl},
            "status": {"completionTime": done, "conditions": [
                {"type": "Complete", "status": "True", "lastTransitionTime": done}]}}


async def test_an_expired_job_is_deleted_in_the_foreground():
    ctx, client, inf = context()
    ctrl = TTLAfterFinishedController(ctx)
    expired = inf.informer("batch/v1", "jobs").put(job(10, 60))
    client.live[("jobs", "ns/j")] = expired
    await ctrl.reconcile("ns/j")
    [(ns, name, kw)] = client.of("delete", "jobs")
    assert (ns, name) == ("ns", "j")
    assert kw == {"propagation_policy": "Foreground", "preconditions": {"uid": "uid-j"}}


async def test_a_job_is_looked_at_again_when_its_ttl_runs_out():
    ctx, client, inf = context()
    ctrl = TTLAfterFinishedController(ctx)
    inf.informer("batch/v1", "jobs").put(job(100, 40))
    again = await ctrl.reconcile("ns/j")
    assert 55 < again <= 60
    assert client.of("delete", "jobs") == []
