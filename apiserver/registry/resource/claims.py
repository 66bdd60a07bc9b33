"""Validation of ResourceClaim and ResourceClaimTemplate (v1 shape)."""

from __future__ import annotations

from typing import Any

from draemu.api.errors import Path, forbidden, invalid, not_supported, required, too_many
from draemu.api.quantity import Quantity, QuantityError
from draemu.apiserver.registry.core.nodeselector_validation import validate_node_selector
from draemu.features import FeatureGates

from . import fields as f
from .deviceselectors import derived_expression, selector_list
from .fields import Errors, lst, obj
from .rules import CAPACITY_REQUESTS, ONE_SLASH_NAMES, applies
from .taints import toleration

REQUESTS_MAX = 32
FIRST_AVAILABLE_MAX = 8
CONSTRAINTS_MAX = 32
CONFIG_MAX = 32
RESULTS_MAX = 32
CAPACITY_AMOUNTS_MAX = 32  # capacity.requests, consumedCapacity (1.38)
RESERVED_FOR_MAX = 256
DEVICE_STATUS_CONDITIONS_MAX = 8
OPAQUE_PARAMETERS_MAX = 10 * 1024
DEVICE_STATUS_DATA_MAX = 10 * 1024
NETWORK_IPS_MAX = 16
INTERFACE_NAME_MAX = 256
HARDWARE_ADDRESS_MAX = 128
BINDING_CONDITIONS_MAX = 4
DERIVED_ATTRIBUTES_MAX = 32
DERIVED_ATTRIBUTES_CLAIM_MAX_COST = 1_000_000  # DeviceClaimDerivedAttributeCELMaxCost

ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"
ADMIN_ACCESS_DETAIL = ("admin access to devices requires the "
                       "`resource.kubernetes.io/admin-access: true` label on the containing "
                       "namespace")
_REQUEST_REF_DETAIL = ("must be the name of a request in the claim or the name of a request "
                       "and a subrequest separated by '/'")
_ALLOCATION_MODES = ["All", "ExactCount"]


# Spec --------------------------------------------------------------------------------

RequestNames = dict[str, set[str] | None]


def request_names(devices: dict[str, Any]) -> RequestNames:
    names: RequestNames = {}
    for request in lst(devices.get("requests")):
        request = obj(request)
        subs = lst(request.get("firstAvailable"))
        names[request.get("name", "")] = {obj(s).get("name", "") for s in subs} if subs else None
    return names


def _has_request(names: RequestNames, ref: str) -> bool:
    segments = ref.split("/")
    if len(segments) > 2 or segments[0] not in names:
        return False
    if len(segments) == 1:
        return True
    return segments[1] in (names[segments[0]] or set())


def request_ref(ref: str, path: Path, names: RequestNames) -> Errors:
    segments = ref.split("/")
    if len(segments) > 2:
        return [invalid(path, ref, _REQUEST_REF_DETAIL)]
    errs: Errors = []
    for segment in segments:
        errs.extend(f.dns_label(segment, path))
    if not _has_request(names, ref):
        errs.append(invalid(path, ref, _REQUEST_REF_DETAIL))
    return errs


class _ClaimContext:
    """What the requests of one claim share while validated: the gates, the attributes
    each request's constraints name (upstream's constraintAttributes: "" for constraints
    without `requests`), and the running cost of the derived attributes."""

    def __init__(self, gates: FeatureGates, constraints: list[Any],
                 old: dict[str, Any] | None = None) -> None:
        self.gates = gates
        # A stored template's requests by name (an update, 1.38): what later rules accept.
        self.old = {obj(r).get("name"): obj(r) for r in lst(obj(old).get("requests"))}
        self.derived_cost = 0
        self.constrained: dict[str, set[str]] = {}
        for constraint in constraints:
            constraint = obj(constraint)
            name = constraint.get("matchAttribute")
            if name is None:
                name = constraint.get("distinctAttribute")
            if name is None:
                continue
            for ref in lst(constraint.get("requests")) or [""]:
                self.constrained.setdefault(str(ref), set()).add(str(name))

    def old_capacity(self, ref: str) -> Any:
        """The stored `capacity.requests` of request or subrequest `ref` ("r" or "r/s")."""
        name, _, sub = ref.partition("/")
        request = self.old.get(name) or {}
        if not sub:
            return obj(obj(request.get("exactly")).get("capacity")).get("requests")
        for s in lst(request.get("firstAvailable")):
            if obj(s).get("name") == sub:
                return obj(obj(s).get("capacity")).get("requests")
        return None

    def constrains(self, attribute: str, request: str) -> bool:
        """Upstream's isAttributeUsedByConstraint: a constraint on every request, on this
        request or subrequest, or on the parent request of this subrequest."""
        parent = request.split("/", 1)[0]
        return any(attribute in self.constrained.get(ref, ()) for ref in {"", request, parent})


def claim_spec(spec: dict[str, Any], path: Path, gates: FeatureGates,
               old: dict[str, Any] | None = None) -> Errors:
    """`old`: the stored spec, when a template is updated (1.38 validates it again)."""
    devices = obj(spec.get("devices"))
    dpath = path.child("devices")
    names = request_names(devices)
    ctx = _ClaimContext(gates, lst(devices.get("constraints")),
                        obj(old).get("devices") if old is not None else None)
    errs = f.bounded_set(lst(devices.get("requests")), REQUESTS_MAX, dpath.child("requests"),
                         lambda r, p: _request(obj(r), p, ctx),
                         lambda r: obj(r).get("name", ""))
    errs += f.bounded_list(lst(devices.get("constraints")), CONSTRAINTS_MAX,
                           dpath.child("constraints"),
                           lambda c, p: _constraint(obj(c), p, names, gates))
    errs += f.bounded_list(lst(devices.get("config")), CONFIG_MAX, dpath.child("config"),
                           lambda c, p: _claim_config(obj(c), p, names))
    if ctx.derived_cost > DERIVED_ATTRIBUTES_CLAIM_MAX_COST:
        errs.append(forbidden(dpath, "too complex, total cost of derived attribute CEL "
                              "expressions in the claim exceeds cost limit"))
    return errs


def _request(request: dict[str, Any], path: Path, ctx: _ClaimContext) -> Errors:
    name = request.get("name", "")
    errs = f.dns_label(name, path.child("name"))
    first = lst(request.get("firstAvailable"))
    exactly = request.get("exactly")
    if isinstance(exactly, dict) and first:
        errs.append(invalid(path, None, "exactly one of `exactly` or `firstAvailable` is "
                            "required, but multiple fields are set"))
    elif first:
        errs += f.bounded_set(first, FIRST_AVAILABLE_MAX, path.child("firstAvailable"),
                              lambda s, p: _subrequest(obj(s), p, ctx, name),
                              lambda s: obj(s).get("name", ""))
    elif isinstance(exactly, dict):
        errs += _exact_request(exactly, path.child("exactly"), ctx, name)
    else:
        errs.append(required(path, "exactly one of `exactly` or `firstAvailable` is required"))
    return errs


def _exact_request(req: dict[str, Any], path: Path, ctx: _ClaimContext, ref: str) -> Errors:
    """`exactly`, and the same members of a subrequest (`ref`: "request[/subrequest]")."""
    errs = f.required_dns_subdomain(req.get("deviceClassName", "") or "",
                                    path.child("deviceClassName"))
    errs += selector_list(lst(req.get("selectors")), path.child("selectors"), ctx.gates)
    derived = lst(req.get("derivedAttributes"))
    if len(derived) > DERIVED_ATTRIBUTES_MAX:
        errs.append(too_many(path.child("derivedAttributes"), len(derived),
                             DERIVED_ATTRIBUTES_MAX))
    else:
        errs += f.bounded_set(derived, -1, path.child("derivedAttributes"),
                              lambda a, p: _derived_attribute(obj(a), p, ctx, ref),
                              lambda a: obj(a).get("name", ""))
    errs += allocation_mode(req.get("allocationMode", "") or "", req.get("count", 0) or 0,
                            path)
    errs += f.each(lst(req.get("tolerations")), path.child("tolerations"),
                   lambda t, p: toleration(obj(t), p))
    if applies(ctx.gates, CAPACITY_REQUESTS) and isinstance(req.get("capacity"), dict) and \
            not (ctx.old and req["capacity"].get("requests") == ctx.old_capacity(ref)):
        errs += capacity_amounts(req["capacity"].get("requests"),
                                 path.child("capacity", "requests"), ctx.gates)
    return errs


def capacity_amounts(amounts: Any, path: Path, gates: FeatureGates) -> Errors:
    """A request's `capacity.requests` and a result's `consumedCapacity` (1.38): capacity
    names, at most 32 of them, no amount below zero."""
    amounts = obj(amounts)
    one_slash = applies(gates, ONE_SLASH_NAMES)
    errs = f.bounded_map(amounts, -1, f.ATTRIBUTE_KEY_MAX, path,
                         lambda k, p: f.qualified_name(k, p, one_slash), _not_negative)
    if len(amounts) > CAPACITY_AMOUNTS_MAX:
        errs.append(too_many(path, len(amounts), CAPACITY_AMOUNTS_MAX))
    return errs


def _not_negative(value: Any, path: Path) -> Errors:
    try:
        amount = Quantity.parse(value)
    except (QuantityError, TypeError):
        return []  # the schema refuses what is no quantity
    if amount < Quantity(0):
        return [invalid(path, str(amount), "must be greater than or equal to 0")]
    return []


def _derived_attribute(attr: dict[str, Any], path: Path, ctx: _ClaimContext,
                       ref: str) -> Errors:
    name, expression = attr.get("name") or "", attr.get("expression") or ""
    errs: Errors = []
    if not name:
        errs.append(required(path.child("name")))
    else:
        errs += f.fully_qualified_name(name, path.child("name"),
                                       applies(ctx.gates, ONE_SLASH_NAMES))
        if not ctx.constrains(name, ref):
            errs.append(invalid(path.child("name"), name, "must be referenced by at least one "
                                "matchAttribute or distinctAttribute constraint targeting "
                                "this request"))
    if not expression:
        errs.append(required(path.child("expression")))
    else:
        found, cost = derived_expression(expression, path.child("expression"), ctx.gates)
        errs += found
        ctx.derived_cost += cost
    return errs


def _subrequest(sub: dict[str, Any], path: Path, ctx: _ClaimContext, parent: str) -> Errors:
    name = sub.get("name", "")
    errs = f.dns_label(name, path.child("name"))
    return errs + _exact_request(sub, path, ctx, f"{parent}/{name}")


def allocation_mode(mode: str, count: int, path: Path) -> Errors:
    if mode == "All":
        if count != 0:
            return [invalid(path.child("count"), count,
                            "must not be specified when allocationMode is 'All'")]
    elif mode == "ExactCount":
        if count <= 0:
            return [invalid(path.child("count"), count, "must be greater than zero")]
    else:
        return [not_supported(path.child("allocationMode"), mode, _ALLOCATION_MODES)]
    return []


def _constraint(constraint: dict[str, Any], path: Path, names: RequestNames,
                gates: FeatureGates) -> Errors:
    errs = f.bounded_set(lst(constraint.get("requests")), REQUESTS_MAX, path.child("requests"),
                         lambda r, p: request_ref(str(r), p, names), lambda r: r)
    one_slash = applies(gates, ONE_SLASH_NAMES)
    if constraint.get("matchAttribute") is not None:
        errs += f.fully_qualified_name(constraint["matchAttribute"], path.child("matchAttribute"),
                                       one_slash)
    elif constraint.get("distinctAttribute") is not None:
        errs += f.fully_qualified_name(constraint["distinctAttribute"],
                                       path.child("distinctAttribute"), one_slash)
    elif gates.enabled("DRAConsumableCapacity"):
        errs.append(required(path, 'exactly one of "matchAttribute" or "distinctAttribute" is '
                             "required, but multiple fields are set"))
    else:
        errs.append(required(path.child("matchAttribute")))
    return errs


def _claim_config(config: dict[str, Any], path: Path, names: RequestNames) -> Errors:
    """Claim specs are validated only on create, so their parameters are always new."""
    errs = f.bounded_set(lst(config.get("requests")), REQUESTS_MAX, path.child("requests"),
                         lambda r, p: request_ref(str(r), p, names), lambda r: r)
    return errs + device_configuration(config, path, stored=False)


def device_configuration(config: dict[str, Any], path: Path, stored: bool) -> Errors:
    opaque = config.get("opaque")
    if not isinstance(opaque, dict):
        return [required(path.child("opaque"))]
    opath = path.child("opaque")
    errs = f.driver_name(opaque.get("driver", "") or "", opath.child("driver"))
    return errs + f.raw_extension(opaque.get("parameters"), opath.child("parameters"), stored,
                                  OPAQUE_PARAMETERS_MAX)


# Status ------------------------------------------------------------------------------

def _device_id(entry: dict[str, Any]) -> tuple[str, str, str, str | None]:
    return (entry.get("driver", ""), entry.get("pool", ""), entry.get("device", ""),
            entry.get("shareID"))


def _shared_device_id_text(key: tuple[str, str, str, str | None]) -> str:
    text = "/".join(key[:3])
    return f"{text}/{key[3]}" if key[3] else text


def claim_status_update(new: dict[str, Any], old: dict[str, Any],
                        gates: FeatureGates) -> Errors:
    """The rules of a /status write; `new` and `old` are whole claims."""
    status, old_status = obj(new.get("status")), obj(old.get("status"))
    names = request_names(obj(obj(new.get("spec")).get("devices")))
    path = Path("status")
    reserved = lst(status.get("reservedFor"))
    errs = f.bounded_set(reserved, RESERVED_FOR_MAX, path.child("reservedFor"), _consumer_ref,
                         lambda r: obj(r).get("uid", ""))
    allocation = status.get("allocation")
    allocated: set[tuple[str, str, str, str | None]] = set()
    if isinstance(allocation, dict):
        allocated = {_device_id(obj(r))
                     for r in lst(obj(allocation.get("devices")).get("results"))}
    errs += f.bounded_set(lst(status.get("devices")), -1, path.child("devices"),
                          lambda d, p: _device_status(obj(d), p, allocated),
                          lambda d: _shared_device_id_text(_device_id(obj(d))))
    if reserved:
        if not isinstance(allocation, dict):
            errs.append(forbidden(path.child("reservedFor"),
                                  "may not be specified when `allocated` is not set"))
        elif obj(new.get("metadata")).get("deletionTimestamp"):
            old_entries = [obj(r) for r in lst(old_status.get("reservedFor"))]
            if any(obj(r) not in old_entries for r in reserved):
                errs.append(forbidden(path.child("reservedFor"), "new entries may not be added "
                                      "while `deallocationRequested` or `deletionTimestamp` "
                                      "are set"))
    old_allocation = old_status.get("allocation")
    if isinstance(old_allocation, dict) and isinstance(allocation, dict):
        if allocation != old_allocation:
            errs.append(invalid(path.child("allocation"), allocation, "field is immutable"))
    elif isinstance(allocation, dict):
        errs += _allocation(allocation, path.child("allocation"), names, gates)
    return errs


def _consumer_ref(ref: Any, path: Path) -> Errors:
    ref = obj(ref)
    return [required(path.child(name)) for name in ("resource", "name", "uid")
            if not ref.get(name)]


def _allocation(allocation: dict[str, Any], path: Path, names: RequestNames,
                gates: FeatureGates) -> Errors:
    devices = obj(allocation.get("devices"))
    dpath = path.child("devices")
    errs = f.bounded_list(lst(devices.get("results")), RESULTS_MAX, dpath.child("results"),
                          lambda r, p: _result(obj(r), p, names, gates))
    errs += f.bounded_list(lst(devices.get("config")), 2 * CONFIG_MAX, dpath.child("config"),
                           lambda c, p: _allocation_config(obj(c), p, names))
    if isinstance(allocation.get("nodeSelector"), dict):
        errs += validate_node_selector(allocation["nodeSelector"], path.child("nodeSelector"))
    return errs


def _result(result: dict[str, Any], path: Path, names: RequestNames,
            gates: FeatureGates) -> Errors:
    errs = request_ref(result.get("request", ""), path.child("request"), names)
    errs += f.driver_name(result.get("driver", ""), path.child("driver"))
    errs += f.pool_name(result.get("pool", ""), path.child("pool"))
    errs += f.dns_label(result.get("device", ""), path.child("device"))
    errs += binding_parameters(lst(result.get("bindingConditions")),
                               lst(result.get("bindingFailureConditions")), path)
    if result.get("shareID") is not None:
        errs += f.uid(result["shareID"], path.child("shareID"))
    errs += f.each(lst(result.get("tolerations")), path.child("tolerations"),
                   lambda t, p: toleration(obj(t), p))
    errs += skip_node_operations(lst(result.get("skipNodeOperations")),
                                 path.child("skipNodeOperations"))
    if applies(gates, CAPACITY_REQUESTS) and result.get("consumedCapacity") is not None:
        errs += capacity_amounts(result["consumedCapacity"], path.child("consumedCapacity"),
                                 gates)
    return errs


def _allocation_config(config: dict[str, Any], path: Path, names: RequestNames) -> Errors:
    source = config.get("source", "") or ""
    errs: Errors = []
    if not source:
        errs.append(required(path.child("source")))
    elif source not in ("FromClaim", "FromClass"):
        errs.append(not_supported(path.child("source"), source, ["FromClaim", "FromClass"]))
    errs += f.bounded_set(lst(config.get("requests")), REQUESTS_MAX, path.child("requests"),
                          lambda r, p: request_ref(str(r), p, names), lambda r: r)
    return errs + device_configuration(config, path, stored=False)


def _device_status(entry: dict[str, Any], path: Path,
                   allocated: set[tuple[str, str, str, str | None]]) -> Errors:
    errs = f.driver_name(entry.get("driver", ""), path.child("driver"))
    errs += f.pool_name(entry.get("pool", ""), path.child("pool"))
    errs += f.dns_label(entry.get("device", ""), path.child("device"))
    if entry.get("shareID") is not None:
        errs += f.uid(entry["shareID"], path.child("shareID"))
    key = _device_id(entry)
    if key not in allocated:
        errs.append(invalid(path, _shared_device_id_text(key),
                            "must be an allocated device in the claim"))
    conds = lst(entry.get("conditions"))
    if len(conds) > DEVICE_STATUS_CONDITIONS_MAX:
        errs.append(too_many(path.child("conditions"), len(conds),
                             DEVICE_STATUS_CONDITIONS_MAX))
    errs += f.conditions(conds, path.child("conditions"))
    if entry.get("data") is not None:
        errs += f.raw_extension(entry["data"], path.child("data"), False, DEVICE_STATUS_DATA_MAX)
    network = entry.get("networkData")
    if isinstance(network, dict):
        errs += _network_data(network, path.child("networkData"))
    return errs


def _network_data(data: dict[str, Any], path: Path) -> Errors:
    errs: Errors = []
    if len((data.get("interfaceName") or "").encode()) > INTERFACE_NAME_MAX:
        errs.append(f.too_long(path.child("interfaceName"), INTERFACE_NAME_MAX))
    if len((data.get("hardwareAddress") or "").encode()) > HARDWARE_ADDRESS_MAX:
        errs.append(f.too_long(path.child("hardwareAddress"), HARDWARE_ADDRESS_MAX))
    errs += f.bounded_set(lst(data.get("ips")), NETWORK_IPS_MAX, path.child("ips"),
                          lambda ip, p: f.interface_address(str(ip), p), lambda ip: ip)
    return errs


def binding_parameters(conditions: list[Any], failures: list[Any], path: Path) -> Errors:
    """bindingConditions / bindingFailureConditions on devices and allocation results."""
    cpath, fpath = path.child("bindingConditions"), path.child("bindingFailureConditions")
    errs = f.bounded_list(conditions, BINDING_CONDITIONS_MAX, cpath,
                          lambda c, p: f.label_name(str(c), p))
    errs += f.bounded_list(failures, BINDING_CONDITIONS_MAX, fpath,
                           lambda c, p: f.label_name(str(c), p))
    seen: set[str] = set()
    for i, cond in enumerate(conditions):
        if cond in seen:
            errs.append(f.duplicate(cpath.index(i), cond))
        seen.add(cond)
    seen_failures: set[str] = set()
    for i, cond in enumerate(failures):
        if cond in seen_failures:
            errs.append(f.duplicate(fpath.index(i), cond))
        seen_failures.add(cond)
        if cond in seen:
            errs.append(invalid(fpath.index(i), cond,
                                "bindingFailureConditions must not overlap with bindingConditions"))
    if not conditions and failures:
        errs.append(invalid(cpath, conditions,
                            "bindingConditions are required to use bindingFailureConditions"))
    if not failures and conditions:
        errs.append(invalid(fpath, failures,
                            "bindingFailureConditions are required to use bindingConditions"))
    return errs


SKIP_NODE_OPERATIONS = ["*", "NodePrepareResources", "NodeUnprepareResources"]


def skip_node_operations(items: list[Any], path: Path) -> Errors:
    errs = f.bounded_set(items, -1, path,
                         lambda op, p: [] if op in SKIP_NODE_OPERATIONS
                         else [not_supported(p, op, SKIP_NODE_OPERATIONS)], lambda op: op)
    if ("NodePrepareResources" in items and "NodeUnprepareResources" not in items
            and "*" not in items):
        errs.append(invalid(path, items, "NodePrepareResources cannot be skipped unless "
                            "NodeUnprepareResources is also skipped"))
    return errs


# Admin access ------------------------------------------------------------------------

def admin_access_paths(spec: dict[str, Any], base: Path) -> list[Path]:
    """Where a claim spec asks for admin access (`exactly.adminAccess: true`)."""
    out = []
    for i, request in enumerate(lst(obj(spec.get("devices")).get("requests"))):
        if obj(obj(request).get("exactly")).get("adminAccess") is True:
            out.append(base.child("devices", "requests").index(i).child("exactly", "adminAccess"))
    return out


def new_result_admin_access_paths(status: dict[str, Any], old_status: dict[str, Any]) -> list[Path]:
    """Results of a newly set allocation that grant admin access."""
    if isinstance(old_status.get("allocation"), dict):
        return []
    results = lst(obj(obj(status.get("allocation")).get("devices")).get("results"))
    base = Path("status.allocation.devices.results")
    return [base.index(i).child("adminAccess") for i, r in enumerate(results)
            if obj(r).get("adminAccess") is True]


# Templates ---------------------------------------------------------------------------

_TEMPLATE_META_ALLOWED = {"labels", "annotations"}


def template_metadata(meta: dict[str, Any], path: Path) -> Errors:
    """A template's ObjectMeta: labels and annotations only."""
    errs: Errors = []
    for key in sorted(meta):
        if key not in _TEMPLATE_META_ALLOWED and meta[key] not in (None, "", [], {}, 0):
            errs.append(forbidden(path.child(key), "cannot be set"))
    for key, value in sorted(obj(meta.get("labels")).items()):
        errs += f.label_name(key, path.child("labels"))
        errs += f.label_value(str(value), path.child("labels"))
    for key in sorted(obj(meta.get("annotations"))):
        errs += [invalid(path.child("annotations"), key, m)
                 for m in f.names.is_qualified_name(key.lower())]
    return errs


def template_spec(spec: dict[str, Any], path: Path, gates: FeatureGates,
                  old: dict[str, Any] | None = None) -> Errors:
    """`old`: the stored template's `spec` on an update (1.38: the spec is validated again,
    unchanged capacity requests accepted as stored)."""
    errs = template_metadata(obj(spec.get("metadata")), path.child("metadata"))
    return errs + claim_spec(obj(spec.get("spec")), path.child("spec"), gates,
                             None if old is None else obj(old.get("spec")))


def immutable(new: Any, old: Any, path: Path) -> Errors:
    if new != old:
        return [invalid(path, new, "field is immutable")]
    return []
