"""core/v1 Service (+status): defaults, ClusterIP and NodePort allocation (see
`serviceallocation`), the validation of pkg/apis/core/validation for a single-stack IPv4
cluster, the allocated values an update may leave out, and the `kubectl get svc` columns.

Not done: dual-stack (a second family is refused as upstream refuses it on a
single-stack cluster), loadBalancerClass rules beyond type, topology annotations."""

from __future__ import annotations

import ipaddress
from typing import Any

from draemu.api.errors import (
    FieldError,
    Path,
    StatusError,
    duplicate,
    forbidden,
    internal_error,
    invalid,
    invalid_object,
    not_supported,
    required,
)
from draemu.apiserver.registry.core import serviceallocation as alloc
from draemu.apiserver.registry.core.common import (
    dns_label,
    dns_subdomain,
    inclusive_range,
    qualified_name,
)
from draemu.apiserver.registry.core.podspec_validation import validate_port_num_or_name
from draemu.apiserver.registry.generic import AGE_COLUMN, NAME, GenericStrategy, Printed, get_path
from draemu.apiserver.registry.meta import name_is_dns_label, validate_labels
from draemu.apiserver.registry.strategy import Column, Context, Obj
from draemu.apiserver.wire.jsoncopy import clone

TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]
AFFINITIES = ["ClientIP", "None"]
PROTOCOLS = ["SCTP", "TCP", "UDP"]
TRAFFIC_POLICIES = ["Cluster", "Local"]
FAMILIES = ["IPv4", "IPv6"]
FAMILY_POLICIES = ["PreferDualStack", "RequireDualStack", "SingleStack"]
TRAFFIC_DISTRIBUTIONS = ["PreferClose", "PreferSameNode", "PreferSameZone"]
DEFAULT_CLIENT_IP_TIMEOUT = 10800
MAX_CLIENT_IP_TIMEOUT = 86400


def _spec(obj: Obj) -> Obj:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def is_headless(spec: Obj) -> bool:
    return spec.get("clusterIP") == "None"


def needs_cluster_ip(spec: Obj) -> bool:
    return spec.get("type") != "ExternalName"


def needs_node_ports(spec: Obj) -> bool:
    kind = spec.get("type")
    return kind == "NodePort" or (kind == "LoadBalancer"
                                  and spec.get("allocateLoadBalancerNodePorts") is not False)


def externally_accessible(spec: Obj) -> bool:
    return spec.get("type") in ("LoadBalancer", "NodePort") or bool(spec.get("externalIPs"))


def needs_health_check(spec: Obj) -> bool:
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


# Printing ---------------------------------------------------------------------------

def _ports_cell(obj: Obj) -> str:
    pieces = []
    for port in _spec(obj).get("ports") or []:
        if port.get("nodePort"):
            pieces.append(f"{port.get('port')}:{port['nodePort']}/{port.get('protocol', '')}")
        else:
            pieces.append(f"{port.get('port')}/{port.get('protocol', '')}")
    return ",".join(pieces) or "<none>"


def _external_ip_cell(obj: Obj) -> str:
    spec = _spec(obj)
    kind = spec.get("type")
    external = spec.get("externalIPs") or []
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) or "<none>"
    if kind == "LoadBalancer":
        ingress = get_path(obj, "status.loadBalancer.ingress") or []
        found = [i.get("ip") or i.get("hostname") or "" for i in ingress]
        found = [f for f in found if f] + external
        return ",".join(found) or "<pending>"
    if kind == "ExternalName":
        return spec.get("externalName", "")
    return "<unknown>"


def format_labels(labels: dict[str, str] | None) -> str:
    """labels.FormatLabels: `a=b,c=d` sorted, `<none>` when empty."""
    return ",".join(f"{k}={v}" for k, v in sorted((labels or {}).items())) or "<none>"


# Validation -------------------------------------------------------------------------

def _port_errors(port: Obj, require_name: bool, names: set[str],
                 path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    name = port.get("name") or ""
    if require_name and not name:
        errs.append(required(path.child("name")))
    elif name:
        errs += dns_label(name, path.child("name"))
        if name in names:
            errs.append(duplicate(path.child("name"), name))
        names.add(name)
    number = port.get("port") or 0
    if not 1 <= number <= 65535:
        errs.append(invalid(path.child("port"), number, inclusive_range(1, 65535)))
    protocol = port.get("protocol") or ""
    if not protocol:
        errs.append(required(path.child("protocol")))
    elif protocol not in PROTOCOLS:
        errs.append(not_supported(path.child("protocol"), protocol, PROTOCOLS))
    errs += validate_port_num_or_name(port.get("targetPort"), path.child("targetPort"))
    if port.get("appProtocol") is not None:
        errs += qualified_name(port["appProtocol"], path.child("appProtocol"))
    node_port = port.get("nodePort")
    if node_port and not 1 <= node_port <= 65535:
        errs.append(invalid(path.child("nodePort"), node_port, inclusive_range(1, 65535)))
    return errs


def _cluster_ip_errors(spec: Obj) -> list[FieldError]:
    path = Path("spec")
    ips_path = path.child("clusterIPs")
    errs: list[FieldError] = []
    ip, ips = spec.get("clusterIP") or "", spec.get("clusterIPs") or []
    if ip:
        if not ips:
            errs.append(required(ips_path))
        elif ips[0] != ip:
            errs.append(invalid(ips_path, ips, "first value must match `clusterIP`"))
    elif ips:
        errs.append(invalid(ips_path, ips, "must be empty when `clusterIP` is not specified"))
    seen: set[str] = set()
    for i, family in enumerate(spec.get("ipFamilies") or []):
        if family not in FAMILIES:
            errs.append(not_supported(path.child("ipFamilies").index(i), family, FAMILIES))
        if family in seen:
            errs.append(duplicate(path.child("ipFamilies").index(i), family))
        seen.add(family)
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in FAMILY_POLICIES:
        errs.append(not_supported(path.child("ipFamilyPolicy"), policy, FAMILY_POLICIES))
    for i, value in enumerate(ips):
        if i == 0 and value == "None":
            if len(ips) > 1:
                errs.append(invalid(ips_path, ips, "'None' must be the first and only value"))
            continue
        try:
            ipaddress.ip_address(value)
        except ValueError:
            errs.append(invalid(ips_path.index(i), value, "must be a valid IP address, (e.g. "
                                "10.9.8.7 or 2001:db8::ffff)"))
    if len(ips) > 2:
        errs.append(invalid(ips_path, ips, "may only hold up to 2 values"))
    return errs


def validate_service(obj: Obj, allocated: bool = True) -> list[FieldError]:
    """Upstream's rules, in upstream's order; `allocated=False` before allocation (what
    it fills in may be missing yet)."""
    spec = _spec(obj)
    path = Path("spec")
    kind = spec.get("type") or ""
    errs = _kind_errors(spec, path, kind)
    errs += _affinity_errors(spec, path)
    if kind != "ExternalName":
        errs += _cluster_ip_errors(spec)
    for i, ip in enumerate(spec.get("externalIPs") or []):
        try:
            ipaddress.ip_address(ip)
        except ValueError:
            errs.append(invalid(path.child("externalIPs").index(i), ip, "must be a valid IP "
                                "address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
    if not kind:
        errs.append(required(path.child("type")))
    elif kind not in TYPES:
        errs.append(not_supported(path.child("type"), kind, TYPES))
    errs += _port_uniqueness_errors(spec, path, kind)
    errs += _load_balancer_errors(spec, path, kind)
    return errs + _traffic_errors(spec, path, kind, allocated)


def _kind_errors(spec: Obj, path: Path, kind: str) -> list[FieldError]:
    """Ports, headless and ExternalName services, each port, the selector."""
    errs: list[FieldError] = []
    ports = spec.get("ports") or []
    headless = is_headless(spec)
    if not ports and not headless and kind != "ExternalName":
        errs.append(required(path.child("ports")))
    if kind in ("LoadBalancer", "NodePort") and headless:
        errs.append(invalid(path.child("clusterIPs").index(0), "None",
                            f"may not be set to 'None' for {kind} services"))
    if kind == "ExternalName":
        errs += _external_name_errors(spec, path)
    names: set[str] = set()
    for i, port in enumerate(ports):
        errs += _port_errors(port, len(ports) > 1, names, path.child("ports").index(i))
    if spec.get("selector") is not None:
        errs += validate_labels(spec["selector"], path.child("selector"))
    return errs


def _external_name_errors(spec: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for name in ("clusterIPs", "ipFamilies"):
        if spec.get(name):
            errs.append(forbidden(path.child(name), "may not be set for ExternalName "
                                  "services"))
    if spec.get("ipFamilyPolicy") is not None:
        errs.append(forbidden(path.child("ipFamilyPolicy"), "may not be set for "
                              "ExternalName services"))
    cname = (spec.get("externalName") or "").removesuffix(".")
    if cname:
        errs += dns_subdomain(cname, path.child("externalName"))
    else:
        errs.append(required(path.child("externalName")))
    return errs


def _affinity_errors(spec: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    affinity = spec.get("sessionAffinity") or ""
    if not affinity:
        errs.append(required(path.child("sessionAffinity")))
    elif affinity not in AFFINITIES:
        errs.append(not_supported(path.child("sessionAffinity"), affinity, AFFINITIES))
    if affinity == "ClientIP":
        timeout = get_path(spec, "sessionAffinityConfig.clientIP.timeoutSeconds")
        p = path.child("sessionAffinityConfig", "clientIP", "timeoutSeconds")
        if timeout is None:
            errs.append(required(p))
        elif not 0 < timeout <= MAX_CLIENT_IP_TIMEOUT:
            errs.append(invalid(p, timeout, f"must be greater than 0 and less than "
                                f"{MAX_CLIENT_IP_TIMEOUT}"))
    elif affinity == "None" and spec.get("sessionAffinityConfig") is not None:
        errs.append(forbidden(path.child("sessionAffinityConfig"),
                              "must not be set when session affinity is None"))
    return errs


def _port_uniqueness_errors(spec: Obj, path: Path, kind: str) -> list[FieldError]:
    """No nodePort on a ClusterIP service; node ports and (protocol, port) pairs once."""
    errs: list[FieldError] = []
    ports = spec.get("ports") or []
    if kind == "ClusterIP":
        for i, port in enumerate(ports):
            if port.get("nodePort"):
                errs.append(forbidden(path.child("ports").index(i).child("nodePort"),
                                      "may not be used when `type` is 'ClusterIP'"))
    node_ports: set[tuple[Any, Any]] = set()
    pairs: set[tuple[Any, Any]] = set()
    for i, port in enumerate(ports):
        p = path.child("ports").index(i)
        if port.get("nodePort"):
            key = (port.get("protocol"), port["nodePort"])
            if key in node_ports:
                errs.append(duplicate(p.child("nodePort"), port["nodePort"]))
            node_ports.add(key)
        key = (port.get("protocol"), port.get("port"))
        if key in pairs:
            errs.append(duplicate(p, {"port": port.get("port"), "protocol": port.get("protocol"),
                                      "targetPort": 0, "nodePort": 0}))
        pairs.add(key)
    return errs


def _load_balancer_errors(spec: Obj, path: Path, kind: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if spec.get("loadBalancerSourceRanges"):
        if kind != "LoadBalancer":
            errs.append(forbidden(path.child("LoadBalancerSourceRanges"),
                                  "may only be used when `type` is 'LoadBalancer'"))
        for i, value in enumerate(spec["loadBalancerSourceRanges"]):
            try:
                ipaddress.ip_network(str(value).strip(), strict=False)
            except ValueError:
                errs.append(invalid(path.child("LoadBalancerSourceRanges").index(i), value,
                                    "must be a valid CIDR value, (e.g. 10.9.8.0/24 or "
                                    "2001:db8::/64)"))
    if spec.get("allocateLoadBalancerNodePorts") is not None and kind != "LoadBalancer":
        errs.append(forbidden(path.child("allocateLoadBalancerNodePorts"),
                              "may only be used when `type` is 'LoadBalancer'"))
    if kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        errs.append(required(Path("allocateLoadBalancerNodePorts")))
    if spec.get("loadBalancerClass") is not None and kind != "LoadBalancer":
        errs.append(forbidden(path.child("loadBalancerClass"),
                              "may only be used when `type` is 'LoadBalancer'"))
    return errs


def _traffic_errors(spec: Obj, path: Path, kind: str, allocated: bool) -> list[FieldError]:
    """External and internal traffic policies, the health check node port, the traffic
    distribution."""
    errs: list[FieldError] = []
    external_policy = spec.get("externalTrafficPolicy") or ""
    if not externally_accessible(spec):
        if external_policy:
            errs.append(invalid(path.child("externalTrafficPolicy"), external_policy,
                                "may only be set for externally-accessible services"))
    elif not external_policy:
        errs.append(required(path.child("externalTrafficPolicy")))
    elif external_policy not in TRAFFIC_POLICIES:
        errs.append(not_supported(path.child("externalTrafficPolicy"), external_policy,
                                  TRAFFIC_POLICIES))
    health = spec.get("healthCheckNodePort") or 0
    if not needs_health_check(spec):
        if health:
            errs.append(invalid(path.child("healthCheckNodePort"), health, "may only be set "
                                "when `type` is 'LoadBalancer' and `externalTrafficPolicy` is "
                                "'Local'"))
    elif not health and allocated:
        errs.append(required(path.child("healthCheckNodePort")))
    internal_policy = spec.get("internalTrafficPolicy")
    if internal_policy is None:
        if kind in ("ClusterIP", "LoadBalancer", "NodePort"):
            errs.append(required(path.child("internalTrafficPolicy")))
    elif internal_policy not in TRAFFIC_POLICIES:
        errs.append(not_supported(path.child("internalTrafficPolicy"), internal_policy,
                                  TRAFFIC_POLICIES))
    distribution = spec.get("trafficDistribution")
    if distribution is not None and distribution not in TRAFFIC_DISTRIBUTIONS:
        errs.append(not_supported(path.child("trafficDistribution"), distribution,
                                  TRAFFIC_DISTRIBUTIONS))
    return errs


def _cluster_ips_update_errors(new: Obj, old: Obj) -> list[FieldError]:
    spec, before = _spec(new), _spec(old)
    if "ExternalName" in (spec.get("type"), before.get("type")):
        return []
    if is_headless(spec) and is_headless(before):
        return []
    ips, old_ips = spec.get("clusterIPs") or [], before.get("clusterIPs") or []
    path = Path("spec").child("clusterIPs")
    if len(ips) == len(old_ips):
        return [invalid(path.index(i), ips, "may not change once set")
                for i, ip in enumerate(old_ips) if ip != ips[i]]
    if len(old_ips) > len(ips):
        if not ips:
            return [invalid(path.index(0), ips, "primary clusterIP can not be unset")]
        if ips[0] != old_ips[0]:
            return [invalid(path.index(0), ips, "may not change once set")]
    return []


# Allocation -------------------------------------------------------------------------

def _refuse(obj: Obj, errors: list[FieldError]) -> StatusError:
    return invalid_object("Service", "", (obj.get("metadata") or {}).get("name") or "", errors)


def _ip_families(obj: Obj) -> None:
    """A single-stack IPv4 cluster's families, with upstream's refusals."""
    spec = _spec(obj)
    policy = spec.get("ipFamilyPolicy")
    if policy == "RequireDualStack":
        raise _refuse(obj, [invalid(Path("spec").child("ipFamilyPolicy"), policy,
                                    "this cluster is not configured for dual-stack services")])
    families = spec.get("ipFamilies") or []
    for i, family in enumerate(families):
        if family == "IPv6":
            raise _refuse(obj, [invalid(Path("spec").child("ipFamilies").index(i), family,
                                        "not configured on this cluster")])
    if len(families) > 1:
        raise _refuse(obj, [invalid(Path("spec").child("ipFamilyPolicy"), policy,
                                    "must be RequireDualStack or PreferDualStack when multiple "
                                    "'ipFamilies' are specified")])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    if not families:
        spec["ipFamilies"] = ["IPv4"]


def allocate(obj: Obj, services: list[Obj], held: alloc.Reservations,
             addresses: list[Obj] | None = None) -> None:
    """Fill in clusterIP(s), node ports and the health-check node port a Service lacks;
    `addresses` are the IPAddress objects (their addresses are taken too)."""
    spec = _spec(obj)
    if not needs_cluster_ip(spec):
        return
    ip = spec.get("clusterIP") or ""
    if ip and ip != "None":
        try:
            ipaddress.ip_address(ip)
        except ValueError:
            return  # validation reports it
    _ip_families(obj)
    if not ip:
        found = alloc.next_ip(services, held,
                              alloc.held_by_addresses(addresses or [], services))
        if found is None:
            raise internal_error("failed to allocate a serviceIP: range is full")
        spec["clusterIP"], spec["clusterIPs"] = found, [found]
    elif ip != "None":
        why = alloc.claim_ip(ip, services, held,
                             alloc.held_by_addresses(addresses or [], services))
        if why:
            raise _refuse(obj, [invalid(Path("spec").child("clusterIPs"), [ip],
                                        f"failed to allocate IP {ip}: {why}")])
    allocate_node_ports(obj, services, held)


def allocate_node_ports(obj: Obj, services: list[Obj], held: alloc.Reservations,
                        kept: frozenset[int] = frozenset()) -> None:
    """Node ports for the ports without one (one per port number, as upstream); `kept`
    are the ports the object already held before this write (not allocated again)."""
    spec = _spec(obj)
    ports = spec.get("ports") or []
    by_number: dict[Any, int] = {}
    given = {p["nodePort"] for p in ports if p.get("nodePort")}
    for i, port in enumerate(ports):
        wanted = port.get("nodePort") or 0
        if not wanted and not needs_node_ports(spec):
            continue
        if wanted:
            if wanted not in kept and wanted not in by_number.values():
                why = alloc.claim_node_port(wanted, services, held)
                if why:
                    raise _refuse(obj, [invalid(Path("spec").child("ports").index(i)
                                                .child("nodePort"), wanted, why)])
            by_number.setdefault(port.get("port"), wanted)
            continue
        if port.get("port") in by_number:
            port["nodePort"] = by_number[port.get("port")]
            continue
        found = alloc.next_node_port(services, given, held)
        if found is None:
            raise internal_error("failed to allocate a nodePort: range is full")
        port["nodePort"] = by_number[port.get("port")] = found
    if needs_health_check(spec) and not spec.get("healthCheckNodePort"):
        found = alloc.next_node_port(services, given | set(by_number.values()), held)
        if found is None:
            raise internal_error("failed to allocate a HealthCheck NodePort: range is full")
        spec["healthCheckNodePort"] = found
    elif needs_health_check(spec) and spec["healthCheckNodePort"] not in kept:
        why = alloc.claim_node_port(spec["healthCheckNodePort"], services, held)
        if why:
            raise StatusError(400, "BadRequest", "failed to allocate requested HealthCheck "
                              f"NodePort {spec['healthCheckNodePort']}: {why}")


def _keep_allocated(new: Obj, old: Obj) -> None:
    """patchAllocatedValues: an update that leaves allocated values out keeps them."""
    spec, before = _spec(new), _spec(old)
    if needs_cluster_ip(spec) and needs_cluster_ip(before):
        if not spec.get("clusterIP") and before.get("clusterIP"):
            spec["clusterIP"] = before["clusterIP"]
        if not spec.get("clusterIPs") and before.get("clusterIPs"):
            spec["clusterIPs"] = clone(before["clusterIPs"])
        if spec.get("clusterIPs") == before.get("clusterIPs"):
            for name in ("ipFamilies", "ipFamilyPolicy"):
                if spec.get(name) is None and before.get(name) is not None:
                    spec[name] = clone(before[name])
    if needs_node_ports(spec) and needs_node_ports(before):
        old_ports = {p.get("nodePort") for p in before.get("ports") or []}
        new_ports = {p.get("nodePort") for p in spec.get("ports") or []}
        used = old_ports & new_ports
        by_name = {p.get("name") or "": p.get("nodePort") for p in before.get("ports") or []}
        for port in spec.get("ports") or []:
            if not port.get("nodePort"):
                value = by_name.get(port.get("name") or "")
                if value and value not in used:
                    port["nodePort"] = value
    if needs_health_check(spec) and needs_health_check(before) and \
            not spec.get("healthCheckNodePort"):
        spec["healthCheckNodePort"] = before.get("healthCheckNodePort")


def _drop_type_dependent(new: Obj, old: Obj) -> None:
    """dropTypeDependentFields: values the old type needed and the new one may not have
    go, when the update left them as they were."""
    spec, before = _spec(new), _spec(old)
    if not needs_cluster_ip(spec) and needs_cluster_ip(before):
        for name in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
            if spec.get(name) == before.get(name):
                spec.pop(name, None)
    if not needs_node_ports(spec) and needs_node_ports(before):
        old_ports = {(p.get("name"), p.get("nodePort")) for p in before.get("ports") or []}
        for port in spec.get("ports") or []:
            if (port.get("name"), port.get("nodePort")) in old_ports:
                port.pop("nodePort", None)
    if not needs_health_check(spec) and spec.get("healthCheckNodePort") == \
            before.get("healthCheckNodePort"):
        spec.pop("healthCheckNodePort", None)
    if spec.get("type") != "LoadBalancer":
        for name in ("allocateLoadBalancerNodePorts", "loadBalancerClass"):
            if spec.get(name) == before.get(name):
                spec.pop(name, None)
    if not externally_accessible(spec) and spec.get("externalTrafficPolicy") == \
            before.get("externalTrafficPolicy"):
        spec.pop("externalTrafficPolicy", None)


# The strategy -----------------------------------------------------------------------

class ServiceStrategy(GenericStrategy):
    kind = "Service"
    resource = "services"
    singular = "service"
    short_names = ("svc",)
    categories = ("all",)
    versions = ("v1",)
    storage_version = "v1"
    subresources = frozenset({"status"})
    status_meta_reset = ()
    has_generation = False
    field_selectors = {"spec.clusterIP": lambda o: _spec(o).get("clusterIP") or "",
                       "spec.type": lambda o: _spec(o).get("type") or ""}
    printer = (
        NAME,
        Printed(Column("Type", description="type determines how the Service is exposed."),
                lambda o: _spec(o).get("type", "")),
        Printed(Column("Cluster-IP", description="clusterIP is the IP address of the "
                       "service and is usually assigned randomly."),
                lambda o: (_spec(o).get("clusterIPs") or ["<none>"])[0]),
        Printed(Column("External-IP", description="externalIPs is a list of IP addresses for "
                       "which nodes in the cluster will also accept traffic for this "
                       "service."), _external_ip_cell),
        Printed(Column("Port(s)", description="The list of ports that are exposed by this "
                       "service."), _ports_cell),
        AGE_COLUMN,
        Printed(Column("Selector", priority=1, description="Route service traffic to pods "
                       "with label keys and values matching this selector."),
                lambda o: format_labels(_spec(o).get("selector"))),
    )

    def validate_name(self, name: str, prefix: bool) -> list[str]:
        return name_is_dns_label(name, prefix)

    def default(self, obj: Obj, version: str) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            obj["spec"] = spec = {}
        spec.setdefault("type", "ClusterIP")
        if not spec.get("sessionAffinity"):
            spec["sessionAffinity"] = "None"
        if spec["sessionAffinity"] == "ClientIP":
            client = spec.setdefault("sessionAffinityConfig", {}).setdefault("clientIP", {})
            if isinstance(client, dict) and client.get("timeoutSeconds") is None:
                client["timeoutSeconds"] = DEFAULT_CLIENT_IP_TIMEOUT
        for port in spec.get("ports") or []:
            if not isinstance(port, dict):
                continue
            if not port.get("protocol"):
                port["protocol"] = "TCP"
            if port.get("targetPort") in (None, 0, ""):
                port["targetPort"] = port.get("port")
        if spec["type"] in ("NodePort", "LoadBalancer") and not spec.get(
                "externalTrafficPolicy"):
            spec["externalTrafficPolicy"] = "Cluster"
        if spec.get("internalTrafficPolicy") is None and spec["type"] != "ExternalName":
            spec["internalTrafficPolicy"] = "Cluster"
        if spec["type"] == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
            spec["allocateLoadBalancerNodePorts"] = True
        # normalizeClusterIPs: one of clusterIP / clusterIPs given fills the other.
        if spec.get("clusterIP") and not spec.get("clusterIPs"):
            spec["clusterIPs"] = [spec["clusterIP"]]
        elif spec.get("clusterIPs") and not spec.get("clusterIP"):
            spec["clusterIP"] = spec["clusterIPs"][0]

    def prepare_for_create(self, obj: Obj, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        obj["status"] = {"loadBalancer": {}}
        if not validate_service(obj, allocated=False):
            allocate(obj, self._services(ctx), alloc.reservations(ctx.state),
                     self._addresses(ctx))

    def prepare_for_update(self, new: Obj, old: Obj, ctx: Context) -> None:
        super().prepare_for_update(new, old, ctx)
        spec = new.get("spec")
        if not isinstance(spec, dict):
            return
        # A type change leaves clusterIPs in clusterIP's wake (normalizeClusterIPs).
        if spec.get("clusterIP") == "" and spec.get("clusterIPs") == _spec(old).get(
                "clusterIPs"):
            spec.pop("clusterIPs", None)
        _keep_allocated(new, old)
        _drop_type_dependent(new, old)
        if validate_service(new, allocated=False):
            return
        services = [s for s in self._services(ctx)
                    if (s.get("metadata") or {}).get("uid") != (old.get("metadata") or {})
                    .get("uid")]
        if needs_cluster_ip(spec) and not needs_cluster_ip(_spec(old)):
            allocate(new, services, alloc.reservations(ctx.state), self._addresses(ctx))
        elif needs_cluster_ip(spec):
            kept = frozenset(p.get("nodePort") for p in _spec(old).get("ports") or []
                             if p.get("nodePort")) | frozenset(
                                 [_spec(old).get("healthCheckNodePort") or 0])
            allocate_node_ports(new, services, alloc.reservations(ctx.state), kept)

    @staticmethod
    def _services(ctx: Context) -> list[Obj]:
        return ctx.listing("services", "", "") if ctx.listing is not None else []

    @staticmethod
    def _addresses(ctx: Context) -> list[Obj]:
        if ctx.listing is None:
            return []
        return ctx.listing("ipaddresses", "networking.k8s.io", "")

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        return validate_service(obj)

    def validate_object_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        errs = _cluster_ips_update_errors(new, old)
        spec, before = _spec(new), _spec(old)
        if needs_health_check(spec) and needs_health_check(before) and \
                spec.get("healthCheckNodePort") != before.get("healthCheckNodePort"):
            errs.append(forbidden(Path("spec").child("healthCheckNodePort"),
                                  "field is immutable"))
        return errs

    def validate_status_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        errs: list[FieldError] = []
        ingress = get_path(new, "status.loadBalancer.ingress") or []
        path = Path("status").child("loadBalancer", "ingress")
        for i, entry in enumerate(ingress):
            if entry.get("ip"):
                try:
                    ipaddress.ip_address(entry["ip"])
                except ValueError:
                    errs.append(invalid(path.index(i).child("ip"), entry["ip"],
                                        "must be a valid IP address"))
            if entry.get("hostname"):
                errs += dns_subdomain(entry["hostname"], path.index(i).child("hostname"))
        return errs


STRATEGIES = [ServiceStrategy()]
