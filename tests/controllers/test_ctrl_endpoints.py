"""The endpoints and endpointslice controllers' output, against fake informers."""

import pytest
from controller_fakes import context

from draemu.controllers.endpoints import EndpointsController, EndpointSliceController

pytestmark = pytest.mark.unit


def service(**spec):
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "ns", "uid": "uid-svc",
                         "labels": {"team": "a"}},
            "spec": {"selector": {"app": "web"},
                     "ports": [{"name": "http", "port": 80, "targetPort": "http",
                                "protocol": "TCP"}], **spec}}


def pod(name, ip, ready=True, deleting=False, phase="Running"):
    md = {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": {"app": "web"}}
    if deleting:
        md["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md,
            "spec": {"nodeName": "n1", "containers": [
                {"name": "c", "ports": [{"name": "http", "containerPort": 8080}]}]},
            "status": {"phase": phase, "podIP": ip, "conditions": [
                {"type": "Ready", "status": "True" if ready else "False"}]}}


def fill(inf, svc, *pods):
    inf.informer("v1", "services").put(svc)
    for p in pods:
        inf.informer("v1", "pods").put(p)


async def test_endpoints_split_ready_and_not_ready_pods_and_resolve_named_ports():
    ctx, client, inf = context()
    ctrl = EndpointsController(ctx)
    fill(inf, service(), pod("a", "10.0.0.2"), pod("b", "10.0.0.1", ready=False),
         pod("gone", "10.0.0.3", deleting=True), pod("done", "10.0.0.4", phase="Succeeded"),
         pod("noip", ""))
    await ctrl.reconcile("ns/web")
    [ep] = client.of("create", "endpoints")
    assert ep["metadata"]["labels"] == {"team": "a",
                                        "endpoints.kubernetes.io/managed-by":
                                            "endpoint-controller"}
    [subset] = ep["subsets"]
    assert subset["ports"] == [{"port": 8080, "protocol": "TCP", "name": "http"}]
    assert [a["ip"] for a in subset["addresses"]] == ["10.0.0.2"]
    assert [a["ip"] for a in subset["notReadyAddresses"]] == ["10.0.0.1"]
    assert subset["addresses"][0]["targetRef"] == {"kind": "Pod", "namespace": "ns",
                                                   "name": "a", "uid": "uid-a"}
    assert subset["addresses"][0]["nodeName"] == "n1"


async def test_publish_not_ready_addresses_makes_every_pod_ready():
    ctx, client, inf = context()
    ctrl = EndpointsController(ctx)
    fill(inf, service(publishNotReadyAddresses=True), pod("b", "10.0.0.1", ready=False))
    await ctrl.reconcile("ns/web")
    [ep] = client.of("create", "endpoints")
    assert [a["ip"] for a in ep["subsets"][0]["addresses"]] == ["10.0.0.1"]


async def test_services_without_a_selector_are_left_alone():
    ctx, client, inf = context()
    ctrl = EndpointsController(ctx)
    svc = service()
    del svc["spec"]["selector"]
    fill(inf, svc, pod("a", "10.0.0.2"))
    await ctrl.reconcile("ns/web")
    assert client.calls == []


async def test_a_headless_service_gets_the_headless_label():
    ctx, client, inf = context()
    ctrl = EndpointSliceController(ctx)
    fill(inf, service(clusterIP="None"), pod("a", "10.0.0.2"))
    await ctrl.reconcile("ns/web")
    [es] = client.of("create", "endpointslices")
    assert es["metadata"]["labels"]["service.kubernetes.io/headless"] == ""


async def test_slices_carry_conditions_owner_and_service_label():
    ctx, client, inf = context()
    ctrl = EndpointSliceController(ctx)
    fill(inf, service(), pod("a", "10.0.0.2"), pod("t", "10.0.0.3", deleting=True))
    await ctrl.reconcile("ns/web")
    [es] = client.of("create", "endpointslices")
    assert es["addressType"] == "IPv4"
    assert es["metadata"]["name"].startswith("web-")
    assert es["metadata"]["labels"] == {
        "team": "a", "kubernetes.io/service-name": "web",
        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}
    assert es["metadata"]["ownerReferences"][0]["uid"] == "uid-svc"
    assert es["ports"] == [{"name": "http", "protocol": "TCP", "port": 8080}]
    conditions = {e["targetRef"]["name"]: e["conditions"] for e in es["endpoints"]}
    assert conditions == {"a": {"ready": True, "serving": True, "terminating": False},
                          "t": {"ready": False, "serving": True, "terminating": True}}


async def test_a_second_sync_waits_for_the_slice_it_created():
    ctx, client, inf = context()
    ctrl = EndpointSliceController(ctx)
    fill(inf, service(), pod("a", "10.0.0.2"))
    await ctrl.reconcile("ns/web")
    assert await ctrl.reconcile("ns/web") == 0.5
    assert len(client.of("create", "endpointslices")) == 1


async def test_slices_hold_at_most_100_endpoints():
    ctx, client, inf = context()
    ctrl = EndpointSliceController(ctx)
    fill(inf, service(), *(pod(f"p{i:03d}", f"10.0.{i // 250}.{i % 250 + 1}")
                           for i in range(150)))
    await ctrl.reconcile("ns/web")
    assert [len(s["endpoints"]) for s in client.of("create", "endpointslices")] == [100, 50]


async def test_pods_that_resolve_a_named_port_differently_get_their_own_slice():
    ctx, client, inf = context()
    ctrl = EndpointSliceController(ctx)
    other = pod("b", "10.0.0.3")
    other["spec"]["containers"][0]["ports"] = [{"name": "http", "containerPort": 9090}]
    fill(inf, service(), pod("a", "10.0.0.2"), other)
    await ctrl.reconcile("ns/web")
    slices = client.of("create", "endpointslices")
    assert sorted((s["ports"][0]["port"], [e["targetRef"]["name"] for e in s["endpoints"]])
                  for s in slices) == [(8080, ["a"]), (9090, ["b"])]


async def test_a_service_without_pods_keeps_an_empty_placeholder_slice():
    ctx, client, inf = context()
    ctrl = EndpointSliceController(ctx)
    fill(inf, service())
    await ctrl.reconcile("ns/web")
    [es] = client.of("create", "endpointslices")
    assert es["endpoints"] == [] and es["ports"] == []


async def test_endpoints_keep_at_most_1000_addresses_ready_first():
    ctx, client, inf = context()
    ctrl = EndpointsController(ctx)
    pods = [pod(f"r{i:04d}", f"10.1.{i // 250}.{i % 250 + 1}") for i in range(900)]
    pods += [pod(f"n{i:04d}", f"10.2.{i // 250}.{i % 250 + 1}", ready=False)
             for i in range(300)]
    fill(inf, service(), *pods)
    await ctrl.reconcile("ns/web")
    [ep] = client.of("create", "endpoints")
    [subset] = ep["subsets"]
    assert (len(subset["addresses"]), len(subset["notReadyAddresses"])) == (900, 100)
    assert ep["metadata"]["annotations"] == {"endpoints.kubernetes.io/over-capacity":
                                             "truncated"}
