"""Preparing and unpreparing a pod's ResourceClaims through the drivers' kubelet plugins.

Prepare follows the kubelet (`pkg/kubelet/cm/dra/manager.go`): a validation pass that
changes nothing (claim names from the pod, claims from the API, ownership, reservation,
allocation, registered drivers), then — under the cache lock — cache entries and a
checkpoint, one NodePrepareResources call per driver with all of the pod's claims that
still need it, and a second checkpoint once they are prepared. Unprepare is the reverse
and only calls the drivers when the last pod using a claim is gone. Drivers whose results
all skip a node operation (DRAOptionalNodeOperations, `skipNodeOperations`) are not
called for it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc

from draemu.api.types import Obj
from draemu.api.workloadclaims import owned_by_pod_group, pod_group_name, reserved_for_pod
from draemu.client import ApiError, Client
from draemu.kubelet.dra.claiminfo import ClaimCache, ClaimInfo, DeviceState, skipped_operations
from draemu.kubelet.dra.plugins import DRAPluginManager
from draemu.log import get_logger

log = get_logger("kubelet.dra")

CALL_TIMEOUT = 45.0
PREPARE, UNPREPARE = "NodePrepareResources", "NodeUnprepareResources"


class DRAError(Exception):
    pass


def pod_claim_name(pod: Obj, pod_claim: Obj) -> str | None:
    """The ResourceClaim a pod claim entry refers to; None if intentionally none."""
    if pod_claim.get("resourceClaimName"):
        return pod_claim["resourceClaimName"]
    if pod_claim.get("resourceClaimTemplateName"):
        for status in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
            if status.get("name") == pod_claim["name"]:
                return status.get("resourceClaimName")
        meta = pod["metadata"]
        raise DRAError(f'pod "{meta["namespace"]}/{meta["name"]}": ResourceClaim not '
                       "created yet")
    raise DRAError(f"pod claim {pod_claim.get('name')}: neither resourceClaimName nor "
                   "resourceClaimTemplateName set")


def pod_claims(pod: Obj) -> list[tuple[str, str | None, bool]]:
    """(pod claim name, claim name, from a template) for each of the pod's claims."""
    out = []
    for pc in (pod.get("spec") or {}).get("resourceClaims") or []:
        out.append((pc["name"], pod_claim_name(pod, pc), not pc.get("resourceClaimName")))
    extended = ((pod.get("status") or {}).get("extendedResourceClaimStatus") or {})
    if extended.get("resourceClaimName"):
        out.append(("", extended["resourceClaimName"], True))
    return out


def _controlled_by(claim: Obj, pod: Obj) -> bool:
    return any(ref.get("controller") and ref.get("uid") == pod["metadata"]["uid"]
               for ref in claim["metadata"].get("ownerReferences") or [])


class DRAManager:
    def __init__(self, client: Client, plugins: DRAPluginManager, cache: ClaimCache,
                 call_timeout: float = CALL_TIMEOUT, optional_node_operations: bool = False,
                 pod_group_claims: bool = False) -> None:
        self.client = client
        self.plugins = plugins
        self.cache = cache
        self.call_timeout = call_timeout
        self.optional_node_operations = optional_node_operations  # DRAOptionalNodeOperations
        self.pod_group_claims = pod_group_claims  # DRAWorkloadResourceClaims
        self.lock = asyncio.Lock()

    async def prepare_resources(self, pod: Obj) -> None:
        checked: list[tuple[Obj, set[str], dict[str, list[str]]]] = []
        for _pod_claim, name, from_template in pod_claims(pod):
            if name is not None:
                checked.append(await self._checked_claim(pod, name, from_template))
        batches: dict[str, list[ClaimInfo]] = {}
        async with self.lock:
            for claim, drivers, skip in checked:
                info = self._claim_info(claim, drivers, skip)
                info.pod_uids.add(pod["metadata"]["uid"])
                for driver in _to_prepare(info, drivers):
                    batches.setdefault(driver, []).append(info)
            self.cache.save()
        # The drivers are called outside the lock, as upstream's manager calls them: a
        # prepare that waits for something (NVIDIA's ComputeDomain channel waits for the
        # domain's IMEX daemon) must not hold up other pods' (that daemon's own claim).
        for driver, infos in sorted(batches.items()):
            await self._prepare_with(driver, infos)
        async with self.lock:
            for infos in batches.values():
                for info in infos:
                    info.prepared = True
            self.cache.save()

    async def _checked_claim(self, pod: Obj, name: str, from_template: bool
                             ) -> tuple[Obj, set[str], dict[str, list[str]]]:
        """The pod's claim `name` as the kubelet checks it before preparing: owned by the
        pod (or its pod group), reserved for it, allocated, its drivers registered unless
        they prepare nothing. (claim, drivers, operations skipped per driver)."""
        meta = pod["metadata"]
        try:
            claim = await self.client.get("resource.k8s.io/v1", "resourceclaims", name,
                                          meta["namespace"])
        except ApiError as err:
            raise DRAError(f"failed to fetch ResourceClaim {name} referenced by pod "
                           f"{meta['namespace']}/{meta['name']}: {err.message}") from err
        if from_template and not _controlled_by(claim, pod):
            self._check_pod_group_owner(pod, claim, name)
        if not reserved_for_pod(claim, pod, self.pod_group_claims):
            raise DRAError(f"pod {meta['name']}({meta['uid']}) is not allowed to use "
                           f"ResourceClaim {name}({claim['metadata']['uid']})")
        allocation = (claim.get("status") or {}).get("allocation")
        if not allocation:
            raise DRAError(f"claim {name}: not allocated")
        results = (allocation.get("devices") or {}).get("results") or []
        drivers = {r["driver"] for r in results}
        skip = skipped_operations(results)
        if skip and not self.optional_node_operations:
            raise DRAError(f"ResourceClaim {name}: DRAOptionalNodeOperations feature gate "
                           "is disabled on kubelet")
        for driver in sorted(drivers):
            if any(op in ("*", PREPARE) for op in skip.get(driver, ())):
                continue  # a driver that prepares nothing need not be running
            if not self.plugins.registered(driver):
                raise DRAError(f"prepare dynamic resources: DRA driver {driver} is not "
                               "registered")
        return claim, drivers, skip

    def _check_pod_group_owner(self, pod: Obj, claim: Obj, name: str) -> None:
        """A claim from a template that the pod does not control: only its pod group's
        (DRAWorkloadResourceClaims) may be used."""
        meta = pod["metadata"]
        group = pod_group_name(pod) if self.pod_group_claims else None
        if group is None:
            raise DRAError(f"ResourceClaim {name} was not created for pod "
                           f"{meta['namespace']}/{meta['name']} (pod is not owner)")
        if not owned_by_pod_group(claim, pod):
            raise DRAError(f"ResourceClaim {meta['namespace']}/{name} was not created "
                           f"for Pod {meta['namespace']}/{meta['name']} (neither Pod "
                           f"nor PodGroup {group} is the owner)")

    def _claim_info(self, claim: Obj, drivers: set[str],
                    skip: dict[str, list[str]]) -> ClaimInfo:
        """The checkpointed entry of a claim, created on its first pod."""
        cm = claim["metadata"]
        key = f"{cm['namespace']}/{cm['name']}"
        info = self.cache.claims.get(key)
        if info is not None and info.claim_uid != cm["uid"]:
            raise DRAError(f"old ResourceClaim with same name {cm['name']} and "
                           f"different UID {info.claim_uid} still exists")
        if info is None:
            info = ClaimInfo(cm["uid"], cm["name"], cm["namespace"],
                             driver_state={d: [] for d in drivers}, skip=skip)
            self.cache.claims[key] = info
        return info

    async def _call(self, driver: str, method: str, infos: list[ClaimInfo]) -> tuple[Any, Any]:
        """Call NodePrepareResources or NodeUnprepareResources ("Prepare"/"Unprepare") for
        `infos` on one driver, falling back to an older service version when the plugin
        answers UNIMPLEMENTED; check that every claim got a result without an error.
        Returns (version module, response)."""
        rpc = f"Node{method}Resources"
        plugin = self.plugins.get(driver)
        if plugin is None:
            raise DRAError(f"{method.lower()} dynamic resources: DRA driver {driver} is not "
                           "registered")
        while True:
            v = plugin.version
            request = getattr(v, f"{rpc}Request")(claims=[
                v.Claim(namespace=i.namespace, uid=i.claim_uid, name=i.claim_name)
                for i in infos])
            call = getattr(plugin.client, f"node_{method.lower()}_resources")
            try:
                response = await call(request, timeout=self.call_timeout)
                break
            except grpc.aio.AioRpcError as err:
                if err.code() == grpc.StatusCode.UNIMPLEMENTED and plugin.fall_back():
                    continue
                raise DRAError(f"{rpc} of DRA driver {driver}: {_rpc_error(err)}") from err
            except (asyncio.CancelledError, DRAError):
                raise
            except Exception as err:  # whatever the channel raises is the driver's
                raise DRAError(f"{rpc} of DRA driver {driver}: {err!r}") from err
        response_type = getattr(v, f"{rpc}Response")
        if not isinstance(response, response_type):
            # grpc answers None when the bytes the plugin sent do not decode.
            raise DRAError(f"{rpc} of DRA driver {driver}: the answer is not a "
                           f"{response_type.DESCRIPTOR.full_name} message")
        by_uid = {i.claim_uid: i for i in infos}
        for uid, result in response.claims.items():
            info = by_uid.get(uid)
            if info is None:
                raise DRAError(f"{rpc} returned result for unknown claim UID {uid}")
            if result.error:
                raise DRAError(f"{rpc} failed for ResourceClaim {info.claim_name}: "
                               f"{result.error}")
        missing = len(infos) - len(response.claims)
        if missing > 0:
            raise DRAError(f"{rpc} skipped {missing} ResourceClaims")
        return v, response

    async def _prepare_with(self, driver: str, infos: list[ClaimInfo]) -> None:
        v, response = await self._call(driver, "Prepare", infos)
        by_uid = {i.claim_uid: i for i in infos}
        for uid, result in response.claims.items():
            by_uid[uid].driver_state[driver] = [
                DeviceState(d.pool_name, d.device_name, list(d.request_names),
                            list(d.cdi_device_ids),
                            d.share_id if v.has_share_id and d.HasField("share_id") else None)
                for d in result.devices]

    async def unprepare_resources(self, pod_uid: str) -> None:
        batches: dict[str, list[ClaimInfo]] = {}
        async with self.lock:
            for info in self.cache.for_pod(pod_uid):
                if info.pod_uids - {pod_uid}:
                    info.pod_uids.discard(pod_uid)
                    continue
                for driver in list(info.driver_state):
                    if info.skips(driver, UNPREPARE):
                        del info.driver_state[driver]
                    else:
                        batches.setdefault(driver, []).append(info)
                if not info.driver_state:
                    del self.cache.claims[info.key]
        for driver, infos in sorted(batches.items()):  # outside the lock, as prepare
            await self._unprepare_with(driver, infos)
            async with self.lock:
                for info in infos:
                    # A claim with several drivers goes when the last of them is done.
                    info.driver_state.pop(driver, None)
                    if not info.driver_state:
                        self.cache.claims.pop(info.key, None)
        async with self.lock:
            self.cache.save()

    async def _unprepare_with(self, driver: str, infos: list[ClaimInfo]) -> None:
        await self._call(driver, "Unprepare", infos)

    def container_devices(self, pod: Obj, container: Obj) -> list[tuple[str, str, DeviceState]]:
        """(status entry name, driver, device) for each device a container gets, in order."""
        names = {pc_name: name for pc_name, name, _ in pod_claims(pod) if name}
        out: list[tuple[str, str, DeviceState]] = []
        namespace = pod["metadata"]["namespace"]
        refs = list((container.get("resources") or {}).get("claims") or [])
        # Extended resources backed by DRA: the scheduler's claim, requests mapped per
        # container (pod claim name "" in pod_claims).
        extended = (pod.get("status") or {}).get("extendedResourceClaimStatus") or {}
        for mapping in extended.get("requestMappings") or []:
            if mapping.get("containerName") == container.get("name"):
                refs.append({"name": "", "request": mapping.get("requestName"),
                             "entry": mapping.get("resourceName")})
        for ref in refs:
            claim_name = names.get(ref["name"])
            info = self.cache.claims.get(f"{namespace}/{claim_name}") if claim_name else None
            if info is None:
                continue
            request = ref.get("request")
            entry = ref.get("entry") or f"claim:{ref['name']}" + (f"/{request}" if request
                                                                  else "")
            for driver, devices in info.driver_state.items():
                for device in devices:
                    if not request or not device.request_names or \
                            request in device.request_names:
                        out.append((entry, driver, device))
        return out

    def container_cdi_ids(self, pod: Obj, container: Obj) -> list[str]:
        ids: list[str] = []
        for _entry, _driver, device in self.container_devices(pod, container):
            ids += device.cdi_device_ids
        return ids


def _rpc_error(err: grpc.aio.AioRpcError) -> str:
    return f"rpc error: code = {_code_name(err.code())} desc = {err.details()}"


def _code_name(code: grpc.StatusCode) -> str:
    return "".join(part.capitalize() for part in code.name.split("_"))


def _to_prepare(info: ClaimInfo, drivers: set[str]) -> list[str]:
    """The drivers that still have to prepare a claim (none once it is prepared)."""
    if info.prepared:
        return []
    return [driver for driver in drivers if not info.skips(driver, PREPARE)]
