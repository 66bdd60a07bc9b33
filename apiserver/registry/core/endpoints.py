"""core/v1 Endpoints: the addresses behind a Service, written by the endpoints
controller (and for `default/kubernetes` by the apiserver's bootstrap)."""

from __future__ import annotations

import ipaddress

from draemu.api.errors import FieldError, Path, duplicate, invalid, not_supported, required
from draemu.apiserver.registry.core.common import dns_label, inclusive_range
from draemu.apiserver.registry.generic import AGE_COLUMN, NAME, GenericStrategy, Printed
from draemu.apiserver.registry.strategy import Column, Context, Obj

PROTOCOLS = ["SCTP", "TCP", "UDP"]


def endpoints_cell(obj: Obj, limit: int = 3) -> str:
    """formatEndpoints: `ip:port` for every port of every subset, the first three, then
    `+ N more...`; `<none>` without subsets."""
    subsets = obj.get("subsets") or []
    if not subsets:
        return "<none>"
    shown: list[str] = []
    count = 0
    for subset in subsets:
        addresses = [a.get("ip", "") for a in subset.get("addresses") or []]
        ports = subset.get("ports") or []
        if not ports:
            count += len(addresses)
            shown += addresses[:max(0, limit - len(shown))]
            continue
        for port in ports:
            count += len(addresses)
            for ip in addresses:
                if len(shown) < limit:
                    host = f"[{ip}]" if ":" in ip else ip
                    shown.append(f"{host}:{port.get('port')}")
    text = ",".join(shown)
    return f"{text} + {count - limit} more..." if count > limit else text


def _address_errors(address: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    ip = address.get("ip") or ""
    try:
        parsed = ipaddress.ip_address(ip)
    except ValueError:
        return [invalid(path.child("ip"), ip, "must be a valid IP address, (e.g. 10.9.8.7 or "
                        "2001:db8::ffff)")]
    if parsed.is_unspecified or parsed.is_loopback or parsed.is_link_local:
        errs.append(invalid(path.child("ip"), ip, "may not be unspecified (0.0.0.0, ::)"
                            if parsed.is_unspecified else "may not be in the loopback range "
                            "(127.0.0.0/8, ::1/128)" if parsed.is_loopback else
                            "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
    if address.get("hostname"):
        errs += dns_label(address["hostname"], path.child("hostname"))
    return errs


class EndpointsStrategy(GenericStrategy):
    kind = "Endpoints"
    resource = "endpoints"
    singular = "endpoints"
    short_names = ("ep",)
    versions = ("v1",)
    # As 1.33+ warns on every request (prerelease-lifecycle "deprecated=1.33").
    deprecated_versions = {"v1": "v1 Endpoints is deprecated in v1.33+; use "
                                 "discovery.k8s.io/v1 EndpointSlice"}
    storage_version = "v1"
    has_generation = False
    printer = (
        NAME,
        Printed(Column("Endpoints", description="Endpoints is the list of endpoints."),
                endpoints_cell),
        AGE_COLUMN,
    )

    def default(self, obj: Obj, version: str) -> None:
        for subset in obj.get("subsets") or []:
            for port in (subset.get("ports") or []) if isinstance(subset, dict) else []:
                if isinstance(port, dict) and not port.get("protocol"):
                    port["protocol"] = "TCP"

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        errs: list[FieldError] = []
        for i, subset in enumerate(obj.get("subsets") or []):
            p = Path("subsets").index(i)
            addresses = subset.get("addresses") or []
            not_ready = subset.get("notReadyAddresses") or []
            if not addresses and not not_ready:
                errs.append(required(p, "must specify `addresses` or `notReadyAddresses`"))
            for j, address in enumerate(addresses):
                errs += _address_errors(address, p.child("addresses").index(j))
            for j, address in enumerate(not_ready):
                errs += _address_errors(address, p.child("notReadyAddresses").index(j))
            ports = subset.get("ports") or []
            names: set[str] = set()
            for j, port in enumerate(ports):
                q = p.child("ports").index(j)
                name = port.get("name") or ""
                if len(ports) > 1 and not name:
                    errs.append(required(q.child("name")))
                elif name:
                    errs += dns_label(name, q.child("name"))
                    if name in names:
                        errs.append(duplicate(q.child("name"), name))
                    names.add(name)
                number = port.get("port") or 0
                if not 1 <= number <= 65535:
                    errs.append(invalid(q.child("port"), number, inclusive_range(1, 65535)))
                protocol = port.get("protocol") or ""
                if not protocol:
                    errs.append(required(q.child("protocol")))
                elif protocol not in PROTOCOLS:
                    errs.append(not_supported(q.child("protocol"), protocol, PROTOCOLS))
        return errs


STRATEGIES = [EndpointsStrategy()]
