"""networking.k8s.io/v1 ServiceCIDR (+status) and IPAddress: the service IP ranges and
the addresses taken from them. kube-apiserver creates the default ServiceCIDR
`kubernetes` (draemu's bootstrap does); the service-cidrs controller keeps its status."""

from __future__ import annotations

import ipaddress

from draemu.api.errors import FieldError, Path, invalid, required, too_many
from draemu.apiserver.registry.generic import AGE_COLUMN, NAME, GenericStrategy, Printed, get_path
from draemu.apiserver.registry.strategy import Column, Context, Obj

GROUP = "networking.k8s.io"


def _cidr_errors(value: str, path: Path) -> list[FieldError]:
    try:
        network = ipaddress.ip_network(value, strict=False)
    except ValueError:
        return [invalid(path, value, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or "
                        "2001:db8::/64)")]
    if str(network) != value:
        return [invalid(path, value, f"must be in canonical form (\"{network}\")")]
    return []


def _parent(obj: Obj) -> str:
    ref = get_path(obj, "spec.parentRef")
    if not ref:
        return "<none>"
    text = ref.get("resource", "") + (f".{ref['group']}" if ref.get("group") else "")
    if ref.get("namespace"):
        text += "/" + ref["namespace"]
    return f"{text.lower()}/{ref.get('name', '')}"


class ServiceCIDRStrategy(GenericStrategy):
    group = GROUP
    kind = "ServiceCIDR"
    resource = "servicecidrs"
    singular = "servicecidr"
    namespaced = False
    versions = ("v1",)
    storage_version = "v1"
    subresources = frozenset({"status"})
    immutable_fields = ("spec.cidrs",)
    printer = (
        NAME,
        Printed(Column("CIDRs", description="cidrs defines the IP blocks in CIDR notation "
                       "(e.g. \"192.168.0.0/24\" or \"2001:db8::/64\") from which to assign "
                       "service cluster IPs."),
                lambda o: ",".join(get_path(o, "spec.cidrs") or [])),
        AGE_COLUMN,
    )

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        cidrs = get_path(obj, "spec.cidrs") or []
        path = Path("spec").child("cidrs")
        if not cidrs:
            return [required(path)]
        if len(cidrs) > 2:
            return [too_many(path, len(cidrs), 2)]
        errs: list[FieldError] = []
        for i, cidr in enumerate(cidrs):
            errs += _cidr_errors(cidr, path.index(i))
        if len(cidrs) == 2 and not errs:
            families = {ipaddress.ip_network(c).version for c in cidrs}
            if len(families) == 1:
                errs.append(invalid(path, cidrs, "may specify no more than one IP for each IP "
                                    "family, i.e 192.168.0.0/24 and 2001:db8::/64"))
        return errs


class IPAddressStrategy(GenericStrategy):
    group = GROUP
    kind = "IPAddress"
    resource = "ipaddresses"
    singular = "ipaddress"
    short_names = ("ip",)
    namespaced = False
    versions = ("v1",)
    storage_version = "v1"
    has_generation = False
    immutable_fields = ("spec.parentRef",)
    printer = (
        NAME,
        Printed(Column("ParentRef", description="ParentRef references the resource that an "
                       "IPAddress is attached to."), _parent),
    )

    def validate_name(self, name: str, prefix: bool) -> list[str]:
        if prefix:
            return ["generateName is not supported"]
        try:
            ip = ipaddress.ip_address(name)
        except ValueError:
            return ["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]
        if str(ip) != name:
            return [f'must be in canonical form ("{ip}")']
        return []

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        ref = get_path(obj, "spec.parentRef")
        path = Path("spec").child("parentRef")
        if ref is None:
            return [required(path)]
        return [required(path.child(name)) for name in ("resource", "name")
                if not ref.get(name)]


STRATEGIES = [ServiceCIDRStrategy(), IPAddressStrategy()]
