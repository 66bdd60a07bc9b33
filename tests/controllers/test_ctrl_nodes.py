
from datetime import timedelta

import pytest
from controller_fakes import context

from draemu.api.meta import format_time, now
from draemu.controllers.devicetainteviction import DeviceTaintEvictionController
from draemu.controllers.nodelifecycle import UNREACHABLE, NodeLifecycleController, eviction_delay

pytestmark = pytest.mark.unit

NO_EXECUTE = {"key": UNREACHABLE, "effect": "NoExecute"}


def _pod(tolerations=()):
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u"},
            "spec": {"nodeName": "n1", "tolerations": list(tolerations)},
            "status": {"phase": "Running"}}


def test_untolerated_no_execute_taint_evicts_at_once():
    assert eviction_delay(_pod(), [NO_EXECUTE]) == 0.0


def test_toleration_seconds_delay_eviction_from_the_time_the_taint_was_added():
    taint = dict(NO_EXECUTE, timeAdded=format_time(now() - timedelta(seconds=100)))
    pod = _pod([{"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute",
                 "tolerationSeconds": 300}])
    assert 190 <= eviction_delay(pod, [taint]) <= 200


def test_toleration_without_seconds_tolerates_forever():
    pod = _pod([{"operator": "Exists"}])
    assert eviction_delay(pod, [NO_EXECUTE]) is None


def _node(heartbeat_age):
    stamp = format_time(now() - timedelta(seconds=heartbeat_age))
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n1", "uid": "n", "creationTimestamp": stamp},
            "spec": {}, "status": {"conditions": [
                {"type": "Ready", "status": "True", "lastHeartbeatTime": stamp}]}}


async def test_node_without_heartbeat_becomes_unknown_and_gets_unreachable_taints():
    ctx, client, inf = context({"node_monitor_grace_period": 40})
    ctrl = NodeLifecycleController(ctx)
    inf.informer("v1", "nodes").put(_node(heartbeat_age=120))
    inf.informer("v1", "pods").put(_pod())
    await ctrl.reconcile("n1")
    [status] = client.of("update/status", "nodes")
    ready = status["status"]["conditions"][0]
    assert (ready["status"], ready["reason"]) == ("Unknown", "NodeStatusUnknown")
    [spec] = client.of("update", "nodes")
    assert {(t["key"], t["effect"]) for t in spec["spec"]["taints"]} == {
        (UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")}


async def test_healthy_node_is_left_alone():
    ctx, client, inf = context({"node_monitor_grace_period": 40})
    ctrl = NodeLifecycleController(ctx)
    inf.informer("v1", "nodes").put(_node(heartbeat_age=1))
    await ctrl.reconcile("n1")
    assert client.calls == []


def _claim_pod():
    pod = _pod()
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "c"}]
    return pod


def _allocated_claim(tolerations=()):
    return {"metadata": {"name": "c", "namespace": "ns"}, "status": {"allocation": {"devices": {
        "results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "n1",
                     "device": "gpu-0", "tolerations": list(tolerations)}]}}}}


async def test_pod_using_a_device_tainted_by_a_rule_is_evicted():
    ctx, client, inf = context()
    ctrl = DeviceTaintEvictionController(ctx)
    inf.informer("", "pods").put(_claim_pod())
    inf.informer("", "resourceclaims").put(_allocated_claim())
    inf.informer("", "devicetaintrules").put({"metadata": {"name": "broken"}, "spec": {
        "deviceSelector": {"driver": "gpu.example.com", "device": "gpu-0"},
        "taint": {"key": "example.com/broken", "effect": "NoExecute"}}})
    client.live[("pods", "ns/p")] = _claim_pod()
    await ctrl.reconcile("ns/p")
    # As upstream's manager: the DisruptionTarget condition first, then the deletion.
    [(name, patch)] = client.of("patch/status", "pods")
    [cond] = patch["status"]["conditions"]
    assert (name, cond["type"], cond["status"], cond["reason"], cond["message"]) == (
        "p", "DisruptionTarget", "True", "DeletionByDeviceTaintManager",
        "Device Taint manager: deleting due to NoExecute taint")
    assert [c[0] for c in client.calls if c[1] == "pods"] == ["get", "patch/status", "delete"]
    assert [c[:2] for c in client.of("delete", "pods")] == [("ns", "p")]
    assert ctrl.evicted == {"broken": {"u"}}


async def test_a_pod_replaced_or_already_deleted_is_not_evicted_again():
    ctx, client, inf = context()
    ctrl = DeviceTaintEvictionController(ctx)
    inf.informer("", "pods").put(_claim_pod())
    inf.informer("", "resourceclaims").put(_allocated_claim())
    inf.informer("", "devicetaintrules").put({"metadata": {"name": "broken"}, "spec": {
        "deviceSelector": {"driver": "gpu.example.com"},
        "taint": {"key": "example.com/broken", "effect": "NoExecute"}}})
    replaced = _claim_pod()
    replaced["metadata"]["uid"] = "other"
    client.live[("pods", "ns/p")] = replaced
    await ctrl.reconcile("ns/p")
    deleting = _claim_pod()
    deleting["metadata"]["deletionTimestamp"] = format_time(now())
    client.live[("pods", "ns/p")] = deleting
    await ctrl.reconcile("ns/p")
    assert client.of("patch/status") == [] and client.of("delete") == []
    assert ctrl.evicted == {}


async def test_tolerated_device_taint_keeps_the_pod():
    ctx, client, inf = context()
    ctrl = DeviceTaintEvictionController(ctx)
    inf.informer("", "pods").put(_claim_pod())
    inf.informer("", "resourceclaims").put(_allocated_claim(
        [{"key": "example.com/broken", "operator": "Exists"}]))
    inf.informer("", "devicetaintrules").put({"metadata": {"name": "broken"}, "spec": {
        "deviceSelector": {"driver": "gpu.example.com"},
        "taint": {"key": "example.com/broken", "effect": "NoExecute"}}})
    await ctrl.reconcile("ns/p")
    assert client.of("delete") == []


async def test_taint_on_another_device_does_not_evict():
    ctx, client, inf = context()
    ctrl = DeviceTaintEvictionController(ctx)
    inf.informer("", "pods").put(_claim_pod())
    inf.informer("", "resourceclaims").put(_allocated_claim())
    inf.informer("", "devicetaintrules").put({"metadata": {"name": "other"}, "spec": {
        "deviceSelector": {"device": "gpu-1"},
        "taint": {"key": "k", "effect": "NoExecute"}}})
    await ctrl.reconcile("ns/p")
    assert client.of("delete") == []


async def test_a_rule_without_a_device_selector_evicts_nobody_and_an_empty_one_everybody():
    """The API's words: without a selector no devices are matched; the empty selector
    matches all (the DeviceTaintRule CRUD conformance spec makes a NoExecute rule
    without one, which evicted every pod with a claim)."""
    ctx, client, inf = context()
    ctrl = DeviceTaintEvictionController(ctx)
    inf.informer("", "pods").put(_claim_pod())
    inf.informer("", "resourceclaims").put(_allocated_claim())
    client.live[("pods", "ns/p")] = _claim_pod()
    rules = inf.informer("", "devicetaintrules")
    rules.put({"metadata": {"name": "none"}, "spec": {"taint": {"effect": "NoExecute"}}})
    await ctrl.reconcile("ns/p")
    assert client.of("delete") == []
    rules.put({"metadata": {"name": "all"}, "spec": {
        "deviceSelector": {}, "taint": {"key": "k", "effect": "NoExecute"}}})
    await ctrl.reconcile("ns/p")
    assert [c[:2] for c in client.of("delete", "pods")] == [("ns", "p")]


def _slice(taints=()):
    return {"metadata": {"name": "n1-gpu"}, "spec": {
        "driver": "gpu.example.com", "pool": {"name": "n1"}, "nodeName": "n1",
        "devices": [{"name": "gpu-0", "taints": list(taints)}, {"name": "gpu-1"}]}}


async def test_device_tainted_in_its_slice_evicts_until_the_taint_is_gone():
    ctx, client, inf = context()
    ctrl = DeviceTaintEvictionController(ctx)
    inf.informer("", "pods").put(_claim_pod())
    inf.informer("", "resourceclaims").put(_allocated_claim())
    slices = inf.informer("", "resourceslices")
    slices.put(_slice())
    assert ctrl.eviction(_claim_pod()) == (None, [])
    slices.put(_slice([{"key": "example.com/broken", "effect": "NoExecute"}]))
    assert ctrl.eviction(_claim_pod()) == (0.0, [])
    client.live[("pods", "ns/p")] = _claim_pod()
    await ctrl.reconcile("ns/p")
    assert [c[:2] for c in client.of("delete", "pods")] == [("ns", "p")]
    slices.put(_slice())  # the driver took the taint back
    assert ctrl.eviction(_claim_pod()) == (None, [])


async def test_an_unreachable_node_evicts_its_own_pods_only_as_they_come_and_go():
    """The controller finds a node's pods from its index by node name: kept as pods are
    bound, deleted and made again (same name) on another node."""
    ctx, client, inf = context({"node_monitor_grace_period": 40})
    ctrl = NodeLifecycleController(ctx)
    inf.informer("v1", "nodes").put(_node(heartbeat_age=120))  # it gets the taints
    pods = inf.informer("v1", "pods")

    def pod(name, node_name):
        p = _pod()
        p["metadata"].update(name=name, uid=f"uid-{name}-{node_name}")
        p["spec"]["nodeName"] = node_name
        return p

    pods.put(pod("a", "n1"))
    pods.put(pod("b", "n2"))
    pods.put(pod("c", "n1"))
    pods.remove("ns/c")
    pods.put(pod("d", "n1"))
    pods.remove("ns/d")
    pods.put(pod("d", "n2"))  # the same name again, elsewhere
    await ctrl.reconcile("n1")
    assert [name for _ns, name, _kw in client.of("delete", "pods")] == ["a"]
