"""Object metadata helpers: names, owners, timestamps (metav1.Time and MicroTime), ages,
conditions, tolerations."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta, timezone

from draemu.api.types import Obj


def meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def name_of(obj: Obj) -> str:
    return str(meta(obj).get("name", ""))


def namespace_of(obj: Obj) -> str:
    return str(meta(obj).get("namespace") or "")


def uid_of(obj: Obj) -> str:
    return str(meta(obj).get("uid", ""))


# Timestamps ------------------------------------------------------------------------
# A Go server writes a metav1.Time as RFC 3339 in UTC with seconds (`...T07:57:10Z`), a
# metav1.MicroTime with microseconds (`...T07:57:10.123456Z`), years padded to four
# digits, and parses both with time.Parse(time.RFC3339, ...): an offset (`Z` or `+01:00`)
# is required, `T` and `Z` are upper case, fractions of any length are allowed.

_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?"
                      r"(?:(Z)|([+-])(\d{2}):(\d{2}))")


def parse_time(text: str | None) -> datetime | None:
    """An RFC 3339 time as metav1.Time's decoding accepts it (aware, in the sent offset);
    None when unset or no such time: no offset (a naive time), a lower-case `z` or `t`, a
    date alone, an hour 24 or a second 60 are all refused, as Go refuses them."""
    if not isinstance(text, str):
        return None
    found = _RFC3339.fullmatch(text)
    if found is None:
        return None
    year, month, day, hour, minute, second, fraction, zulu, sign, oh, om = found.groups()
    if int(oh or 0) > 23 or int(om or 0) > 59:
        return None
    offset = timedelta(hours=int(oh or 0), minutes=int(om or 0))
    zone = UTC if zulu or not offset else timezone(-offset if sign == "-" else offset)
    try:
        return datetime(int(year), int(month), int(day), int(hour), int(minute),
                        int(second), int((fraction or "0")[:6].ljust(6, "0")), zone)
    except ValueError:
        return None


def now() -> datetime:
    return datetime.now(UTC)


def _utc(when: datetime) -> datetime:
    # Python's naive datetimes have no Go counterpart; draemu's are all UTC.
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def format_time(when: datetime) -> str:
    """`when` as a metav1.Time: UTC, whole seconds, `Z` (a naive `when` is UTC)."""
    t = _utc(when)
    # Go pads years to four digits ("0999"); strftime's %Y does not.
    return (f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:"
            f"{t.second:02d}Z")


def format_micro_time(when: datetime) -> str:
    """`when` as a metav1.MicroTime: as `format_time` with six digits of fraction."""
    return f"{format_time(when)[:-1]}.{_utc(when).microsecond:06d}Z"


# The last second time_now() wrote, and its text: writes ask for it a few times each.
_second: tuple[int, str] = (-1, "")


def time_now() -> str:
    """Now as a metav1.Time."""
    global _second
    second = int(time.time())
    if second != _second[0]:
        _second = (second, format_time(datetime.fromtimestamp(second, UTC)))
    return _second[1]


def micro_time_now() -> str:
    """Now as a metav1.MicroTime."""
    return format_micro_time(now())


def human_duration(seconds: float) -> str:
    """kube's duration.HumanDuration, the age format of `kubectl get`: `45s`, `3m20s`,
    `5h`, `2d3h`, `3y`."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


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
    stamp = time_now()
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
