"""What the kubelet's DRA manager sends to a plugin and how it treats the answers.

A fake plugin (a gRPC server built from the protocol definitions) records requests;
claims come from a boundary fake of the API.
"""

from __future__ import annotations

import asyncio

import grpc
import pytest
from kubelet_fakes import ClaimsAPI, claim

from draemu.kubelet.dra.claiminfo import ClaimCache
from draemu.kubelet.dra.manager import DRAError, DRAManager
from draemu.kubelet.dra.plugins import DRAPluginManager
from draemu.kubeletapi import dra, rpc

pytestmark = pytest.mark.unit

POD_UID = "pod-uid"


def pod(*claims: tuple[str, str], uid: str = POD_UID) -> dict:
    return {"metadata": {"name": "p", "namespace": "default", "uid": uid},
            "spec": {"resourceClaims": [{"name": n, "resourceClaimName": c} for n, c in claims],
                     "containers": [{"name": "ctr", "resources": {"claims": [
                         {"name": n} for n, _ in claims]}}]}}


class FakePlugin:
    def __init__(self, version: dra.DRAVersion) -> None:
        self.version = version
        self.prepare_requests: list = []
        self.unprepare_requests: list = []
        self.answer = None  # callable(request) -> response, default: one device per claim
        self.before = None  # async callable(request), awaited before answering
        self.server: grpc.aio.Server | None = None

    async def start(self, path: str) -> None:
        v = self.version

        async def prepare(request, _ctx):
            self.prepare_requests.append(request)
            if self.before:
                await self.before(request)
            if self.answer:
                return self.answer(request)
            resp = v.NodePrepareResourcesResponse()
            for c in request.claims:
                dev = resp.claims[c.uid].devices.add(
                    request_names=["gpu"], pool_name="node-1", device_name="gpu-0",
                    cdi_device_ids=[f"k8s.gpu.example.com/gpu={c.uid}"])
                if v.has_share_id:
                    dev.share_id = "share-1"
            return resp

        async def unprepare(request, _ctx):
            self.unprepare_requests.append(request)
            resp = v.NodeUnprepareResourcesResponse()
            for c in request.claims:
                resp.claims[c.uid].error = ""
            return resp

        self.server = grpc.aio.server(handlers=[rpc.dra_handler(v, prepare, unprepare)])
        self.server.add_insecure_port(rpc.unix_target(path))
        await self.server.start()

    async def stop(self) -> None:
        await self.server.stop(0)


@pytest.fixture
async def setup(tmp_path):
    plugins = DRAPluginManager(ClaimsAPI(), "node-1", wipe_delay=3600)
    fakes = []

    async def make(version=dra.V1, claims=(), optional_node_operations=False,
                   pod_group_claims=False):
        plugin = FakePlugin(version)
        path = str(tmp_path / f"dra-{len(fakes)}.sock")
        await plugin.start(path)
        fakes.append(plugin)
        await plugins.register("gpu.example.com", path, [version.registration_name])
        api = ClaimsAPI(list(claims))
        manager = DRAManager(api, plugins, ClaimCache(tmp_path / "dra_manager_state"),
                             optional_node_operations=optional_node_operations,
                             pod_group_claims=pod_group_claims)
        return plugin, manager

    yield make
    await plugins.stop()
    for f in fakes:
        await f.stop()


async def test_prepare_sends_all_claims_of_a_pod_in_one_call(setup):
    plugin, manager = await setup(claims=[claim("a", "uid-a"), claim("b", "uid-b")])
    await manager.prepare_resources(pod(("x", "a"), ("y", "b")))
    assert len(plugin.prepare_requests) == 1
    sent = [(c.namespace, c.name, c.uid) for c in plugin.prepare_requests[0].claims]
    assert sorted(sent) == [("default", "a", "uid-a"), ("default", "b", "uid-b")]


async def test_prepared_claims_are_not_prepared_again_for_another_pod(setup):
    shared = claim("a", "uid-a")
    shared["status"]["reservedFor"].append({"resource": "pods", "name": "q", "uid": "pod-2"})
    plugin, manager = await setup(claims=[shared])
    await manager.prepare_resources(pod(("x", "a")))
    await manager.prepare_resources(pod(("x", "a"), uid="pod-2"))
    assert len(plugin.prepare_requests) == 1
    assert manager.cache.claims["default/a"].pod_uids == {POD_UID, "pod-2"}


async def test_a_prepare_that_waits_does_not_hold_up_another_pods(setup):
    """As upstream's manager: the plugin is called outside the cache's lock. NVIDIA's
    ComputeDomain channel claim waits in its prepare until the domain's IMEX daemon runs,
    and that daemon's pod has a claim of its own to prepare on the same node."""
    plugin, manager = await setup(claims=[claim("workload", "uid-w"),
                                          claim("daemon", "uid-d", pod_uid="pod-d")])
    daemon_prepared = asyncio.Event()

    async def before(request):
        if request.claims[0].name == "workload":
            await asyncio.wait_for(daemon_prepared.wait(), 5)

    plugin.before = before
    workload = asyncio.create_task(manager.prepare_resources(pod(("c", "workload"))))
    await asyncio.sleep(0.2)  # the workload's prepare is waiting in the plugin
    await manager.prepare_resources(pod(("c", "daemon"), uid="pod-d"))
    daemon_prepared.set()
    await asyncio.wait_for(workload, 5)
    assert manager.cache.claims["default/workload"].prepared
    assert manager.cache.claims["default/daemon"].prepared


async def test_cdi_ids_and_share_id_are_cached_per_container(setup):
    _plugin, manager = await setup(claims=[claim("a", "uid-a")])
    p = pod(("x", "a"))
    await manager.prepare_resources(p)
    assert manager.container_cdi_ids(p, p["spec"]["containers"][0]) == [
        "k8s.gpu.example.com/gpu=uid-a"]
    assert manager.cache.claims["default/a"].driver_state["gpu.example.com"][0].share_id == \
        "share-1"


async def test_v1beta1_plugin_is_called_on_the_v1beta1_service(setup):
    plugin, manager = await setup(version=dra.V1BETA1, claims=[claim("a", "uid-a")])
    await manager.prepare_resources(pod(("x", "a")))
    assert len(plugin.prepare_requests) == 1
    assert manager.cache.claims["default/a"].driver_state["gpu.example.com"][0].share_id is None


async def test_unprepare_is_called_when_the_last_pod_goes(setup):
    shared = claim("a", "uid-a")
    shared["status"]["reservedFor"].append({"resource": "pods", "name": "q", "uid": "pod-2"})
    plugin, manager = await setup(claims=[shared])
    await manager.prepare_resources(pod(("x", "a")))
    await manager.prepare_resources(pod(("x", "a"), uid="pod-2"))
    await manager.unprepare_resources(POD_UID)
    assert plugin.unprepare_requests == []
    await manager.unprepare_resources("pod-2")
    assert [c.uid for c in plugin.unprepare_requests[0].claims] == ["uid-a"]
    assert manager.cache.claims == {}


async def test_per_claim_error_fails_prepare_with_upstream_message(setup):
    plugin, manager = await setup(claims=[claim("a", "uid-a")])

    def fail(request):
        resp = dra.V1.NodePrepareResourcesResponse()
        resp.claims["uid-a"].error = "device is on fire"
        return resp

    plugin.answer = fail
    with pytest.raises(DRAError, match="NodePrepareResources failed for ResourceClaim a: "
                                       "device is on fire"):
        await manager.prepare_resources(pod(("x", "a")))
    assert manager.cache.claims["default/a"].prepared is False


async def test_unknown_claim_uid_in_response_fails_prepare(setup):
    plugin, manager = await setup(claims=[claim("a", "uid-a")])

    def bogus(request):
        resp = dra.V1.NodePrepareResourcesResponse()
        resp.claims["uid-a"].error = ""
        resp.claims["uid-zzz"].error = ""
        return resp

    plugin.answer = bogus
    with pytest.raises(DRAError, match="returned result for unknown claim UID uid-zzz"):
        await manager.prepare_resources(pod(("x", "a")))


async def test_missing_claim_in_response_fails_prepare(setup):
    plugin, manager = await setup(claims=[claim("a", "uid-a")])
    plugin.answer = lambda request: dra.V1.NodePrepareResourcesResponse()
    with pytest.raises(DRAError, match="NodePrepareResources skipped 1 ResourceClaims"):
        await manager.prepare_resources(pod(("x", "a")))


async def test_pod_not_in_reserved_for_is_refused_before_any_call(setup):
    c = claim("a", "uid-a")
    c["status"]["reservedFor"] = []
    plugin, manager = await setup(claims=[c])
    with pytest.raises(DRAError, match=r"pod p\(pod-uid\) is not allowed to use "
                                       r"ResourceClaim a\(uid-a\)"):
        await manager.prepare_resources(pod(("x", "a")))
    assert plugin.prepare_requests == []


async def test_unallocated_claim_is_refused(setup):
    c = claim("a", "uid-a")
    del c["status"]["allocation"]
    plugin, manager = await setup(claims=[c])
    with pytest.raises(DRAError, match="not allocated"):
        await manager.prepare_resources(pod(("x", "a")))


async def test_template_claim_must_be_listed_in_pod_status(setup):
    _plugin, manager = await setup(claims=[])
    p = {"metadata": {"name": "p", "namespace": "default", "uid": POD_UID},
         "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}],
                  "containers": []}}
    with pytest.raises(DRAError, match="ResourceClaim not created yet"):
        await manager.prepare_resources(p)


async def test_template_claim_must_be_owned_by_the_pod(setup):
    _plugin, manager = await setup(claims=[claim("p-gpu-abc", "uid-a")])
    p = {"metadata": {"name": "p", "namespace": "default", "uid": POD_UID},
         "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}],
                  "containers": []},
         "status": {"resourceClaimStatuses": [{"name": "gpu",
                                               "resourceClaimName": "p-gpu-abc"}]}}
    with pytest.raises(DRAError, match="pod is not owner"):
        await manager.prepare_resources(p)


async def test_unregistered_driver_is_refused(setup):
    _plugin, manager = await setup(claims=[claim("a", "uid-a", driver="nic.example.com")])
    with pytest.raises(DRAError, match="DRA driver nic.example.com is not registered"):
        await manager.prepare_resources(pod(("x", "a")))


async def test_checkpoint_survives_a_restart_with_claims_unprepared(setup, tmp_path):
    _plugin, manager = await setup(claims=[claim("a", "uid-a")])
    await manager.prepare_resources(pod(("x", "a")))
    restored = ClaimCache(tmp_path / "dra_manager_state")
    restored.load()
    info = restored.claims["default/a"]
    assert info.claim_uid == "uid-a" and info.pod_uids == {POD_UID}
    assert info.prepared is False
    assert info.driver_state["gpu.example.com"][0].cdi_device_ids == [
        "k8s.gpu.example.com/gpu=uid-a"]


async def test_containers_get_only_the_devices_of_the_request_they_name(setup):
    plugin, manager = await setup(claims=[claim("a", "uid-a")])

    def two_requests(request):
        resp = dra.V1.NodePrepareResourcesResponse()
        devices = resp.claims["uid-a"].devices
        devices.add(request_names=["small"], pool_name="p", device_name="d0",
                    cdi_device_ids=["v.com/x=small"])
        devices.add(request_names=["big"], pool_name="p", device_name="d1",
                    cdi_device_ids=["v.com/x=big"])
        devices.add(request_names=[], pool_name="p", device_name="d2",
                    cdi_device_ids=["v.com/x=all"])
        return resp

    plugin.answer = two_requests
    p = pod(("x", "a"))
    await manager.prepare_resources(p)
    small = {"name": "s", "resources": {"claims": [{"name": "x", "request": "small"}]}}
    whole = {"name": "w", "resources": {"claims": [{"name": "x"}]}}
    assert manager.container_cdi_ids(p, small) == ["v.com/x=small", "v.com/x=all"]
    assert manager.container_cdi_ids(p, whole) == ["v.com/x=small", "v.com/x=big",
                                                   "v.com/x=all"]


async def test_extended_resource_claim_devices_go_to_the_mapped_container(setup):
    c = claim("p-extended-resources-xyz", "uid-e", owner_pod=True)
    _plugin, manager = await setup(claims=[c])
    p = {"metadata": {"name": "p", "namespace": "default", "uid": POD_UID},
         "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
         "status": {"extendedResourceClaimStatus": {
             "resourceClaimName": "p-extended-resources-xyz",
             "requestMappings": [{"containerName": "b", "resourceName": "example.com/gpu",
                                  "requestName": "gpu"}]}}}
    await manager.prepare_resources(p)
    a, b = p["spec"]["containers"]
    assert manager.container_cdi_ids(p, a) == []
    assert manager.container_cdi_ids(p, b) == ["k8s.gpu.example.com/gpu=uid-e"]
    assert manager.container_devices(p, b)[0][0] == "example.com/gpu"


async def test_a_plugin_not_serving_its_first_version_gets_the_next_one(tmp_path):
    plugins = DRAPluginManager(ClaimsAPI(), "node-1", wipe_delay=3600)
    beta_only = FakePlugin(dra.V1BETA1)
    path = str(tmp_path / "dra.sock")
    await beta_only.start(path)
    try:
        await plugins.register("gpu.example.com", path, ["v1.DRAPlugin", "v1beta1.DRAPlugin"])
        manager = DRAManager(ClaimsAPI([claim("a", "uid-a")]), plugins,
                             ClaimCache(tmp_path / "dra_manager_state"))
        await manager.prepare_resources(pod(("x", "a")))
        assert len(beta_only.prepare_requests) == 1
        assert plugins.get("gpu.example.com").version is dra.V1BETA1
    finally:
        await plugins.stop()
        await beta_only.stop()


# DRAOptionalNodeOperations --------------------------------------------------------------

def skipping(c: dict, *operations: str) -> dict:
    for result in c["status"]["allocation"]["devices"]["results"]:
        result["skipNodeOperations"] = list(operations)
    return c


async def test_devices_that_skip_node_operations_are_neither_prepared_nor_unprepared(setup):
    plugin, manager = await setup(claims=[skipping(claim("a", "uid-a"), "*")],
                                  optional_node_operations=True)
    await manager.prepare_resources(pod(("x", "a")))
    assert plugin.prepare_requests == []
    assert manager.cache.claims["default/a"].skip == {"gpu.example.com": ["*"]}
    await manager.unprepare_resources(POD_UID)
    assert plugin.unprepare_requests == []
    assert manager.cache.claims == {}


async def test_skipping_only_unprepare_still_prepares(setup):
    plugin, manager = await setup(claims=[skipping(claim("a", "uid-a"),
                                                   "NodeUnprepareResources")],
                                  optional_node_operations=True)
    await manager.prepare_resources(pod(("x", "a")))
    assert len(plugin.prepare_requests) == 1
    await manager.unprepare_resources(POD_UID)
    assert plugin.unprepare_requests == []


async def test_an_operation_is_skipped_only_if_every_device_of_the_driver_skips_it(setup):
    c = claim("a", "uid-a", devices=("gpu-0", "gpu-1"))
    c["status"]["allocation"]["devices"]["results"][0]["skipNodeOperations"] = ["*"]
    plugin, manager = await setup(claims=[c], optional_node_operations=True)
    await manager.prepare_resources(pod(("x", "a")))
    assert len(plugin.prepare_requests) == 1


async def test_skipped_operations_survive_a_restart(setup, tmp_path):
    _plugin, manager = await setup(claims=[skipping(claim("a", "uid-a"),
                                                    "NodePrepareResources")],
                                   optional_node_operations=True)
    await manager.prepare_resources(pod(("x", "a")))
    restored = ClaimCache(tmp_path / "dra_manager_state")
    restored.load()
    assert restored.claims["default/a"].skip == {"gpu.example.com": ["NodePrepareResources"]}


async def test_a_kubelet_without_the_gate_refuses_claims_that_skip(setup):
    _plugin, manager = await setup(claims=[skipping(claim("a", "uid-a"), "*")])
    with pytest.raises(DRAError, match="^ResourceClaim a: DRAOptionalNodeOperations feature "
                                       "gate is disabled on kubelet$"):
        await manager.prepare_resources(pod(("x", "a")))


# DRAWorkloadResourceClaims ---------------------------------------------------------------

def group_claim() -> dict:
    """A claim the resource claim controller made for PodGroup g1, reserved for the group."""
    c = claim("g1-gpus-x7", "uid-g")
    c["metadata"]["ownerReferences"] = [{"apiVersion": "scheduling.k8s.io/v1beta1",
                                         "kind": "PodGroup", "name": "g1", "uid": "pg-uid",
                                         "controller": True}]
    c["status"]["reservedFor"] = [{"apiGroup": "scheduling.k8s.io", "resource": "podgroups",
                                   "name": "g1", "uid": "pg-uid"}]
    return c


def group_pod() -> dict:
    return {"metadata": {"name": "p", "namespace": "default", "uid": POD_UID},
            "spec": {"schedulingGroup": {"podGroupName": "g1"},
                     "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "t"}],
                     "containers": []},
            "status": {"resourceClaimStatuses": [{"name": "gpus",
                                                  "resourceClaimName": "g1-gpus-x7"}]}}


async def test_a_pod_uses_the_claim_reserved_for_its_pod_group(setup):
    plugin, manager = await setup(claims=[group_claim()], pod_group_claims=True)
    await manager.prepare_resources(group_pod())
    assert [c.uid for c in plugin.prepare_requests[0].claims] == ["uid-g"]


async def test_without_the_gate_a_pod_group_claim_is_not_the_pods(setup):
    _plugin, manager = await setup(claims=[group_claim()])
    with pytest.raises(DRAError, match="pod is not owner"):
        await manager.prepare_resources(group_pod())


async def test_a_claim_of_another_pod_group_is_refused(setup):
    _plugin, manager = await setup(claims=[group_claim()], pod_group_claims=True)
    pod = group_pod()
    pod["spec"]["schedulingGroup"]["podGroupName"] = "g2"
    with pytest.raises(DRAError, match="neither Pod nor PodGroup g2 is the owner"):
        await manager.prepare_resources(pod)


async def test_an_answer_that_is_not_the_message_is_a_dra_error_naming_the_driver(tmp_path):
    # A plugin whose NodePrepareResources answers bytes that do not decode.
    v = dra.V1

    async def garbage(_request, _ctx):
        return b"\xff\xff\xff"

    server = grpc.aio.server(handlers=[grpc.method_handlers_generic_handler(v.service, {
        "NodePrepareResources": grpc.unary_unary_rpc_method_handler(
            garbage, request_deserializer=v.NodePrepareResourcesRequest.FromString,
            response_serializer=lambda raw: raw)})])
    path = str(tmp_path / "garbage.sock")
    server.add_insecure_port(rpc.unix_target(path))
    await server.start()
    plugins = DRAPluginManager(ClaimsAPI(), "node-1", wipe_delay=3600)
    try:
        await plugins.register("gpu.example.com", path, [v.registration_name])
        manager = DRAManager(ClaimsAPI([claim("a", "uid-a")]), plugins,
                             ClaimCache(tmp_path / "state"))
        with pytest.raises(DRAError, match="NodePrepareResources of DRA driver gpu.example.com: "
                                           "the answer is not a .*NodePrepareResourcesResponse"):
            await manager.prepare_resources(pod(("x", "a")))
        assert manager.cache.claims["default/a"].prepared is False
    finally:
        await plugins.stop()
        await server.stop(0)
