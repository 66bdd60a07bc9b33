"""DynamicResources: the scheduler's side of DRA, around the structured allocator.

- PreEnqueue: the pod's claims must exist (template claims are created by the
  resource-claim controller and named in the pod status), not be being deleted, and,
  when generated, belong to the pod; until then the pod is not tried.
- PreFilter: allocated claims only constrain the node through
  their `allocation.nodeSelector`; unallocated ones need existing DeviceClasses and must
  not be in the middle of being allocated for another pod.
- Filter: per node, allocated claims must be usable there and the allocator must find
  devices for the others, within the filter timeout (results are kept per node for
  Reserve, and reused across pods with the same claim specs while the node is unchanged:
  see `dra/allocationcache.py`).
- PostFilter (no node fits): deallocates one allocated claim that is unavailable (wrong
  node, binding failed or timed out) and reserved by nobody else, or else deletes a
  leftover extended-resource claim, so that the next attempt can allocate afresh.
- Score: for `firstAvailable` requests, earlier subrequests score higher.
- Reserve: the chosen allocations become *in flight*: the allocator counts their devices
  as taken, so concurrent pods never get the same device. Unreserve drops them, takes the
  pod out of `reservedFor` and deletes an extended-resource claim PreBind created.
- PreBind: writes the finalizer, `status.allocation` and `status.reservedFor` (retrying
  on conflicts) and waits for binding conditions.

Claims written here stay in flight until the claim informer shows their allocation.
If binding fails after PreBind, Unreserve takes the pod out of `reservedFor`; the claim
stays allocated, and if the pod fits nowhere else PostFilter deallocates it.
"""

from __future__ import annotations

import asyncio
import copy
import json
import random
import time
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass, field
from typing import Any

from draemu.api.meta import now, parse_time, time_now
from draemu.api.nodeselector import selector_matches
from draemu.api.workloadclaims import owned_by_pod_group, reserved_for_pod
from draemu.client import ApiError, Client
from draemu.log import get_logger
from draemu.scheduler.dra import Allocator
from draemu.scheduler.dra.allocationcache import UNSATISFIABLE
from draemu.scheduler.dra.extendedresources import (
    CLAIM_ANNOTATION,
    ResourceRequest,
    claim_for_node,
    pod_extended_requests,
)
from draemu.scheduler.dra.manager import DRAManager
from draemu.scheduler.framework import (
    SUCCESS,
    ClusterEvent,
    Code,
    CycleState,
    FilterEquivalence,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    ScoreEquivalence,
    ScoreExtensions,
    Status,
)
from draemu.scheduler.framework.handle import Handle
from draemu.scheduler.nodeinfo import NodeInfo
from draemu.scheduler.pluginargs import FILTER_TIMEOUT, DynamicResourcesArgs

log = get_logger("scheduler")

RESOURCE_V1 = "resource.k8s.io/v1"
FINALIZER = "resource.kubernetes.io/delete-protection"
RESERVED_FOR_MAX = 256
BINDING_TIMEOUT = 600.0
CONFLICT_RETRIES = 8
CONFLICT_BACKOFF = 0.01  # seconds, doubled per retry
PRIORITIZED_LIST_MAX = 8  # the longest firstAvailable list; score = 8 - chosen index
MAX_SCORE = 100
UNAVAILABLE = "resourceclaim not available on the node"
CANNOT_ALLOCATE = "cannot allocate all claims"
TIMED_OUT = "timed out trying to allocate devices"
DEALLOCATED = "deallocation of ResourceClaim completed"
DELETED = "deletion of ResourceClaim completed"


def claim_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


@dataclass
class _State:
    claims: list[dict]  # the pod's claims, in pod order (one per needed entry)
    to_allocate: list[int]  # indices into claims of those needing an allocation
    selectors: list[tuple[int, dict]] = field(default_factory=list)  # allocated: index, selector
    # Allocated claims unusable on any node: binding failed or timed out.
    not_ready: list[int] = field(default_factory=list)
    # Allocated claims some node turned down (Filter), for PostFilter to deallocate.
    unavailable: set[int] = field(default_factory=set)
    # The extended-resource claim of an earlier attempt (named in the pod status), if any.
    extended_claim: int | None = None
    created_extended: dict | None = None  # the extended-resource claim PreBind created
    results: dict[str, list[dict]] = field(default_factory=dict)  # node -> allocations
    to_allocate_claims: list[dict] = field(default_factory=list)  # claims[i], i in to_allocate
    allocator: Allocator | None = None  # built once per attempt, used for every node
    signature: str = ""  # the claim specs to allocate ("" = do not use the cache)
    claim_ids: tuple[str, ...] = ()
    # The allocation cache's answers for those specs, when Filter needs nothing else.
    cache_table: dict[str, Any] | None = None
    extended: list[ResourceRequest] = field(default_factory=list)  # DRA-backed candidates
    # node -> the in-memory claim for extended resources there, and what it serves
    extended_claims: dict[str, tuple[dict, list[ResourceRequest]]] = field(
        default_factory=dict)


class DynamicResources(PreEnqueuePlugin, PreFilterPlugin, FilterEquivalence, PostFilterPlugin,
                       PreScorePlugin, ScoreExtensions, ScoreEquivalence, ReservePlugin,
                       PreBindPlugin):
    name = "DynamicResources"
    weight = 1

    def __init__(self, client: Client, dra: DRAManager,
                 binding_timeout: float = BINDING_TIMEOUT,
                 filter_timeout: float = FILTER_TIMEOUT) -> None:
        self._client = client
        self._dra = dra
        self._features = dra.features
        self._cache = dra.cache  # Filter's fast path, looked up once
        self._binding_timeout = binding_timeout
        # None: allocate without a time limit (gate off, or a timeout of zero).
        self._filter_timeout = filter_timeout if filter_timeout > 0 and \
            self._features.filter_timeout else None

    @property
    def filter_timeout(self) -> float | None:
        """Seconds the allocator may spend on one node (None: no limit)."""
        return self._filter_timeout

    def events(self) -> Iterable[ClusterEvent]:
        actions = ("Add", "Update", "Delete")
        return [ClusterEvent(r, a) for r in ("ResourceClaim", "ResourceSlice", "DeviceClass",
                                             "DeviceTaintRule") for a in actions] + [
            ClusterEvent("Node", "Add"), ClusterEvent("Node", "Update")]

    # --- PreFilter ---------------------------------------------------------------------

    def _pod_claims(self, pod: dict) -> tuple[list[dict], Status]:
        meta, spec = pod["metadata"], pod.get("spec") or {}
        statuses = {s.get("name"): s for s in
                    (pod.get("status") or {}).get("resourceClaimStatuses") or []}
        claims: list[dict] = []
        for entry in spec.get("resourceClaims") or []:
            generated = bool(entry.get("resourceClaimTemplateName"))
            if generated:
                status = statuses.get(entry["name"])
                if status is None:
                    # Upstream's words (resourceclaim.Name), so that searches find them.
                    return [], Status.unschedulable(
                        f"pod \"{meta['namespace']}/{meta['name']}\": ResourceClaim not "
                        f"created yet", resolvable=False)
                name = status.get("resourceClaimName")
                if not name:
                    continue  # the controller decided no claim is needed
            else:
                name = entry.get("resourceClaimName") or ""
            claim = self._dra.claim(meta["namespace"], name)
            if claim is None:
                return [], Status.unschedulable(f"resourceclaim \"{name}\" not found",
                                                resolvable=False)
            cmeta = claim["metadata"]
            if cmeta.get("deletionTimestamp"):
                return [], Status.unschedulable(f"resourceclaim \"{name}\" is being deleted",
                                                resolvable=False)
            if generated and not any(o.get("uid") == meta["uid"] and o.get("controller")
                                     for o in cmeta.get("ownerReferences") or []) and not (
                    self._features.workload_claims and owned_by_pod_group(claim, pod)):
                return [], Status.unschedulable(
                    f"ResourceClaim {meta['namespace']}/{name} was not created for pod "
                    f"{meta['namespace']}/{meta['name']} (pod is not owner)", resolvable=False)
            claims.append(claim)
        return claims, SUCCESS

    def _check_unallocated(self, claim: dict, pod_uid: str) -> Status:
        uid = claim["metadata"].get("uid", "")
        flying = self._dra.in_flight(uid)
        if flying is not None and flying.pod_uid != pod_uid:
            meta = claim["metadata"]
            return Status.unschedulable(
                f"resource claim {claim_key(meta['namespace'], meta['name'])} is in the "
                "process of being allocated", resolvable=False)
        for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
            subrequests = request.get("firstAvailable")
            if subrequests and not self._features.prioritized_list:
                return Status.unschedulable(
                    f"resource claim {claim['metadata']['name']}, request {request['name']}: "
                    "has subrequests, but the DRAPrioritizedList feature is disabled",
                    resolvable=False)
            for exact in subrequests or [request.get("exactly") or {}]:
                cls = exact.get("deviceClassName")
                if not cls:
                    return Status.error(f"request {request['name']}: unsupported request type")
                if not self._dra.has_class(cls):
                    return Status.unschedulable(
                        f"request {request['name']}: device class {cls} does not exist",
                        resolvable=False)
        return SUCCESS

    def _leftover_extended_claim(self, pod: dict) -> dict | None:
        """The extended-resource claim the pod status names, if it still exists for it."""
        meta = pod["metadata"]
        name = ((pod.get("status") or {}).get("extendedResourceClaimStatus") or {}).get(
            "resourceClaimName")
        claim = self._dra.claim(meta["namespace"], name) if name else None
        if claim is None:
            return None
        cmeta = claim["metadata"]
        ours = (cmeta.get("annotations") or {}).get(CLAIM_ANNOTATION) == "true" and any(
            o.get("uid") == meta["uid"] and o.get("controller")
            for o in cmeta.get("ownerReferences") or [])
        return claim if ours and not cmeta.get("deletionTimestamp") else None

    def _ready_for_binding(self, claim: dict) -> bool:
        """False when a binding failure condition is true, or when the binding conditions
        are still not all true after the binding timeout (counted from allocation)."""
        if _binding_verdict(claim) is not None:
            return False
        if _binding_done(claim):
            return True
        stamp = claim["status"]["allocation"].get("allocationTimestamp")
        if not stamp:
            return True
        allocated = parse_time(stamp)
        if allocated is None:
            return True
        return (now() - allocated).total_seconds() <= self._binding_timeout

    def pre_enqueue(self, pod: dict) -> Status:
        """A pod whose claims do not all exist yet is not tried at all (no attempt counted)."""
        if not (pod.get("spec") or {}).get("resourceClaims"):
            return SUCCESS
        return self._pod_claims(pod)[1]

    def pre_filter(self, state: CycleState, pod: dict) -> tuple[Status, PreFilterResult | None]:
        mapping = self._dra.extended_mapping
        extended = [r for r in pod_extended_requests(pod) if r.resource in mapping] \
            if mapping else []
        if not (pod.get("spec") or {}).get("resourceClaims") and not extended:
            return Status(Code.SKIP), None
        claims, status = self._pod_claims(pod)
        if not status.ok:
            return status, None
        pod_uid = pod["metadata"]["uid"]
        st = _State(claims=claims, to_allocate=[], extended=extended)
        leftover = self._leftover_extended_claim(pod) if extended else None
        if leftover is not None:
            # An earlier attempt created the pod's extended-resource claim: it is one of the
            # pod's claims now (PostFilter deletes it if it keeps the pod from fitting).
            st.extended_claim = len(claims)
            claims.append(leftover)
            st.extended = []
        binding_gates = self._features.binding_conditions
        for i, claim in enumerate(claims):
            claim_status = claim.get("status") or {}
            allocation = claim_status.get("allocation")
            if allocation:
                reserved = claim_status.get("reservedFor") or []
                if len(reserved) >= RESERVED_FOR_MAX and \
                        not reserved_for_pod(claim, pod, self._features.workload_claims):
                    return Status.unschedulable(
                        f"resourceclaim {claim['metadata']['name']} is already reserved for "
                        f"{RESERVED_FOR_MAX} consumers, the maximum", resolvable=False), None
                if allocation.get("nodeSelector"):
                    st.selectors.append((i, allocation["nodeSelector"]))
                if binding_gates and not self._ready_for_binding(claim):
                    st.not_ready.append(i)
                continue
            status = self._check_unallocated(claim, pod_uid)
            if not status.ok:
                return status, None
            st.to_allocate.append(i)
        st.to_allocate_claims = [claims[i] for i in st.to_allocate]
        if st.to_allocate or st.extended:
            st.allocator = self._dra.allocator()
            own_in_flight = any(
                (f := self._dra.in_flight(c["metadata"].get("uid", ""))) is not None
                and f.pod_uid == pod_uid for c in claims) or \
                self._dra.in_flight(_extended_key(pod_uid)) is not None
            # Preemption's dry runs see devices freed that are not: never cached.
            if not own_in_flight and not self._dra.simulating:
                st.signature = json.dumps(
                    [claims[i].get("spec") for i in st.to_allocate] +
                    [[r.request_name, r.resource, r.count] for r in st.extended],
                    sort_keys=True, separators=(",", ":"))
                st.claim_ids = tuple(claim_key(claims[i]["metadata"]["namespace"],
                                               claims[i]["metadata"]["name"])
                                     for i in st.to_allocate) + (pod["metadata"]["name"],)
        if st.signature and st.to_allocate_claims and not (
                st.selectors or st.not_ready or st.extended):
            st.cache_table = self._cache.table(st.signature)  # Filter's fast path
        state.write(self.name, st)
        return SUCCESS, None

    # --- Filter / Score ----------------------------------------------------------------

    def filter_equivalence(self, state: CycleState, pod: dict
                           ) -> tuple[tuple[str, int], dict[str, int]] | None:
        """On Filter's fast path (claims to allocate and nothing else to check), the
        verdict is the allocation cache's: the claim specs at the node's versions."""
        st: _State | None = state.read(self.name)
        if st is None or st.cache_table is None:
            return None
        versions = self._dra.versions
        return (st.signature, versions.global_version), \
            None if self._dra.versions_followed else versions.by_node

    def filter(self, state: CycleState, pod: dict, node: NodeInfo) -> Status:
        st: _State = state.read(self.name)
        if st.cache_table is not None:
            # The common case first: claims to allocate and nothing else to check, and the
            # answer for this node in the cache.
            outcome = self._cache.verdict(st.cache_table, node.name, st.claim_ids)
            if outcome is UNSATISFIABLE:
                return self._unsatisfiable(st, pod, node, st.to_allocate_claims)
            if outcome is not None and outcome.results is not None \
                    and not outcome.timed_out and not outcome.error:
                st.results[node.name] = outcome.results
                return SUCCESS
            return self._filter(st, pod, node, outcome, looked_up=True)
        return self._filter(st, pod, node, None, looked_up=False)

    def _unsatisfiable(self, st: _State, pod: dict, node: NodeInfo, claims: list[dict]
                       ) -> Status:
        """The verdict kept for another pod's claims of the same specs: the same. The
        explanation names this pod's claims, computed if the pod fits nowhere, within this
        cycle (so on the state the verdict was checked against: no Reserve comes between,
        so the claims in flight are those of now)."""
        allocator, dra, pod_uid = st.allocator, self._dra, pod["metadata"]["uid"]
        assert allocator is not None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [CANNOT_ALLOCATE],
                      detail=lambda: _summary(allocator.allocate(
                          node.node, claims, in_flight=dra.in_flight_for_node(node.name,
                                                                              pod_uid))))

    def _filter(self, st: _State, pod: dict, node: NodeInfo, outcome: Any, *,
                looked_up: bool) -> Status:
        # Allocated claims not usable here; as upstream, they are remembered for PostFilter
        # only if the allocation of the other claims succeeds on this node.
        unavailable = [i for i, selector in st.selectors
                       if not selector_matches(selector, node.labels, node.name)] + \
            st.not_ready if st.selectors or st.not_ready else None
        claims = st.to_allocate_claims
        if st.extended:
            special, served = claim_for_node(pod, st.extended, self._dra.extended_mapping,
                                             node.allocatable.scalars)
            if special is not None:
                st.extended_claims[node.name] = (special, served)
                claims = [*claims, special]
        if not claims or st.allocator is None:
            return self._unavailable(st, unavailable) if unavailable else SUCCESS
        signature = st.signature
        if signature and not looked_up:
            outcome = self._cache.get(signature, node.name, st.claim_ids)
        if outcome is None:
            if signature and not looked_up and self._cache.unsatisfiable(signature, node.name):
                return self._unsatisfiable(st, pod, node, claims)
            in_flight = self._dra.in_flight_for_node(node.name, pod["metadata"]["uid"])
            outcome = st.allocator.allocate(node.node, claims, in_flight=in_flight,
                                            timeout=self._filter_timeout)
            if signature and not outcome.timed_out and \
                    not (outcome.error and not outcome.unsatisfiable):
                self._cache.put(st.signature, node.name, st.claim_ids, outcome)
        if outcome.timed_out:
            return Status.unschedulable(TIMED_OUT, resolvable=False)
        if outcome.error and not outcome.unsatisfiable:
            return Status.error(outcome.error)
        if outcome.results is None:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [CANNOT_ALLOCATE],
                          detail=lambda: _summary(outcome))
        if unavailable:
            return self._unavailable(st, unavailable)
        st.results[node.name] = outcome.results
        return SUCCESS

    @staticmethod
    def _unavailable(st: _State, claims: list[int]) -> Status:
        st.unavailable.update(claims)
        return Status.unschedulable(UNAVAILABLE, resolvable=False)

    # --- PostFilter --------------------------------------------------------------------

    async def post_filter(self, state: CycleState, pod: dict,
                          statuses: dict[str, Status]) -> Status:
        """No node fits. Deallocates one unavailable claim that nobody else uses, picked at
        random as upstream does (no better heuristic); otherwise deletes a leftover
        extended-resource claim. Each is a single write; the claim event that follows
        retries the pod."""
        st: _State | None = state.read(self.name)
        if st is None:
            return Status(Code.SKIP)  # the pod has no claims (PreFilter skipped)
        if not st.claims and not st.extended:
            return Status.unschedulable("no new claims to deallocate")
        pod_uid = pod["metadata"]["uid"]
        candidates = list(st.unavailable)
        random.shuffle(candidates)
        for i in candidates:
            if i == st.extended_claim:
                break
            claim = st.claims[i]
            reserved = (claim.get("status") or {}).get("reservedFor") or []
            if not reserved or (len(reserved) == 1 and reserved[0].get("uid") == pod_uid):
                await self._deallocate(claim)
                return Status.unschedulable(DEALLOCATED)
        if st.extended_claim is not None:
            await self._delete_claim(st.claims[st.extended_claim])
            return Status.unschedulable(DELETED)
        return Status.unschedulable("still not schedulable")

    async def _deallocate(self, claim: dict) -> None:
        """Clears allocation, reservations and device status in one status update (based on
        the claim as this attempt saw it: a concurrent change makes it a conflict)."""
        status = {k: v for k, v in (claim.get("status") or {}).items()
                  if k not in ("allocation", "reservedFor", "devices")}
        meta = claim["metadata"]
        log.info("deallocating claim", claim=claim_key(meta["namespace"], meta["name"]))
        await self._client.update(RESOURCE_V1, "resourceclaims", {**claim, "status": status},
                                  subresource="status")

    async def _delete_claim(self, claim: dict) -> None:
        """Deletes a claim the scheduler created, removing our finalizer first (nobody else
        would), retrying on conflicts."""
        meta = claim["metadata"]
        ns, name = meta["namespace"], meta["name"]
        fresh = claim
        for attempt in range(CONFLICT_RETRIES):
            finalizers = fresh["metadata"].get("finalizers") or []
            if FINALIZER not in finalizers:
                break
            kept = [f for f in finalizers if f != FINALIZER]
            try:
                await self._client.update(RESOURCE_V1, "resourceclaims", {
                    **fresh, "metadata": {**fresh["metadata"], "finalizers": kept}})
                break
            except ApiError as e:
                if e.code == 404:
                    return
                if e.code != 409 or attempt == CONFLICT_RETRIES - 1:
                    raise
            try:
                fresh = await self._client.get(RESOURCE_V1, "resourceclaims", name, ns)
            except ApiError as e:
                if e.code == 404:
                    return
                raise
        try:
            await self._client.delete(RESOURCE_V1, "resourceclaims", name, ns,
                                      preconditions={"uid": meta.get("uid")})
        except ApiError as e:
            if e.code != 404:
                raise

    def pre_score(self, state: CycleState, pod: dict, feasible: list[NodeInfo]) -> bool:
        """Only prioritized lists (firstAvailable) make nodes differ."""
        st: _State | None = state.read(self.name)
        return st is None or not any(r.get("firstAvailable") for i in st.to_allocate for r in
                       ((st.claims[i].get("spec") or {}).get("devices") or {}).get("requests")
                       or [])

    def score_equivalence(self, state: CycleState, pod: dict) -> tuple[str, int] | None:
        """A node's score comes from its allocation, which depends on the claim specs and
        the node's DRA version: kept per node generation when the scheduler follows the
        versions (see DRAManager.follow_node_versions), on Filter's fast path only."""
        st: _State | None = state.read(self.name)
        if st is None or st.cache_table is None or not self._dra.versions_followed:
            return None
        return st.signature, self._dra.versions.global_version

    def score(self, state: CycleState, pod: dict, node: NodeInfo) -> int:
        st: _State = state.read(self.name)
        if node.name not in st.results:
            # The node passed on a kept verdict: its allocation, from the cache.
            self.filter(state, pod, node)
        results = st.results.get(node.name)
        if not results:
            return 0
        total = 0
        for i, allocation in zip(st.to_allocate, results, strict=False):
            requests = ((st.claims[i].get("spec") or {}).get("devices") or {}).get("requests")
            for request in requests or []:
                subs = [s["name"] for s in request.get("firstAvailable") or []]
                if not subs:
                    continue
                chosen = {r["request"].partition("/")[2] for r in
                          (allocation.get("devices") or {}).get("results") or []
                          if r.get("request", "").startswith(request["name"] + "/")}
                for index, sub in enumerate(subs):
                    if sub in chosen:
                        total += PRIORITIZED_LIST_MAX - index
                        break
        return total

    def normalize_scores(self, scores: dict[str, int]) -> None:
        best = max(scores.values(), default=0)
        if best > 0:
            for name, value in scores.items():
                scores[name] = value * MAX_SCORE // best

    # --- Reserve / Unreserve -----------------------------------------------------------

    def reserve(self, state: CycleState, pod: dict, node_name: str) -> Status:
        st: _State | None = state.read(self.name)
        if st is None:
            return SUCCESS
        pod_uid = pod["metadata"]["uid"]
        results = st.results.get(node_name)
        if results is None:
            return SUCCESS if not st.to_allocate and node_name not in st.extended_claims \
                else Status.error(f"no allocation computed for node {node_name}")
        for i in st.to_allocate:
            uid = st.claims[i]["metadata"].get("uid", "")
            flying = self._dra.in_flight(uid)
            if flying is not None and flying.pod_uid != pod_uid:
                return Status.unschedulable(
                    f"resource claim {st.claims[i]['metadata']['name']} is in the process of "
                    "being allocated")
        for i, allocation in zip(st.to_allocate, results, strict=False):
            self._dra.assume(st.claims[i]["metadata"].get("uid", ""), st.claims[i], allocation,
                             pod_uid)
        if node_name in st.extended_claims:
            self._dra.assume(_extended_key(pod_uid), st.extended_claims[node_name][0],
                             results[-1], pod_uid)
        return SUCCESS

    def unreserve(self, state: CycleState, pod: dict, node_name: str
                  ) -> Awaitable[None] | None:
        """Drops this pod's in-flight allocations at once; returns the API writes that undo
        PreBind (None if there are none): the pod leaves `reservedFor`, and the
        extended-resource claim, which exists only for this pod, is deleted."""
        st: _State | None = state.read(self.name)
        if st is None:
            return None
        pod_uid = pod["metadata"]["uid"]
        keys = [c["metadata"].get("uid", "") for c in st.claims] + [_extended_key(pod_uid)]
        if st.created_extended is not None:
            keys.append(st.created_extended["metadata"].get("uid", ""))
        for key in keys:
            flying = self._dra.in_flight(key)
            if flying is not None and flying.pod_uid == pod_uid:
                self._dra.land(key)
        reserved = [c for i, c in enumerate(st.claims) if i != st.extended_claim and
                    (c.get("status") or {}).get("allocation") and
                    any(r.get("uid") == pod_uid for r in c["status"].get("reservedFor") or [])]
        extended = st.created_extended if st.created_extended is not None else \
            st.claims[st.extended_claim] if st.extended_claim is not None else None
        if not reserved and extended is None:
            return None
        return self._unreserve_writes(reserved, extended, pod["metadata"])

    async def _unreserve_writes(self, reserved: list[dict], extended: dict | None,
                                pod_meta: dict) -> None:
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
                await self._delete_claim(extended)
            except ApiError as e:
                log.warning("could not delete extended resource claim",
                            claim=extended["metadata"]["name"], error=e.message)

    # --- PreBind -----------------------------------------------------------------------

    async def pre_bind(self, state: CycleState, pod: dict, node_name: str) -> Status:
        st: _State | None = state.read(self.name)
        if st is None:
            return SUCCESS
        pod_meta = pod["metadata"]
        written: list[dict] = []
        try:
            for i, claim in enumerate(st.claims):
                flying = self._dra.in_flight(claim["metadata"].get("uid", ""))
                allocation = flying.claim["status"]["allocation"] \
                    if flying and flying.pod_uid == pod_meta["uid"] else None
                # Kept in the state, so that Unreserve sees what was written.
                st.claims[i] = await self._reserve_claim(claim, pod_meta, allocation,
                                                         self._consumer(claim, pod))
                written.append(st.claims[i])
            if node_name in st.extended_claims:
                written.append(await self._create_extended_claim(
                    pod, st, st.extended_claims[node_name][1]))
            await self._wait_for_binding_conditions(written)
        except _PreBindError as e:
            return Status.error(str(e))  # the scheduler runs Unreserve
        return SUCCESS

    async def _create_extended_claim(self, pod: dict, st: _State,
                                     served: list[ResourceRequest]) -> dict:
        """Creates the claim for DRA-backed extended resources, allocated and reserved, and
        records it in the pod status."""
        pod_meta = pod["metadata"]
        flying = self._dra.in_flight(_extended_key(pod_meta["uid"]))
        if flying is None:
            raise _PreBindError("extended resource allocation is no longer reserved")
        claim = copy.deepcopy(flying.claim)
        allocation = claim.pop("status")["allocation"]
        del claim["metadata"]["name"]
        try:
            created = await self._client.create(RESOURCE_V1, "resourceclaims", claim,
                                                pod_meta["namespace"])
        except ApiError as e:
            raise _PreBindError(f"create extended resource claim: {e.message}") from e
        st.created_extended = created
        # From here on the informer's copy of the claim keeps its devices taken.
        self._dra.rekey(_extended_key(pod_meta["uid"]), created["metadata"]["uid"])
        written = await self._reserve_claim(created, pod_meta, allocation)
        mapping = {"requestMappings": [
            {"containerName": r.container, "resourceName": r.resource,
             "requestName": r.request_name} for r in served],
            "resourceClaimName": created["metadata"]["name"]}
        try:
            await self._client.patch("v1", "pods", pod_meta["name"],
                                     {"status": {"extendedResourceClaimStatus": mapping}},
                                     namespace=pod_meta["namespace"], subresource="status")
        except ApiError as e:
            raise _PreBindError(f"record extended resource claim: {e.message}") from e
        return written

    def _consumer(self, claim: dict, pod: dict) -> dict:
        """Whom the claim is reserved for: the pod, or (DRAWorkloadResourceClaims) the
        pod's PodGroup when the claim was made for the group."""
        if self._features.workload_claims and owned_by_pod_group(claim, pod):
            owner = next(r for r in claim["metadata"].get("ownerReferences") or []
                         if r.get("controller") and r.get("kind") == "PodGroup")
            return {"apiGroup": "scheduling.k8s.io", "resource": "podgroups",
                    "name": owner["name"], "uid": owner.get("uid", "")}
        meta = pod["metadata"]
        return {"resource": "pods", "name": meta["name"], "uid": meta["uid"]}

    async def _reserve_claim(self, claim: dict, pod_meta: dict, allocation: dict | None,
                             consumer: dict | None = None) -> dict:
        """Adds the pod (or `consumer`) to the claim's reservedFor (and the allocation, if
        we made one)."""
        meta = claim["metadata"]
        ns, name = meta["namespace"], meta["name"]
        consumer = consumer or {"resource": "pods", "name": pod_meta["name"],
                                "uid": pod_meta["uid"]}
        fresh = claim
        for attempt in range(CONFLICT_RETRIES):
            status = fresh.get("status") or {}
            if any(r.get("uid") == consumer["uid"] for r in status.get("reservedFor") or []):
                return fresh
            if fresh["metadata"].get("deletionTimestamp"):
                raise _PreBindError(f"resourceclaim {ns}/{name} is being deleted")
            if allocation is not None and status.get("allocation") \
                    and status["allocation"] != allocation:
                raise _PreBindError(f"resourceclaim {ns}/{name}: allocated by someone else "
                                    "meanwhile")
            if allocation is None and not status.get("allocation"):
                raise _PreBindError(f"resourceclaim {ns}/{name}: allocation was removed")
            try:
                # Objects are rebuilt level by level instead of deep-copied: the informer's
                # copies are shared and must stay untouched, and deep copies are costly.
                # The bodies leave managedFields out (the apiserver keeps the stored ones,
                # as upstream's field manager does for a client that sends none): half of
                # an allocated claim's JSON that both sides would encode and decode.
                finalizers = fresh["metadata"].get("finalizers") or []
                if allocation is not None and FINALIZER not in finalizers:
                    updated = {**fresh, "metadata": {**_without_managed_fields(fresh),
                                                     "finalizers": [*finalizers, FINALIZER]}}
                    fresh = await self._client.update(RESOURCE_V1, "resourceclaims", updated)
                new_status = dict(fresh.get("status") or {})
                if allocation is not None and not new_status.get("allocation"):
                    if self._features.binding_conditions and _has_binding_conditions(
                            allocation) and not allocation.get("allocationTimestamp"):
                        allocation = {**allocation, "allocationTimestamp": time_now()}
                    new_status["allocation"] = allocation
                new_status["reservedFor"] = [*(new_status.get("reservedFor") or []), consumer]
                return await self._client.update(
                    RESOURCE_V1, "resourceclaims",
                    {**fresh, "metadata": _without_managed_fields(fresh), "status": new_status},
                    subresource="status")
            except ApiError as e:
                if e.code != 409:
                    raise _PreBindError(f"resourceclaim {ns}/{name}: {e.message}") from e
                # Someone else wrote the claim meanwhile: back off a little, so that a
                # writer racing with us (or a read cache behind the write) can settle.
                await asyncio.sleep(CONFLICT_BACKOFF * 2 ** attempt)
                try:
                    fresh = await self._client.get(RESOURCE_V1, "resourceclaims", name, ns)
                except ApiError as get_error:
                    raise _PreBindError(
                        f"resourceclaim {ns}/{name}: {get_error.message}") from get_error
        raise _PreBindError(f"resourceclaim {ns}/{name}: too many conflicts")

    async def _wait_for_binding_conditions(self, claims: list[dict]) -> None:
        if not self._features.binding_conditions:
            return
        pending = [c for c in claims
                   if _has_binding_conditions((c.get("status") or {}).get("allocation"))]
        if not pending:
            return
        await self._wait_until_bound(pending, time.monotonic() + self._binding_timeout)

    async def _wait_until_bound(self, written: list[dict], deadline: float) -> None:
        """Waits on the claim informer. The results (what must be bound) come from the
        claims as written; the device conditions from the informer's copies, which are
        newer once they have any (the informer may still show the claim unallocated)."""
        while not all([self._bound(claim) for claim in written]):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _PreBindError("device binding timeout")
            await self._dra.next_claim_event(remaining)

    def _bound(self, claim: dict) -> bool:
        """Whether the claim's devices are bound; _PreBindError if binding failed or the
        claim is going away."""
        meta = claim["metadata"]
        key = claim_key(meta["namespace"], meta["name"])
        # Not seen yet (a claim we just created) is not deleted: a reserved claim cannot go
        # away, its finalizer holds it until it is released.
        latest = self._dra.claim(meta["namespace"], meta["name"]) or claim
        if latest["metadata"].get("uid") != meta.get("uid") or \
                latest["metadata"].get("deletionTimestamp"):
            raise _PreBindError(f"resourceclaim {key} is being deleted")
        if (latest.get("status") or {}).get("devices"):
            claim = {**claim, "status": {**claim["status"],
                                         "devices": latest["status"]["devices"]}}
        verdict = _binding_verdict(claim)
        if verdict is not None:
            raise _PreBindError(verdict)
        return _binding_done(claim)


def new(args: DynamicResourcesArgs, handle: Handle) -> DynamicResources:
    return DynamicResources(handle.client, handle.dra, filter_timeout=args.filter_timeout)


class _PreBindError(Exception):
    pass


def _without_managed_fields(obj: dict) -> dict:
    """A copy of the object's metadata without managedFields."""
    return {k: v for k, v in obj["metadata"].items() if k != "managedFields"}


def _extended_key(pod_uid: str) -> str:
    """In-flight key of a pod's extended-resource claim until it exists (and has a uid)."""
    return f"extended-resources/{pod_uid}"


def _summary(outcome: Any) -> str:
    """`cannot allocate all claims`, followed by the allocator's short explanation."""
    short = outcome.summary or ""
    if short.startswith(CANNOT_ALLOCATE):
        return short
    return f"{CANNOT_ALLOCATE}: {short}" if short else CANNOT_ALLOCATE


def _has_binding_conditions(allocation: dict | None) -> bool:
    return any(r.get("bindingConditions") for r in
               ((allocation or {}).get("devices") or {}).get("results") or [])


def _device_conditions(claim: dict) -> dict[tuple[str, str, str], dict[str, dict]]:
    """(driver, pool, device) -> condition type -> condition, from `status.devices`."""
    out: dict[tuple[str, str, str], dict[str, dict]] = {}
    for dev in (claim.get("status") or {}).get("devices") or []:
        out[(dev.get("driver", ""), dev.get("pool", ""), dev.get("device", ""))] = {
            c.get("type", ""): c for c in dev.get("conditions") or []}
    return out


def _results(claim: dict) -> list[dict]:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    return (allocation.get("devices") or {}).get("results") or []


def _conditions_of(conditions: dict, result: dict) -> dict[str, dict]:
    return conditions.get((result.get("driver", ""), result.get("pool", ""),
                           result.get("device", "")), {})


def _binding_verdict(claim: dict) -> str | None:
    """A failure message when a binding failure condition is true."""
    conditions = _device_conditions(claim)
    for r in _results(claim):
        have = _conditions_of(conditions, r)
        for failure in r.get("bindingFailureConditions") or []:
            c = have.get(failure)
            if c is not None and c.get("status") == "True":
                return (f"claim {claim['metadata']['name']} binding failed: "
                        f"reason={c.get('reason', '')}, message={c.get('message', '')}")
    return None


def _binding_done(claim: dict) -> bool:
    conditions = _device_conditions(claim)
    for r in _results(claim):
        have = _conditions_of(conditions, r)
        if any((have.get(c) or {}).get("status") != "True"
               for c in r.get("bindingConditions") or []):
            return False
    return True
