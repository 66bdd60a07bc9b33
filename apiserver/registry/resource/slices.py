"""Validation of ResourceSlice (v1 shape)."""

from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction
from math import ceil
from typing import Any

from draemu.api.errors import Path, forbidden, invalid, required, too_long
from draemu.api.quantity import Quantity, QuantityError
from draemu.apiserver.registry.core.nodeselector_validation import validate_node_selector
from draemu.features import FeatureGates

from . import fields as f
from .claims import binding_parameters, immutable, skip_node_operations
from .fields import Errors, lst, obj
from .rules import (
    CAPACITY_KEY_NAME,
    DECLARATIVE_DEPENDENT_REQUIRED,
    INT64_VERSIONS,
    ONE_SLASH_NAMES,
    ONE_TERM_DEVICE_NODE_SELECTOR,
    UNCHANGED_DEVICES,
    applies,
)
from .taints import taint

MAX_DEVICES = 128
MAX_DEVICES_ADVANCED = 64
MAX_COUNTER_SETS = 8
MAX_COUNTERS = 32
MAX_CONSUMES_COUNTERS = 2
COMPATIBILITY_GROUPS_MAX = 2  # per consumesCounters entry (DRADeviceCompatibilityGroups)
MAX_ATTRIBUTES_AND_CAPACITIES = 32
MAX_ATTRIBUTE_VALUES = 48
MAX_ATTRIBUTE_VALUE_LENGTH = 64
MAX_TAINTS = 16
MAX_VALID_VALUES = 10
_NODE_SELECTION = ("exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                   "`perDeviceNodeSelection` is required")
_DEVICE_NODE_SELECTION = ("exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required "
                          "when `perDeviceNodeSelection` is set to true in the ResourceSlice spec")

_BUILD = r"[0-9a-zA-Z-]+"


def _semver(number: str) -> re.Pattern[str]:
    pre = rf"({number}|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
    return re.compile(rf"^{number}\.{number}\.{number}(-{pre}(\.{pre})*)?"
                      rf"(\+{_BUILD}(\.{_BUILD})*)?$")


SEMVER = _semver(r"(0|[1-9]\d*)")
# 1.38: numbers (and digit-only pre-release identifiers) of at most 18 digits, so that
# every one fits an int64 for CEL.
SEMVER_INT64 = _semver(r"(0|[1-9]\d{0,17})")
_LIST_FORMS = ("bools", "ints", "strings", "versions")
_SCALAR_FORMS = ("bool", "int", "string", "version")
_NODE_ALLOCATABLE = {"cpu", "memory", "ephemeral-storage"}


def slice_spec(spec: dict[str, Any], old: dict[str, Any] | None, gates: FeatureGates) -> Errors:
    path = Path("spec")
    pool = obj(spec.get("pool"))
    errs = f.driver_name(spec.get("driver", "") or "", path.child("driver"))
    errs += _pool(pool, path.child("pool"))
    if old is not None:
        errs += immutable(pool.get("name"), obj(old.get("pool")).get("name"),
                          path.child("pool", "name"))
        errs += immutable(spec.get("driver"), old.get("driver"), path.child("driver"))
        errs += immutable(spec.get("nodeName"), old.get("nodeName"), path.child("nodeName"))
    errs += _node_selection(spec, path)
    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        errs.append(invalid(path, "", "only one of `sharedCounters` or `devices` is allowed"))
    errs += _devices(spec, old, path.child("devices"), gates)
    errs += f.bounded_set(lst(spec.get("sharedCounters")), MAX_COUNTER_SETS,
                          path.child("sharedCounters"), _counter_set,
                          lambda c: obj(c).get("name", ""))
    errs += _partition_type(spec, path, gates)
    if spec.get("skipNodeOperations") is not None:
        errs += skip_node_operations(lst(spec.get("skipNodeOperations")),
                                     path.child("skipNodeOperations"))
    return errs


def _devices(spec: dict[str, Any], old: dict[str, Any] | None, path: Path,
             gates: FeatureGates) -> Errors:
    devices = lst(spec.get("devices"))
    per_device = spec.get("perDeviceNodeSelection") is True
    if applies(gates, UNCHANGED_DEVICES):
        # The list is atomic: any change validates every device; an unchanged one only its
        # node selection, when perDeviceNodeSelection changed.
        if old is not None and lst(old.get("devices")) == devices:
            if old.get("perDeviceNodeSelection") == spec.get("perDeviceNodeSelection"):
                return []
            return [e for i, d in enumerate(devices)
                    for e in _device_node_selection(obj(d), path.index(i), per_device, gates)]
        old = None
    max_devices = MAX_DEVICES_ADVANCED if any(_advanced(obj(d)) for d in devices) else MAX_DEVICES
    old_devices = {obj(d).get("name"): obj(d) for d in lst((old or {}).get("devices"))}
    return f.bounded_set(devices, max_devices, path,
                         lambda d, p: _device(obj(d), old_devices.get(obj(d).get("name")), p,
                                              per_device, gates),
                         lambda d: obj(d).get("name", ""))


def _advanced(device: dict[str, Any]) -> bool:
    """Devices that lower the per-slice limit to 64."""
    if lst(device.get("taints")) or lst(device.get("consumesCounters")):
        return True
    for attribute in obj(device.get("attributes")).values():
        if isinstance(attribute, dict) and any(attribute.get(f) is not None for f in _LIST_FORMS):
            return True
    return False


def _pool(pool: dict[str, Any], path: Path) -> Errors:
    errs = f.pool_name(pool.get("name", "") or "", path.child("name"))
    count = pool.get("resourceSliceCount", 0) or 0
    if count <= 0:
        errs.append(invalid(path.child("resourceSliceCount"), count, "must be greater than zero"))
    generation = pool.get("generation", 0) or 0
    if generation < 0:
        errs.append(invalid(path.child("generation"), generation,
                            "must be greater than or equal to zero"))
    return errs


def _node_selection(spec: dict[str, Any], path: Path) -> Errors:
    errs: Errors = []
    chosen: list[str] = []
    if spec.get("nodeName") is not None:
        if spec["nodeName"]:
            chosen.append("`nodeName`")
            errs += f.node_name(spec["nodeName"], path.child("nodeName"))
        else:
            errs.append(invalid(path.child("nodeName"), "",
                                "must be either unset or set to a non-empty string"))
    if isinstance(spec.get("nodeSelector"), dict):
        chosen.append("`nodeSelector`")
        selector = spec["nodeSelector"]
        errs += validate_node_selector(selector, path.child("nodeSelector"))
        terms = lst(selector.get("nodeSelectorTerms"))
        if len(terms) != 1:
            errs.append(invalid(path.child("nodeSelector", "nodeSelectorTerms"), terms,
                                "must have exactly one node selector term"))
    for name in ("allNodes", "perDeviceNodeSelection"):
        if spec.get(name) is not None:
            if spec[name] is True:
                chosen.append(f"`{name}`")
            else:
                errs.append(invalid(path.child(name), spec[name],
                                    "must be either unset or set to true"))
    if not chosen:
        errs.append(required(path, _NODE_SELECTION))
    elif len(chosen) > 1:
        errs.append(invalid(path, "{" + ", ".join(chosen) + "}",
                            _NODE_SELECTION + ", but multiple fields are set"))
    return errs


def _counter_set(counter_set: Any, path: Path) -> Errors:
    counter_set = obj(counter_set)
    errs: Errors = []
    name = counter_set.get("name", "") or ""
    errs += [required(path.child("name"))] if not name else f.dns_label(name, path.child("name"))
    errs += _counters(counter_set.get("counters"), path.child("counters"))
    return errs


def _counters(counters: Any, path: Path) -> Errors:
    if not obj(counters):
        return [required(path)]
    return f.bounded_map(obj(counters), MAX_COUNTERS, 63, path, f.dns_label,
                         lambda _v, _p: [])


def _device(device: dict[str, Any], old: dict[str, Any] | None, path: Path, per_device: bool,
            gates: FeatureGates) -> Errors:
    errs = f.dns_label(device.get("name", "") or "", path.child("name"))
    attributes, capacity = obj(device.get("attributes")), obj(device.get("capacity"))
    total = len(attributes) + len(capacity)
    if total > MAX_ATTRIBUTES_AND_CAPACITIES:
        errs.append(invalid(path, total, "the total number of attributes and capacities must "
                            f"not exceed {MAX_ATTRIBUTES_AND_CAPACITIES}"))
    values = sum(_value_count(obj(a)) for a in attributes.values())
    if values > MAX_ATTRIBUTE_VALUES:
        errs.append(invalid(path, values, "the total number of attribute values must not "
                            f"exceed {MAX_ATTRIBUTE_VALUES}"))
    one_slash = applies(gates, ONE_SLASH_NAMES)

    def name(key: str, p: Path) -> Errors:
        return f.qualified_name(key, p, one_slash)

    errs += f.bounded_map(attributes, -1, f.ATTRIBUTE_KEY_MAX, path.child("attributes"),
                          name, lambda a, p: _attribute(obj(a), p, gates))
    multiple = device.get("allowMultipleAllocations") is True
    # Unchanged capacities and taints are not re-validated, so stored values that newer
    # rules reject keep working.
    if old is None or obj(old.get("capacity")) != capacity or (
            old.get("allowMultipleAllocations") is True) != multiple:
        errs += f.bounded_map(capacity, -1, f.ATTRIBUTE_KEY_MAX, path.child("capacity"),
                              name,
                              lambda c, p: _capacity(obj(c), p, multiple, gates))
    taints = lst(device.get("taints"))
    if old is None or lst(old.get("taints")) != taints:
        errs += f.bounded_list(taints, MAX_TAINTS, path.child("taints"),
                               lambda t, p: taint(obj(t), None, p))
    errs += f.bounded_set(lst(device.get("consumesCounters")), MAX_CONSUMES_COUNTERS,
                          path.child("consumesCounters"), _counter_consumption,
                          lambda c: obj(c).get("counterSet", ""))
    errs += _device_node_selection(device, path, per_device, gates)
    errs += binding_parameters(lst(device.get("bindingConditions")),
                               lst(device.get("bindingFailureConditions")), path)
    errs += f.bounded_map(obj(device.get("nodeAllocatableResources")), -1, 253,
                          path.child("nodeAllocatableResources"), _node_allocatable_name,
                          lambda r, p: _node_allocatable(obj(r), p, capacity, gates))
    return errs


def _value_count(attribute: dict[str, Any]) -> int:
    """List items count one by one towards the per-device limit."""
    count = 0
    for form, value in attribute.items():
        if value is None:
            continue
        if form in _LIST_FORMS:
            count += len(lst(value))
        elif form in _SCALAR_FORMS:
            count += 1
    return count


def _attribute(attribute: dict[str, Any], path: Path, gates: FeatureGates) -> Errors:
    if len(attribute) == 1 and (attribute.get("int") is not None
                                or attribute.get("bool") is not None):
        return []  # the common case, nothing to check
    errs: Errors = []
    set_forms = [form for form in _SCALAR_FORMS + _LIST_FORMS if attribute.get(form) is not None]
    if isinstance(attribute.get("string"), str):
        errs += _string_value(attribute["string"], path.child("string"))
    int64 = applies(gates, INT64_VERSIONS)
    if isinstance(attribute.get("version"), str):
        errs += _version_value(attribute["version"], path.child("version"), int64)
    for form in _LIST_FORMS:
        if attribute.get(form) is None:
            continue
        items = lst(attribute[form])
        if not items:
            errs.append(invalid(path.child(form), items, "must not be empty if specified"))
        for i, item in enumerate(items):
            if form == "strings":
                errs += _string_value(str(item), path.child(form).index(i))
            elif form == "versions":
                errs += _version_value(str(item), path.child(form).index(i), int64)
    if not set_forms:
        errs.append(invalid(path, "", "exactly one value must be specified"))
    elif len(set_forms) > 1:
        errs.append(invalid(path, attribute, "exactly one value must be specified"))
    return errs


def _string_value(value: str, path: Path) -> Errors:
    if len(value.encode()) > MAX_ATTRIBUTE_VALUE_LENGTH:
        return [too_long(path, MAX_ATTRIBUTE_VALUE_LENGTH)]
    return []


def _version_value(value: str, path: Path, int64: bool) -> Errors:
    errs: Errors = []
    if int64 and not SEMVER_INT64.match(value):
        errs.append(invalid(path, value, "must be a string compatible with semver.org spec "
                            "2.0.0, with at most 18 digits in numbers"))
    elif not int64 and not SEMVER.match(value):
        errs.append(invalid(path, value, "must be a string compatible with semver.org spec 2.0.0"))
    return errs + _string_value(value, path)


def _quantity(value: Any) -> Quantity | None:
    try:
        return Quantity.parse(value)
    except (QuantityError, TypeError):
        return None


def _capacity(capacity: dict[str, Any], path: Path, multiple: bool,
              gates: FeatureGates) -> Errors:
    policy = capacity.get("requestPolicy")
    if not isinstance(policy, dict):
        return []
    if not multiple:
        return [forbidden(path.child("requestPolicy"), "allowMultipleAllocations must be true")]
    maximum = _quantity(capacity.get("value", "0"))
    if maximum is None:
        return []
    return _request_policy(maximum, policy, path.child("requestPolicy"), gates)


def _request_policy(maximum: Quantity, policy: dict[str, Any], path: Path,
                    gates: FeatureGates) -> Errors:
    valid_values = lst(policy.get("validValues"))
    valid_range = policy.get("validRange")
    if valid_values and isinstance(valid_range, dict):
        return [forbidden(path, 'exactly one policy can be specified, cannot specify '
                          '"validValues" and "validRange" at the same time')]
    default = _quantity(policy["default"]) if policy.get("default") is not None else None
    if valid_values:
        if default is None:
            return [required(path.child("default"), "required when validValues is defined")]
        return _valid_values(default, maximum, valid_values, path.child("validValues"),
                             gates.enabled("DRAFractionalCapacityRange"))
    if isinstance(valid_range, dict):
        if default is None:
            return [required(path.child("default"), "required when validRange is defined")]
        return _valid_range(default, maximum, valid_range, path.child("validRange"), gates)
    return []


def _valid_values(default: Quantity, maximum: Quantity, values: list[Any],
                  path: Path, fractional: bool) -> Errors:
    errs: Errors = []
    parsed = [_quantity(v) or Quantity(0) for v in values]
    for i in range(len(parsed) - 1):
        if parsed[i] > parsed[i + 1]:
            errs.append(invalid(path.index(i + 1), str(parsed[i + 1]),
                                "values must be sorted in ascending order"))

    def option(q: Quantity, p: Path) -> Errors:
        if q > maximum:
            return [invalid(p, str(q), f"option is larger than capacity value: {maximum}")]
        return []

    # Two values are the same one in whole units (Quantity.Value(), rounded up), or with
    # DRAFractionalCapacityRange as exact decimals.
    errs += f.bounded_set(parsed, MAX_VALID_VALUES, path, option,
                          _decimal if fractional else lambda q: ceil(q.value))
    if len(parsed) <= MAX_VALID_VALUES and default not in parsed:
        errs.append(invalid(path, str(default),
                            "default value is not valid according to the requestPolicy"))
    return errs


def _valid_range(default: Quantity, maximum: Quantity, valid_range: dict[str, Any], path: Path,
                 gates: FeatureGates) -> Errors:
    minimum = _quantity(valid_range["min"]) if valid_range.get("min") is not None else None
    if minimum is None:
        return [required(path.child("min"), "required when validRange is defined")]
    errs: Errors = []
    if minimum > maximum:
        errs.append(invalid(path.child("min"), str(minimum),
                            f"min is larger than capacity value: {maximum}"))
    if default < minimum:
        errs.append(invalid(path.child("min"), str(default),
                            f"default is less than min: {minimum}"))
    top = _quantity(valid_range["max"]) if valid_range.get("max") is not None else None
    if top is not None:
        if minimum > top:
            errs.append(invalid(path.child("max"), str(minimum), f"min is larger than max: {top}"))
        if top > maximum:
            errs.append(invalid(path.child("max"), str(top),
                                f"max is larger than capacity value: {maximum}"))
        if default > top:
            errs.append(invalid(path.child("max"), str(default),
                                f"default is more than max: {top}"))
    step = _quantity(valid_range["step"]) if valid_range.get("step") is not None else None
    if step is not None:
        spath = path.child("step")
        if step.value <= 0:
            errs.append(invalid(spath, str(step), "must be greater than zero"))
            return errs
        one_step = Quantity(minimum.value + step.value, minimum.format)
        if one_step > maximum:
            errs.append(invalid(spath, str(step), f"one step {one_step} is larger than capacity "
                                f"value: {maximum}"))
        milli = gates.enabled("DRAFractionalCapacityRange") and any(
            q.value.denominator != 1 for q in (default, minimum, step, top) if q is not None)
        for value in (default, top):
            if value is not None and (
                    _units(value, milli) - _units(minimum, milli)) % _units(step, milli):
                errs.append(invalid(spath, str(value), f"value is not a multiple of a given "
                                    f"step ({step}) from ({minimum})"))
    return errs


def _decimal(q: Quantity) -> str:
    """The exact value as a decimal number (upstream's key: Quantity.AsDec().String())."""
    text = str(Decimal(q.value.numerator) / Decimal(q.value.denominator))
    return text if "E" not in text else format(Decimal(text), "f")


def _units(q: Quantity, milli: bool) -> int:
    """Whole units (rounded up, like Quantity.Value()) or milli-units."""
    scaled = q.value * (1000 if milli else 1)
    return ceil(scaled) if scaled >= 0 else -ceil(-scaled)


def _counter_consumption(consumption: Any, path: Path) -> Errors:
    consumption = obj(consumption)
    counter_set = consumption.get("counterSet", "") or ""
    errs = ([required(path.child("counterSet"))] if not counter_set
            else f.dns_label(counter_set, path.child("counterSet")))
    errs += _counters(consumption.get("counters"), path.child("counters"))
    return errs + f.bounded_set(lst(consumption.get("compatibilityGroups")),
                                COMPATIBILITY_GROUPS_MAX, path.child("compatibilityGroups"),
                                lambda g, p: f.dns_label(str(g), p), lambda g: g)


def _device_node_selection(device: dict[str, Any], path: Path, per_device: bool,
                           gates: FeatureGates) -> Errors:
    has_any = any(device.get(name) is not None
                  for name in ("nodeName", "nodeSelector", "allNodes"))
    if not per_device:
        if has_any:
            return [invalid(path, None, "`nodeName`, `nodeSelector` and `allNodes` can only be "
                            "set if `perDeviceNodeSelection` is set to true in the ResourceSlice "
                            "spec")]
        return []
    errs: Errors = []
    chosen: list[str] = []
    if device.get("nodeName") is not None:
        if device["nodeName"]:
            chosen.append("`nodeName`")
            errs += f.node_name(device["nodeName"], path.child("nodeName"))
        else:
            errs.append(invalid(path.child("nodeName"), "", "must not be empty"))
    if isinstance(device.get("nodeSelector"), dict):
        chosen.append("`nodeSelector`")
        errs += validate_node_selector(device["nodeSelector"], path.child("nodeSelector"))
        terms = lst(device["nodeSelector"].get("nodeSelectorTerms"))
        if len(terms) != 1 and applies(gates, ONE_TERM_DEVICE_NODE_SELECTOR):
            errs.append(invalid(path.child("nodeSelector", "nodeSelectorTerms"), terms,
                                "must have exactly one node selector term"))
    if device.get("allNodes") is not None:
        if device["allNodes"] is True:
            chosen.append("`allNodes`")
        else:
            errs.append(invalid(path.child("allNodes"), device["allNodes"],
                                "must be either unset or set to true"))
    if not chosen:
        errs.append(required(path, _DEVICE_NODE_SELECTION))
    elif len(chosen) > 1:
        errs.append(invalid(path, "{" + ", ".join(chosen) + "}", _DEVICE_NODE_SELECTION))
    return errs


def _node_allocatable_name(name: str, path: Path) -> Errors:
    if name in _NODE_ALLOCATABLE or name.startswith("hugepages-"):
        return []
    return [invalid(path, name, "must be a node allocatable resource name: cpu, memory, "
                    "ephemeral-storage or hugepages-<size>")]


def _positive(value: Any, path: Path) -> Errors:
    q = _quantity(value)
    if q is None or q.value <= Fraction(0):
        return [invalid(path, str(value), "must be greater than zero")]
    return []


def _node_allocatable(resource: dict[str, Any], path: Path, capacity: dict[str, Any],
                      gates: FeatureGates) -> Errors:
    mapping, overhead = resource.get("mapping"), resource.get("overhead")
    if not isinstance(mapping, dict) and not isinstance(overhead, dict):
        return [required(path, "at least one of `mapping` or `overhead` is required")]
    errs: Errors = []
    if isinstance(mapping, dict):
        mpath = path.child("mapping")
        key = mapping.get("capacityKey")
        if key is not None:
            # 1.38: a key that is no name is reported as such, not as a missing capacity.
            name_errs = f.qualified_name(key, mpath.child("capacityKey"), True) if applies(
                gates, CAPACITY_KEY_NAME) else []
            if key == "":
                errs.append(invalid(mpath.child("capacityKey"), "",
                                    "capacityKey must not be an empty string"))
            elif name_errs:
                errs += name_errs
            elif key not in capacity:
                errs.append(invalid(mpath.child("capacityKey"), key,
                                    "must be the name of a capacity of this device"))
            if mapping.get("capacityMultiplier") is None:
                errs.append(required(mpath.child("capacityMultiplier"), _dependent(
                    "capacityMultiplier", "capacityKey", gates)))
            if mapping.get("deviceMultiplier") is not None:
                errs.append(invalid(mpath.child("deviceMultiplier"),
                                    str(mapping["deviceMultiplier"]),
                                    "may not be set together with `capacityKey`"))
        elif mapping.get("capacityMultiplier") is not None:
            errs.append(required(mpath.child("capacityKey"), _dependent(
                "capacityKey", "capacityMultiplier", gates)))
        for name in ("capacityMultiplier", "deviceMultiplier"):
            if mapping.get(name) is not None:
                errs += _positive(mapping[name], mpath.child(name))
    if isinstance(overhead, dict):
        opath = path.child("overhead")
        if overhead.get("perPod") is None and overhead.get("perContainer") is None:
            errs.append(required(opath, "at least one of `perPod` or `perContainer` is required"))
        for name in ("perPod", "perContainer"):
            q = _quantity(overhead[name]) if overhead.get(name) is not None else None
            if q is not None and q.value < 0:
                errs.append(invalid(opath.child(name), str(q),
                                    "must be greater than or equal to zero"))
    return errs


def _dependent(name: str, trigger: str, gates: FeatureGates) -> str:
    """A missing member of a mapping: the hand-written message up to 1.37, the declarative
    dependentRequired one (enforced from 1.38) after."""
    if applies(gates, DECLARATIVE_DEPENDENT_REQUIRED):
        return f"must be set when {trigger} is set"
    return f"{name} is required when {trigger} is set"


def _partition_type(spec: dict[str, Any], path: Path, gates: FeatureGates) -> Errors:
    name = spec.get("partitionTypeAttribute")
    if name is None:
        return []
    ppath = path.child("partitionTypeAttribute")
    if not gates.enabled("DRAPartitionableDevicesType"):
        return [forbidden(ppath, "disabled by feature gate DRAPartitionableDevicesType")]
    errs = f.fully_qualified_name(name, ppath, applies(gates, ONE_SLASH_NAMES))
    consumers = [(i, obj(d)) for i, d in enumerate(lst(spec.get("devices")))
                 if lst(obj(d).get("consumesCounters"))]
    if not consumers:
        return errs + [invalid(ppath, name, "may only be set on a slice which declares devices "
                               "that consume counters")]
    domain, _, ident = name.partition("/")
    for i, device in consumers:
        attributes = obj(device.get("attributes"))
        key = name if name in attributes else (
            ident if domain == spec.get("driver") and ident in attributes else None)
        apath = path.child("devices").index(i).child("attributes")
        if key is None:
            errs.append(required(apath.key(name), "device consumes counters and "
                                 "`partitionTypeAttribute` names this attribute, so it must be "
                                 "set"))
        elif not isinstance(obj(attributes[key]).get("string"), str):
            errs.append(invalid(apath.key(key), attributes[key], "must be a string value because "
                                "`partitionTypeAttribute` names this attribute"))
    return errs
