"""Where the repeated sub-objects sit in each kind, for defaulting, conversion and
gate dropping: requests of a claim spec, devices of a slice, results of a status."""

from __future__ import annotations

from collections.abc import Iterator

from draemu.api.types import Obj

from .fields import lst, obj


def claim_spec_of(kind: str, o: Obj) -> Obj | None:
    """The ResourceClaimSpec inside a claim or a template (None for other kinds)."""
    if kind == "ResourceClaim":
        spec = o.get("spec")
    elif kind == "ResourceClaimTemplate":
        spec = obj(o.get("spec")).get("spec")
    else:
        return None
    return spec if isinstance(spec, dict) else None


def requests(spec: Obj | None) -> Iterator[Obj]:
    for request in lst(obj(obj(spec).get("devices")).get("requests")):
        if isinstance(request, dict):
            yield request


def subrequests(request: Obj) -> Iterator[Obj]:
    for sub in lst(request.get("firstAvailable")):
        if isinstance(sub, dict):
            yield sub


def results(status: Obj | None) -> Iterator[Obj]:
    for result in lst(obj(obj(obj(status).get("allocation")).get("devices")).get("results")):
        if isinstance(result, dict):
            yield result


def devices(spec: Obj | None) -> Iterator[Obj]:
    for device in lst(obj(spec).get("devices")):
        if isinstance(device, dict):
            yield device
