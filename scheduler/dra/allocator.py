"""The structured allocator: finds devices for a pod's claims on one node.

Depth-first search over claims → requests → devices, in upstream's deterministic order
(pools by driver and name, binding-condition pools last, slices by name, devices in
slice order); the first complete assignment wins. Synchronous and side-effect free:
the scheduler calls it from Filter for each (pod, node) pair.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from draemu.cel import (
    MAX_COST,
    CELCompileError,
    CELRuntimeError,
    Interrupted,
    Meter,
    compile_derived,
    compile_expression,
)
from draemu.scheduler.dra.capacity import CapacityError, consumption
from draemu.scheduler.dra.constraints import Reason
from draemu.scheduler.dra.explain import Explanation, explain
from draemu.scheduler.dra.features import (
    ALL_POOL_ERRORS_NODE_LOCAL,
    QUALIFIED_CAPACITY_REQUESTS,
    SHARES_BLOCK_EXCLUSIVE,
)
from draemu.scheduler.dra.inventory import MALFORMED, Inventory, claim_key
from draemu.scheduler.dra.model import Device, DeviceID, Exact, device_id_str
from draemu.scheduler.dra.pools import (
    NodePools,
    NodeSelectionError,
    Pool,
    device_matches_node,
    gather,
)
from draemu.scheduler.dra.requests import (
    MAX_RESULTS,
    AllocError,
    ClaimState,
    PreparedClaim,
    PrepareError,
    Spec,
    claim_name,
    prepare_claim,
)
from draemu.scheduler.dra.results import build_result
from draemu.scheduler.dra.state import AllocatedState, StateView, Usage
from draemu.scheduler.dra.taints import describe, untolerated

_LIMIT = object()  # "this branch would exceed 32 devices in a claim"
# The devices placed on one counter set so far, for DRADeviceCompatibilityGroups: None
# before the first, else the running intersection of their groups, or NO_GROUPS while
# every one of them declared none (such devices only go with each other).
Groups = frozenset[str] | None
NO_GROUPS: frozenset[str] = frozenset({""})
# Upstream's Filter status when the allocation ran out of time (DRASchedulerFilterTimeout).
TIMED_OUT = "timed out trying to allocate devices"
# The node feature (status.declaredFeatures) a kubelet that honours skipNodeOperations
# declares.
OPTIONAL_NODE_OPERATIONS = "DRAOptionalNodeOperations"



def one_line(expression: str) -> str:
    """A (multi-line) CEL expression on one line, for reasons and events."""
    return " ".join(expression.split())

@dataclass(frozen=True, slots=True)
class _ConstraintReason:
    """A constraint turned a device down: words made when an explanation asks."""

    index: int
    reason: Reason

    def message(self) -> str:
        return f"constraint #{self.index}: {self.reason()}"


class _TimedOut(AllocError):
    def __init__(self) -> None:
        super().__init__(f"filter operation aborted: {TIMED_OUT}", node_local=True)


@dataclass(eq=False)
class Chosen:
    device: Device
    spec: Spec
    pool: Pool
    share_id: str | None = None
    consumed: dict[str, Exact] | None = None
    charged: bool = False  # counters charged for this choice
    # Compatibility-group states this choice replaced (DRADeviceCompatibilityGroups).
    groups_before: dict[tuple[str, str], Groups] | None = None


@dataclass(eq=False, slots=True)
class AllocationOutcome:
    node: str
    results: list[dict[str, Any]] | None
    unsatisfiable: bool
    error: str | None
    _explain: Any = field(repr=False, default=None)
    _explanation: Explanation | None = field(repr=False, default=None)
    timed_out: bool = False  # the search ran out of its `timeout`

    @property
    def allocated(self) -> bool:
        return self.results is not None

    @property
    def status(self) -> str:
        """"Allocated", "Unsatisfiable" or "Error", as `draemu allocate` reports it."""
        if self.results is not None:
            return "Allocated"
        return "Error" if self.error else "Unsatisfiable"

    @property
    def explanation(self) -> Explanation:
        """Per claim, request and device: why. Computed on first use."""
        if self._explanation is None:
            try:
                self._explanation = self._explain()
            except MALFORMED as e:
                message = f"malformed input: {type(e).__name__}: {e}"
                self._explanation = Explanation(self.node, "Error", message, [], [], message)
        return self._explanation

    @property
    def summary(self) -> str:
        return self.error if self.error and not self.unsatisfiable \
            else self.explanation.summary


class Allocator:
    """Allocates claims on one node at a time. Meant to live for one decision (the
    scheduler makes one per scheduling cycle): the claims it is given are prepared once
    (classes looked up, requests checked) and reused for every node while the claim
    objects and the classes stay the same."""

    MAX_PREPARED = 1024  # claims kept prepared; more (one-off claims per node) start over

    def __init__(self, inventory: Inventory) -> None:
        self.inv = inventory
        # id(claim) -> (the claim, its index among the claims, class epoch, prepared)
        self._prepared: dict[int, tuple[dict[str, Any], int, int, PreparedClaim]] = {}
        # The last list of claims given (the scheduler gives the same one for every
        # node), the class epoch, and its prepared claims if a node may be answered
        # without a search for them (else None).
        self._last: tuple[tuple[dict[str, Any], ...], int, list[PreparedClaim] | None] | None \
            = None

    def prepared(self, index: int, claim: dict[str, Any]) -> PreparedClaim:
        """The claim at `index` of a pod's claims, prepared; errors are raised afresh."""
        epoch = self.inv.class_epoch
        entry = self._prepared.get(id(claim))
        if entry is not None and entry[0] is claim and entry[1] == index and entry[2] == epoch:
            return entry[3]
        prepared = prepare_claim(index, claim, self.inv.classes, self.inv.features)
        if len(self._prepared) >= self.MAX_PREPARED:
            self._prepared.clear()
        self._prepared[id(claim)] = (claim, index, epoch, prepared)
        return prepared

    def allocate(self, node: dict[str, Any], claims: list[dict[str, Any]],
                 in_flight: Iterable[dict[str, Any]] = (), *,
                 timeout: float | None = None) -> AllocationOutcome:
        """Allocate `claims` (one pod's unallocated claims, in pod order) on `node`.

        `in_flight` are claims with a `status.allocation` the scheduler has reserved but
        not written yet; their devices count as in use. `timeout` (seconds) bounds the
        search, as DRASchedulerFilterTimeout does; running out rules out this node only.
        """
        extra = self._in_flight_state(in_flight)
        if extra is None and (timeout is None or timeout > 0):
            hopeless = self._hopeless(node, claims)
            if hopeless is not None:
                return hopeless
        search = _Search(self, node, claims, extra)
        if timeout is not None:
            search.deadline = time.monotonic() + timeout
        node_name = search.node_name
        try:
            found = search.run()
        except AllocError as e:
            message = e.message
            return AllocationOutcome(node_name, None, e.node_local, message,
                                     lambda: explain(search, message, allocated=False),
                                     timed_out=isinstance(e, _TimedOut))
        except MALFORMED as e:
            # Objects an apiserver validated never get here; hand-written input might.
            malformed = f"malformed input: {type(e).__name__}: {e}"
            return AllocationOutcome(node_name, None, False, malformed,
                                     lambda: explain(search, malformed, allocated=False))
        if not found:
            return AllocationOutcome(node_name, None, True, None,
                                     lambda: explain(search, None, allocated=False))
        try:
            results = [build_result(c, node_name, self.inv.features) for c in search.claims]
        except (AllocError, *MALFORMED) as e:
            failure = e.message if isinstance(e, AllocError) else f"malformed input: {e}"
            return AllocationOutcome(node_name, None, False, failure,
                                     lambda: explain(search, failure, allocated=False))
        return AllocationOutcome(node_name, results, False, None,
                                 lambda: explain(search, None, allocated=True))

    def _hopeless(self, node: dict[str, Any], claims: list[dict[str, Any]]
                  ) -> AllocationOutcome | None:
        """The search's own answer, without the search, when it would fail at the first
        request (see `_Search.first_request_hopeless`) and nothing before that fails;
        None when that is not certain."""
        # Called for every node the pod does not fit: what it allocates stays few
        # objects (the cyclic GC's work grows with them).
        last = self._last
        if last is None or last[1] != self.inv.class_epoch or not _same(last[0], claims):
            last = self._last = (tuple(claims), self.inv.class_epoch, self._shortcut(claims))
        prepared = last[2]
        if prepared is None:
            return None
        try:
            node_pools = gather(self.inv, node)
        except (NodeSelectionError, *MALFORMED):
            return None  # the search raises it again, with its message
        if node_pools.invalid_pools or not node_pools.candidate_ids or \
                not self.inv.state.all_exclusive(node_pools.candidate_ids):
            return None
        return AllocationOutcome((node.get("metadata") or {}).get("name", ""), None, True,
                                 None, _HopelessExplanation(self, node, claims, node_pools,
                                                            prepared))

    def _shortcut(self, claims: list[dict[str, Any]]) -> list[PreparedClaim] | None:
        """The claims prepared, if a node whose devices are all in use can be answered
        without a search for them: their first request takes devices exclusively, and
        nothing the search does before it depends on the node."""
        try:
            prepared = [self.prepared(i, claim) for i, claim in enumerate(claims)]
        except (AllocError, *MALFORMED):
            return None  # the search raises it again, with its message
        first = None
        for p in prepared:
            if p.minimum is None or p.minimum > MAX_RESULTS:
                return None
            if first is None and p.slots:
                first = p
        return prepared if first is not None and first.first_takes_exclusively else None

    def _in_flight_state(self, in_flight: Iterable[dict[str, Any]]) -> AllocatedState | None:
        extra: AllocatedState | None = None
        for claim in in_flight:
            if self.inv.has_claim_usage(claim_key(claim)):
                continue  # already counted from the informer's copy
            usage = Usage.of_claim(claim, self.inv.features.consumable_capacity)
            if usage is not None:
                extra = extra or AllocatedState()
                extra.add(usage)
        return extra


class _Search:
    def __init__(self, allocator: Allocator, node: dict[str, Any],
                 claims: list[dict[str, Any]], extra: AllocatedState | None) -> None:
        inv = self.inv = allocator.inv
        self.allocator = allocator
        self.features = inv.features
        self.node = node
        meta = node.get("metadata") or {}
        self.node_name: str = meta.get("name", "")
        self.labels: dict[str, str] = dict(meta.get("labels") or {})
        self.declared_features = set((node.get("status") or {}).get("declaredFeatures") or [])
        self.raw_claims = claims
        self.state = StateView(inv.state, extra)
        self.claims: list[ClaimState] = []
        self.node_pools: NodePools | None = None
        self.chosen_by: dict[DeviceID, set[int]] = {}  # exclusive choices → claim indexes
        self.sharing: dict[DeviceID, dict[str, Exact]] = {}  # shares chosen in this attempt
        self.share_count: dict[DeviceID, int] = {}
        self.counters_used: dict[str, dict[str, dict[str, Exact]]] = {}
        self.counters_available: dict[str, dict[str, dict[str, Exact]]] = {}
        self.groups: dict[tuple[str, str], Groups] = {}  # (pool, counter set) → placed so far
        self.groups_baseline: set[str] = set()  # pools whose allocated devices are folded in
        # Why the search turned a device down for a spec, beyond the isolated checks
        # (constraints), for explanations.
        # (A counter shortage is kept as its figures, formatted only when explained.)
        self.rejections: dict[tuple[int, DeviceID], str | CounterShort | _ConstraintReason] = {}
        self.invalid_pools = False
        self.deadline: float | None = None
        # Devices of usable pools in search order, and each one's pool (the node's).
        self.candidates: list[tuple[Device, Pool]] = []
        self.pool_by_device: dict[int, Pool] = {}
        # The devices of each `allocationMode: All` spec (by id) on this node.
        self.all_devices: dict[int, list[Device]] = {}

    # --- driver ------------------------------------------------------------------------

    def run(self) -> bool:
        try:
            self.node_pools = gather(self.inv, self.node)
        except NodeSelectionError as e:
            raise AllocError(f"gather pool information: {e}") from None
        node_pools = self.node_pools
        pools = node_pools.pools
        self.candidates = node_pools.candidates
        self.pool_by_device = node_pools.pool_by_device
        self.invalid_pools = node_pools.invalid_pools
        any_all = False
        for i, claim in enumerate(self.raw_claims):
            try:
                prepared = self.allocator.prepared(i, claim)
            except PrepareError as e:
                # The requests before the failing one come first, as upstream's do.
                self._count(claim_name(claim), e.done, pools)
                for spec in e.partial:
                    if spec.mode == "All":
                        self._all_devices(claim_name(claim), spec, pools)
                raise
            any_all = self._count(prepared.name, prepared.slots, pools) or any_all
            self.claims.append(prepared.state())
        if (any_all or not self.first_request_hopeless()) and self._plausible() and \
                self._claim(0):
            return True
        if self.invalid_pools:
            raise AllocError("invalid resource pools were encountered", node_local=True)
        return False

    def _fits_alone(self, spec: Spec, device: Device) -> bool:
        """Whether the request's capacity fits the device when nothing else consumes any."""
        amounts = self.consumption(spec, device, name=device.name)
        return amounts is not None and all(amount <= device.capacity[name].value
                                           for name, amount in amounts.items())

    def _count(self, name: str, slots: tuple[tuple[str, tuple[Spec, ...], bool], ...],
               pools: list[Pool]) -> bool:
        """Gathers the devices of `allocationMode: All` requests and checks the claim's size
        limit, request by request as upstream does. Whether some request is such one."""
        total = 0
        any_all = False
        for request, options, _ in slots:
            fewest = None
            for spec in options:
                if spec.mode == "All":
                    any_all = True
                    devices = self.all_devices[id(spec)] = self._all_devices(name, spec, pools)
                    count = len(devices)
                else:
                    count = spec.count
                fewest = count if fewest is None else min(fewest, count)
            fewest = fewest or 0
            if fewest > MAX_RESULTS - total:
                raise AllocError(f"claim {name}, request {request}: adding {fewest} devices "
                                 f"exceeds the claim limit of {MAX_RESULTS}, with {total} "
                                 "already accounted for")
            total += fewest
        return any_all

    def _all_devices(self, claim: str, spec: Spec, pools: list[Pool]) -> list[Device]:
        out: list[Device] = []
        for pool in pools:
            node_local = self.features.since(ALL_POOL_ERRORS_NODE_LOCAL)
            if pool.incomplete:
                raise AllocError(f"claim {claim}, request {spec.label}: asks for all "
                                 f"devices, but resource pool {pool.id} is currently being "
                                 "updated", node_local=node_local)
            if pool.invalid:
                raise AllocError(f"claim {claim}, request {spec.label}: asks for all "
                                 f"devices, but resource pool {pool.id} is currently invalid",
                                 node_local=node_local)
            for d in pool.devices:
                if self.selectable(spec, d) is not None:
                    continue
                # Only whether the request fits the device at all: what shares consume
                # already is checked when the device is taken (so the request fails).
                if self.features.consumable_capacity and not self._fits_alone(spec, d):
                    continue
                out.append(d)
        return out

    def prepared(self, node_pools: NodePools, claims: list[PreparedClaim]) -> None:
        """The search's state before it looks for devices, from its inputs prepared
        already (claims without `allocationMode: All` only)."""
        self.node_pools = node_pools
        self.candidates = node_pools.candidates
        self.pool_by_device = node_pools.pool_by_device
        self.invalid_pools = node_pools.invalid_pools
        self.claims = [p.state() for p in claims]

    def first_request_hopeless(self) -> bool:
        """True when the search would fail at its first request without looking at any
        device beyond whether it is in use: every option of that request takes devices
        exclusively (ExactCount, no admin access, at least one) and every device of the
        node is in use. The common case on a full cluster, answered without the search
        (and it is the search's answer: nothing evaluated, nothing rejected, nothing
        chosen). Only for claims without `allocationMode: All` (whose devices are
        gathered, and their selectors evaluated, before the search)."""
        first = next((p for p in self.claims if p.slots), None)
        if first is None or not self.candidates:
            return False
        for spec in first.slots[0].options:
            if spec.admin or spec.count < 1 or spec.mode != "ExactCount":
                return False
        if not self.state.all_exclusive(self.node_pools.candidate_ids):  # type: ignore[union-attr]
            return False
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise _TimedOut()
        return True

    def _plausible(self) -> bool:
        """False when some request cannot be met even with the node to itself.

        Without this, a hopeless later request makes the search try every combination
        of devices for the earlier ones before giving up, which grows exponentially.
        Every option of every request is looked at, and a selector that fails to evaluate
        on any device leaves the decision to the search: whether that error surfaces
        depends on the search order, as upstream's (which, giving up, has tried them all
        wherever it got to).
        """
        if sum(len(c.slots) for c in self.claims) < 2:
            return True  # one request: the search is linear anyway
        for claim in self.claims:
            # A device of an `allocationMode: All` request that a constraint turns down
            # is an error (so is a derived attribute that fails), which the search meets
            # only where it gets to that request.
            if claim.constraints and any(spec.mode == "All" or spec.derived
                                         for slot in claim.slots for spec in slot.options):
                return True
        hopeless = False
        try:
            for ci, claim in enumerate(self.claims):
                for slot in claim.slots:
                    fits = [self._could_fit(ci, spec) for spec in slot.options]
                    hopeless = hopeless or not any(fits)
        except AllocError:
            return True
        return not hopeless

    def _could_fit(self, ci: int, spec: Spec) -> bool:
        if spec.mode == "All":
            return bool(self.all_devices[id(spec)])
        found = 0
        for device, _ in self.candidates:
            if self.in_use(ci, spec, device) is not None:
                continue
            if self.selectable(spec, device) is not None:
                continue
            if self.features.consumable_capacity and self.capacity_short(spec, device):
                continue
            if self.taint_blocks(spec, device) is not None:
                continue
            if device.consumes and not self.features.partitionable_devices:
                continue
            found += 1
        # Every device is looked at (no stop at `count`): a selector that fails on a later
        # one raises, and the search decides, as upstream's meets that failure when it
        # backtracks.
        return found >= spec.count

    # --- recursion ------------------------------------------------------------------------

    def _claim(self, ci: int) -> bool:
        if ci == len(self.claims):
            return True
        return self._request(ci, 0) is True

    def _request(self, ci: int, ri: int) -> Any:
        claim = self.claims[ci]
        if ri == len(claim.slots):
            return self._claim(ci + 1)  # a limit signal ends at the claim boundary
        slot = claim.slots[ri]
        if not slot.first_available:
            return self._devices(ci, ri, slot.options[0], 0, 0)
        all_limited = True
        for i, spec in enumerate(slot.options):
            r = self._devices(ci, ri, spec, 0, 0)
            if r is True:
                slot.selected = i
                return True
            if r is not _LIMIT:
                all_limited = False
        return _LIMIT if all_limited else False

    def _devices(self, ci: int, ri: int, spec: Spec, k: int, start: int) -> Any:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise _TimedOut()
        claim = self.claims[ci]
        if spec.mode == "All":
            needed = len(self.all_devices[id(spec)])
            if needed == 0:
                return False
        else:
            needed = spec.count
        if k >= needed:
            return self._request(ci, ri + 1)
        if len(claim.chosen) + needed - k > MAX_RESULTS:
            return _LIMIT
        if spec.mode == "All":
            device = self.all_devices[id(spec)][k]
            pool = self.pool_of(device)
            chosen = self._take(ci, spec, device, pool, must=True)
            if chosen is None:
                return False
            r = self._devices(ci, ri, spec, k + 1, 0)
            if r is not True:
                self._undo(ci, chosen)
            return r
        candidates = self.candidates
        # Devices k+1..needed of this request come after this one, so stop where too few
        # candidates remain for them.
        for pos in range(start, len(candidates) - (needed - k - 1)):
            device, pool = candidates[pos]
            if not self._usable_now(ci, spec, device):
                continue
            chosen = self._take(ci, spec, device, pool, must=False, usable=True)
            if chosen is None:
                continue
            r = self._devices(ci, ri, spec, k + 1, pos + 1)
            if r is True:
                return True
            self._undo(ci, chosen)
            if r is _LIMIT:
                return _LIMIT
        self._look_at_rest(ci, spec, max(start, len(candidates) - (needed - k - 1)))
        return False

    def _look_at_rest(self, ci: int, spec: Spec, start: int) -> None:
        """The devices from `start` on cannot complete the request (too few come after
        them), so the search skips them; upstream still tries each, and a selector (or
        derived attribute) that fails on one of them ends its search with that error."""
        for device, pool in self.candidates[start:]:
            if self._usable_now(ci, spec, device):
                chosen = self._take(ci, spec, device, pool, must=False, usable=True)
                if chosen is not None:
                    self._undo(ci, chosen)

    def pool_of(self, device: Device) -> Pool:
        return self.pool_by_device[id(device)]

    def in_exclusive_use(self, device: DeviceID) -> bool:
        """Whether an allocated or in-flight claim uses the device exclusively."""
        return self.state.exclusive(device)

    def holders(self, device: DeviceID) -> list[str]:
        """The allocated claims that use the device (not those in flight)."""
        return self.inv.holders(device)

    # --- checks ---------------------------------------------------------------------------

    def multi(self, device: Device) -> bool:
        return self.features.consumable_capacity and device.allow_multiple

    def in_use(self, ci: int, spec: Spec, device: Device) -> str | None:
        if spec.admin:
            if not self.multi(device) and ci in self.chosen_by.get(device.id, ()):
                return "already chosen for this claim"
            return None
        if self.state.exclusive(device.id):
            return "in use (allocated to another claim)"
        if self.chosen_by.get(device.id):
            return "chosen for another request of this pod"
        if not self.multi(device) and self.features.since(SHARES_BLOCK_EXCLUSIVE) and \
                self.state.shared(device.id):
            return "has a shared allocation, cannot be allocated exclusively"
        return None

    def selectable(self, spec: Spec, device: Device) -> str | None:
        """None if the device passes the class and request selectors (and binding and
        per-device node checks), else why not. CEL errors are fatal."""
        if device.binding_conditions and not self.features.binding_conditions:
            return "has binding conditions, but DRADeviceBindingConditions is disabled"
        if device.slice.skip_node_operations:
            if not self.features.optional_node_operations:
                return "its slice skips node operations, but DRAOptionalNodeOperations is disabled"
            if OPTIONAL_NODE_OPERATIONS not in self.declared_features:
                return (f"its slice skips node operations, but node {self.node_name} does not "
                        f"declare the {OPTIONAL_NODE_OPERATIONS} feature")
        for i, expression in enumerate(spec.class_selectors):
            if not self._verdict(expression, device, f"class {spec.class_name}", i):
                return f"class {spec.class_name} selector #{i} is false: {one_line(expression)}"
        for i, expression in enumerate(spec.selectors):
            if not self._verdict(expression, device, f"claim {spec.claim_name}", i):
                return f"request {spec.name} selector #{i} is false: {one_line(expression)}"
        if device.slice.per_device and not device_matches_node(device, self.node_name,
                                                               self.labels):
            return "not available on this node"
        return None

    def _meter(self) -> Meter:
        """One evaluation's budget (CELSelectorExpressionMaxCost) and the node's deadline:
        the filter timeout stops a long evaluation too, not only the search around it."""
        return Meter(MAX_COST, self.deadline)

    def _verdict(self, expression: str, device: Device, owner: str, index: int) -> bool:
        cached = device.verdicts.get(expression)
        if cached is None:
            try:
                program = compile_expression(expression)
            except CELCompileError as e:
                raise AllocError(f"{owner}: selector #{index}: CEL compile error: "
                                 f"{e.detail}") from None
            try:
                cached = program.evaluate(device.cel(), self._meter())
            except Interrupted:
                raise _TimedOut() from None  # the node's time is up, not the device's fault
            except CELRuntimeError as e:
                cached = e
            device.verdicts[expression] = cached
        if isinstance(cached, CELRuntimeError):
            raise AllocError(f"{owner}: selector #{index} on device {device_id_str(device.id)}: "
                             f"CEL runtime error: {cached.message}")
        return cached

    def capacity_short(self, spec: Spec, device: Device) -> str | None:
        """None if the request's capacity fits the device next to what shares consume."""
        if not spec.capacity and not device.has_request_policy and not self.multi(device) \
                and not self.state.shared(device.id):
            return None  # the whole device, nothing else consuming: always fits
        amounts = self.consumption(spec, device)
        if amounts is None:
            return "cannot serve the requested capacity (unknown capacity or request policy)"
        consumed = self.state.consumed
        sharing = self.sharing.get(device.id)
        capacity = device.capacity
        for name, amount in amounts.items():
            used = consumed(device.id, name)
            if sharing:
                used += sharing.get(name, 0)
            if amount + used > capacity[name].value:
                total = capacity[name]
                left = max(total.value - used, 0)
                return (f"capacity {name} exhausted (needs {_q(amount, total.format)}, "
                        f"{_q(left, total.format)} left of {_q(total.value, total.format)})")
        return None

    def consumption(self, spec: Spec, device: Device, *,
                    name: str | None = None) -> dict[str, Exact] | None:
        """What the request consumes of the device's capacities (capacity.consumption);
        a request the range arithmetic cannot represent fails the allocation, naming the
        device by `name` (its ID unless given)."""
        try:
            return consumption(device, spec.capacity, spec.capacity_key,
                               fractional=self.features.fractional_capacity_range,
                               formats=spec.capacity_formats,
                               resolve=self.features.since(QUALIFIED_CAPACITY_REQUESTS))
        except CapacityError as e:
            raise AllocError(f"claim {spec.claim_name}, request {spec.label}: checking "
                             f"capacity for device {name or device_id_str(device.id)}: {e}"
                             ) from None

    def _usable_now(self, ci: int, spec: Spec, device: Device) -> bool:
        if self.in_use(ci, spec, device) is not None:
            return False
        if self.selectable(spec, device) is not None:
            return False
        return not (self.features.consumable_capacity and self.capacity_short(spec, device))

    def counters_short(self, device: Device, pool: Pool, *, alone: bool = False
                       ) -> str | None:
        """None if the pool's counters can take the device, else which counter is short.
        `alone`: ignore what this attempt has chosen so far (for explanations)."""
        short = self._counters_short(device, pool, alone)
        return None if short is None else short.message()

    def _counters_short(self, device: Device, pool: Pool, alone: bool) -> CounterShort | None:
        available = self._available_counters(pool)
        used = _NO_COUNTERS if alone else self.counters_used.get(pool.id, _NO_COUNTERS)
        for set_name, amounts in device.consumes:
            have_set = available.get(set_name, _NO_AMOUNTS)
            used_set = used.get(set_name, _NO_AMOUNTS)
            for counter, amount in amounts.items():
                have = have_set.get(counter, 0)
                taken = used_set.get(counter, 0)
                if taken + amount > have:
                    return CounterShort(set_name, counter, amount, max(have - taken, 0))
        # Upstream checks every counter of the pool, not only the device's: one that
        # allocated devices overdraw (negative) refuses any device that consumes counters.
        for set_name, have_set in available.items():
            for counter, have in have_set.items():
                if have < 0:
                    return CounterShort(set_name, counter, 0, 0)
        return None

    def rejection(self, spec: Spec, device: Device) -> str | None:
        """Why the search turned the device down for the spec, beyond the isolated checks."""
        reason = self.rejections.get((id(spec), device.id))
        return reason.message() if isinstance(reason, (CounterShort, _ConstraintReason)) \
            else reason

    def _available_counters(self, pool: Pool) -> dict[str, dict[str, Exact]]:
        cached = self.counters_available.get(pool.id)
        if cached is None:
            cached = {name: dict(counters) for name, counters in pool.counter_sets.items()}
            for s in [*pool.slices, *pool.other_slices]:
                for d in s.devices:
                    if d.consumes and self.state.allocated(d.id):
                        _subtract(cached, d.consumes)
            self.counters_available[pool.id] = cached
        return cached

    def _charge(self, device: Device, pool: Pool, sign: int) -> None:
        used = self.counters_used.setdefault(pool.id, {})
        for set_name, amounts in device.consumes:
            counters = used.setdefault(set_name, {})
            for counter, amount in amounts.items():
                counters[counter] = counters.get(counter, 0) + sign * amount

    def groups_clash(self, device: Device, pool: Pool) -> str | None:
        """None if the device's compatibility groups admit it onto every counter set it
        draws from, given the devices already there (allocated ones, read from their
        slices, and this attempt's choices), else why not."""
        if not self.features.compatibility_groups or not device.groups:
            return None
        self._groups_baseline(pool)
        for set_name, groups in device.groups.items():
            placed = self.groups.get((pool.id, set_name))
            if placed is None or (groups or NO_GROUPS) & placed:
                continue
            mine = "no compatibility groups" if not groups else \
                f"compatibility groups [{', '.join(sorted(groups))}]"
            theirs = "devices without groups" if placed == NO_GROUPS else \
                f"the devices there, which share [{', '.join(sorted(placed))}]"
            return f"counter set {set_name}: {mine}, incompatible with {theirs}"
        return None

    def _groups_baseline(self, pool: Pool) -> None:
        if pool.id in self.groups_baseline:
            return
        self.groups_baseline.add(pool.id)
        for s in [*pool.slices, *pool.other_slices]:
            for d in s.devices:
                if d.groups and self.state.allocated(d.id):
                    self._fold_groups(d, pool)

    def _fold_groups(self, device: Device, pool: Pool) -> dict[tuple[str, str], Groups]:
        before: dict[tuple[str, str], Groups] = {}
        for set_name, groups in device.groups.items():
            key = (pool.id, set_name)
            placed = before[key] = self.groups.get(key)
            mine = groups or NO_GROUPS
            self.groups[key] = mine if placed is None else placed & mine or placed
        return before

    def derived_value(self, spec: Spec, device: Device, name: str) -> dict[str, Any] | None:
        """The value of the request's derived attribute `name` for the device, or None when
        the request derives no such attribute. CEL errors end the allocation (upstream)."""
        expression = spec.derived.get(name)
        if expression is None:
            return None
        cached = device.derived.get(expression)
        if cached is None:
            try:
                program = compile_derived(expression)
            except CELCompileError as e:
                raise AllocError(f"claim {spec.claim_name}, request {spec.name}: compile "
                                 f"derived attribute {name} failed: {e.detail}") from None
            try:
                cached = program.evaluate(device.cel(), self._meter())
            except Interrupted:
                raise _TimedOut() from None
            except CELRuntimeError as e:
                cached = e
            device.derived[expression] = cached
        if isinstance(cached, CELRuntimeError):
            raise AllocError(f"claim {spec.claim_name}, request {spec.name}: evaluate derived "
                             f"attribute {name} on device {device_id_str(device.id)} failed: "
                             f"{cached.message}")
        return cached

    def taint_blocks(self, spec: Spec, device: Device) -> str | None:
        if not self.features.device_taints:
            return None
        taint = untolerated(self.inv.taints(device), spec.tolerations)
        return None if taint is None else f"taint {describe(taint)} not tolerated"

    # --- tentative allocation ----------------------------------------------------------------

    def _take(self, ci: int, spec: Spec, device: Device, pool: Pool, must: bool,
              usable: bool = False) -> Chosen | None:
        """Choose the device for the spec if it can take it. `usable`: `_usable_now` has
        just said yes (not in use, capacity left), so those checks are not repeated;
        otherwise (a device of an `allocationMode: All` request) capacity is checked last,
        after the constraints, as upstream's allocateDevice does."""
        claim = self.claims[ci]
        if not usable and self.in_use(ci, spec, device) is not None:
            return None
        if device.consumes and not self.features.partitionable_devices:
            self.rejections[(id(spec), device.id)] = \
                "consumes counters, but DRAPartitionableDevices is disabled"
            return None
        multi = self.multi(device)
        charge = bool(device.consumes) and not (
            multi and (self.state.shared(device.id) or device.id in self.sharing))
        if charge:
            shortage = self._counters_short(device, pool, False)
            if shortage is not None:
                self.rejections[(id(spec), device.id)] = shortage
                return None
        clash = self.groups_clash(device, pool) if device.consumes else None
        if clash is not None:
            self.rejections[(id(spec), device.id)] = clash
            return None
        blocked = self.taint_blocks(spec, device)
        if blocked is not None:
            self.rejections[(id(spec), device.id)] = blocked
            return None
        added = []
        for constraint in claim.constraints:
            if not constraint.covers(spec.request, spec.sub):
                continue
            reason = constraint.add(device, self.derived_value(spec, device,
                                                               constraint.attribute))
            if reason is not None:
                for c in added:
                    c.remove(device)
                if must:
                    raise AllocError(f"claim {claim.name}, request {spec.label}: cannot add "
                                     f"device {device_id_str(device.id)} because a claim "
                                     "constraint would not be satisfied")
                self.rejections[(id(spec), device.id)] = _ConstraintReason(constraint.index,
                                                                           reason)
                return None
            added.append(constraint)
        if not usable and self.features.consumable_capacity:
            short = self.capacity_short(spec, device)
            if short is not None:
                for c in added:
                    c.remove(device)
                self.rejections[(id(spec), device.id)] = short
                return None
        chosen = Chosen(device, spec, pool, charged=charge)
        if charge:
            self._charge(device, pool, 1)
        if self.features.compatibility_groups and device.groups:
            chosen.groups_before = self._fold_groups(device, pool)
        if multi:
            amounts = self.consumption(spec, device) or {}
            chosen.share_id = _share_id()
            chosen.consumed = amounts
            sharing = self.sharing.setdefault(device.id, {})
            for name, amount in amounts.items():
                sharing[name] = sharing.get(name, 0) + amount
            self.share_count[device.id] = self.share_count.get(device.id, 0) + 1
        else:
            self.chosen_by.setdefault(device.id, set()).add(ci)
        claim.chosen.append(chosen)
        return chosen

    def _undo(self, ci: int, chosen: Chosen) -> None:
        claim = self.claims[ci]
        claim.chosen.remove(chosen)
        device = chosen.device
        for constraint in claim.constraints:
            if constraint.covers(chosen.spec.request, chosen.spec.sub):
                constraint.remove(device)
        if chosen.charged:
            self._charge(device, chosen.pool, -1)
        if chosen.groups_before is not None:
            self.groups.update(chosen.groups_before)
        if chosen.share_id is not None:
            sharing = self.sharing[device.id]
            for name, amount in (chosen.consumed or {}).items():
                sharing[name] -= amount
            self.share_count[device.id] -= 1
            if not self.share_count[device.id]:
                del self.share_count[device.id]
                del self.sharing[device.id]
        else:
            holders = self.chosen_by[device.id]
            holders.discard(ci)
            if not holders:
                del self.chosen_by[device.id]


def _subtract(available: dict[str, dict[str, Exact]],
              consumes: Iterable[tuple[str, dict[str, Exact]]]) -> None:
    """What a device in use consumes, taken from the counters it draws from."""
    for set_name, amounts in consumes:
        counters = available.get(set_name)
        if counters is None:
            continue
        for counter, amount in amounts.items():
            if counter in counters:
                counters[counter] -= amount


def _same(kept: tuple[dict[str, Any], ...], claims: list[dict[str, Any]]) -> bool:
    """Whether the claims are the very objects kept (not merely equal ones)."""
    if len(kept) != len(claims):
        return False
    for a, b in zip(kept, claims, strict=True):
        if a is not b:
            return False
    return True


class _HopelessExplanation:
    """The explanation of a node answered without a search: the search's, had it run."""

    __slots__ = ("allocator", "claims", "node", "node_pools", "prepared")

    def __init__(self, allocator: Allocator, node: dict[str, Any],
                 claims: list[dict[str, Any]], node_pools: NodePools,
                 prepared: list[PreparedClaim]) -> None:
        self.allocator, self.node, self.claims = allocator, node, claims
        self.node_pools, self.prepared = node_pools, prepared

    def __call__(self) -> Explanation:
        search = _Search(self.allocator, self.node, self.claims, None)
        search.prepared(self.node_pools, self.prepared)
        return explain(search, None, allocated=False)


def _share_id() -> str:
    """A random (version 4) UUID, as str(uuid.uuid4()) writes it, in half the time: the
    search takes one for every share it tries."""
    h = os.urandom(16).hex()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"


_NO_COUNTERS: dict[str, dict[str, Exact]] = {}
_NO_AMOUNTS: dict[str, Exact] = {}


@dataclass(frozen=True, slots=True)
class CounterShort:
    """A counter of a pool's counter set that cannot take a device's consumption."""

    counter_set: str
    counter: str
    needs: Exact
    left: Exact

    def message(self) -> str:
        return (f"counter {self.counter_set}/{self.counter} exhausted (needs "
                f"{_q(self.needs)}, {_q(self.left)} left)")


def _q(v: Exact, fmt: str | None = None) -> str:
    from draemu.api.quantity import Quantity

    return Quantity(v, fmt).canonical() if fmt else Quantity(v).canonical()
