"""Who may change which part of a ResourceClaim's status (1.37, gate
DRAResourceClaimGranularStatusAuthorization, beta and on by default), as upstream's
resourceclaim status strategy checks it (pkg/registry/resource/utils.go):

- `status.allocation` and `status.reservedFor` only with the request's verb on the
  synthetic `resourceclaims/binding` subresource, cluster-wide (the scheduler and the
  resource claim controller have it);
- each driver's entries of `status.devices` (gate DRAResourceClaimDeviceStatus, and only
  while allocated) only with `associated-node:<verb>` (a service account running on the
  claim's node, known by its node-name extra) or `arbitrary-node:<verb>` on the
  synthetic `resourceclaims/driver` subresource named for the driver, in the claim's
  namespace.

A refusal is a Forbidden field error whose detail carries the authorizer's 403 text.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from draemu.api.errors import FieldError, Path, forbidden
from draemu.api.types import Obj
from draemu.apiserver.auth.authorization import Attributes
from draemu.apiserver.auth.authorization import forbidden as forbidden_status
from draemu.apiserver.registry.strategy import Context
from draemu.identity import UserInfo, split_service_account

GROUP = "resource.k8s.io"
NODE_NAME_EXTRA = "authentication.kubernetes.io/node-name"


def _semantic(value: Any) -> Any:
    """absent, null and empty alike, as Go's semantic equality sees the typed fields."""
    if isinstance(value, dict):
        kept = {k: _semantic(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in (None, "", [], {})}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def _check(ctx: Context, attrs: Attributes) -> str:
    """"" when allowed, else the 403 message the request would get."""
    decision = ctx.authorizer.authorize(attrs)
    return "" if decision.allowed else forbidden_status(attrs, decision.reason).message


def _node_of_allocation(allocation: Obj | None) -> str:
    terms = ((allocation or {}).get("nodeSelector") or {}).get("nodeSelectorTerms") or []
    if len(terms) != 1 or terms[0].get("matchExpressions"):
        return ""
    fields = terms[0].get("matchFields") or []
    if len(fields) != 1:
        return ""
    f = fields[0]
    if f.get("key") != "metadata.name" or f.get("operator") != "In" or \
            len(f.get("values") or []) != 1:
        return ""
    return f["values"][0]


def _on_allocated_node(user: UserInfo, node: str) -> bool:
    if not node or split_service_account(user.name) is None:
        return False
    names = user.extra.get(NODE_NAME_EXTRA) or []
    return len(names) == 1 and names[0] == node


def _device_key(d: Obj) -> tuple[str, str, str, str]:
    return (d.get("driver", ""), d.get("pool", ""), d.get("device", ""),
            d.get("shareID") or "")


def modified_drivers(new: Obj, old: Obj) -> set[str]:
    """Drivers whose status.devices entries were added, changed or removed."""
    before = {_device_key(d): d for d in old.get("devices") or []}
    drivers: set[str] = set()
    for d in new.get("devices") or []:
        previous = before.pop(_device_key(d), None)
        if previous is None or _semantic(previous) != _semantic(d):
            drivers.add(d.get("driver", ""))
    drivers.update(d.get("driver", "") for d in before.values())
    return drivers


def status_errors(new: Obj, old: Obj, namespace: str, ctx: Context) -> list[FieldError]:
    if ctx.authorizer is None or not isinstance(ctx.user_info, UserInfo) or \
            not ctx.gates.enabled("DRAResourceClaimGranularStatusAuthorization"):
        return []
    user, verb = ctx.user_info, ctx.verb or "update"
    new_status, old_status = new.get("status") or {}, old.get("status") or {}
    errors: list[FieldError] = []
    base = Attributes(user, verb, GROUP, "", "resourceclaims", namespace=namespace)
    if any(_semantic(new_status.get(f)) != _semantic(old_status.get(f))
           for f in ("allocation", "reservedFor")):
        problem = _check(ctx, replace(base, subresource="binding", namespace=""))
        if problem:
            errors.append(forbidden(Path("status.allocation"), "changing status.allocation "
                                    "or status.reservedFor requires "
                                    f'resource="resourceclaims/binding", verb="{verb}" '
                                    f"permission: {problem}"))
    if ctx.gates.enabled("DRAResourceClaimDeviceStatus") and new_status.get("allocation"):
        verbs = [f"arbitrary-node:{verb}"]
        if _on_allocated_node(user, _node_of_allocation(new_status.get("allocation"))):
            verbs.insert(0, f"associated-node:{verb}")
        for driver in sorted(modified_drivers(new_status, old_status)):
            problems = [_check(ctx, replace(base, verb=v, subresource="driver", name=driver))
                        for v in verbs]
            if all(problems):
                errors.append(forbidden(Path("status.devices"), "changing status.devices "
                                        'requires resource="resourceclaims/driver", '
                                        f'verb="[{" ".join(verbs)}]" permission: {problems[0]}'))
    return errors
