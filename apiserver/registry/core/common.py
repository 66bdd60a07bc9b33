"""Small validation and printing helpers shared by the core, apps, batch and events kinds.

Validation helpers return lists of `FieldError`s worded as upstream's helpers of the
same purpose; printing helpers render cells the way the upstream server printers do.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from draemu.api.errors import FieldError, Path, StatusError, bad_request, invalid
from draemu.api.meta import human_duration, parse_time
from draemu.api.names import (
    is_dns1123_label,
    is_dns1123_subdomain,
    is_label_value,
    is_qualified_name,
    regex_error,
)
from draemu.api.quantity import QUANTITY_ERROR, Quantity, QuantityError
from draemu.api.types import Obj
from draemu.apiserver.wire.jsoncopy import clone

FIELD_IMMUTABLE = "field is immutable"
IS_NEGATIVE = "must be greater than or equal to 0"
MAX_INT32 = 2**31 - 1
MAX_SECRET_SIZE = 1024 * 1024  # also the limit of a ConfigMap's data
IMMUTABLE_WHEN_SET = "field is immutable when `immutable` is set"
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


def dns_label(value: str, path: Path) -> list[FieldError]:
    return [invalid(path, value, msg) for msg in is_dns1123_label(value)]


def dns_subdomain(value: str, path: Path) -> list[FieldError]:
    return [invalid(path, value, msg) for msg in is_dns1123_subdomain(value)]


def qualified_name(value: str, path: Path) -> list[FieldError]:
    return [invalid(path, value, msg) for msg in is_qualified_name(value)]


def label_value(value: str, path: Path) -> list[FieldError]:
    return [invalid(path, value, msg) for msg in is_label_value(value)]


def config_key_errors(key: str) -> list[str]:
    """IsConfigMapKey: the keys of ConfigMap and Secret data (they become file names)."""
    errs: list[str] = []
    if len(key) > 253:
        errs.append("must be no more than 253 characters")
    if not _CONFIG_KEY.match(key):
        errs.append(regex_error("a valid config key must consist of alphanumeric characters, "
                                "'-', '_' or '.'", "[-._a-zA-Z0-9]+", "key.name", "KEY_NAME",
                                "key-name"))
    if key == ".":
        errs.append("must not be '.'")
    elif key == "..":
        errs.append("must not be '..'")
    elif key.startswith(".."):
        errs.append("must not start with '..'")
    return errs


def nonnegative(value: int | None, path: Path) -> list[FieldError]:
    if value is not None and value < 0:
        return [invalid(path, value, IS_NEGATIVE)]
    return []


def immutable(new: Any, old: Any, path: Path) -> list[FieldError]:
    if new == old:
        return []
    return [invalid(path, new, FIELD_IMMUTABLE)]


def cannot_handle(kind: str, version: str, detail: str) -> StatusError:
    """The 400 a request body gets when it does not decode (bad base64, bad quantity)."""
    return bad_request(f'{kind} in version "{version}" cannot be handled as a {kind}: {detail}')


@lru_cache(maxsize=4096)
def parse_quantity(value: str | int | float) -> Quantity:
    """A parsed quantity, cached: the same few values ("100m", "1Gi") come back on every
    pod, and parsing into exact fractions dominates validation time. Do not mutate."""
    return Quantity.parse(value)


def check_quantities(values: Iterable[Any], kind: str, version: str) -> None:
    """Quantities are parsed while decoding: a malformed one fails the whole request."""
    for value in values:
        try:
            parse_quantity(value)
        except (QuantityError, TypeError):
            raise cannot_handle(kind, version, QUANTITY_ERROR) from None


def copy_or_drop(target: Obj, source: Obj, key: str) -> None:
    """Make `target[key]` what it is in `source`, absent included."""
    if key in source:
        target[key] = clone(source[key])
    else:
        target.pop(key, None)


def inclusive_range(low: int, high: int) -> str:
    return f"must be between {low} and {high}, inclusive"


# Printing ------------------------------------------------------------------------

def since(text: str | None, now: datetime | None = None) -> str:
    """Time elapsed since a timestamp, `<unknown>` when unset (translateTimestampSince)."""
    when = parse_time(text)
    if when is None:
        return "<unknown>"
    now = now or datetime.now(UTC)
    return human_duration((now - when).total_seconds())


def label_selector_string(selector: Obj | None) -> str:
    """A LabelSelector printed as a selector string (`app=x,tier in (a,b)`), as the
    printers' Selector columns show it; `<none>` for an empty selector."""
    parts = selector_requirements(selector)
    return ",".join(sorted(parts, key=_requirement_key)) if parts else "<none>"


def selector_requirements(selector: Obj | None) -> list[str]:
    """A LabelSelector's requirements in selector syntax, matchLabels (sorted) first."""
    selector = selector or {}
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for req in selector.get("matchExpressions") or []:
        key, op, values = req.get("key", ""), req.get("operator", ""), req.get("values") or []
        if op == "In":
            parts.append(f"{key} in ({','.join(sorted(values))})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(sorted(values))})")
        elif op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return parts


def _requirement_key(text: str) -> str:
    return text.lstrip("!").split("=")[0].split(" ")[0]


def container_cells(containers: list[Obj]) -> tuple[str, str]:
    """Names and images of a template's containers, comma-joined."""
    return (",".join(c.get("name", "") for c in containers),
            ",".join(c.get("image", "") for c in containers))
