"""The PodResources service over a real unix socket, fed with pod objects and a claim cache
the way the kubelet feeds it; and what it reports for a container's claims."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from podresources_client import PodResourcesClient

from draemu.api.types import Obj
from draemu.kubelet.dra.claiminfo import ClaimCache, ClaimInfo, DeviceState
from draemu.kubelet.podresources import (
    ContainerRunning,
    PodResourcesServer,
    TokenBucket,
    pod_resources,
)
from draemu.kubeletapi import podresources as pr
from draemu.kubeletapi.rpc import unix_target

pytestmark = pytest.mark.unit

DRIVER = "gpu.example.com"
LIST = pr.ListPodResourcesRequest()


def make_pod(name: str, *, phase: str = "Running", deleting: bool = False,
             containers: list[Obj] | None = None, claims: list[Obj] | None = None,
             status: Obj | None = None) -> Obj:
    meta: Obj = {"name": name, "namespace": "default", "uid": f"uid-{name}"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta,
            "spec": {"containers": containers or [{"name": "ctr"}],
                     "resourceClaims": claims or []},
            "status": {"phase": phase, **(status or {})}}


def gpu_claim(name: str, *devices: DeviceState) -> ClaimInfo:
    return ClaimInfo(f"uid-{name}", name, "default", driver_state={DRIVER: list(devices)})


def cache_of(*infos: ClaimInfo) -> ClaimCache:
    cache = ClaimCache(Path("/nonexistent/dra_manager_state"))  # never loaded nor saved here
    cache.claims = {i.key: i for i in infos}
    return cache


def user_of(request: str | None = None) -> Obj:
    ref: Obj = {"name": "gpu"} if request is None else {"name": "gpu", "request": request}
    return {"name": "ctr", "resources": {"claims": [ref]}}


def names(response: Any) -> list[str]:
    return [p.name for p in response.pod_resources]


def stopped(*_: str) -> bool:
    return False


class FrozenClock:
    """Time stands still: the rate limiter refills nothing."""

    def __call__(self) -> float:
        return 100.0


@pytest.fixture
def short_dir() -> Iterator[Path]:
    # Unix socket paths are limited to 108 bytes; pytest's tmp_path can be longer.
    with tempfile.TemporaryDirectory(prefix="podres-") as d:
        yield Path(d)


@pytest.fixture
async def serve(short_dir: Path) -> AsyncIterator[Any]:
    """serve(pods, running=..., **options) -> a client of a started server."""
    servers: list[PodResourcesServer] = []
    channels: list[grpc.aio.Channel] = []

    async def start(pods: list[Obj], running: ContainerRunning = stopped,
                    **options: Any) -> PodResourcesClient:
        by_key = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in pods}
        server = PodResourcesServer(short_dir / "pod-resources" / "kubelet.sock", cache_of(),
                                    lambda: list(pods), lambda ns, n: by_key.get((ns, n)),
                                    running, **options)
        await server.start()
        servers.append(server)
        channels.append(grpc.aio.insecure_channel(unix_target(str(server.path))))
        return PodResourcesClient(channels[-1])

    yield start
    for channel in channels:
        await channel.close()
    for server in servers:
        await server.stop()


# ---- which pods


async def test_list_leaves_out_terminal_pods_that_get_still_finds(serve):
    api = await serve([make_pod("run"), make_pod("done", phase="Succeeded"),
                       make_pod("bad", phase="Failed")])
    assert names(await api.list(LIST)) == ["run"]
    got = await api.get(pr.GetPodResourcesRequest(pod_name="done", pod_namespace="default"))
    assert got.pod_resources.name == "done"


async def test_a_deleted_pod_is_listed_while_one_of_its_containers_runs(serve):
    pods = [make_pod("going", deleting=True), make_pod("gone", deleting=True)]
    api = await serve(pods, running=lambda _ns, name, _ctr: name == "going")
    assert names(await api.list(LIST)) == ["going"]


async def test_list_reports_every_pod_when_list_use_active_pods_is_off(serve):
    api = await serve([make_pod("run"), make_pod("done", phase="Succeeded")],
                      use_active_pods=False)
    assert names(await api.list(LIST)) == ["run", "done"]


async def test_the_socket_is_removed_on_stop(short_dir):
    server = PodResourcesServer(short_dir / "kubelet.sock", cache_of(), list, lambda *_: None,
                                stopped)
    await server.start()
    assert server.path.exists()
    await server.stop()
    assert not server.path.exists()


# ---- rate limit


async def test_calls_beyond_the_burst_are_rejected_by_rate_limit(serve):
    api = await serve([], limiter=TokenBucket(100, 10, clock=FrozenClock()))
    for _ in range(10):
        await api.list(LIST)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await api.get_allocatable_resources(pr.AllocatableResourcesRequest())
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert caught.value.details() == "rejected by rate limit"


def test_the_bucket_refills_at_its_rate_up_to_the_burst():
    now = [0.0]
    bucket = TokenBucket(100, 2, clock=lambda: now[0])
    assert [bucket.allow() for _ in range(3)] == [True, True, False]
    now[0] += 0.01  # one token at 100 per second
    assert [bucket.allow(), bucket.allow()] == [True, False]
    now[0] += 60
    assert [bucket.allow() for _ in range(3)] == [True, True, False]


# ---- a container's dynamic resources


def only_container(pod: Obj, cache: ClaimCache) -> Any:
    (container,) = pod_resources(pod, cache).containers
    return container


def test_each_device_carries_its_own_cdi_ids_and_share_id():
    claim = gpu_claim("c1", DeviceState("pool", "gpu-0", ["gpu"], ["v/gpu=0"]),
                      DeviceState("pool", "gpu-1", ["gpu"], ["v/gpu=1"], share_id="s-1"))
    pod = make_pod("p", containers=[user_of()],
                   claims=[{"name": "gpu", "resourceClaimName": "c1"}])
    (dynamic,) = only_container(pod, cache_of(claim)).dynamic_resources
    assert [(r.device_name, [c.name for c in r.cdi_devices]) for r in dynamic.claim_resources] \
        == [("gpu-0", ["v/gpu=0"]), ("gpu-1", ["v/gpu=1"])]
    assert [r.HasField("share_id") for r in dynamic.claim_resources] == [False, True]
    assert dynamic.claim_resources[1].share_id == "s-1"


def test_a_reference_to_one_request_still_reports_all_of_the_claims_devices():
    # Upstream's PodResources does not narrow by request (only CDI injection does).
    claim = gpu_claim("c1", DeviceState("pool", "gpu-0", ["a"], []),
                      DeviceState("pool", "gpu-1", ["b"], []))
    pod = make_pod("p", containers=[user_of(request="a")],
                   claims=[{"name": "gpu", "resourceClaimName": "c1"}])
    (dynamic,) = only_container(pod, cache_of(claim)).dynamic_resources
    assert [r.device_name for r in dynamic.claim_resources] == ["gpu-0", "gpu-1"]


def test_a_template_claim_is_reported_under_its_generated_name():
    claim = gpu_claim("p-gpu-x7k2q", DeviceState("pool", "gpu-0", [], []))
    pod = make_pod("p", containers=[user_of()],
                   claims=[{"name": "gpu", "resourceClaimTemplateName": "tmpl"}],
                   status={"resourceClaimStatuses": [
                       {"name": "gpu", "resourceClaimName": "p-gpu-x7k2q"}]})
    (dynamic,) = only_container(pod, cache_of(claim)).dynamic_resources
    assert (dynamic.claim_name, dynamic.claim_namespace) == ("p-gpu-x7k2q", "default")


def test_a_claim_not_prepared_yet_leaves_the_container_without_dynamic_resources():
    ready = gpu_claim("c1", DeviceState("pool", "gpu-0", [], []))
    pod = make_pod("p", containers=[{"name": "ctr", "resources": {"claims": [
        {"name": "one"}, {"name": "two"}]}}],
        claims=[{"name": "one", "resourceClaimName": "c1"},
                {"name": "two", "resourceClaimName": "c2"}])
    assert list(only_container(pod, cache_of(ready)).dynamic_resources) == []


def test_a_template_claim_not_created_yet_reports_nothing():
    pod = make_pod("p", containers=[user_of()],
                   claims=[{"name": "gpu", "resourceClaimTemplateName": "tmpl"}])
    assert list(only_container(pod, cache_of()).dynamic_resources) == []


def test_the_extended_resource_claim_goes_to_the_containers_it_maps():
    claim = gpu_claim("p-extended-resources-abc", DeviceState("pool", "gpu-0", ["c-0"], []))
    pod = make_pod("p", containers=[{"name": "uses"}, {"name": "other"}], status={
        "extendedResourceClaimStatus": {
            "resourceClaimName": "p-extended-resources-abc",
            "requestMappings": [{"containerName": "uses", "resourceName": "example.com/gpu",
                                 "requestName": "c-0"}]}})
    uses, other = pod_resources(pod, cache_of(claim)).containers
    assert [d.claim_name for d in uses.dynamic_resources] == ["p-extended-resources-abc"]
    assert list(other.dynamic_resources) == []
