"""Consumable capacity (DRAConsumableCapacity): how much of each capacity a request
consumes on a device after the device's request policy rounds it, and whether it fits."""

from __future__ import annotations

from typing import Any

from draemu.scheduler.dra.model import Capacity, Device, Exact, quantity

# A capacity's request policy, read once: (default, validRange min, step, max, sorted
# validValues, whether a validRange is given, whether validValues are).
Policy = tuple[Exact | None, Exact | None, Exact | None, Exact | None, list[Exact], bool, bool]


def _policy(cap: Capacity) -> Policy | None:
    if cap.parsed_policy is None:
        policy: Any = cap.policy
        if not policy:
            return None
        default = quantity(policy.get("default")) if policy.get("default") is not None \
            else None
        valid_range = policy.get("validRange")
        valid_values = policy.get("validValues")
        lo = step = hi = None
        values: list[Exact] = []
        if valid_range:
            lo = quantity(valid_range.get("min")) if valid_range.get("min") is not None \
                else None
            step = quantity(valid_range.get("step")) if valid_range.get("step") is not None \
                else None
            hi = quantity(valid_range.get("max")) if valid_range.get("max") is not None \
                else None
        elif valid_values:
            values = sorted(quantity(v) for v in valid_values)
        cap.parsed_policy = (default, lo, step, hi, values, bool(valid_range),
                             bool(valid_values))
    return cap.parsed_policy


def _consumption(cap: Capacity, requested: Exact | None) -> Exact | None:
    """The amount consumed, or None when the policy forbids it."""
    policy = _policy(cap)
    if policy is None:
        return cap.value if requested is None else requested
    default, lo, step, hi, values, has_range, has_values = policy
    if requested is None:
        return default if default is not None else cap.value
    if has_range:
        amount = requested
        if lo is not None:
            if requested < lo:
                amount = lo
            elif step:
                # The ceiling of (requested - lo) / step, exactly for ints and Fractions.
                amount = lo - ((lo - requested) // step) * step
        if amount == default:
            return amount
        if hi is not None and amount > hi:
            return None
        if step and lo is not None and (amount - lo) % step != 0:
            return None
        return amount
    if has_values:
        amount = next((v for v in values if v >= requested), requested)
        if amount != default and amount not in values:
            return None
        return amount
    return requested


def consumption(device: Device, requests: dict[str, Exact],
                key: tuple[tuple[str, Exact], ...] | None = None) -> dict[str, Exact] | None:
    """What the request consumes of each capacity of the device; None if it cannot be
    served at all (an unknown capacity is requested or a policy is violated). `key`:
    the requests as a hashable key, to keep the answer with the device. The answer is
    shared: never change it."""
    if key is not None:
        cached = device.consumptions.get(key, False)
        if cached is not False:
            return cached  # type: ignore[return-value]
    out: dict[str, Exact] | None = {}
    if any(name not in device.capacity for name in requests):
        out = None
    else:
        for name, cap in device.capacity.items():
            amount = _consumption(cap, requests.get(name))
            if amount is None:
                out = None
                break
            out[name] = amount  # type: ignore[index]
    if key is not None:
        device.consumptions[key] = out
    return out
