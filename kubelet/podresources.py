"""The kubelet's PodResources gRPC service (v1) on `<root>/pod-resources/kubelet.sock`.

Node agents learn from it which devices each container of each pod on the node got.
Like upstream (`pkg/kubelet/apis/podresources/server_v1.go`):

- `List` reports the active pods (not terminal; a deleted pod until its containers are
  stopped), `Get` any pod the kubelet knows by namespace and name; an unknown pod is the
  gRPC error `Unknown` "pod <name> in namespace <namespace> not found".
- A pod's containers are its restartable init containers (sidecars), then its containers.
- A container's `dynamic_resources` are the ResourceClaims it references
  (`resources.claims`, plus the claim backing its DRA extended resources), each with all
  of the claim's devices and the CDI device IDs the driver returned from
  NodePrepareResources. Upstream does not narrow by a reference's `request` here (CDI
  injection does), so neither do we. When one of them is not in the claim cache yet the
  container reports none, as upstream does.
- Requests are rate limited (100 per second, bursts of 10): `ResourceExhausted`
  "rejected by rate limit".

The gates KubeletPodResourcesGet and KubeletPodResourcesDynamicResources are GA and
locked on in 1.37, so Get and the dynamic resources are always served.

`devices`, `cpu_ids` and `memory` stay empty: draemu has no device plugins, CPU manager
or memory manager, which is what a kubelet with the default `none` policies and no
device plugins reports too.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc

from draemu.api.types import Obj
from draemu.kubelet.dra.claiminfo import ClaimCache, ClaimInfo
from draemu.kubelet.dra.manager import DRAError, pod_claim_name
from draemu.kubeletapi import podresources as pr
from draemu.kubeletapi.rpc import unix_target
from draemu.log import get_logger

log = get_logger("kubelet.podresources")

SOCKET_DIR = "pod-resources"
SOCKET_NAME = "kubelet.sock"
# Upstream's defaults (pkg/kubelet/apis/podresources/grpc): known consumers poll far less.
DEFAULT_QPS = 100.0
DEFAULT_BURST = 10

FindPod = Callable[[str, str], Obj | None]
ListPods = Callable[[], list[Obj]]
ContainerRunning = Callable[[str, str, str], bool]


class TokenBucket:
    """`burst` tokens, refilled at `qps` per second; a request takes one or is refused."""

    def __init__(self, qps: float, burst: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.qps = qps
        self.burst = burst
        self.clock = clock
        self.tokens = float(burst)
        self.last = clock()

    def allow(self) -> bool:
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.last) * self.qps)
        self.last = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


def socket_path(socket_root: Path) -> Path:
    return socket_root / SOCKET_DIR / SOCKET_NAME


# ---- content


def reported_containers(pod: Obj) -> list[Obj]:
    spec = pod.get("spec") or {}
    sidecars = [c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
    return sidecars + list(spec.get("containers") or [])


def container_claim_infos(pod: Obj, container: Obj, cache: ClaimCache) -> list[ClaimInfo]:
    """The cached claims a container uses, once per reference; LookupError when one is not
    cached (not prepared yet), DRAError when a template's claim does not exist yet."""
    namespace = pod["metadata"]["namespace"]
    refs = [r.get("name") for r in (container.get("resources") or {}).get("claims") or []]
    infos: list[ClaimInfo] = []
    for pod_claim in (pod.get("spec") or {}).get("resourceClaims") or []:
        name = pod_claim_name(pod, pod_claim)
        if name is None:
            continue  # the claim's template needed no ResourceClaim
        infos += [_cached(cache, namespace, name) for ref in refs if ref == pod_claim["name"]]
    extended = (pod.get("status") or {}).get("extendedResourceClaimStatus") or {}
    if any(m.get("containerName") == container.get("name")
           for m in extended.get("requestMappings") or []):
        infos.append(_cached(cache, namespace, extended["resourceClaimName"]))
    return infos


def _cached(cache: ClaimCache, namespace: str, name: str) -> ClaimInfo:
    info = cache.claims.get(f"{namespace}/{name}")
    if info is None:
        raise LookupError(f"unable to get information for ResourceClaim {name}")
    return info


def claim_resources(info: ClaimInfo) -> list[Any]:
    # Upstream accumulates CDI IDs across one driver's devices (each device also lists
    # those of the devices before it); each device carries only its own here, as the
    # proto's comment defines.
    return [pr.ClaimResource(cdi_devices=[pr.CDIDevice(name=i) for i in device.cdi_device_ids],
                             driver_name=driver, pool_name=device.pool_name,
                             device_name=device.device_name, share_id=device.share_id)
            for driver, devices in info.driver_state.items() for device in devices]


def dynamic_resources(pod: Obj, container: Obj, cache: ClaimCache) -> list[Any]:
    try:
        infos = container_claim_infos(pod, container, cache)
    except (LookupError, DRAError) as err:
        meta = pod["metadata"]
        # Expected for every pod still waiting to be prepared; agents poll, so not louder.
        log.debug("unable to get container claim info state", pod=meta["name"],
                    namespace=meta["namespace"], container=container.get("name"),
                    error=str(err))
        return []
    return [pr.DynamicResource(claim_name=i.claim_name, claim_namespace=i.namespace,
                               claim_resources=claim_resources(i)) for i in infos]


def pod_resources(pod: Obj, cache: ClaimCache) -> Any:
    meta = pod["metadata"]
    return pr.PodResources(name=meta["name"], namespace=meta["namespace"], containers=[
        pr.ContainerResources(name=c["name"], dynamic_resources=dynamic_resources(pod, c, cache))
        for c in reported_containers(pod)])


def is_active(pod: Obj, running: ContainerRunning) -> bool:
    """Upstream's active pods: not terminal, and a deleted pod only while any of its
    containers still runs."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    meta = pod["metadata"]
    if not meta.get("deletionTimestamp"):
        return True
    spec = pod.get("spec") or {}
    containers = (spec.get("initContainers") or []) + (spec.get("containers") or [])
    return any(running(meta["namespace"], meta["name"], c["name"]) for c in containers)


# ---- the service


class PodResourcesServer:
    def __init__(self, path: Path, cache: ClaimCache, list_pods: ListPods, find_pod: FindPod,
                 running: ContainerRunning, *, use_active_pods: bool = True,
                 limiter: TokenBucket | None = None) -> None:
        self.path = path
        self.cache = cache
        self.list_pods = list_pods
        self.find_pod = find_pod
        self.running = running
        self.use_active_pods = use_active_pods
        self.limiter = limiter or TokenBucket(DEFAULT_QPS, DEFAULT_BURST)
        self._server: grpc.aio.Server | None = None

    async def start(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o750)
        self.path.unlink(missing_ok=True)  # left by an earlier kubelet
        server = grpc.aio.server(handlers=[self._handler()])
        server.add_insecure_port(unix_target(str(self.path)))
        await server.start()
        self._server = server
        log.info("podresources server started", socket=str(self.path))

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop(grace=0.5)
            self._server = None
        self.path.unlink(missing_ok=True)

    def _handler(self) -> grpc.GenericRpcHandler:
        def unary(fn: Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]],
                  request: Any, response: Any) -> grpc.RpcMethodHandler:
            return grpc.unary_unary_rpc_method_handler(
                self._limited(fn), request_deserializer=request.FromString,
                response_serializer=response.SerializeToString)

        return grpc.method_handlers_generic_handler(pr.SERVICE, {
            "List": unary(self.list, pr.ListPodResourcesRequest, pr.ListPodResourcesResponse),
            "GetAllocatableResources": unary(self.get_allocatable_resources,
                                             pr.AllocatableResourcesRequest,
                                             pr.AllocatableResourcesResponse),
            "Get": unary(self.get, pr.GetPodResourcesRequest, pr.GetPodResourcesResponse),
        })

    def _limited(self, fn: Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]
                 ) -> Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]:
        async def call(request: Any, context: grpc.aio.ServicerContext) -> Any:
            if not self.limiter.allow():
                await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "rejected by rate limit")
            return await fn(request, context)
        return call

    async def list(self, _request: Any, _context: grpc.aio.ServicerContext) -> Any:
        pods = self.list_pods()
        if self.use_active_pods:
            pods = [p for p in pods if is_active(p, self.running)]
        return pr.ListPodResourcesResponse(
            pod_resources=[pod_resources(p, self.cache) for p in pods])

    async def get_allocatable_resources(self, _request: Any,
                                        _context: grpc.aio.ServicerContext) -> Any:
        return pr.AllocatableResourcesResponse()

    async def get(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        pod = self.find_pod(request.pod_namespace, request.pod_name)
        if pod is None:
            # Upstream returns a plain Go error, which gRPC sends as Unknown.
            await context.abort(grpc.StatusCode.UNKNOWN, f"pod {request.pod_name} in namespace "
                                                         f"{request.pod_namespace} not found")
        return pr.GetPodResourcesResponse(pod_resources=pod_resources(pod, self.cache))
