"""DynamicResources' extension points (see the package's docstring for what each does);
the pod's claims are read through `claims.ClaimLookup`, the API writes are
`claimwrites.ClaimWriter`'s, the shared DRA state is the handle's DRA manager."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Awaitable, Iterable
from typing import Any

from draemu.api.nodeselector import selector_matches
from draemu.api.workloadclaims import reserved_for_pod
from draemu.client import Client
from draemu.scheduler.dra.allocationcache import UNSATISFIABLE
from draemu.scheduler.dra.extendedresources import claim_for_node, pod_extended_requests
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
from draemu.scheduler.plugins.dynamicresources.bindingconditions import (
    has_binding_conditions,
    ready_for_binding,
    wait_until_bound,
)
from draemu.scheduler.plugins.dynamicresources.claims import ClaimLookup
from draemu.scheduler.plugins.dynamicresources.claimwrites import ClaimWriter
from draemu.scheduler.plugins.dynamicresources.podstate import (
    PodState,
    PreBindError,
    claim_key,
    extended_key,
)

RESERVED_FOR_MAX = 256
BINDING_TIMEOUT = 600.0
PRIORITIZED_LIST_MAX = 8  # the longest firstAvailable list; score = 8 - chosen index
MAX_SCORE = 100
UNAVAILABLE = "resourceclaim not available on the node"
CANNOT_ALLOCATE = "cannot allocate all claims"
TIMED_OUT = "timed out trying to allocate devices"
DEALLOCATED = "deallocation of ResourceClaim completed"
DELETED = "deletion of ResourceClaim completed"


class DynamicResources(PreEnqueuePlugin, PreFilterPlugin, FilterEquivalence, PostFilterPlugin,
                       PreScorePlugin, ScoreExtensions, ScoreEquivalence, ReservePlugin,
                       PreBindPlugin):
    name = "DynamicResources"
    weight = 1

    def __init__(self, client: Client, dra: DRAManager,
                 binding_timeout: float = BINDING_TIMEOUT,
                 filter_timeout: float = FILTER_TIMEOUT) -> None:
        self._dra = dra
        self._features = dra.features
        self._cache = dra.cache  # Filter's fast path, looked up once
        self._claims = ClaimLookup(dra)
        self._writes = ClaimWriter(client, dra)
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

    # --- PreEnqueue / PreFilter --------------------------------------------------------

    def pre_enqueue(self, pod: dict) -> Status:
        """A pod whose claims do not all exist yet is not tried at all (no attempt counted)."""
        if not (pod.get("spec") or {}).get("resourceClaims"):
            return SUCCESS
        return self._claims.of_pod(pod)[1]

    def pre_filter(self, state: CycleState, pod: dict) -> tuple[Status, PreFilterResult | None]:
        mapping = self._dra.extended_mapping
        extended = [r for r in pod_extended_requests(pod) if r.resource in mapping] \
            if mapping else []
        if not (pod.get("spec") or {}).get("resourceClaims") and not extended:
            return Status(Code.SKIP), None
        claims, status = self._claims.of_pod(pod)
        if not status.ok:
            return status, None
        pod_uid = pod["metadata"]["uid"]
        st = PodState(claims=claims, to_allocate=[], extended=extended)
        leftover = self._claims.leftover_extended(pod) if extended else None
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
                if binding_gates and not ready_for_binding(claim, self._binding_timeout):
                    st.not_ready.append(i)
                continue
            status = self._claims.check_unallocated(claim, pod_uid)
            if not status.ok:
                return status, None
            st.to_allocate.append(i)
        st.to_allocate_claims = [claims[i] for i in st.to_allocate]
        if st.to_allocate or st.extended:
            st.allocator = self._dra.allocator()
            own_in_flight = any(
                (f := self._dra.in_flight(c["metadata"].get("uid", ""))) is not None
                and f.pod_uid == pod_uid for c in claims) or \
                self._dra.in_flight(extended_key(pod_uid)) is not None
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
        st: PodState | None = state.read(self.name)
        if st is None or st.cache_table is None:
            return None
        versions = self._dra.versions
        return (st.signature, versions.global_version), \
            None if self._dra.versions_followed else versions.by_node

    def filter(self, state: CycleState, pod: dict, node: NodeInfo) -> Status:
        st: PodState = state.read(self.name)
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

    def _unsatisfiable(self, st: PodState, pod: dict, node: NodeInfo, claims: list[dict]
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

    def _filter(self, st: PodState, pod: dict, node: NodeInfo, outcome: Any, *,
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
    def _unavailable(st: PodState, claims: list[int]) -> Status:
        st.unavailable.update(claims)
        return Status.unschedulable(UNAVAILABLE, resolvable=False)

    # --- PostFilter --------------------------------------------------------------------

    async def post_filter(self, state: CycleState, pod: dict,
                          statuses: dict[str, Status]) -> Status:
        """No node fits. Deallocates one unavailable claim that nobody else uses, picked at
        random as upstream does (no better heuristic); otherwise deletes a leftover
        extended-resource claim. Each is a single write; the claim event that follows
        retries the pod."""
        st: PodState | None = state.read(self.name)
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
                await self._writes.deallocate(claim)
                return Status.unschedulable(DEALLOCATED)
        if st.extended_claim is not None:
            await self._writes.delete(st.claims[st.extended_claim])
            return Status.unschedulable(DELETED)
        return Status.unschedulable("still not schedulable")

    def pre_score(self, state: CycleState, pod: dict, feasible: list[NodeInfo]) -> bool:
        """Only prioritized lists (firstAvailable) make nodes differ."""
        st: PodState | None = state.read(self.name)
        return st is None or not any(r.get("firstAvailable") for i in st.to_allocate for r in
                       ((st.claims[i].get("spec") or {}).get("devices") or {}).get("requests")
                       or [])

    def score_equivalence(self, state: CycleState, pod: dict) -> tuple[str, int] | None:
        """A node's score comes from its allocation, which depends on the claim specs and
        the node's DRA version: kept per node generation when the scheduler follows the
        versions (see DRAManager.follow_node_versions), on Filter's fast path only."""
        st: PodState | None = state.read(self.name)
        if st is None or st.cache_table is None or not self._dra.versions_followed:
            return None
        return st.signature, self._dra.versions.global_version

    def score(self, state: CycleState, pod: dict, node: NodeInfo) -> int:
        st: PodState = state.read(self.name)
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
        st: PodState | None = state.read(self.name)
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
            self._dra.assume(extended_key(pod_uid), st.extended_claims[node_name][0],
                             results[-1], pod_uid)
        return SUCCESS

    def unreserve(self, state: CycleState, pod: dict, node_name: str
                  ) -> Awaitable[None] | None:
        """Drops this pod's in-flight allocations at once; returns the API writes that undo
        PreBind (None if there are none): the pod leaves `reservedFor`, and the
        extended-resource claim, which exists only for this pod, is deleted."""
        st: PodState | None = state.read(self.name)
        if st is None:
            return None
        pod_uid = pod["metadata"]["uid"]
        keys = [c["metadata"].get("uid", "") for c in st.claims] + [extended_key(pod_uid)]
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
        return self._writes.unreserve(reserved, extended, pod["metadata"])

    # --- PreBind -----------------------------------------------------------------------

    async def pre_bind(self, state: CycleState, pod: dict, node_name: str) -> Status:
        st: PodState | None = state.read(self.name)
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
                st.claims[i] = await self._writes.reserve(claim, pod_meta, allocation,
                                                          self._claims.consumer(claim, pod))
                written.append(st.claims[i])
            if node_name in st.extended_claims:
                written.append(await self._writes.create_extended(
                    pod, st, st.extended_claims[node_name][1]))
            await self._wait_for_binding_conditions(written)
        except PreBindError as e:
            return Status.error(str(e))  # the scheduler runs Unreserve
        return SUCCESS

    async def _wait_for_binding_conditions(self, claims: list[dict]) -> None:
        if not self._features.binding_conditions:
            return
        pending = [c for c in claims
                   if has_binding_conditions((c.get("status") or {}).get("allocation"))]
        if not pending:
            return
        await wait_until_bound(self._dra, pending, time.monotonic() + self._binding_timeout)


def new(args: DynamicResourcesArgs, handle: Handle) -> DynamicResources:
    return DynamicResources(handle.client, handle.dra, filter_timeout=args.filter_timeout)


def _summary(outcome: Any) -> str:
    """`cannot allocate all claims`, followed by the allocator's short explanation."""
    short = outcome.summary or ""
    if short.startswith(CANNOT_ALLOCATE):
        return short
    return f"{CANNOT_ALLOCATE}: {short}" if short else CANNOT_ALLOCATE
