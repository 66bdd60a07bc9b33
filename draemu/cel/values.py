"""Runtime values of the DRA CEL environment and CEL's equality and ordering.

Plain Python values carry CEL's basic types (bool, int, `Uint`, float, str, bytes,
None, list, dict); the Kubernetes extension types are small classes here.
"""

from __future__ import annotations

import functools
import re
from fractions import Fraction
from typing import Any

from draemu.api.quantity import Quantity, QuantityError
from draemu.cel.errors import CELRuntimeError
from draemu.cel.syntax import Uint

INT_MIN, INT_MAX = -(2**63), 2**63 - 1
UINT_MAX = 2**64 - 1


class QuantityValue:
    """A Kubernetes quantity (`device.capacity[...]`, `quantity("1Gi")`)."""

    __slots__ = ("text", "value")

    def __init__(self, value: Fraction, text: str = "") -> None:
        self.value = value
        self.text = text or Quantity(value).canonical()

    @classmethod
    def parse(cls, text: str) -> QuantityValue:
        # Parsing costs one unit of CEL cost per 10 characters but tens of microseconds
        # here: a selector calling quantity('1Gi') in a loop would take seconds on each
        # device. Values are immutable, so equal texts share one.
        found = _parse_quantity(text)
        if isinstance(found, CELRuntimeError):
            raise CELRuntimeError(found.message)
        return found

    def __eq__(self, other: object) -> bool:
        return isinstance(other, QuantityValue) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"quantity({self.text!r})"


@functools.lru_cache(maxsize=4096)
def _parse_quantity(text: str) -> QuantityValue | CELRuntimeError:
    try:
        return QuantityValue(Quantity.parse(text).value, text)
    except QuantityError as e:
        return CELRuntimeError(f"quantities must match the regular expression: {e}")


_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$")


class Semver:
    """A semantic version (`version` attributes, `semver("1.2.3")`), ordered by precedence."""

    __slots__ = ("build", "major", "minor", "patch", "pre", "text")

    def __init__(self, text: str, *, normalize: bool = False) -> None:
        source = _normalize_semver(text) if normalize else text
        m = _SEMVER.match(source)
        if not m:
            raise ValueError(f"Invalid character(s) found in version {text!r}"
                             if source else "Version string empty")
        self.major, self.minor, self.patch = int(m[1]), int(m[2]), int(m[3])
        self.pre = tuple(m[4].split(".")) if m[4] else ()
        self.build = m[5] or ""
        self.text = source

    def _key(self) -> tuple:
        # A release sorts after its pre-releases; numeric identifiers before alphanumeric.
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.pre)
        return (self.major, self.minor, self.patch, 0 if self.pre else 1, pre)

    def compare(self, other: Semver) -> int:
        a, b = self._key(), other._key()
        return (a > b) - (a < b)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and self.compare(other) == 0

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"semver({self.text!r})"


def _normalize_semver(text: str) -> str:
    """`v1` → `1.0.0`, `1.2` → `1.2.0`, leading zeros dropped, as Kubernetes' normalize."""
    s = text.removeprefix("v")
    core, sep, rest = s, "", ""
    for i, c in enumerate(s):
        if c in "-+":
            core, sep, rest = s[:i], c, s[i + 1:]
            break
    parts = core.split(".")
    if len(parts) > 3 or not all(p.isdigit() for p in parts):
        return s
    parts = [str(int(p)) for p in parts] + ["0"] * (3 - len(parts))
    return ".".join(parts) + (sep + rest if sep else "")


class OptionalValue:
    """CEL's optional type: `a.?b`, `optional.of(x)`, `optional.none()`."""

    __slots__ = ("present", "value")

    def __init__(self, present: bool, value: Any = None) -> None:
        self.present = present
        self.value = value

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, OptionalValue) and self.present == other.present
                and (not self.present or equal(self.value, other.value)))

    def __hash__(self) -> int:
        return hash(self.present)

    def __repr__(self) -> str:
        return f"optional.of({self.value!r})" if self.present else "optional.none()"


NONE = OptionalValue(False)


class StructValue(dict):
    """A constructed message (`Object.spec{replicas: 3}`, `JSONPatch{op: "add", ...}`):
    its fields as a map, and the type name it was built as. The mutating admission
    policies' types are dynamic: any field may be set, and the names must follow the
    field path from `Object` (checked where the value is used)."""

    __slots__ = ("type_name",)

    def __init__(self, type_name: str, fields: dict[str, Any]) -> None:
        super().__init__(fields)
        self.type_name = type_name


class CelType:
    """A value of CEL's `type` type (`type(x) == string`)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CelType) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return self.name


def type_name(v: object) -> str:
    """CEL's name of a value's type, as in "no such overload" messages."""
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, Uint):
        return "uint"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "double"
    if isinstance(v, str):
        return "string"
    if isinstance(v, bytes):
        return "bytes"
    if v is None:
        return "null_type"
    if isinstance(v, (list, tuple)):
        return "list"
    if isinstance(v, StructValue):
        return v.type_name
    if isinstance(v, dict):
        return "map"
    if isinstance(v, QuantityValue):
        return "kubernetes.Quantity"
    if isinstance(v, Semver):
        return "kubernetes.Semver"
    if isinstance(v, OptionalValue):
        return "optional_type"
    if isinstance(v, CelType):
        return "type"
    return _EXTENSION_TYPE_NAMES.get(type(v).__name__, type(v).__name__)


_EXTENSION_TYPE_NAMES = {"IPValue": "net.IP", "CIDRValue": "net.CIDR", "URLValue": "kubernetes.URL"}


# cel-go's Go type names, used in some runtime messages ("got 'types.Int', ...").
GO_TYPE_NAMES = {"bool": "types.Bool", "int": "types.Int", "uint": "types.Uint",
                 "double": "types.Double", "string": "types.String", "bytes": "types.Bytes",
                 "null_type": "types.Null", "kubernetes.Semver": "cel.Semver",
                 "kubernetes.Quantity": "cel.Quantity", "optional_type": "*types.Optional"}


def is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# Element types whose Python equality is CEL's (no bool, which Python equates with 1; no
# float, whose NaN Python lists equate with itself).
_PLAIN = frozenset({str, int, bytes, Uint})


def equal(a: object, b: object) -> bool:
    """CEL heterogeneous equality: numbers compare across int/uint/double, other
    types only with their own kind."""
    if is_number(a) and is_number(b):
        return a == b
    if type(a) is not type(b):
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            pass
        else:
            return False
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):  # type: ignore[arg-type]
            return False
        if _PLAIN.issuperset(map(type, a)) and _PLAIN.issuperset(map(type, b)):  # type: ignore[arg-type]
            return list(a) == list(b)  # type: ignore[arg-type]
        return all(equal(x, y) for x, y in zip(a, b, strict=True))  # type: ignore
    if isinstance(a, dict):
        if isinstance(a, StructValue) and a.type_name != b.type_name:  # type: ignore
            return False
        if len(a) != len(b):  # type: ignore[arg-type]
            return False
        for k, v in a.items():
            other = map_lookup(b, k)  # type: ignore[arg-type]
            if other is MISSING or not equal(v, other):
                return False
        return True
    return a == b


MISSING = object()


def map_lookup(m: dict, key: object) -> object:
    """`m[key]` with CEL's key equality (numbers across types, bools apart), or MISSING."""
    if isinstance(key, str):
        return m.get(key, MISSING)
    for k, v in m.items():
        if isinstance(k, bool) == isinstance(key, bool) and equal(k, key):
            return v
    return MISSING


def compare(a: object, b: object, op: str) -> int:
    """-1/0/1 for CEL's ordering of two values; raises "no such overload" otherwise."""
    if is_number(a) and is_number(b):
        return (a > b) - (a < b)  # type: ignore[operator]
    for kind in (bool, str, bytes):
        if isinstance(a, kind) and isinstance(b, kind):
            return (a > b) - (a < b)  # type: ignore[operator]
    raise no_overload(op, a, b)


def no_overload(op: str, *args: object) -> CELRuntimeError:
    types = ", ".join(type_name(a) for a in args)
    return CELRuntimeError(f"no such overload: {op}({types})")


def check_int(v: int) -> int:
    if not INT_MIN <= v <= INT_MAX:
        raise CELRuntimeError("integer overflow")
    return v


def check_uint(v: int) -> Uint:
    if not 0 <= v <= UINT_MAX:
        raise CELRuntimeError("unsigned integer overflow")
    return Uint(v)
