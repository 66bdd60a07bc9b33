"""Object metadata helpers: names, owners, timestamps, conditions, tolerations."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

Obj = dict[str, Any]


def meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def name_of(obj: Obj) -> str:
    return str(meta(obj).get("name", ""))


def namespace_of(obj: Obj) -> str:
    return str(meta(obj).get("namespace") or "")


def uid_of(obj: Obj) -> str:
    return str(meta(obj).get("uid", ""))


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def now() -> datetime:
    return datetime.now(UTC)


def format_time(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def controller_of(obj: Obj) -> Obj | None:
    for ref in meta(obj).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def owner_reference(owner: Obj, *, controller: bool = True,
                    block_owner_deletion: bool = True) -> Obj:
    return {"apiVersion": owner.get("apiVersion", ""), "kind": owner.get("kind", ""),
            "name": name_of(owner), "uid": uid_of(owner), "controller": controller,
            "blockOwnerDeletion": block_owner_deletion}


def get_condition(obj: Obj, type_: str) -> Obj | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_:
            return cond
    return None


def set_condition(conditions: list[Obj], type_: str, status: str, reason: str = "",
                  message: str = "", *, probe_time: bool = False) -> bool:
    """Set a condition in place; the transition time moves only when the status changes.
    Returns whether anything changed."""
    stamp = format_time(now())
    for cond in conditions:
        if cond.get("type") == type_:
            changed = (cond.get("status"), cond.get("reason", ""), cond.get("message", "")) != (
                status, reason, message)
            if cond.get("status") != status:
                cond["lastTransitionTime"] = stamp
            cond.update({"status": status, "reason": reason, "message": message})
            if probe_time and changed:
                cond["lastProbeTime"] = stamp
            return changed
    cond = {"type": type_, "status": status, "lastTransitionTime": stamp}
    if probe_time:
        cond["lastProbeTime"] = stamp
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    conditions.append(cond)
    return True


def toleration_matches(toleration: Obj, taint: Obj) -> bool:
    """Whether a (pod or device) toleration tolerates a taint (key, value, effect), as
    upstream's ToleratesTaint: an empty effect or key matches any; Exists ignores the
    value, Equal (the default) compares it, other operators tolerate nothing."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def pod_is_terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def pod_is_done(pod: Obj) -> bool:
    """Certain that none of the pod's containers run or ever will: terminal, or deleted
    before it was scheduled."""
    return pod_is_terminal(pod) or (
        bool(meta(pod).get("deletionTimestamp")) and not (pod.get("spec") or {}).get("nodeName"))


def pod_is_ready(pod: Obj) -> bool:
    cond = get_condition(pod, "Ready")
    return bool(cond and cond.get("status") == "True")
