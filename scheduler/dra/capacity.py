"""Consumable capacity (DRAConsumableCapacity): how much of each capacity a request
consumes on a device after the device's request policy rounds it, and whether it fits.

Rounding up to a validRange's step is done as upstream does it: in whole units
(Quantity.Value(), which rounds up) unless DRAFractionalCapacityRange is on and the
range's min, max and step are all whole milli-units, then in milli-units (where a
request that is not a whole milli-unit is an error). The amount consumed keeps the
format of the quantity it came from (the request, the policy's default, min, step or
valid value, or the capacity), as upstream writes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import ceil
from typing import Any

from draemu.api.quantity import Quantity
from draemu.scheduler.dra.model import Capacity, Device, Exact, quantity, quantity_format

Amount = tuple[Exact, str]  # a value and the format it is written in


class CapacityError(Exception):
    """A capacity request that the range arithmetic cannot represent (upstream fails the
    allocation with it)."""


@dataclass(frozen=True, slots=True)
class Policy:
    default: Amount | None
    low: Amount | None  # validRange.min
    step: Amount | None
    high: Exact | None  # validRange.max
    values: tuple[Amount, ...]  # validValues, in the order given
    has_range: bool
    has_values: bool


def _amount(value: Any) -> Amount:
    return quantity(value), quantity_format(value)


def _policy(cap: Capacity) -> Policy | None:
    if cap.parsed_policy is None:
        policy: Any = cap.policy
        if not policy:
            return None
        valid_range = policy.get("validRange") or None
        valid_values = policy.get("validValues") or []
        rng = valid_range or {}

        def opt(raw: Any) -> Amount | None:
            return _amount(raw) if raw is not None else None

        cap.parsed_policy = Policy(
            opt(policy.get("default")), opt(rng.get("min")), opt(rng.get("step")),
            quantity(rng["max"]) if rng.get("max") is not None else None,
            tuple(_amount(v) for v in valid_values), valid_range is not None,
            bool(valid_values))
    return cap.parsed_policy


def _units(value: Exact) -> int:
    """Quantity.Value(): whole units, rounded up."""
    return ceil(value)


def _is_milli(value: Exact) -> bool:
    return (value * 1000) % 1 == 0


def _use_milli(p: Policy, fractional: bool) -> bool:
    """upstream's useMilli: the gate is on and the range is all whole milli-units."""
    if not fractional:
        return False
    bounds = [p.low[0] if p.low else None, p.high, p.step[0] if p.step else None]
    if any(b is not None and not _is_milli(b) for b in bounds):
        return False
    return p.step is None or p.step[0] * 1000 >= 1


def _round_up(requested: Amount, p: Policy, fractional: bool) -> Amount:
    """roundUpRange: the request rounded up to the range's min and step."""
    assert p.low is not None
    if requested[0] < p.low[0]:
        return p.low
    if p.step is None:
        return requested
    if _use_milli(p, fractional):
        if not _is_milli(requested[0]):
            raise CapacityError(
                "capacity request cannot be represented in the device's range arithmetic: "
                f"request {_text(requested)} is not a representable milli value")
        value, step, low = (int(requested[0] * 1000), ceil(p.step[0] * 1000),
                            ceil(p.low[0] * 1000))
        n = -(-(value - low) // step)
        milli = low + step * n
        return (milli // 1000 if milli % 1000 == 0 else Fraction(milli, 1000)), p.step[1]
    value, step, low = _units(requested[0]), _units(p.step[0]), _units(p.low[0])
    n = -(-(value - low) // step)
    return low + step * n, p.step[1]


def _violates(amount: Exact, p: Policy, fractional: bool) -> bool:
    """violatesPolicy: whether the amount consumed breaks the policy."""
    if p.default is not None and amount == p.default[0]:
        return False
    if p.has_range:
        if p.high is not None and amount > p.high:
            return True
        if p.step is not None and p.low is not None:
            if _use_milli(p, fractional):
                if not _is_milli(amount):
                    return True
                value, step, low = (int(amount * 1000), ceil(p.step[0] * 1000),
                                    ceil(p.low[0] * 1000))
            else:
                value, step, low = _units(amount), _units(p.step[0]), _units(p.low[0])
            return _go_rem(value - low, step) != 0
        return False
    if p.has_values:
        return all(amount != v for v, _ in p.values)
    return False


def _go_rem(a: int, b: int) -> int:
    """Go's %: the remainder takes the dividend's sign."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def _consumption(cap: Capacity, requested: Amount | None, fractional: bool) -> Amount | None:
    """The amount consumed, or None when the policy forbids it."""
    policy = _policy(cap)
    if requested is None:
        amount = policy.default if policy is not None and policy.default is not None \
            else (cap.value, cap.format)
    elif policy is None:
        return requested
    elif policy.has_range and policy.low is not None:
        amount = _round_up(requested, policy, fractional)
    elif policy.has_values:
        amount = next(((v, f) for v, f in policy.values if requested[0] <= v), requested)
    else:
        amount = requested
    if policy is not None and _violates(amount[0], policy, fractional):
        return None
    return amount


def consumption(device: Device, requests: dict[str, Exact],
                key: tuple[tuple[str, Exact], ...] | None = None, *,
                fractional: bool = False, formats: dict[str, str] | None = None,
                resolve: bool = False) -> dict[str, Exact] | None:
    """What the request consumes of each capacity of the device; None if it cannot be
    served at all (an unknown capacity is requested or a policy is violated). `key`:
    the requests as a hashable key, to keep the answer with the device. The answer is
    shared: never change it. Raises CapacityError (with the capacity's name)."""
    if key is not None:
        cached = device.consumptions.get(key, False)
        if cached is not False:
            return cached  # type: ignore[return-value]
    amounts = _amounts(device, requests, fractional, formats or {}, resolve)
    out = None if amounts is None else {name: a[0] for name, a in amounts.items()}
    if key is not None:
        device.consumptions[key] = out
    return out


def consumed_quantities(device: Device, requests: dict[str, Exact],
                        formats: dict[str, str], fractional: bool,
                        resolve: bool = False) -> dict[str, str]:
    """A share's consumedCapacity as upstream writes it: every capacity of the device
    (named as the slice names it), each in the format of the quantity its amount came
    from."""
    amounts = _amounts(device, requests, fractional, formats, resolve) or {}
    return {name: _text(a) for name, a in amounts.items()}


def _resolved(device: Device, requests: dict[str, Exact], formats: dict[str, str]
              ) -> tuple[dict[str, Exact], dict[str, str]] | None:
    """1.38: each requested capacity matched to the device's capacity of that name, the
    driver being the domain of a name without one, so that either spelling finds it (None
    if one names no capacity of the device). Asking for one capacity under both spellings
    is an error, as upstream's resolveCapacityRequests says it."""
    driver = device.id[0]

    def qualified(name: str) -> str:
        return name if "/" in name else f"{driver}/{name}"

    by_name = {qualified(name): name for name in device.capacity}
    out: dict[str, Exact] = {}
    out_formats: dict[str, str] = {}
    for name in sorted(requests):
        full = qualified(name)
        own = by_name.get(full)
        if own is None:
            return None
        if own in out:
            ident = full.split("/", 1)[1]
            other = ident if name == full else full
            raise CapacityError(f'capacity "{ident}" requested both as "{name}" and as '
                                f'"{other}"')
        out[own] = requests[name]
        if name in formats:
            out_formats[own] = formats[name]
    return out, out_formats


def _amounts(device: Device, requests: dict[str, Exact], fractional: bool,
             formats: dict[str, str], resolve: bool = False) -> dict[str, Amount] | None:
    if resolve:
        found = _resolved(device, requests, formats)
        if found is None:
            return None
        requests, formats = found
    elif any(name not in device.capacity for name in requests):
        return None
    out: dict[str, Amount] = {}
    for name, cap in device.capacity.items():
        requested = requests.get(name)
        try:
            amount = _consumption(
                cap, None if requested is None else
                (requested, formats.get(name, "DecimalSI")), fractional)
        except CapacityError as e:
            raise CapacityError(f'capacity "{name}": {e}') from None
        if amount is None:
            return None
        out[name] = amount
    return out


def _text(amount: Amount) -> str:
    return Quantity(amount[0], amount[1]).canonical()
