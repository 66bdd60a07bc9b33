"""Field formats shared by the resource.k8s.io kinds, with Kubernetes' messages.

Every function returns a list of `FieldError`s (empty when valid). The names follow
upstream's validation helpers so that a reader can compare rule by rule.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable, Hashable, Iterable
from functools import lru_cache
from typing import Any, TypeVar

from draemu.api import names
from draemu.api.errors import (
    FieldError,
    Path,
    duplicate,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
)

T = TypeVar("T")
Errors = list[FieldError]

DRIVER_NAME_MAX = 63
POOL_NAME_MAX = 253
DEVICE_MAX_ID_LENGTH = 32
DEVICE_MAX_DOMAIN_LENGTH = 63
ATTRIBUTE_KEY_MAX = DEVICE_MAX_DOMAIN_LENGTH + 1 + DEVICE_MAX_ID_LENGTH

_CONDITION_REASON_FMT = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?"
_CONDITION_REASON = re.compile(f"^{_CONDITION_REASON_FMT}$")
_CONDITION_STATUSES = ["False", "True", "Unknown"]
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def messages(path: Path, value: str, found: Iterable[str]) -> Errors:
    """One Invalid error per message of a `names.is_*` check."""
    return [invalid(path, value, msg) for msg in found]


@lru_cache(maxsize=16384)
def _check(check: Callable[[str], list[str]], value: str) -> tuple[str, ...]:
    """Name checks are pure and the same names recur in every device of a slice."""
    return tuple(check(value))


def dns_label(value: str, path: Path) -> Errors:
    return messages(path, value, _check(names.is_dns1123_label, value))


def dns_subdomain(value: str, path: Path) -> Errors:
    return messages(path, value, _check(names.is_dns1123_subdomain, value))


def required_dns_subdomain(value: str, path: Path) -> Errors:
    """Device class names: Required when empty, else a DNS subdomain."""
    if not value:
        return [required(path)]
    return dns_subdomain(value, path)


def driver_name(value: str, path: Path) -> Errors:
    """A CSI-style driver name: a DNS subdomain after lower-casing, at most 63 bytes."""
    errs: Errors = []
    if not value:
        errs.append(required(path))
    if len(value) > DRIVER_NAME_MAX:
        errs.append(too_long(path, DRIVER_NAME_MAX))
    errs.extend(messages(path, value, _check(names.is_dns1123_subdomain, value.lower())))
    return errs


def pool_name(value: str, path: Path) -> Errors:
    if not value:
        return [required(path)]
    errs: Errors = []
    if len(value) > POOL_NAME_MAX:
        errs.append(too_long(path, POOL_NAME_MAX))
    for part in value.split("/"):
        errs.extend(dns_subdomain(part, path))
    return errs


def node_name(value: str, path: Path) -> Errors:
    return dns_subdomain(value, path)


def c_identifier(value: str, path: Path) -> Errors:
    errs: Errors = []
    if len(value) > DEVICE_MAX_ID_LENGTH:
        errs.append(too_long(path, DEVICE_MAX_ID_LENGTH))
    errs.extend(messages(path, value, _check(names.is_c_identifier, value)))
    return errs


def qualified_name(value: str, path: Path, one_slash: bool = False) -> Errors:
    """A device attribute or capacity name: `<id>` or `<domain>/<id>`. Before 1.38 (without
    `one_slash`) what follows a second slash went unchecked."""
    parts = value.split("/")
    if len(parts) == 1:
        return c_identifier(parts[0], path)
    if one_slash and len(parts) > 2:
        return [invalid(path, value, "must not contain more than one slash")]
    errs: Errors = []
    domain, ident = parts[0], parts[1]
    if not domain:
        errs.append(invalid(path, "", "the domain must not be empty"))
    else:
        errs.extend(driver_name(domain, path))
    if not ident:
        errs.append(invalid(path, "", "the name must not be empty"))
    else:
        errs.extend(c_identifier(ident, path))
    return errs


FULLY_QUALIFIED_HINT = (
    "a fully qualified name must be a domain and a name separated by a slash")


def fully_qualified_name(value: str, path: Path, one_slash: bool = False) -> Errors:
    """`matchAttribute`, `distinctAttribute`, `partitionTypeAttribute`: `<domain>/<id>`.

    Upstream's causes are kept; when the domain is missing, the detail also shows what
    a valid name looks like, built from the user's own value (issue 4)."""
    errs = qualified_name(value, path, one_slash)
    if "/" not in value:
        errs.append(invalid(path, value, FULLY_QUALIFIED_HINT + _example_for(value)))
    return errs


# Standard attributes (resource.kubernetes.io/..., KEP 5491 and 1.37's numaNode) by the
# spellings people write for them without a domain.
STANDARD_ATTRIBUTES = {"numanode": "resource.kubernetes.io/numaNode",
                       "numa": "resource.kubernetes.io/numaNode",
                       "pcieroot": "resource.kubernetes.io/pcieRoot"}


def _example_for(value: str) -> str:
    standard = STANDARD_ATTRIBUTES.get(re.sub(r"[^a-z]", "", value.lower()))
    if standard is not None:
        return (f" (e.g. '{standard}', the standard attribute drivers publish for it; a "
                "driver's own attributes take the driver's name as the domain, as in "
                "'dra.example.com/model')")
    ident = re.sub(r"[^A-Za-z0-9_]", "_", value) or "model"
    if not re.match(r"[A-Za-z_]", ident):
        ident = "_" + ident
    ident = ident[:DEVICE_MAX_ID_LENGTH]
    return (f" (e.g. 'dra.example.com/{ident}': the domain is usually the driver's name, or "
            "resource.kubernetes.io for a standard attribute such as "
            "'resource.kubernetes.io/numaNode' or 'resource.kubernetes.io/pcieRoot'; the name "
            "after the slash is a C identifier)")


def label_name(value: str, path: Path) -> Errors:
    return messages(path, value, _check(names.is_qualified_name, value))


def label_value(value: str, path: Path) -> Errors:
    return messages(path, value, _check(names.is_label_value, value))


def uid(value: str, path: Path) -> Errors:
    if not _UUID.match(value):
        return [invalid(path, value, f"error validating uid: invalid UUID length: {len(value)}"
                        if len(value) != 36 else "error validating uid: invalid UUID format")]
    if value != value.lower():
        return [invalid(path, value, "uid must be in RFC 4122 normalized form, "
                        "`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal "
                        "characters")]
    return []


def extended_resource_name(value: str) -> bool:
    """Upstream's IsExtendedResourceName: not native, no `requests.` prefix, and
    `requests.<name>` must be a qualified name."""
    native = "/" not in value or "kubernetes.io/" in value
    if native or value.startswith("requests."):
        return False
    return not names.is_qualified_name("requests." + value)


def raw_extension(value: Any, path: Path, stored: bool, max_length: int) -> Errors:
    """Opaque parameters and device status data: a JSON object of bounded size. The
    value arrives decoded, so the size is that of its compact JSON encoding."""
    if value is None:
        return [required(path)]
    if not stored and len(json.dumps(value, separators=(",", ":")).encode()) > max_length:
        return [too_long(path, max_length)]
    if not isinstance(value, dict):
        return [invalid(path, "<value omitted>", "must be a valid JSON object")]
    return []


def interface_address(value: str, path: Path) -> Errors:
    try:
        parsed = ipaddress.ip_interface(value)
    except ValueError:
        return [invalid(path, value, "must be a valid address in CIDR form, "
                        "(e.g. 10.9.8.7/24 or 2001:db8::1/64)")]
    if "/" not in value:
        return [invalid(path, value, "must be a valid address in CIDR form, "
                        "(e.g. 10.9.8.7/24 or 2001:db8::1/64)")]
    canonical = f"{parsed.ip}/{parsed.network.prefixlen}"
    if canonical != value:
        return [invalid(path, value, f'must be in canonical form ("{canonical}")')]
    return []


# Lists and maps ---------------------------------------------------------------------

def each(items: list[T] | None, path: Path, check: Callable[[T, Path], Errors]) -> Errors:
    errs: Errors = []
    for i, item in enumerate(items or []):
        errs.extend(check(item, path.index(i)))
    return errs


def bounded_list(items: list[T] | None, max_items: int, path: Path,
                 check: Callable[[T, Path], Errors]) -> Errors:
    """Upstream's validateSlice: too many entries short-circuits the item checks."""
    if max_items >= 0 and len(items or []) > max_items:
        return [too_many(path, len(items or []), max_items)]
    return each(items, path, check)


def bounded_set(items: list[T] | None, max_items: int, path: Path,
                check: Callable[[T, Path], Errors], key: Callable[[T], Hashable]) -> Errors:
    """Upstream's validateSet: validateSlice plus `Duplicate value` at the later entry."""
    if max_items >= 0 and len(items or []) > max_items:
        return [too_many(path, len(items or []), max_items)]
    errs = each(items, path, check)
    seen: set[Hashable] = set()
    for i, item in enumerate(items or []):
        k = key(item)
        if k in seen:
            errs.append(duplicate(path.index(i), k))
        else:
            seen.add(k)
    return errs


def truncated_key(key: str, max_len: int) -> str:
    """Map keys in error paths are shortened in the middle, as upstream does."""
    max_len = max(max_len, 16)
    if len(key) <= max_len:
        return key
    remaining = max_len - 3
    return key[:(remaining + 1) // 2] + "..." + key[len(key) - remaining // 2:]


def bounded_map(items: dict[str, T] | None, max_items: int, key_len: int, path: Path,
                check_key: Callable[[str, Path], Errors],
                check_item: Callable[[T, Path], Errors]) -> Errors:
    if max_items >= 0 and len(items or {}) > max_items:
        return [too_many(path, len(items or {}), max_items)]
    errs: Errors = []
    for key in sorted(items or {}):
        key_path = path.key(truncated_key(key, key_len))
        errs.extend(check_key(key, key_path))
        errs.extend(check_item((items or {})[key], key_path))
    return errs


def obj(value: Any) -> dict[str, Any]:
    """A JSON object field, treating null/absent as empty."""
    return value if isinstance(value, dict) else {}


def lst(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


# Core types used inside resource.k8s.io objects --------------------------------------

def conditions(items: list[Any] | None, path: Path) -> Errors:
    """metav1.Condition lists (`listType=map`, keyed by type)."""
    errs: Errors = []
    seen: set[str] = set()
    for i, cond in enumerate(items or []):
        cond = obj(cond)
        p = path.index(i)
        ctype = cond.get("type", "")
        errs.extend(label_name(ctype, p.child("type")))
        if ctype in seen:
            errs.append(duplicate(p.child("type"), ctype))
        seen.add(ctype)
        if cond.get("status") not in _CONDITION_STATUSES:
            errs.append(not_supported(p.child("status"), cond.get("status", ""),
                                      _CONDITION_STATUSES))
        generation = cond.get("observedGeneration", 0) or 0
        if isinstance(generation, int) and generation < 0:
            errs.append(invalid(p.child("observedGeneration"), generation,
                                "must be greater than or equal to zero"))
        if not cond.get("lastTransitionTime"):
            errs.append(required(p.child("lastTransitionTime"), "must be set"))
        reason = cond.get("reason", "") or ""
        if not reason:
            errs.append(required(p.child("reason"), "must be set"))
        else:
            if not _CONDITION_REASON.match(reason):
                errs.append(invalid(p.child("reason"), reason, names.regex_error(
                    "a condition reason must start with alphabetic character, optionally "
                    "followed by a string of alphanumeric characters or '_,:', and must end "
                    "with an alphanumeric character or '_'", _CONDITION_REASON_FMT,
                    "ResourceReady")))
            if len(reason) > 1024:
                errs.append(too_long(p.child("reason"), 1024))
        if len(cond.get("message", "") or "") > 32768:
            errs.append(too_long(p.child("message"), 32768))
    return errs
