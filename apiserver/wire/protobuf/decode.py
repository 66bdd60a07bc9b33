"""Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`) to the JSON
form a JSON client sends.

A body is the magic `k8s\\0` followed by a `runtime.Unknown` envelope: typeMeta
{apiVersion, kind}, raw (the object's own protobuf encoding), contentEncoding,
contentType. The object is read with the message tables of `messages.py` and written
as Go's JSON encoder writes the same Go object: field names in
their JSON form, zero values of `omitempty` non-pointer fields left out (Go clients
always write those on the wire), pointer fields kept even when zero (`replicas: 0`
means something), inlined structs merged into their parent, bytes in base64, times in
RFC 3339, quantities and int-or-strings in their string or number form. Nulls are
written where Go writes them for a field on the wire (a zero time is `null`, except
where the 1.37 types say `omitzero`, as for `metadata.creationTimestamp`); fields
absent from the wire are left out.
"""

from __future__ import annotations

import base64
import datetime
import json
import struct
from collections.abc import Callable
from typing import Any

from draemu.api.meta import format_micro_time, format_time
from draemu.api.types import Obj
from draemu.apiserver.wire.protobuf.messages import KINDS, MESSAGES, WRAPPERS
from draemu.apiserver.wire.protobuf.reader import (
    BYTES,
    FIXED64,
    VARINT,
    WireError,
    fields,
    packed,
    signed,
)

MAGIC = b"k8s\x00"
PROTOBUF = "application/vnd.kubernetes.protobuf"
# Go's zero time.Time (0001-01-01T00:00:00Z) in Unix seconds: JSON null.
_ZERO_TIME = -62135596800


class ProtobufError(ValueError):
    """The body is not a valid protobuf encoding of the kind it names."""


# Scalars (those the tables use): the wire type they travel in, and how the wire value
# becomes JSON.
_SCALARS: dict[str, tuple[int, Callable[[Any], Any]]] = {
    "string": (BYTES, lambda b: b.decode("utf-8", errors="replace")),
    "bytes": (BYTES, lambda b: base64.b64encode(b).decode("ascii")),
    "bool": (VARINT, bool),
    "int32": (VARINT, lambda v: signed(v, 32)),
    "int64": (VARINT, lambda v: signed(v, 64)),
    "double": (FIXED64, lambda v: _double(v)),
}
_ZERO = ("", 0, False)
_BY_NUMBER = {name: {f[0]: f for f in table} for name, table in MESSAGES.items()}
_KEEP, _INLINE, _OMIT_EMPTY, _OMIT_ZERO = range(4)


def _rule(type_: str, flags: str) -> int:
    """How Go's JSON encoder treats a field once decoded."""
    if "i" in flags:
        return _INLINE
    if type_ in _SCALARS and "o" in flags and not {"r", "m", "p"} & set(flags):
        return _OMIT_EMPTY  # a zero pointer, list or map entry is kept
    if "z" in flags:
        return _OMIT_ZERO
    return _KEEP


# Per message, in Go struct order: (number, JSON name, rule).
_OUTPUT = {name: [(f[0], f[1], _rule(f[2], f[4])) for f in table]
           for name, table in MESSAGES.items()}
# Where a field error is: (message, JSON field name), spelled out only on error.
Where = tuple[str, str]


_PACKAGES = {"rbac.authorization.k8s.io": "rbac", "flowcontrol.apiserver.k8s.io": "flowcontrol"}


def message_name(group: str, version: str, kind: str) -> str | None:
    """The schema's message for a kind, or None when draemu does not take it as a body."""
    if kind == "DeleteOptions":  # registered in every group version, one message
        return "meta.v1.DeleteOptions"
    # The Go package's folder: the group without .k8s.io, but rbac for RBAC's group and
    # flowcontrol for API priority and fairness.
    package = "core" if group == "" else _PACKAGES.get(group, group.removesuffix(".k8s.io"))
    name = f"{package}.{version}.{kind}"
    return name if name in KINDS else None


def split_api_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


def decode(body: bytes, group: str, version: str, kind: str) -> Obj:
    """A protobuf request body as the JSON object a JSON client would have sent.

    `group`, `version` and `kind` are the request URL's: like upstream, they only fill
    in what the envelope's typeMeta leaves blank; the envelope names the message.
    """
    if not body:
        raise ProtobufError("empty data")
    if not body.startswith(MAGIC):
        raise ProtobufError("provided data does not appear to be a protobuf message, "
                            f"expected prefix [{' '.join(str(b) for b in MAGIC)}]")
    if len(body) == len(MAGIC):
        raise ProtobufError("empty body")
    try:
        envelope = _unknown(body[len(MAGIC):])
        env_group, env_version = split_api_version(envelope["apiVersion"])
        if not envelope["apiVersion"]:
            env_group, env_version = group, version
        env_kind = envelope["kind"] or kind
        if envelope["contentEncoding"]:
            raise ProtobufError(
                f'unsupported content encoding "{envelope["contentEncoding"]}" in the '
                "protobuf envelope")
        if envelope["contentType"] not in ("", PROTOBUF):
            raise ProtobufError(f'unsupported content type "{envelope["contentType"]}" in '
                                "the protobuf envelope")
        type_meta = (f'runtime.TypeMeta{{APIVersion:"{envelope["apiVersion"]}", '
                     f'Kind:"{envelope["kind"]}"}}')
        if not env_kind:
            raise ProtobufError(f"Object 'Kind' is missing in '{type_meta}'")
        if not env_version:
            raise ProtobufError(f"Object 'apiVersion' is missing in '{type_meta}'")
        name = message_name(env_group, env_version, env_kind)
        if name is None:
            gv = f"{env_group}/{env_version}" if env_group else env_version
            raise ProtobufError(f'no kind "{env_kind}" is registered for version "{gv}"')
        obj = _message(envelope["raw"], name)
    except WireError as e:
        raise ProtobufError(f"unable to decode the protobuf body: {e}") from None
    api_version = f"{env_group}/{env_version}" if env_group else env_version
    return {"kind": env_kind, "apiVersion": api_version, **obj}


def _unknown(buf: bytes) -> Obj:
    out: Obj = {"apiVersion": "", "kind": "", "raw": b"", "contentEncoding": "",
                "contentType": ""}
    for number, wire_type, value in fields(buf):
        if number in (1, 2, 3, 4) and wire_type != BYTES:
            raise WireError(f"runtime.Unknown field {number} has wire type {wire_type}")
        if number == 1:
            assert isinstance(value, bytes)
            for inner, inner_type, text in fields(value):
                if inner in (1, 2) and inner_type == BYTES:
                    assert isinstance(text, bytes)
                    out["apiVersion" if inner == 1 else "kind"] = text.decode(errors="replace")
        elif number == 2:
            out["raw"] = value
        elif number in (3, 4):
            assert isinstance(value, bytes)
            out["contentEncoding" if number == 3 else "contentType"] = value.decode(
                errors="replace")
    return out


def _message(buf: bytes, name: str) -> Any:
    """One message's JSON value (a dict, or a string/number/list for the kinds Go
    marshals specially)."""
    special = _SPECIAL.get(name)
    if special is not None:
        return special(_plain(buf))
    by_number = _BY_NUMBER[name]
    values: dict[int, Any] = {}
    for number, wire_type, value in fields(buf):
        field = by_number.get(number)
        if field is None:
            continue  # unknown fields are skipped, as protobuf readers do
        _, json_name, type_, value_type, flags = field
        where = (name, json_name)
        if "m" in flags:
            key, item = _map_entry(value, wire_type, type_, value_type, where)
            values.setdefault(number, {})[key] = item
        elif "r" in flags:
            values.setdefault(number, []).extend(
                _repeated(value, wire_type, type_, where))
        else:
            item = _single(value, wire_type, type_, where)
            previous = values.get(number)
            # A message seen twice merges (protobuf semantics); scalars: last one wins.
            if isinstance(previous, dict) and isinstance(item, dict):
                previous.update(item)
            else:
                values[number] = item
    if name in WRAPPERS:
        return values.get(1, [])
    union = _UNION.get(name)
    if union is not None:
        return union(values)
    return _json_object(name, values)


def _json_object(name: str, values: dict[int, Any]) -> Obj:
    out: Obj = {}
    for number, json_name, rule in _OUTPUT[name]:
        if number not in values:
            continue
        value = values[number]
        if rule == _INLINE:
            out.update(value)
        elif rule == _OMIT_EMPTY and value in _ZERO:
            continue  # Go's omitempty
        elif rule == _OMIT_ZERO and (value is None or value in _ZERO):
            continue  # Go's omitzero (a zero time is None here)
        else:
            out[json_name] = value
    return out


def _single(value: int | bytes, wire_type: int, type_: str, where: Where) -> Any:
    scalar = _SCALARS.get(type_)
    if scalar is not None:
        expected, convert = scalar
        if wire_type != expected:
            raise ProtobufError(f"{where[0]}.{where[1]}: wire type {wire_type}, expected "
                                f"{expected} for {type_}")
        return convert(value)
    if wire_type != BYTES:
        raise ProtobufError(f"{where[0]}.{where[1]}: wire type {wire_type}, expected 2 for "
                            "a message")
    assert isinstance(value, bytes)
    return _message(value, type_)


def _repeated(value: int | bytes, wire_type: int, type_: str, where: Where) -> list[Any]:
    scalar = _SCALARS.get(type_)
    if scalar is not None and scalar[0] != BYTES and wire_type == BYTES:
        assert isinstance(value, bytes)
        return [scalar[1](v) for v in packed(value, scalar[0])]
    return [_single(value, wire_type, type_, where)]


def _map_entry(value: int | bytes, wire_type: int, key_type: str, value_type: str,
               where: Where) -> tuple[Any, Any]:
    if wire_type != BYTES:
        raise ProtobufError(f"{where[0]}.{where[1]}: wire type {wire_type}, expected 2 for "
                            "a map entry")
    assert isinstance(value, bytes)
    key: Any = _zero(key_type)
    item: Any = _zero(value_type)
    for number, inner_type, inner in fields(value):
        if number == 1:
            key = _single(inner, inner_type, key_type, (where[0], f"{where[1]} key"))
        elif number == 2:
            item = _single(inner, inner_type, value_type, (where[0], f"{where[1]}[{key}]"))
    return key, item


def _zero(type_: str) -> Any:
    """What an absent map key or value means (a message: its empty form)."""
    if type_ in _SCALARS:
        return {"string": "", "bytes": "", "bool": False}.get(type_, 0)
    return _message(b"", type_)


def _double(bits: int) -> float | int:
    """A float64 as Go's encoding/json writes it: integral values without a fraction
    (`5`, as a JSON client sends it), others in their shortest form."""
    value: float = struct.unpack("<d", bits.to_bytes(8, "little"))[0]
    if value.is_integer() and abs(value) < 1e21:
        return int(value)
    return value


# Messages with custom Go marshalling --------------------------------------------------
def _plain(buf: bytes) -> dict[int, int | bytes]:
    """Field number -> last value, for the small fixed messages below."""
    return {number: value for number, _, value in fields(buf)}


def _number(fields_: dict[int, int | bytes], number: int, bits: int, what: str) -> int:
    value = fields_.get(number, 0)
    if isinstance(value, bytes):
        raise ProtobufError(f"{what}: field {number} must be a varint")
    return signed(value, bits)


def _time(fields_: dict[int, int | bytes], micro: bool) -> str | None:
    """RFC 3339 in UTC as metav1.Time (seconds) or metav1.MicroTime (microseconds)."""
    seconds = _number(fields_, 1, 64, "Time.seconds")
    nanos = _number(fields_, 2, 32, "Time.nanos")
    if not fields_ or (seconds == _ZERO_TIME and nanos == 0):
        return None  # the zero time: Go writes null
    try:
        t = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(
            seconds=seconds, microseconds=nanos // 1000)
    except OverflowError:
        raise ProtobufError(f"time out of range: {seconds} seconds") from None
    return format_micro_time(t) if micro else format_time(t)


def _bytes_field(fields_: dict[int, int | bytes], what: str) -> bytes:
    value = fields_.get(1, b"")
    if not isinstance(value, bytes):
        raise ProtobufError(f"{what}: field 1 must be length-delimited")
    return value


def _string_field(fields_: dict[int, int | bytes], what: str) -> str:
    return _bytes_field(fields_, what).decode("utf-8", errors="replace")


def _embedded_json(fields_: dict[int, int | bytes], what: str) -> Any:
    raw = _bytes_field(fields_, what)
    if not raw:
        return None
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise ProtobufError(f"{what} does not hold JSON: {e}") from None


def _int_or_string(fields_: dict[int, int | bytes]) -> int | str:
    if _number(fields_, 1, 64, "IntOrString.type") == 1:
        return _string_field({1: fields_.get(3, b"")}, "IntOrString.strVal")
    return _number(fields_, 2, 32, "IntOrString.intVal")


_SPECIAL: dict[str, Callable[[dict[int, int | bytes]], Any]] = {
    "meta.v1.Time": lambda f: _time(f, micro=False),
    "meta.v1.MicroTime": lambda f: _time(f, micro=True),
    "meta.v1.FieldsV1": lambda f: _embedded_json(f, "FieldsV1"),
    "runtime.RawExtension": lambda f: _embedded_json(f, "RawExtension"),
    "api.resource.Quantity": lambda f: _string_field(f, "Quantity"),
    "util.intstr.IntOrString": _int_or_string,
    "apiextensions.v1.JSON": lambda f: _embedded_json(f, "JSON"),
}

# apiextensions.k8s.io/v1's schema unions (marshal.go): a schema or a bool, a schema or a
# list of schemas, a schema or a list of property names; from the decoded fields.
_UNION: dict[str, Callable[[dict[int, Any]], Any]] = {
    "apiextensions.v1.JSONSchemaPropsOrBool":
        lambda v: v[2] if v.get(2) is not None else bool(v.get(1, False)),
    "apiextensions.v1.JSONSchemaPropsOrArray":
        lambda v: v[2] if v.get(2) else v.get(1),
    "apiextensions.v1.JSONSchemaPropsOrStringArray":
        lambda v: v[2] if v.get(2) else v.get(1),
}
