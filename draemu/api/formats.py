"""The string formats custom resource schemas validate (apiextensions-apiserver's
supported list; any other format is ignored, as upstream strips it), shared by CRD
schema validation and the CEL format library."""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from collections.abc import Callable
from datetime import datetime
from urllib.parse import urlsplit

from draemu.api.names import is_dns1035_label, is_dns1123_subdomain


def _regex(pattern: str, flags: int = 0) -> Callable[[str], bool]:
    compiled = re.compile(pattern, flags)
    return lambda s: compiled.search(s) is not None


def _ipv4(s: str) -> bool:
    try:
        return isinstance(ipaddress.ip_address(s), ipaddress.IPv4Address)
    except ValueError:
        return False


def _ipv6(s: str) -> bool:
    try:
        ipaddress.ip_address(s)
    except ValueError:
        return False
    return ":" in s


def _cidr(s: str) -> bool:
    try:
        ipaddress.ip_network(s, strict=False)
    except ValueError:
        return False
    return "/" in s


def _uri(s: str) -> bool:
    # Go's url.ParseRequestURI: an absolute URI or an absolute path.
    if not s or " " in s:
        return False
    if s.startswith("/"):
        return True
    parts = urlsplit(s)
    return bool(parts.scheme) and re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", parts.scheme) \
        is not None


def _byte(s: str) -> bool:
    try:
        base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _date(s: str) -> bool:
    try:
        datetime.strptime(s, "%Y-%m-%d")
    except ValueError:
        return False
    return True


_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})?$")


def _datetime(s: str) -> bool:
    if not _DATETIME.match(s):
        return False
    try:
        datetime.fromisoformat(s.replace("z", "Z").replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


_DURATION = re.compile(r"^(([+-]?\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h))+$|^0$|"
                       r"^\d+\s*(ns|nanos?|nanoseconds?|us|micros?|microseconds?|ms|millis?|"
                       r"milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hours?|d|days?|"
                       r"w|weeks?)$")

_VALIDATORS: dict[str, Callable[[str], bool]] = {
    "bsonobjectid": _regex(r"^[0-9a-fA-F]{24}$"),
    "uri": _uri,
    "email": _regex(r"^[^@\s<>]+@[^@\s<>]+$"),
    "hostname": _regex(r"^([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)*"
                       r"[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.?$"),
    "ipv4": _ipv4,
    "ipv6": _ipv6,
    "cidr": _cidr,
    "mac": _regex(r"^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$|^([0-9A-Fa-f]{2}[:-]){7}"
                  r"[0-9A-Fa-f]{2}$|^([0-9A-Fa-f]{4}\.){2}[0-9A-Fa-f]{4}$"),
    "uuid": _regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"),
    "uuid3": _regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$"),
    "uuid4": _regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?"
                    r"[0-9a-f]{12}$"),
    "uuid5": _regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?"
                    r"[0-9a-f]{12}$"),
    "hexcolor": _regex(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"),
    "rgbcolor": _regex(r"^rgb\(\s*\d{1,3}\s*,\s*\d{1,3}\s*,\s*\d{1,3}\s*\)$"),
    "ssn": _regex(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$"),
    "byte": _byte,
    "password": lambda s: True,
    "date": _date,
    "datetime": _datetime,
    "date-time": _datetime,
    "duration": lambda s: _DURATION.match(s) is not None,
    "k8s-short-name": lambda s: not is_dns1035_label(s),
    "k8s-long-name": lambda s: not is_dns1123_subdomain(s),
}


def valid(fmt: str, value: str) -> bool:
    """Whether `value` has format `fmt` (unsupported formats accept anything)."""
    check = _VALIDATORS.get(fmt.replace("_", "-") if fmt != "date-time" else fmt)
    return check is None or check(value)
