"""Field errors and Kubernetes `Status` errors.

Validation returns a list of `FieldError`s (never raises on the first); the apiserver
turns the list into one 422 `Status` with `details.causes`, worded as upstream does.
`StatusError` is any API error with its HTTP code and reason; handlers raise it and
the apiserver's error middleware renders it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

# Field error type -> (cause reason, message prefix, whether the bad value is printed)
_TYPES: dict[str, tuple[str, str, bool]] = {
    "Required": ("FieldValueRequired", "Required value", False),
    "Invalid": ("FieldValueInvalid", "Invalid value", True),
    "NotSupported": ("FieldValueNotSupported", "Unsupported value", True),
    "Duplicate": ("FieldValueDuplicate", "Duplicate value", True),
    "NotFound": ("FieldValueNotFound", "Not found", True),
    "Forbidden": ("FieldValueForbidden", "Forbidden", False),
    "TooLong": ("FieldValueTooLong", "Too long", False),
    "TooMany": ("FieldValueTooMany", "Too many", True),
    "Internal": ("InternalError", "Internal error", False),
    "TypeInvalid": ("FieldValueTypeInvalid", "Invalid value", True),
}

_OMIT = object()


def go_quote(value: str) -> str:
    """A string the way Go's %q prints it (close enough for UTF-8 text)."""
    out = ['"']
    for ch in value:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def format_value(value: Any) -> str:
    """A bad value as upstream prints it: strings quoted, numbers and bools bare,
    anything else as JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, (int, float)):
        return repr(value) if isinstance(value, float) else str(value)
    if value is None:
        return "null"
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


class Path:
    """A field path such as `spec.devices.requests[0].exactly` built step by step."""

    __slots__ = ("_text",)

    def __init__(self, text: str = "") -> None:
        self._text = text

    def child(self, *names: str) -> Path:
        text = self._text
        for name in names:
            text = f"{text}.{name}" if text else name
        return Path(text)

    def index(self, i: int) -> Path:
        return Path(f"{self._text}[{i}]")

    def key(self, k: str) -> Path:
        return Path(f"{self._text}[{k}]")

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"Path({self._text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Path) and other._text == self._text

    def __hash__(self) -> int:
        return hash(self._text)


@dataclass(frozen=True)
class FieldError:
    type: str
    field: str
    value: Any = None
    detail: str = ""
    show_value: bool = True

    def body(self) -> str:
        _, prefix, prints_value = _TYPES[self.type]
        parts = [prefix]
        if prints_value and self.show_value:
            parts.append(format_value(self.value))
        if self.detail:
            parts.append(self.detail)
        return ": ".join(parts)

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}" if self.field else self.body()

    def cause(self) -> dict[str, Any]:
        return {"reason": _TYPES[self.type][0], "message": self.body(), "field": self.field}


def _path(p: Path | str) -> str:
    return str(p)


def required(path: Path | str, detail: str = "") -> FieldError:
    return FieldError("Required", _path(path), None, detail)


def invalid(path: Path | str, value: Any, detail: str = "") -> FieldError:
    return FieldError("Invalid", _path(path), value, detail)


def invalid_no_value(path: Path | str, detail: str) -> FieldError:
    return FieldError("Invalid", _path(path), None, detail, show_value=False)


def not_supported(path: Path | str, value: Any, supported: list[str]) -> FieldError:
    detail = ""
    if supported:
        detail = "supported values: " + ", ".join(go_quote(s) for s in supported)
    return FieldError("NotSupported", _path(path), value, detail)


def duplicate(path: Path | str, value: Any) -> FieldError:
    return FieldError("Duplicate", _path(path), value)


def not_found(path: Path | str, value: Any) -> FieldError:
    return FieldError("NotFound", _path(path), value)


def forbidden(path: Path | str, detail: str) -> FieldError:
    return FieldError("Forbidden", _path(path), None, detail)


def too_long(path: Path | str, max_length: int) -> FieldError:
    return FieldError("TooLong", _path(path), None, f"may not be more than {max_length} bytes")


def too_many(path: Path | str, actual: int | None, max_items: int) -> FieldError:
    if actual is None:
        return FieldError("TooMany", _path(path), None, f"must have at most {max_items} items",
                          show_value=False)
    return FieldError("TooMany", _path(path), actual, f"must have at most {max_items} items")


def internal(path: Path | str, detail: str) -> FieldError:
    return FieldError("Internal", _path(path), None, detail)


def aggregate(errors: list[FieldError]) -> str:
    """Upstream's aggregate message: one error bare, several in brackets, duplicates
    removed."""
    seen: list[str] = []
    for e in errors:
        text = str(e)
        if text not in seen:
            seen.append(text)
    if len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]"


@dataclass
class StatusError(Exception):
    """An API error: rendered by the apiserver as a `Status` object."""

    code: int
    reason: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    # The Status's ListMeta (`continue` of an inconsistent list's 410).
    list_meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        Exception.__init__(self, self.message)

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": dict(self.list_meta),
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:  # omitted when unknown, as Go's omitempty does
            body["reason"] = self.reason
        if self.details:
            body["details"] = self.details
        body["code"] = self.code
        return body


def _qualified(kind: str, group: str) -> str:
    return f"{kind}.{group}" if group else kind


def _resource_details(name: str, group: str, kind: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    return details


def invalid_object(kind: str, group: str, name: str, errors: list[FieldError]) -> StatusError:
    details = _resource_details(name, group, kind)
    details["causes"] = [e.cause() for e in errors]
    return StatusError(422, "Invalid",
                       f'{_qualified(kind, group)} "{name}" is invalid: {aggregate(errors)}',
                       details)


def not_found_error(resource: str, group: str, name: str) -> StatusError:
    """`resource` is the plural resource name, as upstream words it."""
    qualified = f"{resource}.{group}" if group else resource
    return StatusError(404, "NotFound", f'{qualified} "{name}" not found',
                       _resource_details(name, group, resource))


def already_exists(resource: str, group: str, name: str) -> StatusError:
    qualified = f"{resource}.{group}" if group else resource
    return StatusError(409, "AlreadyExists", f'{qualified} "{name}" already exists',
                       _resource_details(name, group, resource))


def conflict(resource: str, group: str, name: str, why: str) -> StatusError:
    qualified = f"{resource}.{group}" if group else resource
    return StatusError(409, "Conflict",
                       f'Operation cannot be fulfilled on {qualified} "{name}": {why}',
                       _resource_details(name, group, resource))


def bad_request(message: str) -> StatusError:
    return StatusError(400, "BadRequest", message)


def forbidden_error(message: str, details: dict[str, Any] | None = None) -> StatusError:
    return StatusError(403, "Forbidden", message, details or {})


def gone(message: str) -> StatusError:
    return StatusError(410, "Expired", message)


def internal_error(message: str) -> StatusError:
    return StatusError(500, "InternalError", f"Internal error occurred: {message}")
