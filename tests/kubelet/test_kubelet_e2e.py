"""End to end: apiserver + emulated kubelet + built-in GPU driver over real sockets."""

from __future__ import annotations

import pytest

from draemu.client import ApiError, Client
from draemu.cmd.nodes import node_kubeconfig, start_node
from draemu.cmd.testing.e2e import allocate, create_claim, create_pod, eventually, gone
from draemu.drivers.presets import DriverSpec, NodeSpec

pytestmark = [pytest.mark.slow, pytest.mark.unit]

GPU = DriverSpec("gpu.example.com", "gpu", {"gpus": [{"count": 2, "memory": "80Gi"}]})


@pytest.fixture
async def client(apiserver):
    async with Client.from_kubeconfig(str(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def start(apiserver, tmp_path):
    started = []

    async def go(name="node-1", drivers=(GPU,)):
        path = node_kubeconfig(apiserver, tmp_path, name)
        node = await start_node(NodeSpec(name, drivers=list(drivers)), kubeconfig=path,
                                data_dir=tmp_path, server=apiserver)
        started.append(node)
        return node

    yield go
    for node in started:
        await node.stop()


async def running(client, name):
    pod = await client.get("v1", "pods", name, "default")
    return pod if pod["status"].get("phase") == "Running" else None


async def pod_log(client, name):
    status, _headers, body = await client.request(
        "GET", f"/api/v1/namespaces/default/pods/{name}/log")
    assert status == 200, body
    return body.decode()


async def test_node_is_ready_with_its_lease_and_slices(client, start):
    node = await start()
    await node.drivers[0].slices.wait_synced()
    got = await client.get("v1", "nodes", "node-1")
    ready = [c for c in got["status"]["conditions"] if c["type"] == "Ready"][0]
    assert ready["status"] == "True"
    assert got["metadata"]["labels"]["kubernetes.io/hostname"] == "node-1"
    assert got["status"]["nodeInfo"]["bootID"]
    lease = await client.get("coordination.k8s.io/v1", "leases", "node-1", "kube-node-lease")
    assert lease["spec"]["holderIdentity"] == "node-1"
    slices = await client.list("resource.k8s.io/v1", "resourceslices",
                               field_selector="spec.nodeName=node-1")
    (only,) = slices["items"]
    assert [d["name"] for d in only["spec"]["devices"]] == ["gpu-0", "gpu-1"]
    assert only["metadata"]["ownerReferences"][0]["uid"] == got["metadata"]["uid"]


async def test_pod_with_claim_runs_and_its_log_shows_the_injected_env(client, start):
    node = await start()
    claim = await create_claim(client, "c1")
    pod = await create_pod(client, "p1", "node-1", "c1")
    await allocate(client, claim, pod, "gpu.example.com", "node-1", "gpu-1")
    got = await eventually(lambda: running(client, "p1"))
    ctr = got["status"]["containerStatuses"][0]
    assert ctr["ready"] is True and "running" in ctr["state"]
    assert got["status"]["podIP"].startswith("10.")
    assert {c["type"]: c["status"] for c in got["status"]["conditions"]}["Ready"] == "True"
    log = await pod_log(client, "p1")
    assert 'declare -x GPU_DEVICE_1="gpu-1"' in log
    assert 'declare -x GPU_DEVICE_1_SHARING_STRATEGY="TimeSlicing"' in log
    assert 'declare -x KUBERNETES_NODE_NAME="node-1"' in log
    assert node.kubelet.cache.claims["default/c1"].prepared


async def test_deleting_the_pod_unprepares_before_the_pod_goes(client, start):
    node = await start()
    claim = await create_claim(client, "c1")
    pod = await create_pod(client, "p1", "node-1", "c1")
    await allocate(client, claim, pod, "gpu.example.com", "node-1", "gpu-0")
    await eventually(lambda: running(client, "p1"))
    cdi_spec = node.cdi_dir / f"k8s.gpu.example.com-gpu_{claim['metadata']['uid']}.yaml"
    assert cdi_spec.exists()
    await client.delete("v1", "pods", "p1", "default")

    await eventually(lambda: gone(client, "v1", "pods", "p1", "default"))
    assert not cdi_spec.exists()
    assert node.kubelet.cache.claims == {}


async def test_kubelet_restart_prepares_nothing_twice_and_leaks_nothing(client, start):
    node = await start()
    claim = await create_claim(client, "c1")
    pod = await create_pod(client, "p1", "node-1", "c1")
    await allocate(client, claim, pod, "gpu.example.com", "node-1", "gpu-0")
    await eventually(lambda: running(client, "p1"))
    prepared_before = node.kubelet.cache.claims["default/c1"].claim_uid
    await node.stop()

    again = await start()
    await eventually(lambda: running(client, "p1"))
    info = again.kubelet.cache.claims["default/c1"]
    assert info.claim_uid == prepared_before
    assert info.pod_uids == {pod["metadata"]["uid"]}
    await client.delete("v1", "pods", "p1", "default")
    await eventually(lambda: _pod_absent(client, "p1"))
    assert again.kubelet.cache.claims == {}
    assert list(again.cdi_dir.glob("*_" + claim["metadata"]["uid"] + ".yaml")) == []


async def _pod_absent(client, name):
    try:
        await client.get("v1", "pods", name, "default")
    except ApiError as err:
        return err.code == 404
    return False


async def test_slices_of_a_driver_gone_for_the_grace_period_are_deleted(client, apiserver,
                                                                        tmp_path):
    path = node_kubeconfig(apiserver, tmp_path, "node-1")
    node = await start_node(NodeSpec("node-1", drivers=[GPU]), kubeconfig=path,
                            data_dir=tmp_path, server=apiserver, slice_wipe_delay=0.2)
    try:
        await node.drivers[0].slices.wait_synced()
        await eventually(lambda: _registered(node))
        await node.drivers[0].stop()

        async def wiped():
            listed = await client.list("resource.k8s.io/v1", "resourceslices",
                                       field_selector="spec.nodeName=node-1")
            return not listed["items"]

        await eventually(wiped)
    finally:
        await node.stop()


async def _registered(node):
    return node.kubelet.plugins.registered("gpu.example.com")
