"""PodDisruptionBudgets on pods/eviction (upstream's EvictionREST): an eviction of a
running pod selected by a budget takes one of the budget's `disruptionsAllowed` (recorded
in `status.disruptedPods`, which the disruption controller confirms or expires), or is
refused with 429 and upstream's causes while the budget allows none or has not been
processed since its last change. A pod that is pending, finished or being deleted
ignores budgets; an unready pod may go when the budget says AlwaysAllow, or when the
budget is healthy anyway (IfHealthyBudget, the default). A pod with more than one budget
cannot be evicted (upstream answers 500)."""

from __future__ import annotations

import copy
from typing import Any

from draemu.api.errors import StatusError, forbidden_error
from draemu.api.labels import matches
from draemu.api.meta import get_condition, pod_is_ready, time_now
from draemu.api.types import Obj
from draemu.apiserver.endpoints.scope import Scope
from draemu.apiserver.genericregistry.store import Store

CAUSE = "DisruptionBudget"
MAX_DISRUPTED_PODS = 2000


def can_ignore(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed", "Pending") or \
        bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def budgets_of(scope: Scope, store: Store, pod: Obj) -> list[Obj]:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return [p for p in store.objects.list_objects("poddisruptionbudgets", "policy",
                                                   scope.namespace)
            if (p.get("spec") or {}).get("selector") is not None
            and matches(p["spec"]["selector"], labels)]


def _too_many(message: str, cause: str, retry: int) -> StatusError:
    details: dict[str, Any] = {"causes": [{"reason": CAUSE, "message": cause}]}
    headers = {}
    if retry:
        details["retryAfterSeconds"] = retry
        headers["Retry-After"] = str(retry)
    return StatusError(429, "TooManyRequests", message, details, headers)


def _refusal(pdb: Obj) -> StatusError | None:
    """Why the budget allows no eviction now (checkAndDecrement's checks), or None."""
    name = pdb["metadata"]["name"]
    status = pdb.get("status") or {}
    violate = "Cannot evict pod as it would violate the pod's disruption budget."
    if int(status.get("observedGeneration") or 0) < int(pdb["metadata"].get("generation") or 0):
        return _too_many(violate, f"The disruption budget {name} is still being processed by "
                         "the server.", 10)
    allowed = int(status.get("disruptionsAllowed") or 0)
    if allowed < 0 or len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_PODS:
        why, cause = ("pdb disruptions allowed is negative", "pdb disruptions allowed is "
                      "negative") if allowed < 0 else (
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
            "too many pending evictions not confirmed by PDB controller")
        return forbidden_error(
            f'poddisruptionbudgets.policy "{name}" is forbidden: {why}',
            {"name": name, "group": "policy", "kind": "poddisruptionbudgets", "causes": [
                {"reason": CAUSE, "message": f"The disruption budget {name} does not allow "
                 f"evicting pods currently: {cause}"}]})
    if allowed == 0:
        healthy, desired = int(status.get("currentHealthy") or 0), int(
            status.get("desiredHealthy") or 0)
        cond = get_condition(pdb, "DisruptionAllowed") or {}
        if cond.get("status") == "False" and cond.get("message") and \
                cond.get("reason") == "SyncFailed":
            cause = (f"The disruption budget {name} does not allow evicting pods currently "
                     f"because it failed sync: {cond['message']}")
        elif healthy <= desired:
            cause = (f"The disruption budget {name} needs {desired} healthy pods and has "
                     f"{healthy} currently")
        elif cond.get("status") == "False" and cond.get("message"):
            cause = (f"The disruption budget {name} does not allow evicting pods currently "
                     f"({cond.get('reason')}): {cond['message']}")
        else:
            cause = f"The disruption budget {name} does not allow evicting pods currently"
        return _too_many(violate, cause, 0)
    return None


async def take_disruption(scope: Scope, store: Store, pod: Obj,
                          dry_run: bool) -> dict[str, Any] | None:
    """Check the pod's budget and take one disruption from it. Returns a Status to answer
    instead of evicting (several budgets), raises a refusal, or None to go on."""
    pdbs = budgets_of(scope, store, pod)
    if len(pdbs) > 1:
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "This pod has more than one PodDisruptionBudget, which the "
                "eviction subresource does not support.", "code": 500}
    if not pdbs:
        return None
    pdb = pdbs[0]
    status = pdb.get("status") or {}
    if not pod_is_ready(pod):
        if (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy") == "AlwaysAllow":
            return None
        desired = int(status.get("desiredHealthy") or 0)
        if int(status.get("currentHealthy") or 0) >= desired > 0:
            return None
    resource = store.table.by_group_resource("policy", "poddisruptionbudgets")
    assert resource is not None
    pod_name = pod["metadata"]["name"]

    async def decrement(latest: Obj, _old: Obj) -> Obj:
        refusal = _refusal(latest)
        if refusal is not None:
            raise refusal
        st = latest.setdefault("status", {})
        st["disruptionsAllowed"] = int(st.get("disruptionsAllowed") or 0) - 1
        if st["disruptionsAllowed"] == 0:
            for cond in st.get("conditions") or []:
                if cond.get("type") == "DisruptionAllowed" and cond.get("status") != "False":
                    cond.update({"status": "False", "reason": "InsufficientPods",
                                 "lastTransitionTime": time_now()})
        st.setdefault("disruptedPods", {})[pod_name] = time_now()
        return latest

    if dry_run:
        refusal = _refusal(copy.deepcopy(pdb))
        if refusal is not None:
            raise refusal
        return None
    await store.storage.update(resource, scope.namespace, pdb["metadata"]["name"], decrement)
    return None
