"""DynamicResources' API writes: PreBind's finalizer, allocation and reservation (retried
on conflicts), the extended-resource claim it creates, PostFilter's deallocation and
deletion, and Unreserve's undoing of PreBind."""

from __future__ import annotations

import asyncio
import copy

from draemu.api.meta import time_now
from draemu.client import ApiError, Client
from draemu.log import get_logger
from draemu.scheduler.dra.extendedresources import ResourceRequest
from draemu.scheduler.dra.manager import DRAManager
from draemu.scheduler.plugins.dynamicresources.bindingconditions import has_binding_conditions
from draemu.scheduler.plugins.dynamicresources.podstate import (
    PodState,
    PreBindError,
    claim_key,
    extended_key,
)

log = get_logger("scheduler")

RESOURCE_V1 = "resource.k8s.io/v1"
FINALIZER = "resource.kubernetes.io/delete-protection"
CONFLICT_RETRIES = 8
CONFLICT_BACKOFF = 0.01  # seconds, doubled per retry


class ClaimWriter:
    def __init__(self, client: Client, dra: DRAManager) -> None:
        self._client = client
        self._dra = dra
        self._features = dra.features

    async def reserve(self, claim: dict, pod_meta: dict, allocation: dict | None,
                      consumer: dict | None = None) -> dict:
        """Adds the pod (or `consumer`) to the claim's reservedFor (and the allocation, if
        we made one); the claim as written. PreBindError when it cannot be."""
        meta = claim["metadata"]
        ns, name = meta["namespace"], meta["name"]
        consumer = consumer or {"resource": "pods", "name": pod_meta["name"],
                                "uid": pod_meta["uid"]}
        fresh = claim
        for attempt in range(CONFLICT_RETRIES):
            status = fresh.get("status") or {}
            if any(r.get("uid") == consumer["uid"] for r in status.get("reservedFor") or []):
                return fresh
            _check_reservable(fresh, allocation)
            try:
                return await self._write_reservation(fresh, allocation, consumer)
            except ApiError as e:
                if e.code != 409:
                    raise PreBindError(f"resourceclaim {ns}/{name}: {e.message}") from e
                # Someone else wrote the claim meanwhile: back off a little, so that a
                # writer racing with us (or a read cache behind the write) can settle.
                await asyncio.sleep(CONFLICT_BACKOFF * 2 ** attempt)
                try:
                    fresh = await self._client.get(RESOURCE_V1, "resourceclaims", name, ns)
                except ApiError as get_error:
                    raise PreBindError(
                        f"resourceclaim {ns}/{name}: {get_error.message}") from get_error
        raise PreBindError(f"resourceclaim {ns}/{name}: too many conflicts")

    async def _write_reservation(self, fresh: dict, allocation: dict | None,
                                 consumer: dict) -> dict:
        # Objects are rebuilt level by level instead of deep-copied: the informer's copies
        # are shared and must stay untouched, and deep copies are costly. The bodies leave
        # managedFields out (the apiserver keeps the stored ones, as upstream's field
        # manager does for a client that sends none): half of an allocated claim's JSON
        # that both sides would encode and decode.
        finalizers = fresh["metadata"].get("finalizers") or []
        if allocation is not None and FINALIZER not in finalizers:
            updated = {**fresh, "metadata": {**_without_managed_fields(fresh),
                                             "finalizers": [*finalizers, FINALIZER]}}
            fresh = await self._client.update(RESOURCE_V1, "resourceclaims", updated)
        new_status = dict(fresh.get("status") or {})
        if allocation is not None and not new_status.get("allocation"):
            if self._features.binding_conditions and has_binding_conditions(
                    allocation) and not allocation.get("allocationTimestamp"):
                allocation = {**allocation, "allocationTimestamp": time_now()}
            new_status["allocation"] = allocation
        new_status["reservedFor"] = [*(new_status.get("reservedFor") or []), consumer]
        return await self._client.update(
            RESOURCE_V1, "resourceclaims",
            {**fresh, "metadata": _without_managed_fields(fresh), "status": new_status},
            subresource="status")

    async def create_extended(self, pod: dict, st: PodState,
                              served: list[ResourceRequest]) -> dict:
        """Creates the claim for DRA-backed extended resources, allocated and reserved, and
        records it in the pod status."""
        pod_meta = pod["metadata"]
        flying = self._dra.in_flight(extended_key(pod_meta["uid"]))
        if flying is None:
            raise PreBindError("extended resource allocation is no longer reserved")
        claim = copy.deepcopy(flying.claim)
        allocation = claim.pop("status")["allocation"]
        del claim["metadata"]["name"]
        try:
            created = await self._client.create(RESOURCE_V1, "resourceclaims", claim,
                                                pod_meta["namespace"])
        except ApiError as e:
            raise PreBindError(f"create extended resource claim: {e.message}") from e
        st.created_extended = created
        # From here on the informer's copy of the claim keeps its devices taken.
        self._dra.rekey(extended_key(pod_meta["uid"]), created["metadata"]["uid"])
        written = await self.reserve(created, pod_meta, allocation)
        mapping = {"requestMappings": [
            {"containerName": r.container, "resourceName": r.resource,
             "requestName": r.request_name} for r in served],
            "resourceClaimName": created["metadata"]["name"]}
        try:
            await self._client.patch("v1", "pods", pod_meta["name"],
                                     {"status": {"extendedResourceClaimStatus": mapping}},
                                     namespace=pod_meta["namespace"], subresource="status")
        except ApiError as e:
            raise PreBindError(f"record extended resource claim: {e.message}") from e
        return written

    async def deallocate(self, claim: dict) -> None:
        """Clears allocation, reservations and device status in one status update (based on
        the claim as this attempt saw it: a concurrent change makes it a conflict)."""
        status = {k: v for k, v in (claim.get("status") or {}).items()
                  if k not in ("allocation", "reservedFor", "devices")}
        meta = claim["metadata"]
        log.info("deallocating claim", claim=claim_key(meta["namespace"], meta["name"]))
        await self._client.update(RESOURCE_V1, "resourceclaims", {**claim, "status": status},
                                  subresource="status")

    async def delete(self, claim: dict) -> None:
        """Deletes a claim the scheduler created, removing our finalizer first (nobody else
        would), retrying on conflicts."""
        meta = claim["metadata"]
        ns, name = meta["namespace"], meta["name"]
        if not await self._drop_finalizer(claim):
            return  # gone already
        try:
            await self._client.delete(RESOURCE_V1, "resourceclaims", name, ns,
                                      preconditions={"uid": meta.get("uid")})
        except ApiError as e:
            if e.code != 404:
                raise

    async def _drop_finalizer(self, claim: dict) -> bool:
        """Takes our finalizer off the claim; False if the claim is gone."""
        meta = claim["metadata"]
        ns, name = meta["namespace"], meta["name"]
        fresh = claim
        for attempt in range(CONFLICT_RETRIES):
            finalizers = fresh["metadata"].get("finalizers") or []
            if FINALIZER not in finalizers:
                return True
            kept = [f for f in finalizers if f != FINALIZER]
            try:
                await self._client.update(RESOURCE_V1, "resourceclaims", {
                    **fresh, "metadata": {**fresh["metadata"], "finalizers": kept}})
                return True
            except ApiError as e:
                if e.code == 404:
                    return False
                if e.code != 409 or attempt == CONFLICT_RETRIES - 1:
                    raise
            try:
                fresh = await self._client.get(RESOURCE_V1, "resourceclaims", name, ns)
            except ApiError as e:
                if e.code == 404:
                    return False
                raise
        return True

    async def unreserve(self, reserved: list[dict], extended: dict | None,
                        pod_meta: dict) -> None:
        """Takes the pod out of the reserved claims' reservedFor, and deletes the
        extended-resource claim made for it; failures are logged (the pod's next attempt
        tries again)."""
        for claim in reserved:
            meta = claim["metadata"]
            # A strategic merge patch removes just this entry, whatever the claim's latest
            # version holds; the uid makes sure it is still the same claim.
            patch = {"metadata": {"uid": meta.get("uid")}, "status": {"reservedFor": [
                {"$patch": "delete", "uid": pod_meta["uid"]}]}}
            try:
                await self._client.patch(RESOURCE_V1, "resourceclaims", meta["name"], patch,
                                         patch_type="strategic", namespace=meta["namespace"],
                                         subresource="status")
            except ApiError as e:  # the next attempt of the pod tries again
                log.warning("could not remove pod from reservedFor", claim=meta["name"],
                            pod=pod_meta["name"], error=e.message)
        if extended is not None:
            try:
                await self.delete(extended)
            except ApiError as e:
                log.warning("could not delete extended resource claim",
                            claim=extended["metadata"]["name"], error=e.message)


def _check_reservable(fresh: dict, allocation: dict | None) -> None:
    """PreBindError when the claim can no longer be reserved as this attempt chose."""
    meta = fresh["metadata"]
    ns, name = meta["namespace"], meta["name"]
    status = fresh.get("status") or {}
    if meta.get("deletionTimestamp"):
        raise PreBindError(f"resourceclaim {ns}/{name} is being deleted")
    if allocation is not None and status.get("allocation") \
            and status["allocation"] != allocation:
        raise PreBindError(f"resourceclaim {ns}/{name}: allocated by someone else meanwhile")
    if allocation is None and not status.get("allocation"):
        raise PreBindError(f"resourceclaim {ns}/{name}: allocation was removed")


def _without_managed_fields(obj: dict) -> dict:
    """A copy of the object's metadata without managedFields."""
    return {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
