"""Kubernetes resource quantities (`500m`, `80Gi`, `1e3`).

Values are exact `Fraction`s; `canonical()` prints a quantity the way the apiserver
serializes it (the largest suffix that keeps the number whole, in the quantity's own
family: binary `Ki..Ei`, decimal `n..E`, or `eN` exponents), rounded up to nano units
as upstream does.
"""

from __future__ import annotations

import re
from fractions import Fraction
from math import ceil

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_BY_EXP = {v: k for k, v in _DECIMAL.items()}
_RE = re.compile(
    r"^(?P<sign>[+-]?)(?P<num>[0-9]+(\.[0-9]*)?|\.[0-9]+)"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$")

QUANTITY_ERROR = "quantities must match the regular expression " \
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


class QuantityError(ValueError):
    pass


class Quantity:
    __slots__ = ("format", "value")

    def __init__(self, value: Fraction | int, fmt: str = "DecimalSI") -> None:
        self.value = Fraction(value)
        self.format = fmt

    @classmethod
    def parse(cls, text: str | float) -> Quantity:
        if isinstance(text, bool):
            raise QuantityError(QUANTITY_ERROR)
        if isinstance(text, int):
            return cls(text)
        if isinstance(text, float):
            return cls(Fraction(str(text)))
        m = _RE.match(text.strip()) if isinstance(text, str) else None
        if not m or text != text.strip():
            raise QuantityError(QUANTITY_ERROR)
        number = Fraction(m.group("num") if not m.group("num").endswith(".")
                          else m.group("num")[:-1])
        if m.group("sign") == "-":
            number = -number
        suffix = m.group("suffix") or ""
        if suffix in _BINARY:
            return cls(number * _BINARY[suffix], "BinarySI")
        if suffix[:1] in ("e", "E"):
            exp = int(suffix[1:])
            if abs(exp) > 1000:
                raise QuantityError(QUANTITY_ERROR)
            return cls(number * Fraction(10) ** exp, "DecimalExponent")
        return cls(number * Fraction(10) ** _DECIMAL[suffix], "DecimalSI")

    def rounded(self) -> Fraction:
        """The value rounded up (away from zero) to nano units, as stored upstream."""
        scaled = self.value * 10**9
        if scaled.denominator == 1:
            return self.value
        n = ceil(scaled) if scaled > 0 else -ceil(-scaled)
        return Fraction(n, 10**9)

    def canonical(self) -> str:
        v = self.rounded()
        fmt = self.format
        if fmt == "BinarySI" and (v.denominator != 1 or -1024 < v < 1024):
            fmt = "DecimalSI"
        if fmt == "BinarySI":
            n = int(v)
            for suffix, factor in reversed(list(_BINARY.items())):
                if n % factor == 0:
                    return f"{n // factor}{suffix}"
            return str(n)
        if v == 0:
            return "0"
        # Largest exponent (multiple of 3) that keeps the mantissa whole.
        exp = -9
        while exp < 18 and (v / Fraction(10) ** (exp + 3)).denominator == 1:
            exp += 3
        mantissa = int(v / Fraction(10) ** exp)
        if fmt == "DecimalExponent":
            return f"{mantissa}e{exp}" if exp else str(mantissa)
        return f"{mantissa}{_DECIMAL_BY_EXP[exp]}"

    def __str__(self) -> str:
        return self.canonical()

    def __repr__(self) -> str:
        return f"Quantity({self.canonical()!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __lt__(self, other: Quantity) -> bool:
        return self.value < other.value

    def __le__(self, other: Quantity) -> bool:
        return self.value <= other.value

    def __hash__(self) -> int:
        return hash(self.value)


def parse_quantity(text: str | float) -> Fraction:
    """The exact value of a quantity; raises QuantityError with upstream's message."""
    return Quantity.parse(text).value


def canonical(text: str | float) -> str:
    return Quantity.parse(text).canonical()
