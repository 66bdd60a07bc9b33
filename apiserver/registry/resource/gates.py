"""Fields behind a disabled feature gate are dropped on write unless the old object
already uses them (dra-api.md §6), so turning a gate off never breaks stored objects."""

from __future__ import annotations

from collections.abc import Iterator

from draemu.api.types import Obj
from draemu.features import FeatureGates

from . import walk
from .fields import lst, obj


def _drop(gates: FeatureGates, gate: str | tuple[str, ...], old_uses: bool,
          holders: Iterator[Obj], *names: str) -> None:
    wanted = (gate,) if isinstance(gate, str) else gate
    if all(gates.enabled(g) for g in wanted) or old_uses:
        return
    for holder in holders:
        for name in names:
            holder.pop(name, None)


def _uses(holders: Iterator[Obj], *names: str) -> bool:
    return any(holder.get(name) is not None for holder in holders for name in names)


# Claim spec -------------------------------------------------------------------------

def _exacts(spec: Obj | None) -> Iterator[Obj]:
    for request in walk.requests(spec):
        if isinstance(request.get("exactly"), dict):
            yield request["exactly"]


def _subs(spec: Obj | None) -> Iterator[Obj]:
    for request in walk.requests(spec):
        yield from walk.subrequests(request)


def _constraints(spec: Obj | None) -> Iterator[Obj]:
    for constraint in lst(obj(obj(spec).get("devices")).get("constraints")):
        if isinstance(constraint, dict):
            yield constraint


def claim_spec(new: Obj | None, old: Obj | None, gates: FeatureGates) -> None:
    if new is None:
        return
    _drop(gates, "DRAPrioritizedList", _uses(walk.requests(old), "firstAvailable"),
          walk.requests(new), "firstAvailable")
    used = _uses(_exacts(old), "tolerations") or _uses(_subs(old), "tolerations")
    _drop(gates, "DRADeviceTaints", used, _exacts(new), "tolerations")
    _drop(gates, "DRADeviceTaints", used, _subs(new), "tolerations")
    _drop(gates, "DRAAdminAccess", _uses(_exacts(old), "adminAccess"), _exacts(new),
          "adminAccess")
    used = (_uses(_constraints(old), "distinctAttribute") or _uses(_exacts(old), "capacity")
            or _uses(_subs(old), "capacity"))
    _drop(gates, "DRAConsumableCapacity", used, _constraints(new), "distinctAttribute")
    _drop(gates, "DRAConsumableCapacity", used, _exacts(new), "capacity")
    _drop(gates, "DRAConsumableCapacity", used, _subs(new), "capacity")
    used = _uses(_exacts(old), "derivedAttributes") or _uses(_subs(old), "derivedAttributes")
    _drop(gates, "DRADerivedAttributes", used, _exacts(new), "derivedAttributes")
    _drop(gates, "DRADerivedAttributes", used, _subs(new), "derivedAttributes")


# Claim status -----------------------------------------------------------------------

def _device_statuses(status: Obj | None) -> Iterator[Obj]:
    for entry in lst(obj(status).get("devices")):
        if isinstance(entry, dict):
            yield entry


def claim_status(new: Obj | None, old: Obj | None, gates: FeatureGates) -> None:
    if new is None:
        return
    _drop(gates, "DRAResourceClaimDeviceStatus", _uses(iter([obj(old)]), "devices"),
          iter([new]), "devices")
    _drop(gates, "DRAAdminAccess", _uses(walk.results(old), "adminAccess"), walk.results(new),
          "adminAccess")
    used = (_uses(walk.results(old), "shareID", "consumedCapacity")
            or _uses(_device_statuses(old), "shareID"))
    _drop(gates, "DRAConsumableCapacity", used, walk.results(new), "shareID", "consumedCapacity")
    _drop(gates, "DRAConsumableCapacity", used, _device_statuses(new), "shareID")
    used = _uses(walk.results(old), "bindingConditions", "bindingFailureConditions")
    _drop(gates, "DRADeviceBindingConditions", used, walk.results(new), "bindingConditions",
          "bindingFailureConditions")
    _drop(gates, "DRAOptionalNodeOperations", _uses(walk.results(old), "skipNodeOperations"),
          walk.results(new), "skipNodeOperations")
    allocation = obj(new.get("allocation"))
    used = obj(obj(old).get("allocation")).get("allocationTimestamp") is not None
    _drop(gates, ("DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus"), used,
          iter([allocation]), "allocationTimestamp")


def prune_device_statuses(status: Obj) -> None:
    """Drop `status.devices` entries whose device is no longer allocated."""
    if "devices" not in status or not isinstance(status["devices"], list):
        return
    allocated = {(r.get("driver"), r.get("pool"), r.get("device"), r.get("shareID"))
                 for r in walk.results(status)}
    status["devices"] = [
        d for d in status["devices"]
        if (obj(d).get("driver"), obj(d).get("pool"), obj(d).get("device"),
            obj(d).get("shareID")) in allocated]
    if not status["devices"]:
        del status["devices"]


# ResourceSlice ----------------------------------------------------------------------

_LIST_FORMS = ("bools", "ints", "strings", "versions")


def _attributes(spec: Obj | None) -> Iterator[Obj]:
    for device in walk.devices(spec):
        for attribute in obj(device.get("attributes")).values():
            if isinstance(attribute, dict):
                yield attribute


def _capacities(spec: Obj | None) -> Iterator[Obj]:
    for device in walk.devices(spec):
        for capacity in obj(device.get("capacity")).values():
            if isinstance(capacity, dict):
                yield capacity


def _consumptions(spec: Obj | None) -> Iterator[Obj]:
    for device in walk.devices(spec):
        for consumption in lst(device.get("consumesCounters")):
            if isinstance(consumption, dict):
                yield consumption


def slice_spec(new: Obj | None, old: Obj | None, gates: FeatureGates) -> None:
    if new is None:
        return
    used = any(lst(c.get("compatibilityGroups")) for c in _consumptions(old))
    _drop(gates, "DRADeviceCompatibilityGroups", used, _consumptions(new), "compatibilityGroups")
    _drop(gates, "DRADeviceTaints", _uses(walk.devices(old), "taints"), walk.devices(new),
          "taints")
    used = (_uses(iter([obj(old)]), "sharedCounters", "perDeviceNodeSelection")
            or _uses(walk.devices(old), "consumesCounters", "nodeName", "nodeSelector",
                     "allNodes"))
    _drop(gates, "DRAPartitionableDevices", used, iter([new]), "sharedCounters",
          "perDeviceNodeSelection")
    _drop(gates, "DRAPartitionableDevices", used, walk.devices(new), "consumesCounters",
          "nodeName", "nodeSelector", "allNodes")
    binding = ("bindsToNode", "bindingConditions", "bindingFailureConditions")
    _drop(gates, ("DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus"),
          _uses(walk.devices(old), *binding), walk.devices(new), *binding)
    used = (_uses(walk.devices(old), "allowMultipleAllocations")
            or _uses(_capacities(old), "requestPolicy"))
    _drop(gates, "DRAConsumableCapacity", used, walk.devices(new), "allowMultipleAllocations")
    _drop(gates, "DRAConsumableCapacity", used, _capacities(new), "requestPolicy")
    _drop(gates, "DRANodeAllocatableResources",
          _uses(walk.devices(old), "nodeAllocatableResources"), walk.devices(new),
          "nodeAllocatableResources")
    _drop(gates, "DRAListTypeAttributes", _uses(_attributes(old), *_LIST_FORMS),
          _attributes(new), *_LIST_FORMS)
    _drop(gates, "DRAOptionalNodeOperations", _uses(iter([obj(old)]), "skipNodeOperations"),
          iter([new]), "skipNodeOperations")


def class_spec(new: Obj | None, old: Obj | None, gates: FeatureGates) -> None:
    if new is None:
        return
    _drop(gates, "DRAExtendedResource", _uses(iter([obj(old)]), "extendedResourceName"),
          iter([new]), "extendedResourceName")
