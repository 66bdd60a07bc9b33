"""A claim's requests prepared for the search: classes looked up, counts known, gates
checked, constraints built — with upstream's error messages."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from draemu.scheduler.dra.constraints import Constraint, DistinctAttribute, MatchAttribute
from draemu.scheduler.dra.features import VERSIONS_BY_PRECEDENCE, Features
from draemu.scheduler.dra.model import Exact, quantity, quantity_format

MAX_RESULTS = 32  # AllocationResultsMaxSize


class AllocError(Exception):
    """Allocation failed with an error. `node_local` errors only rule out this node."""

    def __init__(self, message: str, *, node_local: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.node_local = node_local


class PrepareError(AllocError):
    """A claim's preparation failed. Upstream prepares a claim's requests in order and,
    per request, gathers an `allocationMode: All` request's devices and checks the claim's
    size limit, whose failures come before a later request's: `done` are the requests
    prepared before the failure, `partial` the subrequests of the failing request that
    were."""

    def __init__(self, message: str, done: tuple[tuple[str, tuple[Spec, ...], bool], ...],
                 partial: tuple[Spec, ...] = ()) -> None:
        super().__init__(message)
        self.done = done
        self.partial = partial


def claim_name(claim: dict[str, Any]) -> str:
    meta = claim.get("metadata") or {}
    ns, name = meta.get("namespace"), meta.get("name", "")
    return f"{ns}/{name}" if ns else name


@dataclass(eq=False)
class Spec:
    """One request with `exactly`, or one subrequest of `firstAvailable`.

    Never changed once prepared: the searches of every node a pod's scheduling cycle
    tries share it (what a search changes lives in the search and its ClaimStates)."""

    claim: int
    claim_name: str
    request: str
    sub: str | None
    raw: dict[str, Any]
    class_name: str
    device_class: dict[str, Any]
    mode: str
    count: int
    admin: bool
    tolerations: list[dict[str, Any]]
    capacity: dict[str, Exact]
    name: str = ""
    # Read from the objects on first use (a malformed class fails where it did before:
    # when a device is checked against it), then kept.
    _class_selectors: list[str] | None = None
    _selectors: list[str] | None = None
    _derived: dict[str, str] | None = None
    # The capacity requests as a key for capacity.consumption's per-device answers.
    capacity_key: tuple[tuple[str, Exact], ...] = ()
    # The format each capacity request is written in (a share's consumedCapacity keeps it).
    capacity_formats: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.name = f"{self.request}/{self.sub}" if self.sub else self.request
        self.capacity_key = tuple(sorted(self.capacity.items()))

    @property
    def label(self) -> str:
        """The name upstream's messages give it: the subrequest's own, else the request's."""
        return self.sub or self.request

    @property
    def class_selectors(self) -> list[str]:
        if self._class_selectors is None:
            self._class_selectors = [s["cel"]["expression"] for s in
                                     (self.device_class.get("spec") or {}).get("selectors")
                                     or []]
        return self._class_selectors

    @property
    def selectors(self) -> list[str]:
        if self._selectors is None:
            self._selectors = [s["cel"]["expression"] for s in self.raw.get("selectors") or []]
        return self._selectors

    @property
    def derived(self) -> dict[str, str]:
        """Derived attributes (DRADerivedAttributes): name → CEL expression."""
        if self._derived is None:
            self._derived = {a.get("name", ""): a.get("expression", "")
                             for a in self.raw.get("derivedAttributes") or []
                             if isinstance(a, dict)}
        return self._derived


@dataclass(eq=False)
class Slot:
    """A request of a claim in one search: its spec, or its subrequests in priority
    order, and which of them the search chose."""

    name: str
    options: tuple[Spec, ...]
    first_available: bool
    selected: int = 0


@dataclass(eq=False)
class ClaimState:
    """A claim in one search: what the search chose for it so far."""

    obj: dict[str, Any]
    name: str
    slots: list[Slot]
    constraints: list[Constraint]
    chosen: list[Any] = field(default_factory=list)


@dataclass(eq=False, frozen=True)
class PreparedClaim:
    """A claim's requests checked and looked up once (classes, counts, gates,
    constraints), for any number of searches; `state()` is one search's fresh copy of
    the parts a search changes."""

    obj: dict[str, Any]
    name: str
    slots: tuple[tuple[str, tuple[Spec, ...], bool], ...]  # name, options, firstAvailable
    # (MatchAttribute or DistinctAttribute, index, attribute, requests, list-type,
    # versions by precedence)
    constraints: tuple[tuple[type[Constraint], int, str, frozenset[str], bool, bool], ...]
    # The fewest devices the claim can get, when that does not depend on the node (no
    # `allocationMode: All`), else None.
    minimum: int | None = field(init=False)
    # Whether every option of the first request takes at least one device exclusively
    # (ExactCount, no admin access): such a request is hopeless on a node whose devices
    # are all in use.
    first_takes_exclusively: bool = field(init=False)

    def __post_init__(self) -> None:
        node_dependent = any(spec.mode == "All" for _, options, _ in self.slots
                             for spec in options)
        object.__setattr__(self, "minimum", None if node_dependent else sum(
            min(spec.count for spec in options) for _, options, _ in self.slots))
        object.__setattr__(self, "first_takes_exclusively", bool(self.slots) and all(
            spec.mode == "ExactCount" and not spec.admin and spec.count >= 1
            for spec in self.slots[0][1]))

    def state(self) -> ClaimState:
        return ClaimState(self.obj, self.name,
                          [Slot(name, options, first) for name, options, first in self.slots],
                          [kind(i, attribute, requests, lists, precedence)
                           for kind, i, attribute, requests, lists, precedence
                           in self.constraints])


def prepare_claim(index: int, claim: dict[str, Any], classes: dict[str, dict[str, Any]],
                  features: Features) -> PreparedClaim:
    c = claim_name(claim)
    devices = (claim.get("spec") or {}).get("devices") or {}
    slots: list[tuple[str, tuple[Spec, ...], bool]] = []
    for request in devices.get("requests") or []:
        name = request.get("name", "")
        subrequests = request.get("firstAvailable") or []
        gated = _gate_error(c, request, features)
        if gated:
            raise PrepareError(gated, tuple(slots))
        options: list[Spec] = []
        try:
            if subrequests:
                for sub in subrequests:
                    options.append(_spec(index, c, name, sub.get("name", ""), sub, classes,
                                         features))
            else:
                options.append(_spec(index, c, name, None, request.get("exactly") or {},
                                     classes, features))
        except AllocError as e:
            raise PrepareError(e.message, tuple(slots), tuple(options)) from None
        slots.append((name, tuple(options), bool(subrequests)))
    constraints: list[tuple[type[Constraint], int, str, frozenset[str], bool, bool]] = []
    precedence = features.since(VERSIONS_BY_PRECEDENCE)
    for i, raw in enumerate(devices.get("constraints") or []):
        requests = frozenset(raw.get("requests") or [])
        if raw.get("matchAttribute"):
            constraints.append((MatchAttribute, i, raw["matchAttribute"], requests,
                                features.list_type_attributes, precedence))
        elif raw.get("distinctAttribute") and not features.old_stable:
            constraints.append((DistinctAttribute, i, raw["distinctAttribute"], requests,
                                features.list_type_attributes, precedence))
        else:
            raise PrepareError(f"claim {c}, constraint #{i}: empty constraint (unsupported "
                               "constraint type?)", tuple(slots))
    return PreparedClaim(claim, c, tuple(slots), tuple(constraints))


def _gate_error(c: str, request: dict[str, Any], features: Features) -> str | None:
    """A request that uses a feature whose gate is off, as upstream refuses it."""
    name = request.get("name", "")
    subrequests = request.get("firstAvailable") or []
    if subrequests and not features.prioritized_list:
        return f"claim {c}, request {name}: has subrequests, but the DRAPrioritizedList " \
               "feature is disabled"
    # (Upstream's stable allocator ignores capacity requests instead.)
    if not features.consumable_capacity and not features.old_stable:
        if (request.get("exactly") or {}).get("capacity") is not None:
            return f"claim {c}, request {name}: has capacity requests, but the " \
                   "DRAConsumableCapacity feature is disabled"
        for sub in subrequests:
            if sub.get("capacity") is not None:
                return f"claim {c}, subrequest {sub.get('name', '')}: has capacity " \
                       "requests, but the DRAConsumableCapacity feature is disabled"
    return None


def _spec(index: int, c: str, request: str, sub: str | None, raw: dict[str, Any],
          classes: dict[str, dict[str, Any]], features: Features) -> Spec:
    label = sub or request
    for i, selector in enumerate(raw.get("selectors") or []):
        if not isinstance(selector, dict) or not (selector.get("cel") or {}).get("expression"):
            raise AllocError(f"claim {c}, request {label}, selector #{i}: CEL expression empty "
                             "(unsupported selector type?)")
    if "adminAccess" in raw and raw["adminAccess"] is not None and not features.admin_access:
        raise AllocError(f"claim {c}, request {label}: admin access is requested, but the "
                         "feature is disabled")
    if raw.get("derivedAttributes") and not features.derived_attributes:
        raise AllocError(f"claim {c}, request {label}: cannot handle request with derived "
                         "attributes, the feature is disabled")
    class_name = raw.get("deviceClassName") or ""
    if not class_name:
        raise AllocError(f"claim {c}, request {label}: missing device class name "
                         "(unsupported request type?)")
    device_class = classes.get(class_name)
    if device_class is None:
        raise AllocError(f"claim {c}, request {label}: could not retrieve device class "
                         f"{class_name}: deviceclass.resource.k8s.io \"{class_name}\" not found")
    mode = raw.get("allocationMode") or "ExactCount"
    if mode not in ("ExactCount", "All"):
        raise AllocError(f"claim {c}, request {label}: unsupported count mode {mode}")
    # The API defaults an ExactCount request's count to 1; an explicit 0 asks for nothing.
    count = int(raw["count"] or 0) if "count" in raw else 1
    requests = (raw.get("capacity") or {}).get("requests") or {}
    capacity = {k: quantity(v) for k, v in requests.items()}
    return Spec(index, c, request, sub, raw, class_name, device_class, mode, count,
                bool(raw.get("adminAccess")), list(raw.get("tolerations") or []), capacity,
                capacity_formats={k: quantity_format(v) for k, v in requests.items()})
