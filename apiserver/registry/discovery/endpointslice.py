"""discovery.k8s.io/v1 EndpointSlice: the addresses behind a Service, written by the
endpointslice controllers (and for `default/kubernetes` by the apiserver's bootstrap)."""

from __future__ import annotations

import ipaddress

from draemu.api.errors import (
    FieldError,
    Path,
    duplicate,
    invalid,
    not_supported,
    required,
    too_many,
)
from draemu.apiserver.registry.core.common import dns_subdomain, inclusive_range, label_value
from draemu.apiserver.registry.generic import AGE_COLUMN, NAME, GenericStrategy, Printed
from draemu.apiserver.registry.strategy import Column, Context, Obj

ADDRESS_TYPES = ["FQDN", "IPv4", "IPv6"]
PROTOCOLS = ["SCTP", "TCP", "UDP"]
MAX_ADDRESSES = 100
MAX_PORTS = 20000
MAX_ENDPOINTS = 1000


def with_more(items: list[str], limit: int = 3) -> str:
    """The first `limit` items, then `+ N more...` (the printers' listWithMoreString)."""
    text = ",".join(items[:limit])
    if len(items) > limit:
        return f"{text} + {len(items) - limit} more..."
    return text or "<unset>"


def _ports_cell(obj: Obj) -> str:
    out = []
    for port in obj.get("ports") or []:
        if port.get("port") is not None:
            out.append(str(port["port"]))
        elif port.get("name") is not None:
            out.append(port["name"])
        else:
            out.append("*")
    return with_more(out)


def _endpoints_cell(obj: Obj) -> str:
    return with_more([a for e in obj.get("endpoints") or [] for a in e.get("addresses") or []])


def _address_errors(address: str, kind: str, path: Path) -> list[FieldError]:
    if kind == "FQDN":
        return dns_subdomain(address, path)
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return [invalid(path, address, "must be a valid IP address")]
    if (kind == "IPv4") != (ip.version == 4):
        return [invalid(path, address, f"must be an {kind} address")]
    return []


class EndpointSliceStrategy(GenericStrategy):
    group = "discovery.k8s.io"
    kind = "EndpointSlice"
    resource = "endpointslices"
    singular = "endpointslice"
    versions = ("v1",)
    storage_version = "v1"
    immutable_fields = ("addressType",)
    printer = (
        NAME,
        Printed(Column("AddressType", description="addressType specifies the type of address "
                       "carried by this EndpointSlice."), lambda o: o.get("addressType", "")),
        Printed(Column("Ports", description="ports specifies the list of network ports "
                       "exposed by each endpoint in this slice."), _ports_cell),
        Printed(Column("Endpoints", description="endpoints is a list of unique endpoints in "
                       "this slice."), _endpoints_cell),
        AGE_COLUMN,
    )

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        errs: list[FieldError] = []
        kind = obj.get("addressType")
        if not kind:
            errs.append(required(Path("addressType")))
        elif kind not in ADDRESS_TYPES:
            errs.append(not_supported(Path("addressType"), kind, ADDRESS_TYPES))
        endpoints = obj.get("endpoints") or []
        if len(endpoints) > MAX_ENDPOINTS:
            errs.append(too_many(Path("endpoints"), len(endpoints), MAX_ENDPOINTS))
        for i, endpoint in enumerate(endpoints):
            p = Path("endpoints").index(i)
            addresses = endpoint.get("addresses") or []
            if not addresses:
                errs.append(required(p.child("addresses"), "must contain at least 1 address"))
            elif len(addresses) > MAX_ADDRESSES:
                errs.append(too_many(p.child("addresses"), len(addresses), MAX_ADDRESSES))
            if kind in ADDRESS_TYPES:
                for j, address in enumerate(addresses):
                    errs += _address_errors(address, kind, p.child("addresses").index(j))
            if endpoint.get("hostname"):
                errs += [invalid(p.child("hostname"), endpoint["hostname"], e.detail)
                         for e in dns_subdomain(endpoint["hostname"], p.child("hostname"))]
            for key, value in (endpoint.get("deprecatedTopology") or {}).items():
                errs += label_value(value, p.child("deprecatedTopology").key(key))
        ports = obj.get("ports") or []
        if len(ports) > MAX_PORTS:
            errs.append(too_many(Path("ports"), len(ports), MAX_PORTS))
        names: set[str] = set()
        for i, port in enumerate(ports):
            p = Path("ports").index(i)
            name = port.get("name") or ""
            if name in names:
                errs.append(duplicate(p.child("name"), name))
            names.add(name)
            protocol = port.get("protocol")
            if protocol is None:
                errs.append(required(p.child("protocol")))
            elif protocol not in PROTOCOLS:
                errs.append(not_supported(p.child("protocol"), protocol, PROTOCOLS))
            number = port.get("port")
            if number is not None and not 0 <= number <= 65535:
                errs.append(invalid(p.child("port"), number, inclusive_range(0, 65535)))
        return errs

    def default(self, obj: Obj, version: str) -> None:
        for port in obj.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("name", "")
                port.setdefault("protocol", "TCP")


STRATEGIES = [EndpointSliceStrategy()]
