"""Kubernetes' CEL format library: `format.dns1123Label()` and the other named formats,
`format.named(name)` (an optional format), and `<format>.validate(string)`, which is
`optional.none()` for a valid string and the optional list of its errors otherwise
(the messages are the apimachinery validators' ones)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from draemu.api import formats
from draemu.api.errors import go_quote
from draemu.api.names import (
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_label_value,
    is_qualified_name,
)
from draemu.cel import cost as costs
from draemu.cel import estimatecalls as estimates
from draemu.cel.library.registry import register, want
from draemu.cel.values import NONE, OptionalValue


@dataclass(frozen=True)
class Format:
    name: str
    check: Callable[[str], list[str]]
    # The size of the regular expression upstream's check amounts to, which `validate` is
    # charged for (Kubernetes' Format.MaxRegexSize).
    max_regex_size: int

    def __repr__(self) -> str:
        return f"format.{self.name}()"


def _prefix(check: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    """A name prefix (generateName) may end in '-': checked as if a suffix followed."""
    return lambda s: check(s[:-1] + "a" if len(s) > 1 and s.endswith("-") else s)


def _uri(s: str) -> list[str]:
    return [] if formats.valid("uri", s) else [f"parse {go_quote(s)}: invalid URI for request"]


def _strfmt(fmt: str, message: str) -> Callable[[str], list[str]]:
    return lambda s: [] if formats.valid(fmt, s) else [message]


FORMATS: dict[str, Format] = {f.name: f for f in (
    Format("dns1123Label", is_dns1123_label, 30),
    Format("dns1123Subdomain", is_dns1123_subdomain, 60),
    Format("dns1035Label", is_dns1035_label, 30),
    Format("qualifiedName", is_qualified_name, 60),
    Format("dns1123LabelPrefix", _prefix(is_dns1123_label), 30),
    Format("dns1123SubdomainPrefix", _prefix(is_dns1123_subdomain), 60),
    Format("dns1035LabelPrefix", _prefix(is_dns1035_label), 30),
    Format("labelValue", is_label_value, 40),
    Format("uri", _uri, 1103),
    Format("uuid", _strfmt("uuid", "does not match the UUID format"), 70),
    Format("byte", _strfmt("byte", "invalid base64"), 84),
    Format("date", _strfmt("date", "invalid date"), 71),
    Format("datetime", _strfmt("datetime", "invalid datetime"), 71),
)}


def _constant(format_: Format) -> None:
    register(f"format.{format_.name}", False, (0,), "dyn")(lambda: format_)


for _format in FORMATS.values():
    _constant(_format)


@register("format.named", False, (1,), "optional", cost=1, estimate=estimates.fixed_rule(1))
def named(name: object) -> OptionalValue:
    want("format.named", name, str)
    found = FORMATS.get(str(name))
    return NONE if found is None else OptionalValue(True, found)


@register("validate", True, (1,), "optional",
          cost=costs.validate_cost, estimate=estimates.validate_rule)
def validate(format_: object, value: object) -> OptionalValue:
    want("validate", format_, Format)
    want("validate", value, str)
    assert isinstance(format_, Format)
    errors = format_.check(str(value))
    return NONE if not errors else OptionalValue(True, list(errors))
