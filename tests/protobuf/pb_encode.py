"""A small protobuf encoder for the tests, driven by the decoder's own message tables:
JSON objects in, Kubernetes protobuf request bodies out."""

from __future__ import annotations

import base64
import datetime
import json
import struct
from typing import Any

from draemu.apiserver.wire.protobuf.messages import MESSAGES, WRAPPERS

MAGIC = b"k8s\x00"


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative numbers travel as 64-bit two's complement
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def tag(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


def length_delimited(number: int, payload: bytes) -> bytes:
    return tag(number, 2) + varint(len(payload)) + payload


def envelope(raw: bytes, api_version: str, kind: str, **extra: str) -> bytes:
    """`k8s\\0` + runtime.Unknown; `extra` may set contentEncoding / contentType."""
    type_meta = b""
    if api_version:
        type_meta += length_delimited(1, api_version.encode())
    if kind:
        type_meta += length_delimited(2, kind.encode())
    body = length_delimited(1, type_meta) + length_delimited(2, raw)
    for number, name in ((3, "contentEncoding"), (4, "contentType")):
        if name in extra:
            body += length_delimited(number, extra[name].encode())
    return MAGIC + body


def encode_object(obj: dict[str, Any], message: str) -> bytes:
    """A whole request body for `obj` (its apiVersion and kind go in the envelope)."""
    return envelope(encode_message(obj, message), obj.get("apiVersion", ""), obj.get("kind", ""))


def encode_message(obj: Any, name: str) -> bytes:
    special = _special(obj, name)
    if special is not None:
        return special
    if name in WRAPPERS:
        return b"".join(length_delimited(1, item.encode()) for item in obj)
    out = b""
    for number, json_name, type_, value_type, flags in MESSAGES[name]:
        if "i" in flags:
            out += length_delimited(number, encode_message(obj, type_))
            continue
        if json_name not in obj:
            continue
        value = obj[json_name]
        if "m" in flags:
            for key in value:
                entry = _field(1, key, type_) + _field(2, value[key], value_type)
                out += length_delimited(number, entry)
        elif "r" in flags:
            out += b"".join(_field(number, item, type_) for item in value)
        else:
            out += _field(number, value, type_)
    return out


def _field(number: int, value: Any, type_: str) -> bytes:
    if type_ == "string":
        return length_delimited(number, value.encode())
    if type_ == "bytes":
        return length_delimited(number, base64.b64decode(value))
    if type_ in ("bool", "int32", "int64"):
        return tag(number, 0) + varint(int(value))
    if type_ == "double":
        return tag(number, 1) + struct.pack("<d", value)
    return length_delimited(number, encode_message(value, type_))


def _special(value: Any, name: str) -> bytes | None:
    if name in ("meta.v1.Time", "meta.v1.MicroTime"):
        t = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
        delta = t - epoch
        seconds = delta.days * 86400 + delta.seconds
        return tag(1, 0) + varint(seconds) + tag(2, 0) + varint(delta.microseconds * 1000)
    if name == "api.resource.Quantity":
        return length_delimited(1, value.encode())
    if name == "util.intstr.IntOrString":
        if isinstance(value, str):
            return tag(1, 0) + varint(1) + length_delimited(3, value.encode())
        return tag(1, 0) + varint(0) + tag(2, 0) + varint(value)
    if name in ("runtime.RawExtension", "meta.v1.FieldsV1", "apiextensions.v1.JSON"):
        return length_delimited(1, json.dumps(value).encode())
    if name == "apiextensions.v1.JSONSchemaPropsOrBool":
        if isinstance(value, bool):
            return tag(1, 0) + varint(int(value))
        return tag(1, 0) + varint(1) + _field(2, value, "apiextensions.v1.JSONSchemaProps")
    if name in ("apiextensions.v1.JSONSchemaPropsOrArray",
                "apiextensions.v1.JSONSchemaPropsOrStringArray"):
        item = "string" if name.endswith("StringArray") else "apiextensions.v1.JSONSchemaProps"
        if isinstance(value, list):
            return b"".join(_field(2, v, item) for v in value)
        return _field(1, value, "apiextensions.v1.JSONSchemaProps")
    return None
