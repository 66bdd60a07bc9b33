"""Binding conditions (DRADeviceBindingConditions): a device may need conditions in the
claim's `status.devices` to be true before the pod is bound, and fails binding when one
of its failure conditions is true. PreBind waits for them on the claim informer.
"""

from __future__ import annotations

import time

from draemu.api.meta import now, parse_time
from draemu.scheduler.dra.manager import DRAManager
from draemu.scheduler.plugins.dynamicresources.podstate import PreBindError, claim_key


def has_binding_conditions(allocation: dict | None) -> bool:
    return any(r.get("bindingConditions") for r in
               ((allocation or {}).get("devices") or {}).get("results") or [])


def binding_verdict(claim: dict) -> str | None:
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


def binding_done(claim: dict) -> bool:
    conditions = _device_conditions(claim)
    for r in _results(claim):
        have = _conditions_of(conditions, r)
        if any((have.get(c) or {}).get("status") != "True"
               for c in r.get("bindingConditions") or []):
            return False
    return True


def ready_for_binding(claim: dict, binding_timeout: float) -> bool:
    """False when a binding failure condition is true, or when the binding conditions
    are still not all true after the binding timeout (counted from allocation)."""
    if binding_verdict(claim) is not None:
        return False
    if binding_done(claim):
        return True
    stamp = claim["status"]["allocation"].get("allocationTimestamp")
    if not stamp:
        return True
    allocated = parse_time(stamp)
    if allocated is None:
        return True
    return (now() - allocated).total_seconds() <= binding_timeout


async def wait_until_bound(dra: DRAManager, written: list[dict], deadline: float) -> None:
    """Waits on the claim informer. The results (what must be bound) come from the claims
    as written; the device conditions from the informer's copies, which are newer once
    they have any (the informer may still show the claim unallocated)."""
    while not all([_bound(dra, claim) for claim in written]):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise PreBindError("device binding timeout")
        await dra.next_claim_event(remaining)


def _bound(dra: DRAManager, claim: dict) -> bool:
    """Whether the claim's devices are bound; PreBindError if binding failed or the claim
    is going away."""
    meta = claim["metadata"]
    key = claim_key(meta["namespace"], meta["name"])
    # Not seen yet (a claim we just created) is not deleted: a reserved claim cannot go
    # away, its finalizer holds it until it is released.
    latest = dra.claim(meta["namespace"], meta["name"]) or claim
    if latest["metadata"].get("uid") != meta.get("uid") or \
            latest["metadata"].get("deletionTimestamp"):
        raise PreBindError(f"resourceclaim {key} is being deleted")
    if (latest.get("status") or {}).get("devices"):
        claim = {**claim, "status": {**claim["status"], "devices": latest["status"]["devices"]}}
    verdict = binding_verdict(claim)
    if verdict is not None:
        raise PreBindError(verdict)
    return binding_done(claim)


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
