"""Python clients against a whole running cluster (`draemu up --preset example`).

The official client (kubernetes 37, strict pydantic models: a missing required field or a
wrong JSON type fails the call) reads what the cluster wrote: Nodes and Leases from the
kubelets, ResourceSlices from the driver, an allocated and reserved claim from the
scheduler, a running pod's status, its log and the Events about it. lightkube and kr8s
run pods with claims the way their users do: create, wait for Ready, read the log,
delete and wait for it to go."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config, watch

from draemu.cmd.testing.process import draemu_up

pytestmark = pytest.mark.e2e

NS = "default"
POD = {
    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "cluster-pod"},
    "spec": {"containers": [{"name": "ctr", "image": "registry.example.com/cuda:latest",
                             "resources": {"claims": [{"name": "gpu"}]}}],
             "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]},
}
TEMPLATE = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
    "metadata": {"name": "gpu"},
    "spec": {"spec": {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}},
}


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with draemu_up(tmp_path_factory.mktemp("draemu"), "--preset", "example") as running:
        yield running.kubeconfig


@pytest.fixture(scope="module")
def api(kubeconfig: Path) -> Iterator[client.ApiClient]:
    api = config.new_client_from_config(str(kubeconfig))
    yield api
    api.close()


def _pod(name: str) -> dict:
    return {**POD, "metadata": {"name": name, "namespace": NS}}


def _template(api: client.ApiClient) -> None:
    """The claim template every pod here uses (created once)."""
    resource = client.ResourceV1Api(api)
    names = [t.metadata.name for t in resource.list_namespaced_resource_claim_template(NS).items]
    if "gpu" not in names:
        resource.create_namespaced_resource_claim_template(NS, TEMPLATE)


@pytest.fixture(scope="module")
def running_pod(api: client.ApiClient) -> client.V1Pod:
    """A pod with a claim from a template, once it runs."""
    core = client.CoreV1Api(api)
    _template(api)
    created = core.create_namespaced_pod(NS, POD)
    w = watch.Watch()
    for event in w.stream(core.list_namespaced_pod, NS, field_selector="metadata.name=cluster-pod",
                          resource_version=created.metadata.resource_version,
                          timeout_seconds=60):
        if event["object"].status.phase == "Running":
            w.stop()
            return event["object"]
    raise AssertionError("cluster-pod never ran")


def test_nodes_and_their_leases(api: client.ApiClient) -> None:
    nodes = client.CoreV1Api(api).list_node().items
    assert sorted(n.metadata.name for n in nodes) == ["node-1", "node-2"]
    info = nodes[0].status.node_info
    assert info.kubelet_version == "v1.37.0" and info.boot_id
    leases = client.CoordinationV1Api(api).list_namespaced_lease("kube-node-lease").items
    assert sorted(lease.spec.holder_identity for lease in leases) == ["node-1", "node-2"]


def test_resource_slices_and_device_class(api: client.ApiClient) -> None:
    resource = client.ResourceV1Api(api)
    slices = resource.list_resource_slice(field_selector="spec.nodeName=node-1").items
    assert [s.spec.driver for s in slices] == ["gpu.example.com"]
    assert slices[0].spec.pool.resource_slice_count == 1
    assert len(slices[0].spec.devices) == 8
    classes = resource.list_device_class().items
    assert [c.metadata.name for c in classes] == ["gpu.example.com"]


def test_allocated_claim_of_a_running_pod(api: client.ApiClient,
                                          running_pod: client.V1Pod) -> None:
    name = running_pod.status.resource_claim_statuses[0].resource_claim_name
    claim = client.ResourceV1Api(api).read_namespaced_resource_claim(name, NS)
    result = claim.status.allocation.devices.results[0]
    assert (result.driver, result.pool) == ("gpu.example.com", running_pod.spec.node_name)
    assert [r.name for r in claim.status.reserved_for] == ["cluster-pod"]
    owner = claim.metadata.owner_references[0]
    assert (owner.kind, owner.name, owner.controller) == ("Pod", "cluster-pod", True)


@pytest.mark.parametrize("api_class", ["ResourceV1beta1Api", "ResourceV1beta2Api"])
def test_older_dra_versions_read_strictly(api: client.ApiClient, running_pod: client.V1Pod,
                                          api_class: str) -> None:
    # Tools built for 1.32/1.33 clusters still use the beta versions; the server converts.
    older = getattr(client, api_class)(api)
    slices = older.list_resource_slice(field_selector="spec.nodeName=node-1").items
    assert [s.spec.driver for s in slices] == ["gpu.example.com"]
    name = running_pod.status.resource_claim_statuses[0].resource_claim_name
    claim = older.read_namespaced_resource_claim(name, NS)
    assert claim.status.allocation.devices.results[0].pool == running_pod.spec.node_name


def test_running_pod_status(running_pod: client.V1Pod) -> None:
    status = running_pod.status
    assert [c.name for c in status.container_statuses] == ["ctr"]
    assert status.container_statuses[0].ready is True
    assert status.container_statuses[0].restart_count == 0
    conditions = {c.type: c.status for c in status.conditions}
    assert conditions["Ready"] == "True" and conditions["PodScheduled"] == "True"


def test_pod_log_shows_the_injected_devices(api: client.ApiClient,
                                            running_pod: client.V1Pod) -> None:
    # The client asks for JSON; the server answers text/plain, as upstream.
    log = client.CoreV1Api(api).read_namespaced_pod_log("cluster-pod", NS, container="ctr")
    assert 'DRA_RESOURCE_DRIVER_NAME="gpu.example.com"' in log


def test_events_about_the_pod(api: client.ApiClient, running_pod: client.V1Pod) -> None:
    # Through core/v1 only: events.k8s.io/v1 shows events recorded the legacy way (as
    # kubelets do, upstream too) with `eventTime: null`, which this client's
    # EventsV1Event model rejects.
    selector = f"involvedObject.uid={running_pod.metadata.uid}"
    events = client.CoreV1Api(api).list_namespaced_event(NS, field_selector=selector).items
    assert {"Scheduled", "Started"} <= {e.reason for e in events}
    assert all(e.involved_object.name == "cluster-pod" for e in events)


def test_lightkube_runs_a_pod_with_a_claim(api: client.ApiClient, kubeconfig: Path) -> None:
    pytest.importorskip("lightkube", reason="lightkube is not installed (test extra)")
    from lightkube import Client
    from lightkube.config.kubeconfig import KubeConfig
    from lightkube.resources.core_v1 import Pod

    _template(api)
    kube = Client(config=KubeConfig.from_file(kubeconfig))
    try:
        kube.create(Pod.from_dict(_pod("lightkube-pod")))
        ready = kube.wait(Pod, "lightkube-pod", namespace=NS, for_conditions=["Ready"])
        assert ready.status.resourceClaimStatuses[0].resourceClaimName
        log = "".join(kube.log("lightkube-pod", namespace=NS))
        assert 'DRA_RESOURCE_DRIVER_NAME="gpu.example.com"' in log
        kube.delete(Pod, "lightkube-pod", namespace=NS)
        # A graceful delete: the pod goes once its kubelet has stopped it.
        for event, _ in kube.watch(Pod, namespace=NS, fields={"metadata.name": "lightkube-pod"},
                                   resource_version=ready.metadata.resourceVersion,
                                   server_timeout=60):
            if event == "DELETED":
                break
    finally:
        kube.close()


async def test_kr8s_runs_a_pod_with_a_claim(api: client.ApiClient, kubeconfig: Path) -> None:
    pytest.importorskip("kr8s", reason="kr8s is not installed (test extra)")
    import kr8s.asyncio
    from kr8s.asyncio.objects import Pod

    _template(api)
    with warnings.catch_warnings():  # kr8s 0.20 warns that it knows Kubernetes up to 1.35
        warnings.simplefilter("ignore")
        kube = await kr8s.asyncio.api(kubeconfig=str(kubeconfig))
        assert await kube.whoami() == "kubernetes-admin"
    pod = await Pod(_pod("kr8s-pod"), api=kube)
    await pod.create()
    await pod.wait("condition=Ready", timeout=60)
    log = [line async for line in pod.logs()]
    assert 'declare -x DRA_RESOURCE_DRIVER_NAME="gpu.example.com"' in log
    await pod.delete()
    await pod.wait("delete", timeout=60)
