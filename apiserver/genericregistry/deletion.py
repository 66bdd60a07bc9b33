"""What a delete decides (upstream's BeforeDelete and the registry's finalizer rules):
preconditions, the grace period, and the propagation policy recorded as the `orphan` /
`foregroundDeletion` finalizers for the garbage collector."""

from __future__ import annotations

import datetime

from draemu.api.errors import conflict
from draemu.api.meta import format_time, now
from draemu.api.types import Obj
from draemu.apiserver.registry.resources import Resource

ORPHAN = "orphan"
FOREGROUND = "foregroundDeletion"
POLICIES = ("Orphan", "Background", "Foreground")
POD_DEFAULT_GRACE = 30
NAMESPACE_TERMINATING = ("The system is ensuring all content is removed from this namespace.  "
                         "Upon completion, this namespace will automatically be purged by the "
                         "system.")


def is_namespace(resource: Resource) -> bool:
    return resource.group == "" and resource.name == "namespaces"


def pending_finalizers(resource: Resource, obj: Obj) -> bool:
    """Whether something still has to finish before a deleted object may go."""
    if (obj.get("metadata") or {}).get("finalizers"):
        return True
    # A namespace also waits for its spec.finalizers (the namespace controller empties
    # them through /finalize).
    return is_namespace(resource) and bool((obj.get("spec") or {}).get("finalizers"))


def check_preconditions(resource: Resource, opts: Obj, obj: Obj) -> None:
    pre = opts.get("preconditions") or {}
    meta = obj["metadata"]
    if pre.get("uid") and pre["uid"] != meta.get("uid"):
        raise conflict(resource.name, resource.group, meta["name"],
                       f"Precondition failed: UID in precondition: {pre['uid']}, UID in object "
                       f"meta: {meta.get('uid')}")
    if pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion"):
        raise conflict(resource.name, resource.group, meta["name"],
                       f"Precondition failed: ResourceVersion in precondition: "
                       f"{pre['resourceVersion']}, ResourceVersion in object meta: "
                       f"{meta.get('resourceVersion')}")


def finalizers(opts: Obj, current: list[str]) -> list[str]:
    """The finalizers after the propagation policy asked for."""
    policy = opts.get("propagationPolicy")
    if policy is None and opts.get("orphanDependents") is not None:
        policy = "Orphan" if opts["orphanDependents"] else "Background"
    out = list(current)
    if policy == "Orphan":
        out = [f for f in out if f != FOREGROUND]
        if ORPHAN not in out:
            out.append(ORPHAN)
    elif policy == "Foreground":
        out = [f for f in out if f != ORPHAN]
        if FOREGROUND not in out:
            out.append(FOREGROUND)
    elif policy == "Background":
        out = [f for f in out if f not in (ORPHAN, FOREGROUND)]
    return out


def grace_seconds(resource: Resource, opts: Obj, obj: Obj) -> int:
    """Pods on a node get their grace period (the kubelet finishes the deletion);
    everything else goes at once."""
    asked = opts.get("gracePeriodSeconds")
    if not (resource.group == "" and resource.name == "pods"):
        return 0
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
        return 0
    if asked is not None:
        return max(int(asked), 0)
    value = spec.get("terminationGracePeriodSeconds")
    return int(value) if value is not None else POD_DEFAULT_GRACE


def apply_finalizers(opts: Obj, obj: Obj) -> None:
    """Set the finalizers of `obj` the propagation policy asks for."""
    meta = obj["metadata"]
    wanted = finalizers(opts, meta.get("finalizers") or [])
    if wanted:
        meta["finalizers"] = wanted
    else:
        meta.pop("finalizers", None)


def mark_deleted(resource: Resource, obj: Obj, grace: int) -> None:
    """Set deletionTimestamp, or shorten a pending grace period."""
    meta = obj["metadata"]
    deadline = now() + datetime.timedelta(seconds=grace)
    current = meta.get("deletionGracePeriodSeconds")
    if not meta.get("deletionTimestamp"):
        meta["deletionTimestamp"] = format_time(deadline)
        meta["deletionGracePeriodSeconds"] = grace
        if meta.get("generation"):
            meta["generation"] = int(meta["generation"]) + 1
    elif current is not None and grace < int(current):
        meta["deletionTimestamp"] = format_time(deadline)
        meta["deletionGracePeriodSeconds"] = grace
    if is_namespace(resource):
        obj.setdefault("status", {})["phase"] = "Terminating"
