"""Kubernetes' IP, CIDR and URL CEL libraries and the strings extension's `format`."""

from __future__ import annotations

import ipaddress
import urllib.parse
from typing import Any

from draemu.cel import cost as costs
from draemu.cel import estimatecalls as estimates
from draemu.cel.errors import CELRuntimeError
from draemu.cel.library.registry import register, want
from draemu.cel.values import QuantityValue, Semver, is_number, no_overload


class IPValue:
    __slots__ = ("addr",)

    def __init__(self, addr: ipaddress.IPv4Address | ipaddress.IPv6Address) -> None:
        self.addr = addr

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IPValue) and self.addr == other.addr

    def __hash__(self) -> int:
        return hash(self.addr)


class CIDRValue:
    __slots__ = ("net", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.net = ipaddress.ip_network(text, strict=False)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CIDRValue) and self.text == other.text

    def __hash__(self) -> int:
        return hash(self.text)


class URLValue:
    __slots__ = ("parts", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.parts = urllib.parse.urlsplit(text)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, URLValue) and self.text == other.text

    def __hash__(self) -> int:
        return hash(self.text)


def _parse_ip(s: str) -> IPValue:
    # Kubernetes refuses IPv4-mapped IPv6 and zones; Python's parser refuses zones too.
    addr = ipaddress.ip_address(s)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        raise ValueError("IPv4-mapped IPv6 addresses are not allowed")
    return IPValue(addr)


@register("ip", False, (1,), "ip", cost=costs.ip_cost, estimate=estimates.ip_rule)
def ip(s: str) -> IPValue:
    want("ip", s, str)
    try:
        return _parse_ip(s)
    except ValueError as e:
        raise CELRuntimeError(f"IP Address {s!r} parse error during conversion from string: "
                              f"{e}") from None


@register("isIP", False, (1,), "bool",
          cost=costs.strings_traversal, estimate=estimates.arg_scan(estimates.STRING_FACTOR))
def is_ip(s: str) -> bool:
    want("isIP", s, str)
    try:
        _parse_ip(s)
    except ValueError:
        return False
    return True


@register("family", True, (0,), "int", ("ip",), cost=1, estimate=estimates.fixed_rule(1))
def family(v: IPValue) -> int:
    want("family", v, IPValue)
    return v.addr.version


@register("isUnspecified", True, (0,), "bool", ("ip",), cost=1, estimate=estimates.fixed_rule(1))
def is_unspecified(v: IPValue) -> bool:
    want("isUnspecified", v, IPValue)
    return v.addr.is_unspecified


@register("isLoopback", True, (0,), "bool", ("ip",), cost=1, estimate=estimates.fixed_rule(1))
def is_loopback(v: IPValue) -> bool:
    want("isLoopback", v, IPValue)
    return v.addr.is_loopback


@register("isLinkLocalMulticast", True, (0,), "bool", ("ip",),
          cost=1, estimate=estimates.fixed_rule(1))
def is_link_local_multicast(v: IPValue) -> bool:
    want("isLinkLocalMulticast", v, IPValue)
    a = v.addr
    return a.is_multicast and (a in ipaddress.ip_network("224.0.0.0/24") if a.version == 4
                               else (int(a) >> 112) & 0xF == 2)


@register("isLinkLocalUnicast", True, (0,), "bool", ("ip",),
          cost=1, estimate=estimates.fixed_rule(1))
def is_link_local_unicast(v: IPValue) -> bool:
    want("isLinkLocalUnicast", v, IPValue)
    return v.addr.is_link_local and not v.addr.is_multicast


@register("isGlobalUnicast", True, (0,), "bool", ("ip",), cost=1, estimate=estimates.fixed_rule(1))
def is_global_unicast(v: IPValue) -> bool:
    want("isGlobalUnicast", v, IPValue)
    a = v.addr
    return not (a.is_unspecified or a.is_loopback or a.is_multicast or a.is_link_local
                or a == ipaddress.ip_address("255.255.255.255"))


@register("cidr", False, (1,), "cidr",
          cost=costs.strings_traversal, estimate=estimates.arg_scan(estimates.STRING_FACTOR))
def cidr(s: str) -> CIDRValue:
    want("cidr", s, str)
    try:
        return CIDRValue(s)
    except ValueError as e:
        raise CELRuntimeError(f"network address parse error during conversion from string: "
                              f"{e}") from None


@register("isCIDR", False, (1,), "bool",
          cost=costs.strings_traversal, estimate=estimates.arg_scan(estimates.STRING_FACTOR))
def is_cidr(s: str) -> bool:
    want("isCIDR", s, str)
    try:
        CIDRValue(s)
    except ValueError:
        return False
    return True


@register("containsIP", True, (1,), "bool", ("cidr",),
          cost=costs.contains_ip_cost, estimate=estimates.contains_ip_rule)
def contains_ip(c: CIDRValue, other: Any) -> bool:
    want("containsIP", c, CIDRValue)
    addr = other.addr if isinstance(other, IPValue) else ip(other).addr
    return addr.version == c.net.version and addr in c.net


@register("containsCIDR", True, (1,), "bool", ("cidr",),
          cost=costs.contains_cidr_cost, estimate=estimates.contains_cidr_rule)
def contains_cidr(c: CIDRValue, other: Any) -> bool:
    want("containsCIDR", c, CIDRValue)
    net = other.net if isinstance(other, CIDRValue) else cidr(other).net
    return net.version == c.net.version and net.subnet_of(c.net)  # type: ignore[arg-type]


@register("masked", True, (0,), "cidr", ("cidr",), cost=1, estimate=estimates.fixed_rule(1))
def masked(c: CIDRValue) -> CIDRValue:
    want("masked", c, CIDRValue)
    return CIDRValue(str(c.net))


@register("prefixLength", True, (0,), "int", ("cidr",), cost=1, estimate=estimates.fixed_rule(1))
def prefix_length(c: CIDRValue) -> int:
    want("prefixLength", c, CIDRValue)
    return c.net.prefixlen


@register("url", False, (1,), "url", cost=costs.strings_traversal, estimate=estimates.global_scan)
def url(s: str) -> URLValue:
    want("url", s, str)
    if not is_url(s):
        raise CELRuntimeError(f"URL parse error during conversion from string: {s!r}")
    return URLValue(s)


@register("isURL", False, (1,), "bool")
def is_url(s: str) -> bool:
    want("isURL", s, str)
    parts = urllib.parse.urlsplit(s)
    return bool(parts.scheme) or s.startswith("/")


def _url_part(name: str, u: Any) -> URLValue:
    want(name, u, URLValue)
    return u  # type: ignore[no-any-return]


@register("getScheme", True, (0,), "string", ("url",), cost=1, estimate=estimates.fixed_rule(1))
def get_scheme(u: URLValue) -> str:
    return _url_part("getScheme", u).parts.scheme


@register("getHost", True, (0,), "string", ("url",), cost=1, estimate=estimates.fixed_rule(1))
def get_host(u: URLValue) -> str:
    return _url_part("getHost", u).parts.netloc.rpartition("@")[2]


@register("getHostname", True, (0,), "string", ("url",), cost=1, estimate=estimates.fixed_rule(1))
def get_hostname(u: URLValue) -> str:
    return _url_part("getHostname", u).parts.hostname or ""


@register("getPort", True, (0,), "string", ("url",), cost=1, estimate=estimates.fixed_rule(1))
def get_port(u: URLValue) -> str:
    port = _url_part("getPort", u).parts.port
    return "" if port is None else str(port)


@register("getEscapedPath", True, (0,), "string", ("url",),
          cost=1, estimate=estimates.fixed_rule(1))
def get_escaped_path(u: URLValue) -> str:
    return _url_part("getEscapedPath", u).parts.path


@register("getQuery", True, (0,), "map", ("url",), cost=1, estimate=estimates.fixed_rule(1))
def get_query(u: URLValue) -> dict[str, list[str]]:
    return urllib.parse.parse_qs(_url_part("getQuery", u).parts.query, keep_blank_values=True)


def _format_value(verb: str, v: Any) -> str:
    if verb == "s":
        from draemu.cel.library.standard import to_string

        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(_format_value("s", x) for x in v) + "]"
        if isinstance(v, (QuantityValue, Semver, IPValue, CIDRValue, URLValue)):
            return v.text if hasattr(v, "text") else str(v.addr)  # type: ignore[union-attr]
        return "null" if v is None else to_string(v)
    if verb in "dxXob" and isinstance(v, int) and not isinstance(v, bool):
        return {"d": str(v), "x": f"{v:x}", "X": f"{v:X}", "o": f"{v:o}", "b": f"{v:b}"}[verb]
    if verb in "fe" and is_number(v):
        return f"{float(v):.6{verb}}"
    raise no_overload(f"format %{verb}", v)


@register("format", True, (1,), "string", ("string",))
def format_(fmt: str, args: list[Any]) -> str:
    want("format", fmt, str)
    want("format", args, list, tuple)
    out: list[str] = []
    i = n = 0
    while i < len(fmt):
        c = fmt[i]
        if c != "%":
            out.append(c)
            i += 1
            continue
        precision = ""
        i += 1
        if i < len(fmt) and fmt[i] == "%":
            out.append("%")
            i += 1
            continue
        if i < len(fmt) and fmt[i] == ".":
            j = i + 1
            while j < len(fmt) and fmt[j].isdigit():
                j += 1
            precision, i = fmt[i + 1:j], j
        if i >= len(fmt) or n >= len(args):
            raise CELRuntimeError("format: not enough arguments or unterminated verb")
        verb = fmt[i]
        value = args[n]
        if precision and verb in "fe":
            out.append(f"{float(value):.{int(precision)}{verb}}")
        else:
            out.append(_format_value(verb, value))
        n += 1
        i += 1
    return "".join(out)
