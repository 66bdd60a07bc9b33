"""Consumable capacity (DRAConsumableCapacity): how much of each capacity a request
consumes on a device after the device's request policy rounds it, and whether it fits."""

from __future__ import annotations

from collections.abc import Callable

from draemu.scheduler.dra.model import Device, Exact, quantity


def _consumption(value: Exact, policy: dict | None, requested: Exact | None
                 ) -> Exact | None:
    """The amount consumed, or None when the policy forbids it."""
    default = quantity(policy.get("default")) if policy and policy.get("default") is not None \
        else None
    if requested is None:
        return default if default is not None else value
    if not policy:
        return requested
    valid_range = policy.get("validRange")
    valid_values = policy.get("validValues")
    if valid_range:
        lo = quantity(valid_range.get("min")) if valid_range.get("min") is not None else None
        step = quantity(valid_range.get("step")) if valid_range.get("step") is not None else None
        hi = quantity(valid_range.get("max")) if valid_range.get("max") is not None else None
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
    if valid_values:
        values = sorted(quantity(v) for v in valid_values)
        amount = next((v for v in values if v >= requested), requested)
        if amount != default and amount not in values:
            return None
        return amount
    return requested


def consumption(device: Device, requests: dict[str, Exact]) -> dict[str, Exact] | None:
    """What the request consumes of each capacity of the device; None if it cannot be
    served at all (an unknown capacity is requested or a policy is violated)."""
    if any(name not in device.capacity for name in requests):
        return None
    out: dict[str, Exact] = {}
    for name, cap in device.capacity.items():
        amount = _consumption(cap.value, cap.policy, requests.get(name))
        if amount is None:
            return None
        out[name] = amount
    return out


def fits(device: Device, amounts: dict[str, Exact],
         used: Callable[[str], Exact]) -> str | None:
    """None when `amounts` fit next to what is `used` already, else which capacity is short."""
    for name, amount in amounts.items():
        cap = device.capacity[name].value
        if amount + used(name) > cap:
            return name
    return None
