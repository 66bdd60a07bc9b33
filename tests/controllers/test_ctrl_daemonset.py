"""The DaemonSet controller's decisions, against fake informers and a recording client."""

import pytest
from controller_fakes import context

from draemu.controllers.daemonset import (
    DaemonSetController,
    daemon_tolerations,
    should_run,
    target_node,
)

pytestmark = pytest.mark.unit

TEMPLATE = {"metadata": {"labels": {"app": "agent"}},
            "spec": {"containers": [{"name": "c", "image": "agent"}]}}


def ds(**spec):
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "ns", "uid": "uid-ds", "generation": 1},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                     "template": spec.pop("template", TEMPLATE), **spec}}


def node(name, labels=None, taints=None):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                  **(labels or {})}},
            "spec": {"taints": taints or []}}


def with_spec(**extra):
    return {"metadata": TEMPLATE["metadata"], "spec": {**TEMPLATE["spec"], **extra}}


def test_every_daemon_pod_tolerates_node_problems():
    keys = {(t["key"], t["effect"]) for t in daemon_tolerations({})}
    assert keys == {("node.kubernetes.io/not-ready", "NoExecute"),
                    ("node.kubernetes.io/unreachable", "NoExecute"),
                    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
                    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
                    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
                    ("node.kubernetes.io/unschedulable", "NoSchedule")}
    assert ("node.kubernetes.io/network-unavailable", "NoSchedule") in {
        (t["key"], t["effect"]) for t in daemon_tolerations({"hostNetwork": True})}


def test_a_template_toleration_with_the_same_key_and_effect_is_replaced():
    mine = {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
            "effect": "NoExecute", "tolerationSeconds": 5}
    out = daemon_tolerations({"tolerations": [mine]})
    [got] = [t for t in out if t["key"] == "node.kubernetes.io/not-ready"]
    assert "tolerationSeconds" not in got


def test_node_selector_and_affinity_pick_the_nodes():
    gpu = node("a", {"gpu": "true"})
    plain = node("b")
    selected = ds(template=with_spec(nodeSelector={"gpu": "true"}))
    assert should_run(selected, gpu) == (True, True)
    assert should_run(selected, plain) == (False, False)
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator":
                                                     "DoesNotExist"}]}]}}}
    inverse = ds(template=with_spec(affinity=affinity))
    assert should_run(inverse, gpu) == (False, False)
    assert should_run(inverse, plain) == (True, True)


def test_an_untolerated_noschedule_taint_keeps_a_running_pod_but_starts_none():
    tainted = node("a", taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}])
    assert should_run(ds(), tainted) == (False, True)
    evicting = node("a", taints=[{"key": "dedicated", "value": "x", "effect": "NoExecute"}])
    assert should_run(ds(), evicting) == (False, False)
    tolerant = ds(template=with_spec(tolerations=[{"key": "dedicated", "operator": "Exists"}]))
    assert should_run(tolerant, tainted) == (True, True)


def test_the_default_tolerations_cover_an_unschedulable_node():
    cordoned = node("a", taints=[{"key": "node.kubernetes.io/unschedulable",
                                  "effect": "NoSchedule"}])
    assert should_run(ds(), cordoned) == (True, True)


async def test_creates_one_pod_per_node_pinned_by_affinity():
    ctx, client, inf = context()
    ctrl = DaemonSetController(ctx)
    for name in ("n1", "n2"):
        inf.informer("v1", "nodes").put(node(name))
    daemonset = ds()
    daemonset["metadata"]["annotations"] = {"deprecated.daemonset.template.generation": "1"}
    inf.informer("apps/v1", "daemonsets").put(daemonset)
    await ctrl.reconcile("ns/agent")
    [revision] = client.of("create", "controllerrevisions")
    assert revision["data"]["spec"]["template"]["$patch"] == "replace"
    assert revision["revision"] == 1
    hash_ = revision["metadata"]["labels"]["controller-revision-hash"]
    assert revision["metadata"]["name"] == f"agent-{hash_}"
    pods = client.of("create", "pods")
    assert sorted(target_node(p) for p in pods) == ["n1", "n2"]
    for p in pods:
        assert p["metadata"]["labels"] == {"app": "agent", "controller-revision-hash": hash_,
                                           "pod-template-generation": "1"}
        assert p["metadata"]["ownerReferences"][0]["uid"] == "uid-ds"
        assert "nodeName" not in p["spec"]
    [status] = [o["status"] for o in client.of("update/status", "daemonsets")]
    assert status["desiredNumberScheduled"] == 2
    assert status["currentNumberScheduled"] == 0
    assert status["numberUnavailable"] == 2
    assert status["observedGeneration"] == 1


async def test_waits_for_its_creations_before_creating_again():
    ctx, client, inf = context()
    ctrl = DaemonSetController(ctx)
    inf.informer("v1", "nodes").put(node("n1"))
    inf.informer("apps/v1", "daemonsets").put(ds())
    await ctrl.reconcile("ns/agent")
    await ctrl.reconcile("ns/agent")  # the informer has not seen the pod yet
    assert len(client.of("create", "pods")) == 1


def _pod(name, node_name, hash_, ready=True, phase="Running"):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                         "creationTimestamp": "2026-01-01T00:00:00Z",
                         "labels": {"app": "agent", "controller-revision-hash": hash_},
                         "ownerReferences": [{"kind": "DaemonSet", "name": "agent",
                                              "uid": "uid-ds", "controller": True}]},
            "spec": {"nodeName": node_name},
            "status": {"phase": phase, "conditions": [
                {"type": "Ready", "status": "True" if ready else "False"}]}}


async def test_rolling_update_replaces_at_most_max_unavailable_pods():
    ctx, client, inf = context()
    ctrl = DaemonSetController(ctx)
    daemonset = ds(updateStrategy={"type": "RollingUpdate",
                                   "rollingUpdate": {"maxUnavailable": 1}})
    for name in ("n1", "n2", "n3"):
        inf.informer("v1", "nodes").put(node(name))
        inf.informer("v1", "pods").put(_pod(f"old-{name}", name, "oldhash"))
    inf.informer("apps/v1", "daemonsets").put(daemonset)
    await ctrl.reconcile("ns/agent")
    assert len(client.of("delete", "pods")) == 1
    assert client.of("create", "pods") == []
    [status] = [o["status"] for o in client.of("update/status", "daemonsets")]
    assert "updatedNumberScheduled" not in status and status["numberReady"] == 3


async def test_on_delete_leaves_old_pods_alone():
    ctx, client, inf = context()
    ctrl = DaemonSetController(ctx)
    inf.informer("v1", "nodes").put(node("n1"))
    inf.informer("v1", "pods").put(_pod("old", "n1", "oldhash"))
    inf.informer("apps/v1", "daemonsets").put(ds(updateStrategy={"type": "OnDelete"}))
    await ctrl.reconcile("ns/agent")
    assert client.of("delete", "pods") == [] and client.of("create", "pods") == []


async def test_a_failed_daemon_pod_is_deleted_and_a_pod_on_an_ineligible_node_removed():
    ctx, client, inf = context()
    ctrl = DaemonSetController(ctx)
    inf.informer("v1", "nodes").put(node("n1"))
    inf.informer("v1", "nodes").put(node("n2", {"role": "other"}))
    inf.informer("v1", "pods").put(_pod("failed", "n1", "h", ready=False, phase="Failed"))
    inf.informer("v1", "pods").put(_pod("misplaced", "n2", "h"))
    inf.informer("apps/v1", "daemonsets").put(
        ds(template=with_spec(affinity={"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "role", "operator": "DoesNotExist"}]}]}}})))
    await ctrl.reconcile("ns/agent")
    assert sorted(c[1] for c in client.of("delete", "pods")) == ["failed", "misplaced"]


async def test_failed_pods_on_a_node_are_deleted_with_back_off():
    ctx, client, inf = context()
    ctrl = DaemonSetController(ctx)
    inf.informer("v1", "nodes").put(node("n1"))
    inf.informer("apps/v1", "daemonsets").put(ds())
    inf.informer("v1", "pods").put(_pod("failed-1", "n1", "h", ready=False, phase="Failed"))
    await ctrl.reconcile("ns/agent")
    assert [c[1] for c in client.of("delete", "pods")] == ["failed-1"]
    revision = client.of("create", "controllerrevisions")[0]
    inf.informer("apps/v1", "controllerrevisions").put(revision)
    current = revision["metadata"]["labels"]["controller-revision-hash"]
    del inf.informer("v1", "pods").objects["ns/failed-1"]
    inf.informer("v1", "pods").put(_pod("failed-2", "n1", current, ready=False,
                                        phase="Failed"))
    client.calls.clear()
    await ctrl.reconcile("ns/agent")  # within the first second: wait
    assert client.of("delete", "pods") == []
