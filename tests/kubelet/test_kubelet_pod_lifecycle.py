"""Pod lifecycle against the real apiserver: prepare failures and recovery, device health,
the process runtime, init containers."""

from __future__ import annotations

import asyncio

import pytest

from draemu.client import Client
from draemu.cmd.nodes import node_kubeconfig, start_node
from draemu.cmd.testing.e2e import allocate, create_claim, create_pod, eventually, gone
from draemu.drivers.gpu import GPUDriver
from draemu.drivers.presets import NodeSpec
from draemu.drivers.sdk import KubeletPlugin, PrepareResult
from draemu.features import FeatureGates
from draemu.kubelet.kubelet import Kubelet

pytestmark = pytest.mark.unit


class FlakyGPUDriver(GPUDriver):
    """Fails prepare until told to recover."""

    broken = True

    async def prepare_resource_claims(self, claims):
        if self.broken:
            return {c["metadata"]["uid"]: PrepareResult(error="GPU fell off the bus")
                    for c in claims}
        return await super().prepare_resource_claims(claims)


@pytest.fixture
async def client(apiserver):
    async with Client.from_kubeconfig(str(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def node_factory(apiserver, tmp_path):
    started = []

    async def make(runtime="fake", gates=None):
        path = node_kubeconfig(apiserver, tmp_path, "node-1")
        node = await start_node(NodeSpec("node-1"), kubeconfig=path, data_dir=tmp_path,
                                server=apiserver, runtime=runtime,
                                feature_gates=gates or FeatureGates(), crash_loop_backoff=0.1)
        started.append(node)
        return node

    yield make
    for node in started:
        await node.stop()


async def add_driver(node, driver):
    plugin = KubeletPlugin(driver, driver_name=driver.driver_name, node_name=node.name,
                           client=node.client, registrar_dir=node.registry_dir,
                           plugin_data_dir=node.kubelet.layout.plugin_dir(driver.driver_name))
    driver.write_common_spec()
    await plugin.start()
    await plugin.publish_resources(driver.resources())
    node.drivers.append(plugin)
    await eventually(lambda: _true(node.kubelet.plugins.registered(driver.driver_name)))
    return plugin


async def _true(value):
    return value


async def phase(client, name, wanted):
    pod = await client.get("v1", "pods", name, "default")
    return pod if pod["status"].get("phase") == wanted else None


async def test_failed_prepare_is_an_event_and_the_pod_recovers_with_the_driver(
        client, node_factory):
    node = await node_factory()
    driver = FlakyGPUDriver("gpu.example.com", "node-1", node.cdi_dir, [{"count": 1}])
    await add_driver(node, driver)
    claim = await create_claim(client, "c1")
    pod = await create_pod(client, "p1", "node-1", "c1")
    await allocate(client, claim, pod, "gpu.example.com", "node-1", "gpu-0")

    async def warning():
        events = await client.list("v1", "events", "default",
                                   field_selector="involvedObject.name=p1")
        return [e for e in events["items"] if e["reason"] == "FailedPrepareDynamicResources"
                and "GPU fell off the bus" in e["message"]]

    (event,) = await eventually(warning)
    assert event["type"] == "Warning"
    assert event["source"]["component"] == "kubelet"
    assert event["message"] == (
        "Failed to prepare dynamic resources: NodePrepareResources failed for "
        "ResourceClaim c1: GPU fell off the bus")
    pending = await client.get("v1", "pods", "p1", "default")
    assert pending["status"]["phase"] == "Pending"
    assert pending["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == \
        "ContainerCreating"
    driver.broken = False
    await eventually(lambda: phase(client, "p1", "Running"))


async def test_unhealthy_device_shows_in_allocated_resources_status(client, node_factory):
    """By default: ResourceHealthStatus and ResourceHealthStatusMessage are beta and on
    since 1.36."""
    node = await node_factory()
    driver = GPUDriver("gpu.example.com", "node-1", node.cdi_dir, [{"count": 1}])
    plugin = await add_driver(node, driver)
    await plugin.health.set("node-1", "gpu-0", True)
    claim = await create_claim(client, "c1")
    pod = await create_pod(client, "p1", "node-1", "c1")
    await allocate(client, claim, pod, "gpu.example.com", "node-1", "gpu-0")
    await eventually(lambda: phase(client, "p1", "Running"))
    await plugin.health.set("node-1", "gpu-0", False, message="XID 79")

    async def unhealthy():
        got = await client.get("v1", "pods", "p1", "default")
        statuses = got["status"]["containerStatuses"][0].get("allocatedResourcesStatus")
        return statuses if statuses and statuses[0]["resources"][0]["health"] == \
            "Unhealthy" else None

    (entry,) = await eventually(unhealthy)
    uid = claim["metadata"]["uid"]
    assert entry == {"name": "claim:gpu", "resources": [{
        "resourceID": "k8s.gpu.example.com/gpu=common", "health": "Unhealthy",
        "message": "XID 79"}]}
    assert uid  # the claim's devices are the ones reported


async def test_device_health_stays_out_of_pod_status_with_the_gate_off(client, node_factory):
    node = await node_factory(gates=FeatureGates({"ResourceHealthStatus": False,
                                                  "ResourceHealthStatusMessage": False}))
    driver = GPUDriver("gpu.example.com", "node-1", node.cdi_dir, [{"count": 1}])
    plugin = await add_driver(node, driver)
    claim = await create_claim(client, "c1")
    pod = await create_pod(client, "p1", "node-1", "c1")
    await allocate(client, claim, pod, "gpu.example.com", "node-1", "gpu-0")
    await eventually(lambda: phase(client, "p1", "Running"))
    await plugin.health.set("node-1", "gpu-0", False, message="XID 79")
    await asyncio.sleep(0.5)  # the gate-on test sees the change well within this
    got = await client.get("v1", "pods", "p1", "default")
    assert "allocatedResourcesStatus" not in got["status"]["containerStatuses"][0]


async def test_process_runtime_runs_the_command_and_reports_its_exit(client, node_factory):
    await node_factory(runtime="process")
    await client.create("v1", "pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1", "namespace": "default"},
        "spec": {"nodeName": "node-1", "restartPolicy": "Never",
                 "initContainers": [{"name": "init", "image": "busybox",
                                     "command": ["sh", "-c", "echo init ran"]}],
                 "containers": [{"name": "main", "image": "busybox",
                                 "command": ["sh", "-c", "echo hello $WHO; exit 3"],
                                 "env": [{"name": "WHO", "value": "draemu"}]}]}}, "default")
    failed = await eventually(lambda: phase(client, "p1", "Failed"))
    term = failed["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (3, "Error")
    init = failed["status"]["initContainerStatuses"][0]["state"]["terminated"]
    assert init["exitCode"] == 0
    status, _h, body = await client.request(
        "GET", "/api/v1/namespaces/default/pods/p1/log", params={"container": "main"})
    assert status == 200 and body.decode() == "hello draemu\n"


async def test_pod_without_claims_runs_on_the_fake_runtime(client, node_factory):
    await node_factory()
    await client.create("v1", "pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1", "namespace": "default"},
        "spec": {"nodeName": "node-1", "containers": [{
            "name": "main", "image": "busybox",
            "env": [{"name": "POD", "valueFrom": {"fieldRef": {
                "fieldPath": "metadata.name"}}}]}]}}, "default")
    await eventually(lambda: phase(client, "p1", "Running"))
    status, _h, body = await client.request("GET", "/api/v1/namespaces/default/pods/p1/log")
    assert 'declare -x POD="p1"' in body.decode()


class StickyGPUDriver(GPUDriver):
    """Refuses to unprepare until told otherwise."""

    stuck = True

    async def unprepare_resource_claims(self, claims):
        if self.stuck:
            return {c.uid: "device still busy" for c in claims}
        return await super().unprepare_resource_claims(claims)


async def test_pod_stays_terminating_until_unprepare_succeeds(client, node_factory):
    node = await node_factory()
    driver = StickyGPUDriver("gpu.example.com", "node-1", node.cdi_dir, [{"count": 1}])
    await add_driver(node, driver)
    claim = await create_claim(client, "c1")
    pod = await create_pod(client, "p1", "node-1", "c1")
    await allocate(client, claim, pod, "gpu.example.com", "node-1", "gpu-0")
    await eventually(lambda: phase(client, "p1", "Running"))
    await client.delete("v1", "pods", "p1", "default")

    async def failed_unprepare():
        events = await client.list("v1", "events", "default",
                                   field_selector="involvedObject.name=p1")
        return [e for e in events["items"] if e["reason"] == "FailedUnprepareDynamicResources"]

    (event,) = await eventually(failed_unprepare)
    assert "NodeUnprepareResources failed for ResourceClaim c1: device still busy" in \
        event["message"]
    still = await client.get("v1", "pods", "p1", "default")
    assert still["metadata"]["deletionTimestamp"]
    driver.stuck = False

    await eventually(lambda: gone(client, "v1", "pods", "p1", "default"))
    assert node.kubelet.cache.claims == {}


async def test_failing_container_is_restarted_with_backoff(client, node_factory):
    await node_factory(runtime="process")
    await client.create("v1", "pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1", "namespace": "default"},
        "spec": {"nodeName": "node-1", "restartPolicy": "OnFailure",
                 "containers": [{"name": "main", "image": "busybox",
                                 "command": ["sh", "-c", "echo try; exit 1"]}]}}, "default")

    async def restarted():
        pod = await client.get("v1", "pods", "p1", "default")
        statuses = pod["status"].get("containerStatuses") or []
        return statuses[0] if statuses and statuses[0]["restartCount"] >= 2 else None

    status = await eventually(restarted)
    assert status["lastState"]["terminated"]["exitCode"] == 1
    code, _h, body = await client.request(
        "GET", "/api/v1/namespaces/default/pods/p1/log", params={"previous": "true"})
    assert code == 200 and body.decode() == "try\n"


async def test_graceful_deletion_stops_a_running_process(client, node_factory):
    await node_factory(runtime="process")
    await client.create("v1", "pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1", "namespace": "default"},
        "spec": {"nodeName": "node-1", "terminationGracePeriodSeconds": 5,
                 "containers": [{"name": "main", "image": "busybox",
                                 "command": ["sleep", "600"]}]}}, "default")
    await eventually(lambda: phase(client, "p1", "Running"))
    await client.delete("v1", "pods", "p1", "default")

    await eventually(lambda: gone(client, "v1", "pods", "p1", "default"))


class CountingGPUDriver(GPUDriver):
    def __init__(self, *args):
        super().__init__(*args)
        self.prepares: list[str] = []
        self.unprepares: list[str] = []

    async def prepare_resource_claims(self, claims):
        self.prepares += [c["metadata"]["uid"] for c in claims]
        return await super().prepare_resource_claims(claims)

    async def unprepare_resource_claims(self, claims):
        self.unprepares += [c.uid for c in claims]
        return await super().unprepare_resource_claims(claims)


async def test_kubelet_restart_with_the_driver_running_prepares_once_unprepares_once(
        client, node_factory):
    node = await node_factory()
    driver = CountingGPUDriver("gpu.example.com", "node-1", node.cdi_dir, [{"count": 1}])
    plugin = await add_driver(node, driver)
    claim = await create_claim(client, "c1")
    pod = await create_pod(client, "p1", "node-1", "c1")
    await allocate(client, claim, pod, "gpu.example.com", "node-1", "gpu-0")
    await eventually(lambda: phase(client, "p1", "Running"))

    await node.kubelet.stop()
    restarted = Kubelet(node.client, node.kubelet.options)
    node.kubelet = restarted
    await restarted.start()
    await eventually(lambda: _true(restarted.plugins.registered("gpu.example.com")))
    await plugin.slices.wait_synced()

    async def republished():
        listed = await client.list("resource.k8s.io/v1", "resourceslices",
                                   field_selector="spec.nodeName=node-1")
        return listed["items"]

    await eventually(republished)
    await client.delete("v1", "pods", "p1", "default")

    await eventually(lambda: gone(client, "v1", "pods", "p1", "default"))
    uid = claim["metadata"]["uid"]
    assert driver.prepares == [uid]
    assert driver.unprepares == [uid]
    assert restarted.cache.claims == {}


async def test_container_events_are_listed_in_the_order_they_happened(client, node_factory):
    # kubectl describe sorts events by lastTimestamp (seconds) and keeps the list order
    # for ties: the list order (by name) must be the order the kubelet emitted them.
    await node_factory()
    await client.create("v1", "pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1", "namespace": "default"},
        "spec": {"nodeName": "node-1", "containers": [{"name": "main", "image": "busybox"}]}},
        "default")
    await eventually(lambda: phase(client, "p1", "Running"))

    async def reasons() -> list[str]:
        events = (await client.list("v1", "events", "default"))["items"]
        return [e["reason"] for e in events if e["involvedObject"]["name"] == "p1"]

    async def all_three() -> bool:
        return {"Pulled", "Created", "Started"} <= set(await reasons())

    await eventually(all_three)
    assert await reasons() == ["Pulled", "Created", "Started"]


async def test_a_new_pod_waits_for_a_force_deleted_pods_claim_of_the_same_name(
        client, node_factory):
    # Upstream's e2e spec 'blocks new pod after force-delete': the pod and its claim are
    # force-deleted while the driver refuses to unprepare, then made again under the same
    # names. The new pod is not held behind the old one's teardown: its preparation fails
    # on the old claim, which is still prepared, until the old claim is released.
    node = await node_factory()
    driver = StickyGPUDriver("gpu.example.com", "node-1", node.cdi_dir, [{"count": 1}])
    await add_driver(node, driver)
    old_claim = await create_claim(client, "c1")
    pod = await create_pod(client, "p1", "node-1", "c1")
    await allocate(client, old_claim, pod, "gpu.example.com", "node-1", "gpu-0")
    await eventually(lambda: phase(client, "p1", "Running"))
    await client.delete("v1", "pods", "p1", "default", grace_period_seconds=0)
    await client.delete("resource.k8s.io/v1", "resourceclaims", "c1", "default")
    await eventually(lambda: gone(client, "resource.k8s.io/v1", "resourceclaims", "c1",
                                  "default"))
    claim = await create_claim(client, "c1")
    pod = await create_pod(client, "p1", "node-1", "c1")
    await allocate(client, claim, pod, "gpu.example.com", "node-1", "gpu-0")
    old_uid = old_claim["metadata"]["uid"]

    async def blocked():
        events = await client.list("v1", "events", "default",
                                   field_selector="involvedObject.name=p1,"
                                                  "reason=FailedPrepareDynamicResources")
        return [e for e in events["items"] if e["involvedObject"]["uid"] ==
                pod["metadata"]["uid"] and f"old ResourceClaim with same name c1 and "
                f"different UID {old_uid} still exists" in e["message"]]

    await eventually(blocked)
    assert (await client.get("v1", "pods", "p1", "default"))["status"]["phase"] == "Pending"
    driver.stuck = False
    await eventually(lambda: phase(client, "p1", "Running"))
    assert [info.claim_uid for info in node.kubelet.cache.claims.values()] == [
        claim["metadata"]["uid"]]
