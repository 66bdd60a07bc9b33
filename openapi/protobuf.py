"""The Swagger 2.0 document in gnostic's protobuf form (`openapi.v2.Document`).

kubectl 1.27 and 1.28 ask `/openapi/v2` with
`Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf` and parse only this
form (for `explain` and to learn that the server validates fields itself). The document
is the JSON one (`swagger.openapi_v2_document`) written with the message and field numbers
of gnostic's `OpenAPIv2.proto`; vendor extensions and defaults travel as YAML text, as
gnostic stores them (JSON is valid YAML).
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from draemu.openapi.documents import signature
from draemu.openapi.swagger import v2_json_text

ACCEPT = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
# What kube-apiserver answers with: '@' is not valid in a media type that Go's mime
# parser must read back, so the served type spells it with a dot.
CONTENT_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_OPERATIONS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}


def openapi_v2_protobuf(strategies: list[Any]) -> bytes:
    return _encoded(signature(strategies))


@lru_cache(maxsize=8)
def _encoded(sig: tuple[Any, ...]) -> bytes:
    return document(json.loads(v2_json_text(sig)))


# Wire format ------------------------------------------------------------------------
def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _bytes(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _str(number: int, value: str | None) -> bytes:
    return _bytes(number, value.encode()) if value else b""


def _strs(number: int, values: list[str] | None) -> bytes:
    return b"".join(_bytes(number, v.encode()) for v in values or ())


def _bool(number: int, value: bool | None) -> bytes:
    return _varint(number << 3) + b"\x01" if value else b""


def _msgs(number: int, payloads: list[bytes]) -> bytes:
    return b"".join(_bytes(number, p) for p in payloads)


def _yaml(value: Any) -> bytes:
    """gnostic's `Any`: the value as YAML text (field 2)."""
    return _str(2, json.dumps(value, sort_keys=True) + "\n")


def _named(name: str, value: bytes) -> bytes:
    return _str(1, name) + _bytes(2, value)


def _extensions(number: int, node: dict[str, Any]) -> bytes:
    return _msgs(number, [_named(k, _yaml(v)) for k, v in node.items() if k.startswith("x-")])


# Messages ---------------------------------------------------------------------------
def document(doc: dict[str, Any]) -> bytes:
    info = doc.get("info") or {}
    paths = [_named(path, path_item(item)) for path, item in doc.get("paths", {}).items()]
    definitions = [_named(name, schema(s)) for name, s in doc.get("definitions", {}).items()]
    return (_str(1, doc.get("swagger", "2.0"))
            + _bytes(2, _str(1, info.get("title")) + _str(2, info.get("version")))
            + _bytes(8, _msgs(2, paths))
            + _bytes(9, _msgs(1, definitions)))


def path_item(item: dict[str, Any]) -> bytes:
    out = b""
    for method, number in _OPERATIONS.items():
        if method in item:
            out += _bytes(number, operation(item[method]))
    out += _msgs(9, [parameter(p) for p in item.get("parameters", ())])
    return out + _extensions(10, item)


def operation(op: dict[str, Any]) -> bytes:
    responses = [_named(code, _bytes(1, response(r)))
                 for code, r in op.get("responses", {}).items()]
    return (_strs(1, op.get("tags")) + _str(2, op.get("summary"))
            + _str(3, op.get("description")) + _str(5, op.get("operationId"))
            + _strs(6, op.get("produces")) + _strs(7, op.get("consumes"))
            + _msgs(8, [parameter(p) for p in op.get("parameters", ())])
            + _bytes(9, _msgs(1, responses))
            + _strs(10, op.get("schemes")) + _extensions(13, op))


def parameter(p: dict[str, Any]) -> bytes:
    """A `ParametersItem` holding a body, query or path parameter."""
    if p.get("in") == "body":
        body = (_str(1, p.get("description")) + _str(2, p.get("name")) + _str(3, "body")
                + _bool(4, p.get("required")) + _bytes(5, schema(p.get("schema") or {})))
        return _bytes(1, _bytes(1, body))
    common = (_bool(1, p.get("required")) + _str(2, p.get("in")) + _str(3, p.get("description"))
              + _str(4, p.get("name")))
    if p.get("in") == "path":
        sub = _bytes(4, common + _str(5, p.get("type")) + _bool(19, p.get("uniqueItems")))
    else:
        sub = _bytes(3, common + _str(6, p.get("type")) + _bool(20, p.get("uniqueItems")))
    return _bytes(1, _bytes(2, sub))


def response(r: dict[str, Any]) -> bytes:
    out = _str(1, r.get("description"))
    if "schema" in r:
        out += _bytes(2, _bytes(1, schema(r["schema"])))
    return out


def schema(s: dict[str, Any]) -> bytes:
    out = _str(1, s.get("$ref")) + _str(2, s.get("format")) + _str(3, s.get("title"))
    out += _str(4, s.get("description"))
    if "default" in s:
        out += _bytes(5, _yaml(s["default"]))
    out += _bool(16, s.get("uniqueItems")) + _strs(19, s.get("required"))
    out += _msgs(20, [_yaml(v) for v in s.get("enum", ())])
    extra = s.get("additionalProperties")
    if isinstance(extra, dict):
        out += _bytes(21, _bytes(1, schema(extra)))
    elif isinstance(extra, bool):
        out += _bytes(21, _varint(2 << 3) + (b"\x01" if extra else b"\x00"))
    kind = s.get("type")
    if kind:
        out += _bytes(22, _strs(1, kind if isinstance(kind, list) else [kind]))
    if isinstance(s.get("items"), dict):
        out += _bytes(23, _bytes(1, schema(s["items"])))
    out += _msgs(24, [schema(sub) for sub in s.get("allOf", ())])
    if "properties" in s:
        props = [_named(name, schema(sub)) for name, sub in s["properties"].items()]
        out += _bytes(25, _msgs(1, props))
    return out + _extensions(31, s)
