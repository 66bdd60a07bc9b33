"""Defaulting of decoded objects, per served version (dra-api.md §5).

Defaults apply in the request's own version, before conversion, as upstream's
generated defaulters do; so a v1beta1 request that only lists `firstAvailable`
gets no `allocationMode`, while the same request in v1 would not exist.
"""

from __future__ import annotations

from typing import Any

from draemu.api.meta import time_now
from draemu.api.types import Obj

from . import walk
from .fields import lst, obj


def _mode_and_count(request: Obj) -> None:
    if not request.get("allocationMode"):
        request["allocationMode"] = "ExactCount"
    if request["allocationMode"] == "ExactCount" and not request.get("count"):
        request["count"] = 1


def _tolerations(holder: Obj) -> None:
    for toleration in lst(holder.get("tolerations")):
        if isinstance(toleration, dict) and not toleration.get("operator"):
            toleration["operator"] = "Equal"


def _taint(taint: Any) -> None:
    if isinstance(taint, dict) and not taint.get("timeAdded"):
        taint["timeAdded"] = time_now()


def _claim_spec(spec: Obj | None, version: str) -> None:
    for request in walk.requests(spec):
        if version in ("v1", "v1beta2"):
            if isinstance(request.get("exactly"), dict):
                _mode_and_count(request["exactly"])
                _tolerations(request["exactly"])
        elif version == "v1beta1":
            if request.get("deviceClassName"):
                _mode_and_count(request)
            _tolerations(request)
        else:  # v1alpha3 as of 1.31: every request names a class
            _mode_and_count(request)
        for sub in walk.subrequests(request):
            _mode_and_count(sub)
            _tolerations(sub)


def default(kind: str, o: Obj, version: str) -> None:
    if kind in ("ResourceClaim", "ResourceClaimTemplate"):
        _claim_spec(walk.claim_spec_of(kind, o), version)
        if kind == "ResourceClaim":
            for result in walk.results(obj(o.get("status"))):
                _tolerations(result)
    elif kind == "ResourceSlice":
        for device in walk.devices(obj(o.get("spec"))):
            holder = obj(device.get("basic")) if version == "v1beta1" else device
            for taint in lst(holder.get("taints")):
                _taint(taint)
    elif kind == "DeviceTaintRule":
        _taint(obj(o.get("spec")).get("taint"))
    elif kind == "ResourcePoolStatusRequest":
        spec = o.get("spec")
        if isinstance(spec, dict) and spec.get("limit") is None:
            spec["limit"] = 100
