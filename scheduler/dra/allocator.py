"""The structured allocator: finds devices for a pod's claims on one node.

Depth-first search over claims → requests → devices, in upstream's deterministic order
(pools by driver and name, binding-condition pools last, slices by name, devices in
slice order); the first complete assignment wins. Synchronous and side-effect free:
the scheduler calls it from Filter for each (pod, node) pair.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from draemu.cel import CELCompileError, CELRuntimeError, compile_derived, compile_expression
from draemu.scheduler.dra.capacity import consumption, fits
from draemu.scheduler.dra.explain import Explanation, explain
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
    Spec,
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


@dataclass(eq=False)
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
    def __init__(self, inventory: Inventory) -> None:
        self.inv = inventory

    def allocate(self, node: dict[str, Any], claims: list[dict[str, Any]],
                 in_flight: Iterable[dict[str, Any]] = (), *,
                 timeout: float | None = None) -> AllocationOutcome:
        """Allocate `claims` (one pod's unallocated claims, in pod order) on `node`.

        `in_flight` are claims with a `status.allocation` the scheduler has reserved but
        not written yet; their devices count as in use. `timeout` (seconds) bounds the
        search, as DRASchedulerFilterTimeout does; running out rules out this node only.
        """
        search = _Search(self.inv, node, claims, self._in_flight_state(in_flight))
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
            results = [build_result(c, node_name) for c in search.claims]
        except (AllocError, *MALFORMED) as e:
            failure = e.message if isinstance(e, AllocError) else f"malformed input: {e}"
            return AllocationOutcome(node_name, None, False, failure,
                                     lambda: explain(search, failure, allocated=False))
        return AllocationOutcome(node_name, results, False, None,
                                 lambda: explain(search, None, allocated=True))

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
    def __init__(self, inv: Inventory, node: dict[str, Any], claims: list[dict[str, Any]],
                 extra: AllocatedState | None) -> None:
        self.inv = inv
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
        self.rejections: dict[tuple[int, DeviceID], str] = {}
        self.invalid_pools = False
        self.deadline: float | None = None
        # Devices of usable pools in search order, and each one's pool.
        self.candidates: list[tuple[Device, Pool]] = []
        self.pool_by_device: dict[int, Pool] = {}

    # --- driver ------------------------------------------------------------------------

    def run(self) -> bool:
        try:
            self.node_pools = gather(self.inv, self.node)
        except NodeSelectionError as e:
            raise AllocError(f"gather pool information: {e}") from None
        pools = self.node_pools.pools
        self.candidates = [(d, p) for p in pools if p.usable for d in p.devices]
        self.pool_by_device = {id(d): p for d, p in self.candidates}
        self.invalid_pools = any(p.invalid and not p.incomplete for p in pools)
        for i, claim in enumerate(self.raw_claims):
            state = prepare_claim(i, claim, self.inv.classes, self.features)
            minimum = 0
            for slot in state.slots:
                counts = []
                for spec in slot.options:
                    if spec.mode == "All":
                        spec.all_devices = self._all_devices(state, spec, pools)
                        counts.append(len(spec.all_devices))
                    else:
                        counts.append(spec.count)
                minimum += min(counts)
            if minimum > MAX_RESULTS:
                raise AllocError(f"claim {state.name}: number of requested devices {minimum} "
                                 f"exceeds the claim limit of {MAX_RESULTS}")
            self.claims.append(state)
        if self._plausible() and self._claim(0):
            return True
        if self.invalid_pools:
            raise AllocError("invalid resource pools were encountered", node_local=True)
        return False

    def _all_devices(self, state: ClaimState, spec: Spec, pools: list[Pool]) -> list[Device]:
        out: list[Device] = []
        for pool in pools:
            if pool.incomplete:
                raise AllocError(f"claim {state.name}, request {spec.name}: asks for all "
                                 f"devices, but resource pool {pool.id} is currently being "
                                 "updated")
            if pool.invalid:
                raise AllocError(f"claim {state.name}, request {spec.name}: asks for all "
                                 f"devices, but resource pool {pool.id} is currently invalid")
            for d in pool.devices:
                if self.selectable(spec, d) is not None:
                    continue
                if self.features.consumable_capacity and self.capacity_short(spec, d) is not None:
                    continue
                out.append(d)
        return out

    def _plausible(self) -> bool:
        """False when some request cannot be met even with the node to itself.

        Without this, a hopeless later request makes the search try every combination
        of devices for the earlier ones before giving up, which grows exponentially.
        A selector that fails to evaluate leaves the decision to the search: whether
        that error surfaces depends on the search order, as upstream.
        """
        if sum(len(c.slots) for c in self.claims) < 2:
            return True  # one request: the search is linear anyway
        try:
            return all(any(self._could_fit(ci, spec) for spec in slot.options)
                       for ci, claim in enumerate(self.claims) for slot in claim.slots)
        except AllocError:
            return True

    def _could_fit(self, ci: int, spec: Spec) -> bool:
        if spec.mode == "All":
            return bool(spec.all_devices)
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
            if found >= spec.count:
                return True
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
            needed = len(spec.all_devices or [])
            if needed == 0:
                return False
        else:
            needed = spec.count
        if k >= needed:
            return self._request(ci, ri + 1)
        if len(claim.chosen) + needed - k > MAX_RESULTS:
            return _LIMIT
        if spec.mode == "All":
            device = spec.all_devices[k]  # type: ignore[index]
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
            chosen = self._take(ci, spec, device, pool, must=False)
            if chosen is None:
                continue
            r = self._devices(ci, ri, spec, k + 1, pos + 1)
            if r is True:
                return True
            self._undo(ci, chosen)
            if r is _LIMIT:
                return _LIMIT
        return False

    def pool_of(self, device: Device) -> Pool:
        return self.pool_by_device[id(device)]

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

    def _verdict(self, expression: str, device: Device, owner: str, index: int) -> bool:
        cached = device.verdicts.get(expression)
        if cached is None:
            try:
                program = compile_expression(expression)
            except CELCompileError as e:
                raise AllocError(f"{owner}: selector #{index}: CEL compile error: "
                                 f"{e.detail}") from None
            try:
                cached = program.evaluate(device.cel())
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
        amounts = consumption(device, spec.capacity)
        if amounts is None:
            return "cannot serve the requested capacity (unknown capacity or request policy)"
        short = fits(device, amounts, lambda n: self.state.consumed(device.id, n)
                     + self.sharing.get(device.id, {}).get(n, 0))
        if short is not None:
            return f"capacity {short} exhausted"
        return None

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
        available = self._available_counters(pool)
        used = {} if alone else self.counters_used.get(pool.id, {})
        for set_name, amounts in device.consumes:
            for counter, amount in amounts.items():
                have = available.get(set_name, {}).get(counter, 0)
                taken = used.get(set_name, {}).get(counter, 0)
                if taken + amount > have:
                    return (f"counter {set_name}/{counter} exhausted (needs {_q(amount)}, "
                            f"{_q(max(have - taken, 0))} left)")
        return None

    def _available_counters(self, pool: Pool) -> dict[str, dict[str, Exact]]:
        cached = self.counters_available.get(pool.id)
        if cached is None:
            cached = {name: dict(counters) for name, counters in pool.counter_sets.items()}
            for s in [*pool.slices, *pool.other_slices]:
                for d in s.devices:
                    if not d.consumes or not self.state.allocated(d.id):
                        continue
                    for set_name, amounts in d.consumes:
                        counters = cached.get(set_name)
                        if counters is None:
                            continue
                        for counter, amount in amounts.items():
                            if counter in counters:
                                counters[counter] -= amount
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
                cached = program.evaluate(device.cel())
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

    def _take(self, ci: int, spec: Spec, device: Device, pool: Pool, must: bool
              ) -> Chosen | None:
        claim = self.claims[ci]
        if self.in_use(ci, spec, device) is not None:
            return None
        if self.features.consumable_capacity:
            short = self.capacity_short(spec, device)
            if short is not None:
                self.rejections[(id(spec), device.id)] = short
                return None
        if device.consumes and not self.features.partitionable_devices:
            self.rejections[(id(spec), device.id)] = \
                "consumes counters, but DRAPartitionableDevices is disabled"
            return None
        multi = self.multi(device)
        charge = bool(device.consumes) and not (
            multi and (self.state.shared(device.id) or device.id in self.sharing))
        if charge:
            short = self.counters_short(device, pool)
            if short is not None:
                self.rejections[(id(spec), device.id)] = short
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
                    raise AllocError(f"claim {claim.name}, request {spec.name}: cannot add "
                                     f"device {device_id_str(device.id)} because a claim "
                                     "constraint would not be satisfied")
                self.rejections[(id(spec), device.id)] = f"constraint #{constraint.index}: " \
                    f"{reason}"
                return None
            added.append(constraint)
        chosen = Chosen(device, spec, pool, charged=charge)
        if charge:
            self._charge(device, pool, 1)
        if self.features.compatibility_groups and device.groups:
            chosen.groups_before = self._fold_groups(device, pool)
        if multi:
            amounts = consumption(device, spec.capacity) or {}
            chosen.share_id = str(uuid.uuid4())
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


def _q(v: Exact) -> str:
    from draemu.api.quantity import Quantity

    return Quantity(v).canonical()
