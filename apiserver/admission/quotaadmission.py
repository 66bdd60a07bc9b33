"""ResourceQuota admission on create (upstream's ResourceQuota admission plugin,
simplified): an object that would take a namespace past a quota's `spec.hard` for any
key it counts against is refused with 403 and upstream's message
`exceeded quota: <quota>, requested: k=v, used: k=v, limited: k=v`.

What the namespace uses is summed from the watch cache at admission (draemu.api.quota's
rules, the same the quota controller writes to status.used), rather than read from
status.used and incremented as upstream does; two creates racing each other may both
pass. Updates are not checked, nor upstream's "must specify limits.cpu" constraints.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

from draemu.api.errors import forbidden_error
from draemu.api.quantity import Quantity, QuantityError, parse_quantity
from draemu.api.quota import tracked
from draemu.api.types import Obj
from draemu.apiserver.admission.chain import AdmissionServices, Attributes

NamespaceLookup = Callable[[str, str, str], list[Any]]


def _pretty(values: dict[str, Fraction], like: dict[str, str]) -> str:
    out = []
    for key in sorted(values):
        try:
            fmt = Quantity.parse(like.get(key, "0")).format
        except QuantityError:
            fmt = "DecimalSI"
        out.append(f"{key}={Quantity(values[key], fmt).canonical()}")
    return ",".join(out)


def _sources(hard: dict[str, Any], resource: str, group: str) -> list[tuple[str, str]]:
    """The kinds whose objects count against these keys, besides the one created."""
    out = {(resource, group), ("pods", ""), ("services", ""), ("configmaps", ""),
           ("secrets", ""), ("persistentvolumeclaims", ""), ("replicationcontrollers", ""),
           ("resourcequotas", ""), ("resourceclaims", "resource.k8s.io")}
    for key in hard:
        if key.startswith("count/"):
            res, _, grp = key[len("count/"):].partition(".")
            out.add((res, grp))
    return sorted(out)


def admit(resource: str, group: str, namespace: str, name: str, obj: Obj,
          in_namespace: NamespaceLookup, qualified: str) -> None:
    """Raise 403 when creating `obj` would exceed a quota of its namespace."""
    if not namespace:
        return
    for quota in in_namespace("resourcequotas", "", namespace):
        hard_text = dict((quota.get("spec") or {}).get("hard") or {})
        requested = tracked(quota, resource, group, obj)
        if not requested:
            continue
        used: dict[str, Fraction] = {k: Fraction(0) for k in requested}
        for res, grp in _sources(hard_text, resource, group):
            for other in in_namespace(res, grp, namespace):
                for k, v in tracked(quota, res, grp, other).items():
                    if k in used:
                        used[k] += v
        exceeded = []
        for key, amount in requested.items():
            try:
                limit = parse_quantity(hard_text[key])
            except QuantityError:
                continue
            if used[key] + amount > limit:
                exceeded.append(key)
        if exceeded:
            qname = (quota.get("metadata") or {}).get("name", "")
            limits = {k: parse_quantity(hard_text[k]) for k in exceeded}
            message = (f"exceeded quota: {qname}, "
                       f"requested: {_pretty({k: requested[k] for k in exceeded}, hard_text)}, "
                       f"used: {_pretty({k: used[k] for k in exceeded}, hard_text)}, "
                       f"limited: {_pretty(limits, hard_text)}")
            raise forbidden_error(f'{qualified} "{name}" is forbidden: {message}',
                                  {"name": name, "kind": resource,
                                   **({"group": group} if group else {})})


class ResourceQuota:
    """The admission plugin (validating phase, last as upstream's)."""

    operations = frozenset({"CREATE"})

    def __init__(self, services: AdmissionServices) -> None:
        self.listing = services.objects.list_objects

    async def validate(self, attrs: Attributes) -> None:
        if attrs.subresource or attrs.obj is None:
            return
        resource, meta = attrs.resource, attrs.obj.get("metadata") or {}
        admit(resource.name, resource.group, meta.get("namespace", ""), meta.get("name", ""),
              attrs.obj, self.listing, resource.qualified)
