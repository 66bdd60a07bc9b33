"""Why an allocation on a node came out as it did: per claim, request and device.

Upstream reports only "cannot allocate all claims". This module keeps that shape for
the scheduler and adds what a person needs: which selector was false (with the
attribute values it saw), which device was in use, which taint was not tolerated,
which counter or capacity ran out, which constraint clashed with which device, and
which pools could not be used.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Protocol

from draemu.scheduler.dra.clauses import failing_clause, plain
from draemu.scheduler.dra.features import Features
from draemu.scheduler.dra.model import Device, DeviceID, device_id_str
from draemu.scheduler.dra.pools import NodePools, Pool
from draemu.scheduler.dra.requests import AllocError, ClaimState, Spec


class SearchView(Protocol):
    """What an explanation reads of the allocator's search on one node (the search
    implements it): what it gathered, and the checks it makes of one device, so that an
    explanation gives the search's own reasons."""

    node_name: str
    node_pools: NodePools | None  # None: gathering the node's pools failed
    claims: list[ClaimState]  # the pod's claims as the search left them
    features: Features

    def selectable(self, spec: Spec, device: Device) -> str | None: ...

    def in_exclusive_use(self, device: DeviceID) -> bool: ...

    def holders(self, device: DeviceID) -> list[str]: ...

    def capacity_short(self, spec: Spec, device: Device) -> str | None: ...

    def taint_blocks(self, spec: Spec, device: Device) -> str | None: ...

    def counters_short(self, device: Device, pool: Pool, *, alone: bool = False
                       ) -> str | None: ...

    def pool_of(self, device: Device) -> Pool: ...

    def rejection(self, spec: Spec, device: Device) -> str | None: ...


@dataclass
class DeviceReport:
    device: str
    ok: bool
    reason: str
    seen: str = ""  # attribute values the failing selector looked at
    clause: str = ""  # the part of a false selector that is false on this device
    plain: str = ""  # that part in words: "memory 16Gi, too small (needs >= 80Gi)"

    def to_dict(self) -> dict[str, Any]:
        out = {"device": self.device, "ok": self.ok, "reason": self.reason}
        for key in ("seen", "clause", "plain"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        return out

    def line(self) -> str:
        """The reason on one line: in words first when there are words for it."""
        if self.plain:
            return f"{self.plain} — {self.reason.split(':', 1)[0]}: {self.clause}"
        return self.reason + (f" [{self.seen}]" if self.seen else "")


@dataclass
class RequestReport:
    claim: str
    request: str
    device_class: str
    needed: str
    chosen: list[str] = field(default_factory=list)
    devices: list[DeviceReport] = field(default_factory=list)

    @property
    def fitting(self) -> int:
        return sum(d.ok for d in self.devices)

    def to_dict(self) -> dict[str, Any]:
        return {"claim": self.claim, "request": self.request, "deviceClass": self.device_class,
                "needed": self.needed, "chosen": self.chosen,
                "devices": [d.to_dict() for d in self.devices]}


@dataclass
class Explanation:
    node: str
    outcome: str
    error: str | None
    pools: list[str]
    requests: list[RequestReport]
    summary: str

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "outcome": self.outcome, "summary": self.summary,
                "pools": self.pools, "requests": [r.to_dict() for r in self.requests]}

    def text(self) -> str:
        mark = "✅" if self.outcome == "Allocated" else "❌"
        lines = [f"{mark} node {self.node}: {self.outcome} — {self.summary}"]
        lines += [f"    pool note: {p}" for p in self.pools]
        for r in self.requests:
            lines.append(f"  claim {r.claim}, request {r.request} (class {r.device_class}, "
                         f"needs {r.needed}): {r.fitting} of {len(r.devices)} devices fit")
            for d in r.devices:
                icon = "✅" if d.device in r.chosen else ("✔" if d.ok else "❌")
                lines.append(f"    {icon} {d.device}: {d.line()}")
        return "\n".join(lines)


_REFERENCE = re.compile(
    r"device\.(attributes|capacity)\[\s*[\"']([^\"']+)[\"']\s*\]"
    r"(?:\s*\.\s*\??([A-Za-z_][A-Za-z0-9_]*)|\s*\[\s*\??\s*[\"']([^\"']+)[\"']\s*\])")
_FIELDS = re.compile(r"device\s*\.\s*(driver|allowMultipleAllocations)\b")


def seen_values(expression: str, device: Device, *, fields: bool = False) -> str:
    """The device's values for the attributes and capacities an expression names, and
    with `fields` its fields too (driver, allowMultipleAllocations)."""
    parts: list[str] = []
    for name in _FIELDS.findall(expression) if fields else ():
        value = device.id[0] if name == "driver" else bool(device.raw.get(name))
        parts.append(f"{name}={_show({'bool': value} if name != 'driver' else value)}")
    for kind, domain, dotted, indexed in _REFERENCE.findall(expression):
        name = dotted or indexed
        table = device.attributes if kind == "attributes" else device.raw.get("capacity") or {}
        value = table.get(f"{domain}/{name}")
        if value is None and domain == device.id[0]:
            value = table.get(name)
        label = f"{name}" if domain == device.id[0] else f"{domain}/{name}"
        parts.append(f"{label}={_show(value)}")
    return ", ".join(dict.fromkeys(parts))


def _show(value: Any) -> str:
    if value is None:
        return "<absent>"
    if isinstance(value, dict):
        for key in ("string", "int", "bool", "version", "value", "strings", "ints", "bools",
                    "versions"):
            if key in value:
                v = value[key]
                if key == "int":
                    return _with_binary_quantity(v)
                return f'"{v}"' if key == "string" else str(v).lower() if key == "bool" \
                    else str(v)
    return str(value)


_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20))


def _with_binary_quantity(value: Any) -> str:
    """An integer attribute; a byte count that is a whole number of Mi or more also as
    the quantity people write (85899345920 (80Gi))."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        for suffix, unit in _BINARY:
            if value % unit == 0:
                return f"{value} ({value // unit}{suffix})"
    return str(value)


def _device_report(search: SearchView, ci: int, spec: Spec, device: Device, usable: bool,
                   pool_reason: str, chosen: set[str]) -> DeviceReport | None:
    name = device_id_str(device.id)
    everything = " ".join([*spec.class_selectors, *spec.selectors])
    if name in chosen:
        return DeviceReport(name, True, "chosen", seen_values(everything, device))
    if not usable:
        return DeviceReport(name, False, pool_reason)
    try:
        reason = search.selectable(spec, device)
    except AllocError as e:
        return DeviceReport(name, False, e.message)
    if reason == "not available on this node":
        return None
    if reason is not None:
        expression = _failed_expression(reason, spec)
        if expression is None:
            return DeviceReport(name, False, reason)
        clause = failing_clause(expression, device.cel())
        return DeviceReport(name, False, reason, seen_values(expression, device, fields=True),
                            clause,
                            plain(clause, device.cel()))
    reason = None
    if not spec.admin and search.in_exclusive_use(device.id):
        holders = search.holders(device.id)
        reason = f"in use by claim {', '.join(holders)}" if holders else \
            "in use (allocation in flight)"
    if reason is None and search.features.consumable_capacity:
        try:
            reason = search.capacity_short(spec, device)
        except AllocError as e:
            return DeviceReport(name, False, e.message)
    if reason is None:
        reason = search.taint_blocks(spec, device)
    if reason is None and device.consumes:
        if not search.features.partitionable_devices:
            reason = "consumes counters, but DRAPartitionableDevices is disabled"
        else:
            reason = search.counters_short(device, search.pool_of(device), alone=True)
    if reason is None:
        reason = search.rejection(spec, device)
    if reason is not None:
        return DeviceReport(name, False, reason)
    return DeviceReport(name, True, "matches", seen_values(everything, device))


_SELECTOR = re.compile(r"^(?:class \S+|request \S+) selector #(\d+) is false")


def _failed_expression(reason: str, spec: Spec) -> str | None:
    """The selector a `selectable` reason names (the reason shows it on one line)."""
    m = _SELECTOR.match(reason)
    if m is None:
        return None
    selectors = spec.class_selectors if reason.startswith("class ") else spec.selectors
    index = int(m.group(1))
    return selectors[index] if index < len(selectors) else None


def explain(search: SearchView, error: str | None, *, allocated: bool) -> Explanation:
    pools = search.node_pools.pools if search.node_pools else []
    notes = list(search.node_pools.notes) if search.node_pools else []
    for p in pools:
        if p.incomplete:
            notes.append(f"pool {p.id} is incomplete (generation {p.generation} is still "
                         "being published); its devices are not used")
        elif p.invalid:
            notes.append(f"pool {p.id} is invalid: {p.invalid}")
    requests: list[RequestReport] = []
    for ci, claim in enumerate(search.claims):
        for slot in claim.slots:
            options = [slot.options[slot.selected]] if allocated else slot.options
            requests.extend(_request_report(search, ci, claim, spec, pools)
                            for spec in options)
    outcome = "Allocated" if allocated else "Error" if error else "Unsatisfiable"
    summary = error or _summary(search, requests, notes, outcome)
    return Explanation(search.node_name, outcome, error, notes, requests, summary)


def _request_report(search: SearchView, ci: int, claim: ClaimState, spec: Spec,
                    pools: list[Pool]) -> RequestReport:
    chosen = {device_id_str(c.device.id) for c in claim.chosen if c.spec is spec}
    needed = "all" if spec.mode == "All" else str(spec.count)
    report = RequestReport(claim.name, spec.name, spec.class_name, needed, sorted(chosen))
    for pool in pools:
        reason = "pool incomplete" if pool.incomplete else \
            f"pool invalid: {pool.invalid}" if pool.invalid else ""
        for device in pool.devices:
            r = _device_report(search, ci, spec, device, pool.usable, reason, chosen)
            if r is not None:
                report.devices.append(r)
    return report


def _summary(search: SearchView, requests: list[RequestReport], notes: list[str],
             outcome: str) -> str:
    if outcome == "Allocated":
        parts = [f"{r.claim} {r.request} → {', '.join(r.chosen)}" for r in requests if r.chosen]
        return "allocated: " + "; ".join(parts) if parts else "nothing to allocate"
    if not any(r.devices for r in requests):
        extra = f" ({notes[0]})" if notes else ""
        return f"cannot allocate all claims: no devices on node {search.node_name}{extra}"
    # The first request none of whose alternatives (firstAvailable) can be met alone.
    by_request: dict[tuple[str, str], list[RequestReport]] = {}
    for r in requests:
        by_request.setdefault((r.claim, r.request.split("/")[0]), []).append(r)
    for options in by_request.values():
        if all(_short(r) for r in options):
            r = options[0]
            return f"cannot allocate all claims: claim {r.claim}, request {r.request}: " \
                f"{r.fitting} of {len(r.devices)} devices fit, {r.needed} needed; " \
                + _top_reasons(r)
    constraint_reasons = [d.reason for r in requests for d in r.devices
                          if d.reason.startswith("constraint")]
    if constraint_reasons:
        return "cannot allocate all claims: claim constraints cannot be met together: " + \
            constraint_reasons[0]
    return "cannot allocate all claims: the requests compete for the same devices " + \
        "(not enough devices fit all of them at once)"


def _short(r: RequestReport) -> bool:
    """Whether the request cannot be met even with the node to itself."""
    if r.needed != "all":
        return r.fitting < max(int(r.needed), 1)
    # All: every device the selectors pick must be usable, and there must be one.
    picked = [d for d in r.devices if "selector" not in category(d.reason)]
    return not picked or any(not d.ok for d in picked)


def _top_reasons(r: RequestReport) -> str:
    counts = Counter(category(d.reason) for d in r.devices if not d.ok)
    return ", ".join(f"{n} {reason}" for reason, n in counts.most_common(3))


_CATEGORIES = [
    (re.compile(r"^(class \S+ selector #\d+) is false"), r"\1 false"),
    (re.compile(r"^request \S+ (selector #\d+) is false"), r"request \1 false"),
    (re.compile(r"^in use"), "in use"),
    (re.compile(r"^taint "), "tainted"),
    (re.compile(r"^(capacity) "), "capacity exhausted"),
    (re.compile(r"^counter "), "counters exhausted"),
    (re.compile(r"^(constraint #\d+)"), r"\1 unmet"),
    (re.compile(r"^(pool \w+)"), r"\1"),
]


def category(reason: str) -> str:
    """A short form of a rejection reason, so that equal causes group together in the
    one-line summary (the FailedScheduling message)."""
    for pattern, short in _CATEGORIES:
        m = pattern.match(reason)
        if m:
            return m.expand(short)
    return reason
