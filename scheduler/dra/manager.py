"""The scheduler's shared DRA state (upstream's SharedDRAManager): what the informers show
of ResourceClaims, DeviceClasses, ResourceSlices and DeviceTaintRules, the allocations
Reserve chose that the claim informer does not show yet (in flight), the DRA version of
each node with the allocation answers kept for it, and which pending pods use which
claim.

Fed by the scheduler's informer handlers; read by the DynamicResources plugin, by
NodeResourcesFit (extended resources a DeviceClass backs) and by preemption (its dry
run, `simulate_without`), all through the methods below. Held once, here: the claims
(by "namespace/name"), the classes and the devices in use are not kept again elsewhere.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from draemu.features import FeatureGates
from draemu.scheduler.dra.allocationcache import AllocationCache, NodeVersions
from draemu.scheduler.dra.allocator import Allocator
from draemu.scheduler.dra.extendedresources import class_mapping
from draemu.scheduler.dra.features import Features
from draemu.scheduler.dra.inflight import Flying, InFlight
from draemu.scheduler.dra.inventory import Inventory
from draemu.scheduler.dra.inventory import claim_key as object_key


def claim_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


class DRAManager:
    def __init__(self, gates: FeatureGates | None = None) -> None:
        self._inventory = Inventory(gates)
        # The gates, read once (pairs of gates are one switch).
        self.features: Features = self._inventory.features
        self._claims: dict[str, dict] = {}
        self._extended_mapping: dict[str, str] = {}  # extended resource -> DeviceClass
        self._in_flight = InFlight()  # keyed by claim uid
        self.versions = NodeVersions()
        self._versions_followed = False  # see follow_node_versions
        self.cache = AllocationCache(self.versions)
        self._simulating = False
        # claim "namespace/name" -> pending pods ("namespace/name") naming it.
        self._claim_users: dict[str, set[str]] = {}
        # Resolved at the next claim event, for PreBinds waiting on binding conditions.
        self._claim_event: asyncio.Future[None] | None = None

    # --- informer feed -----------------------------------------------------------------

    def set_claim(self, claim: dict) -> None:
        meta = claim["metadata"]
        key = claim_key(meta["namespace"], meta["name"])
        old = self._claims.get(key)
        self._claims[key] = claim
        self._inventory.set_claim(claim)
        allocation = (claim.get("status") or {}).get("allocation")
        old_allocation = ((old or {}).get("status") or {}).get("allocation")
        uid = meta.get("uid", "")
        flying = self._in_flight.get(uid) if allocation and not old_allocation else None
        if flying is not None and flying.claim["status"]["allocation"] == allocation:
            # Our own allocation landed as Reserve chose it: the devices in use are the
            # same (allocated now instead of in flight), so the allocator's answers for
            # the nodes of its pools stay valid in the cache.
            self._in_flight.pop(uid)
        else:
            if allocation != old_allocation:
                self.versions.allocation_changed(old_allocation)
                self.versions.allocation_changed(allocation)
            if allocation:
                self.land(uid)
        self._claims_changed()

    def remove_claim(self, claim: dict) -> None:
        meta = claim["metadata"]
        old = self._claims.pop(claim_key(meta["namespace"], meta["name"]), None)
        self._inventory.remove_claim(object_key(claim))
        self.versions.allocation_changed(((old or {}).get("status") or {}).get("allocation"))
        self.land(meta.get("uid", ""))
        self._claims_changed()

    def set_class(self, cls: dict) -> None:
        self._inventory.set_class(cls)
        self.versions.everything_changed()
        self._remap()

    def remove_class(self, name: str) -> None:
        self._inventory.remove_class(name)
        self.versions.everything_changed()
        self._remap()

    def set_slice(self, obj: dict) -> None:
        self._inventory.set_slice(obj)
        self.versions.slice_set(obj)

    def remove_slice(self, name: str) -> None:
        self._inventory.remove_slice(name)
        self.versions.slice_removed(name)

    def set_taint_rule(self, obj: dict) -> None:
        self._inventory.set_taint_rule(obj)
        self.versions.everything_changed()

    def remove_taint_rule(self, name: str) -> None:
        self._inventory.remove_taint_rule(name)
        self.versions.everything_changed()

    def node_changed(self, name: str) -> None:
        """A node's labels (node selectors) or allocatable (extended resources) may differ."""
        self.versions.node_changed(name)

    def _remap(self) -> None:
        if self.features.extended_resource:
            self._extended_mapping = class_mapping(list(self._inventory.classes.values()))

    # --- lookups -----------------------------------------------------------------------

    def claim(self, namespace: str, name: str) -> dict | None:
        return self._claims.get(claim_key(namespace, name))

    def has_class(self, name: str) -> bool:
        return name in self._inventory.classes

    @property
    def extended_mapping(self) -> Mapping[str, str]:
        """Extended resource name -> the DeviceClass that backs it (DRAExtendedResource)."""
        return self._extended_mapping

    def backs_extended_resource(self, name: str) -> bool:
        """For NodeResourcesFit: is this extended resource served by a DeviceClass?"""
        return name in self._extended_mapping

    def allocator(self) -> Allocator:
        """An allocator over the inventory, for one scheduling cycle's decisions."""
        return Allocator(self._inventory)

    # --- allocations in flight ---------------------------------------------------------

    def in_flight(self, key: str) -> Flying | None:
        """The allocation Reserve chose for the claim of this uid (or key), not seen yet."""
        return self._in_flight.get(key)

    def assumed_claim(self, uid: str) -> dict | None:
        """The claim with the allocation Reserve chose for it, while that is in flight."""
        flying = self._in_flight.get(uid)
        return flying.claim if flying is not None else None

    def in_flight_for_node(self, node: str, exclude_pod: str) -> list[dict]:
        """Claims of other pods in flight whose allocation can matter on `node`."""
        return self._in_flight.for_node(node, exclude_pod)

    def assume(self, key: str, claim: dict, allocation: dict, pod_uid: str) -> None:
        """Reserve: the claim is being allocated so for the pod; its devices are taken."""
        claim = {**claim, "status": {**(claim.get("status") or {}), "allocation": allocation}}
        self._in_flight.add(key, claim, pod_uid)
        self.versions.allocation_changed(allocation)

    def land(self, key: str) -> None:
        """An in-flight allocation is over (written and seen, or abandoned)."""
        flying = self._in_flight.pop(key)
        if flying is not None:
            self.versions.allocation_changed(flying.claim["status"]["allocation"])

    def rekey(self, old: str, new: str) -> None:
        """The in-flight claim of key `old` exists now, with the uid `new`."""
        self._in_flight.rekey(old, new)

    # --- node versions -----------------------------------------------------------------

    def follow_node_versions(self, changed: Callable[[str], None]) -> None:
        """`changed(node)` is called whenever a node's DRA version moves (its devices in
        use, its slices, its labels). The scheduler moves the node's NodeInfo generation
        with it, so that kept Filter verdicts need not look the version up per node."""
        self.versions.listeners.append(changed)
        self._versions_followed = True

    @property
    def versions_followed(self) -> bool:
        return self._versions_followed

    # --- preemption's dry run ----------------------------------------------------------

    @property
    def simulating(self) -> bool:
        """Inside `simulate_without`: answers are neither kept nor taken from the cache."""
        return self._simulating

    @contextmanager
    def simulate_without(self, pod_uids: set[str]) -> Iterator[None]:
        """The devices of claims reserved only by these pods count as free inside."""
        keys = [key for key, claim in self._claims.items()
                if _reserved_only_by(claim, pod_uids)]
        hidden = self._inventory.hide(keys)
        self._simulating = True
        try:
            yield
        finally:
            self._simulating = False
            self._inventory.unhide(hidden)

    # --- which pending pods use a claim ------------------------------------------------

    def track_pod(self, pod: dict) -> None:
        for key in _claim_keys(pod):
            self._claim_users.setdefault(key, set()).add(_pod_key(pod))

    def untrack_pod(self, pod: dict) -> None:
        pod_key = _pod_key(pod)
        for key in _claim_keys(pod):
            users = self._claim_users.get(key)
            if users is not None:
                users.discard(pod_key)
                if not users:
                    del self._claim_users[key]

    def pods_using(self, namespace: str, name: str) -> set[str]:
        """The pending pods (tracked) that name the claim in their spec or status."""
        return set(self._claim_users.get(claim_key(namespace, name), ()))

    # --- waiting for claim changes -----------------------------------------------------

    async def next_claim_event(self, timeout: float) -> None:
        """Returns at the next claim event, or after `timeout` seconds."""
        if self._claim_event is None or self._claim_event.done():
            self._claim_event = asyncio.get_running_loop().create_future()
        try:
            await asyncio.wait_for(asyncio.shield(self._claim_event), timeout)
        except TimeoutError:
            pass

    def _claims_changed(self) -> None:
        event = self._claim_event
        if event is not None and not event.done():
            event.set_result(None)


def _reserved_only_by(claim: dict, pod_uids: set[str]) -> bool:
    reserved = (claim.get("status") or {}).get("reservedFor") or []
    return bool(reserved) and all(r.get("resource") == "pods" and not r.get("apiGroup")
                                  and r.get("uid") in pod_uids for r in reserved)


def _pod_key(pod: dict) -> str:
    meta = pod["metadata"]
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


def _claim_keys(pod: dict) -> set[str]:
    ns = pod["metadata"].get("namespace", "")
    names = {e["resourceClaimName"] for e in (pod.get("spec") or {}).get("resourceClaims")
             or [] if e.get("resourceClaimName")}
    names |= {s["resourceClaimName"] for s in (pod.get("status") or {}).get(
        "resourceClaimStatuses") or [] if s.get("resourceClaimName")}
    return {claim_key(ns, name) for name in names}
