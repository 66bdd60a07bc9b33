
import pytest
from controller_fakes import context

from draemu.controllers.resourceclaim import (
    DELETE_PROTECTION,
    POD_CLAIM_NAME,
    ResourceClaimController,
    generate_name,
)

pytestmark = pytest.mark.unit


def _pod(name="p", phase="Pending", **spec):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
            "spec": {"containers": [{"name": "c", "image": "i"}], **spec},
            "status": {"phase": phase}}


def _template(name="gpu-template"):
    return {"metadata": {"name": name, "namespace": "ns"},
            "spec": {"metadata": {"labels": {"app": "x"}},
                     "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                         "deviceClassName": "gpu.example.com"}}]}}}}


def _claim(name, *, owner=None, reserved=(), allocated=True, finalizers=()):
    claim = {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                          "resourceVersion": "5", "finalizers": list(finalizers)},
             "spec": {"devices": {}}, "status": {}}
    if owner:
        claim["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod",
                                                 "name": owner, "uid": f"uid-{owner}",
                                                 "controller": True}]
    if allocated:
        claim["status"]["allocation"] = {"devices": {"results": []}}
    if reserved:
        claim["status"]["reservedFor"] = [{"resource": "pods", "name": p, "uid": f"uid-{p}"}
                                          for p in reserved]
    return claim


def test_generate_name_keeps_both_parts_when_too_long():
    name = generate_name("p" * 60, "c" * 30)
    assert len(name) <= 58 and name.startswith("ppp") and "-ccc" in name
    assert generate_name("pod", "gpu") == "pod-gpu-"


async def test_pod_with_template_gets_a_generated_claim_and_a_status_entry():
    ctx, client, inf = context()
    ctrl = ResourceClaimController(ctx)
    inf.informer("", "resourceclaimtemplates").put(_template())
    pod = inf.informer("v1", "pods").put(_pod(resourceClaims=[
        {"name": "gpu", "resourceClaimTemplateName": "gpu-template"}]))
    await ctrl.reconcile("pod:ns/p")
    [claim] = client.of("create", "resourceclaims")
    meta = claim["metadata"]
    assert meta["name"].startswith("p-gpu-")
    assert meta["annotations"][POD_CLAIM_NAME] == "gpu"
    assert meta["labels"] == {"app": "x"}
    assert meta["ownerReferences"][0]["uid"] == pod["metadata"]["uid"]
    assert meta["ownerReferences"][0]["controller"] is True
    assert claim["spec"]["devices"]["requests"][0]["name"] == "gpu"
    [(name, patch)] = client.of("patch/status", "pods")
    assert patch == {"status": {"resourceClaimStatuses": [
        {"name": "gpu", "resourceClaimName": meta["name"]}]}}


async def test_existing_generated_claim_is_recorded_not_created_again():
    ctx, client, inf = context()
    ctrl = ResourceClaimController(ctx)
    inf.informer("", "resourceclaimtemplates").put(_template())
    inf.informer("v1", "pods").put(_pod(resourceClaims=[
        {"name": "gpu", "resourceClaimTemplateName": "gpu-template"}]))
    claim = _claim("p-gpu-abcde", owner="p", allocated=False)
    claim["metadata"]["annotations"] = {POD_CLAIM_NAME: "gpu"}
    inf.informer("", "resourceclaims").put(claim)
    await ctrl.reconcile("pod:ns/p")
    assert client.of("create") == []
    assert client.of("patch/status", "pods")[0][1]["status"]["resourceClaimStatuses"] == [
        {"name": "gpu", "resourceClaimName": "p-gpu-abcde"}]


async def test_missing_template_records_a_warning_event_and_creates_nothing():
    ctx, client, inf = context()
    ctrl = ResourceClaimController(ctx)
    inf.informer("v1", "pods").put(_pod(resourceClaims=[
        {"name": "gpu", "resourceClaimTemplateName": "nope"}]))
    await ctrl.reconcile("pod:ns/p")
    assert client.of("create", "resourceclaims") == []
    [event] = client.of("create", "events")
    assert event["reason"] == "FailedResourceClaimCreation" and event["type"] == "Warning"


async def test_a_template_not_yet_in_the_cache_is_not_read_from_the_api_and_its_arrival_counts():
    """As upstream's lister: the controller's role need not read templates one by one."""
    ctx, client, inf = context()
    ctrl = ResourceClaimController(ctx)
    inf.informer("v1", "pods").put(_pod(resourceClaims=[
        {"name": "gpu", "resourceClaimTemplateName": "gpu-template"}]))
    await ctrl.reconcile("pod:ns/p")
    assert client.of("get") == [] and client.of("create", "resourceclaims") == []
    [event] = client.of("create", "events")
    assert event["message"] == ('PodResourceClaim gpu: resource claim template "gpu-template": '
                                'resourceclaimtemplate.resource.k8s.io "gpu-template" not found')
    inf.informer("", "resourceclaimtemplates").put(_template())
    await ctrl.reconcile("pod:ns/p")
    [created] = client.of("create", "resourceclaims")
    assert created["metadata"]["annotations"][POD_CLAIM_NAME] == "gpu"


async def test_done_pod_is_removed_from_reserved_for_and_claim_is_deallocated():
    ctx, client, inf = context()
    ctrl = ResourceClaimController(ctx)
    inf.informer("v1", "pods").put(_pod("a", phase="Succeeded"))
    inf.informer("v1", "pods").put(_pod("b", phase="Running"))
    inf.informer("", "resourceclaims").put(_claim("shared", reserved=("a", "b")))
    await ctrl.reconcile("claim:ns/shared")
    [updated] = client.of("update/status", "resourceclaims")
    assert [r["name"] for r in updated["status"]["reservedFor"]] == ["b"]
    assert updated["status"]["allocation"]  # still in use by b


async def test_unreserved_claim_is_deallocated_and_loses_delete_protection():
    ctx, client, inf = context()
    ctrl = ResourceClaimController(ctx)
    inf.informer("", "resourceclaims").put(
        _claim("c", reserved=("gone",), finalizers=(DELETE_PROTECTION,)))
    await ctrl.reconcile("claim:ns/c")
    statuses = client.of("update/status", "resourceclaims")
    assert "reservedFor" not in statuses[0]["status"]
    assert "allocation" not in statuses[-1]["status"]
    [plain] = client.of("update", "resourceclaims")
    assert DELETE_PROTECTION not in plain["metadata"]["finalizers"]


async def test_generated_claim_of_a_finished_pod_is_deleted():
    ctx, client, inf = context()
    ctrl = ResourceClaimController(ctx)
    inf.informer("v1", "pods").put(_pod("p", phase="Failed"))
    inf.informer("", "resourceclaims").put(_claim("p-gpu-x", owner="p", reserved=("p",)))
    await ctrl.reconcile("claim:ns/p-gpu-x")
    assert client.of("delete", "resourceclaims") == [("ns", "p-gpu-x", {})]


async def test_claim_reserved_by_a_running_pod_is_left_alone():
    ctx, client, inf = context()
    ctrl = ResourceClaimController(ctx)
    inf.informer("v1", "pods").put(_pod("p", phase="Running"))
    inf.informer("", "resourceclaims").put(_claim("c", reserved=("p",)))
    await ctrl.reconcile("claim:ns/c")
    assert client.calls == []


async def test_claim_the_scheduler_is_about_to_allocate_is_left_alone():
    # PreBind adds the finalizer first, then writes allocation and reservedFor.
    ctx, client, inf = context()
    ctrl = ResourceClaimController(ctx)
    inf.informer("", "resourceclaims").put(
        _claim("c", allocated=False, finalizers=(DELETE_PROTECTION,)))
    await ctrl.reconcile("claim:ns/c")
    assert client.calls == []


async def test_allocated_claim_that_was_never_reserved_stays_allocated():
    ctx, client, inf = context()
    ctrl = ResourceClaimController(ctx)
    inf.informer("", "resourceclaims").put(
        _claim("c", allocated=True, finalizers=(DELETE_PROTECTION,)))
    await ctrl.reconcile("claim:ns/c")
    assert client.calls == []
