"""Conversion between the served versions and the storage version v1 (dra-api.md §8).

* v1beta2 has the v1 shape: only `apiVersion` changes.
* v1beta1 keeps requests flat (no `exactly`), wraps device fields in `basic`, and
  uses plain `nodeName: ""` / `allNodes: false` for "unset".
* v1alpha3 is served in the Kubernetes 1.31 shape for the four original kinds (flat
  requests, `basic` devices with bare capacity quantities, a bool `adminAccess`) and in
  the v1 shape for DeviceTaintRule and ResourcePoolStatusRequest.

Everything a target version can carry survives a round trip. Fields that only existed
in 1.31 (classic DRA's `controller`, `suitableNodes`, `deallocationRequested`) have no
home in v1 and are rejected; v1 fields that 1.31 lacks are left out when reading in
v1alpha3, except `firstAvailable`, whose absence would change a claim's meaning.
"""

from __future__ import annotations

from typing import Any

from draemu.api.errors import StatusError, forbidden, internal_error, invalid_object
from draemu.api.types import Obj
from draemu.apiserver.wire.jsoncopy import clone

from . import walk
from .fields import lst, obj

GROUP = "resource.k8s.io"
STORAGE = "v1"
# Kinds served in v1alpha3 with the 1.31 shape; the others have the v1 shape there.
ALPHA_131_KINDS = ("DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice")
# ExactDeviceRequest members that v1beta1 keeps on the request itself.
_EXACT_FIELDS = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess",
                 "tolerations", "capacity", "derivedAttributes")
# DeviceAttribute members that 1.31 had (no list forms).
_ALPHA_ATTRIBUTE_FORMS = ("int", "bool", "string", "version")


def to_storage(kind: str, o: Obj, version: str) -> Obj:
    """`o` (of `version`) in the storage version: `o` itself when it already is (as the
    base Strategy's, callers hand over objects of their own), else a converted copy."""
    if version == STORAGE:
        if "apiVersion" in o:
            o["apiVersion"] = f"{GROUP}/{STORAGE}"
        return o
    out = clone(o)
    if version == "v1beta1":
        _beta1_to_v1(kind, out)
    elif version == "v1alpha3" and kind in ALPHA_131_KINDS:
        _alpha3_to_v1(kind, out)
    if "apiVersion" in out:
        out["apiVersion"] = f"{GROUP}/{STORAGE}"
    return out


def from_storage(kind: str, o: Obj, version: str) -> Obj:
    out = clone(o)
    if version == "v1beta1":
        _v1_to_beta1(kind, out)
    elif version == "v1alpha3" and kind in ALPHA_131_KINDS:
        _v1_to_alpha3(kind, out)
    if "apiVersion" in out:
        out["apiVersion"] = f"{GROUP}/{version}"
    return out


# v1beta1 -------------------------------------------------------------------------------

def _flat_request_to_v1(request: Obj, *, alpha: bool = False) -> None:
    exactly: Obj = {}
    for name in _EXACT_FIELDS:
        if name not in request:
            continue
        value = request.pop(name)
        if _unset(value) or (alpha and name == "adminAccess" and value is False):
            continue
        exactly[name] = value
    if exactly:
        exactly.setdefault("deviceClassName", "")
        request["exactly"] = exactly


def _unset(value: Any) -> bool:
    """Go's zero value of a v1beta1 request field (a `false` *bool is set)."""
    return value is None or value == "" or (type(value) is int and value == 0)


def _v1_request_to_flat(request: Obj) -> None:
    exactly = request.pop("exactly", None)
    if isinstance(exactly, dict):
        first = request.pop("firstAvailable", None)
        request.update(exactly)
        if first is not None:
            request["firstAvailable"] = first
    # deviceClassName has no omitempty in v1beta1.
    request.setdefault("deviceClassName", "")
    _reorder(request, ["name", "deviceClassName"])


def _reorder(o: Obj, first: list[str]) -> None:
    """Keys in the order Go serializes the struct, where it matters to readers."""
    items = [(k, o.pop(k)) for k in first if k in o] + list(o.items())
    o.clear()
    o.update(items)


def _unset_zero_node_fields(spec: Obj) -> None:
    if spec.get("nodeName") == "":
        del spec["nodeName"]
    if spec.get("allNodes") is False:
        del spec["allNodes"]


def _beta1_to_v1(kind: str, o: Obj) -> None:
    spec = walk.claim_spec_of(kind, o)
    for request in walk.requests(spec):
        _flat_request_to_v1(request)
    if kind == "ResourceSlice" and isinstance(o.get("spec"), dict):
        _unset_zero_node_fields(o["spec"])
        for device in walk.devices(o["spec"]):
            basic = device.pop("basic", None)
            if isinstance(basic, dict):
                device.update(basic)


def _v1_to_beta1(kind: str, o: Obj) -> None:
    for request in walk.requests(walk.claim_spec_of(kind, o)):
        _v1_request_to_flat(request)
    if kind == "ResourceSlice":
        for device in walk.devices(obj(o.get("spec"))):
            basic = {k: device.pop(k) for k in list(device) if k != "name"}
            if basic:
                device["basic"] = basic


# v1alpha3 as of Kubernetes 1.31 ------------------------------------------------------------

def _reject(kind: str, o: Obj, path: str, what: str) -> StatusError:
    detail = (f"{what} existed only in resource.k8s.io/v1alpha3 of Kubernetes 1.31 (classic DRA) "
              "and has no equivalent in resource.k8s.io/v1; remove it")
    return invalid_object(kind, GROUP, obj(o.get("metadata")).get("name", ""),
                          [forbidden(path, detail)])


def _alpha3_to_v1(kind: str, o: Obj) -> None:
    spec = o.get("spec") if isinstance(o.get("spec"), dict) else {}
    if kind == "DeviceClass" and spec.get("suitableNodes") is not None:
        raise _reject(kind, o, "spec.suitableNodes", "`suitableNodes`")
    claim_spec = walk.claim_spec_of(kind, o)
    if claim_spec is not None:
        base = "spec.spec" if kind == "ResourceClaimTemplate" else "spec"
        if claim_spec.pop("controller", ""):
            raise _reject(kind, o, f"{base}.controller", "`controller`")
        for request in walk.requests(claim_spec):
            _flat_request_to_v1(request, alpha=True)
    if kind == "ResourceClaim":
        _alpha3_status_to_v1(kind, o)
    if kind == "ResourceSlice":
        _unset_zero_node_fields(spec)
        for device in walk.devices(spec):
            basic = device.pop("basic", None)
            if not isinstance(basic, dict):
                continue
            if "attributes" in basic:
                device["attributes"] = basic["attributes"]
            if isinstance(basic.get("capacity"), dict):
                device["capacity"] = {k: {"value": v} for k, v in basic["capacity"].items()}


def _alpha3_status_to_v1(kind: str, o: Obj) -> None:
    status = o.get("status")
    if not isinstance(status, dict):
        return
    if status.pop("deallocationRequested", False):
        raise _reject(kind, o, "status.deallocationRequested", "`deallocationRequested`")
    allocation = status.get("allocation")
    if isinstance(allocation, dict) and allocation.pop("controller", ""):
        raise _reject(kind, o, "status.allocation.controller", "`controller`")


_ALPHA_REQUEST_FIELDS = ("name", "deviceClassName", "selectors", "allocationMode", "count",
                         "adminAccess")
_ALPHA_RESULT_FIELDS = ("request", "driver", "pool", "device")


def _v1_to_alpha3(kind: str, o: Obj) -> None:
    claim_spec = walk.claim_spec_of(kind, o)
    name = obj(o.get("metadata")).get("name", "")
    for request in walk.requests(claim_spec):
        if request.get("firstAvailable"):
            raise internal_error(
                f'{kind} "{name}" uses spec.devices.requests[].firstAvailable, which '
                "resource.k8s.io/v1alpha3 of Kubernetes 1.31 cannot represent; read it "
                "through resource.k8s.io/v1")
        _v1_request_to_flat(request)
        if request.get("adminAccess") is None:
            request.pop("adminAccess", None)
        for key in [k for k in request if k not in _ALPHA_REQUEST_FIELDS]:
            del request[key]
    if claim_spec is not None:
        for constraint in lst(obj(claim_spec.get("devices")).get("constraints")):
            if isinstance(constraint, dict):
                constraint.pop("distinctAttribute", None)
    if kind == "ResourceClaim" and isinstance(o.get("status"), dict):
        status = o["status"]
        status.pop("devices", None)
        allocation = obj(status.get("allocation"))
        allocation.pop("allocationTimestamp", None)
        for result in walk.results(status):
            for key in [k for k in result if k not in _ALPHA_RESULT_FIELDS]:
                del result[key]
    if kind == "DeviceClass" and isinstance(o.get("spec"), dict):
        o["spec"].pop("extendedResourceName", None)
    if kind == "ResourceSlice" and isinstance(o.get("spec"), dict):
        _slice_to_alpha3(o["spec"])


def _slice_to_alpha3(spec: Obj) -> None:
    for key in ("perDeviceNodeSelection", "sharedCounters", "partitionTypeAttribute",
                "skipNodeOperations"):
        spec.pop(key, None)
    # `devices` has no omitempty in 1.31.
    spec.setdefault("devices", None)
    for device in walk.devices(spec):
        basic: Obj = {}
        attributes = {
            k: {form: v[form] for form in _ALPHA_ATTRIBUTE_FORMS if form in v}
            for k, v in obj(device.get("attributes")).items() if isinstance(v, dict)}
        attributes = {k: v for k, v in attributes.items() if v}
        if attributes:
            basic["attributes"] = attributes
        capacity = {k: obj(v).get("value") for k, v in obj(device.get("capacity")).items()}
        if capacity:
            basic["capacity"] = capacity
        name = device.get("name")
        device.clear()
        device["name"] = name
        if basic:
            device["basic"] = basic
