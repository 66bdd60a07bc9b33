"""Wire formats: request bodies in, JSON out, content negotiation, query parsing.

Lenient where real clients need it (client-compat.md): no Content-Type means JSON,
YAML is accepted, Kubernetes protobuf bodies (kubectl >= 1.32, client-go) are decoded to
JSON by `draemu.apiserver.wire.protobuf`, bool parameters parse like Go's `strconv.ParseBool`.
Responses are compact JSON with `Content-Type: application/json` exactly (lightkube checks it).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import yaml
from aiohttp import StreamReader, web

from draemu.api import jsonfast, yamlload
from draemu.api.errors import StatusError, bad_request

JSON = "application/json"
PROTOBUF = "application/vnd.kubernetes.protobuf"
MAX_BODY = 3 * 1024 * 1024
MAX_INT_DIGITS = yamlload.MAX_INT_DIGITS

_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


def dumps(obj: Any) -> bytes:
    try:
        return jsonfast.dumps(obj)
    except UnicodeEncodeError:
        # A lone surrogate ("\\ud800" in a request body, echoed in a message) has no
        # UTF-8 form: send it escaped, as it came.
        return json.dumps(obj, separators=(",", ":")).encode()


def json_response(obj: Any, status: int = 200, headers: dict[str, str] | None = None
                  ) -> web.Response:
    resp = web.Response(body=dumps(obj), status=status, headers=headers)
    # Set after construction: aiohttp would otherwise append "; charset=utf-8".
    resp.headers["Content-Type"] = JSON
    return resp


def status_response(err: StatusError) -> web.Response:
    resp = json_response(err.status(), err.code)
    for name, value in err.headers.items():
        resp.headers[name] = value
    return resp


def parse_bool(value: str | None, name: str) -> bool:
    """Go's strconv.ParseBool, as the apiserver parses query parameters."""
    if value is None or value == "":
        return False
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise bad_request(f'strconv.ParseBool: parsing "{value}": invalid syntax ({name})')


def parse_int(value: str | None, name: str) -> int | None:
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise bad_request(f'strconv.ParseInt: parsing "{value}": invalid syntax ({name})') \
            from None


def media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def _unsupported(ctype: str, accepted: list[str]) -> StatusError:
    return StatusError(415, "UnsupportedMediaType",
                       f'the body of the request was in an unknown format - accepted media '
                       f'types include: {", ".join(accepted)}')


BODY_TYPES = [JSON, "application/yaml", PROTOBUF]


_BODY_KEY = web.RequestKey("body", bytes)


async def read_body(request: web.Request) -> bytes:
    """The request body, read once (admission may look at it before the handler)."""
    cached = request.get(_BODY_KEY)
    if cached is not None:
        return cached
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise too_large()
    content = request.content
    if content.is_eof():
        # All of it has arrived (most bodies come with their headers): take it at once.
        body = content.read_nowait()
        if len(body) > MAX_BODY:
            raise too_large()
    else:
        body = await _read_streamed(content)
    request[_BODY_KEY] = body
    return body


async def _read_streamed(content: StreamReader) -> bytes:
    data = bytearray()
    async for chunk in content.iter_chunked(65536):
        data += chunk
        if len(data) > MAX_BODY:
            raise too_large()
    return bytes(data)


def too_large() -> StatusError:
    return StatusError(413, "RequestEntityTooLarge",
                       "Request entity too large: limit is 3145728")


_YAML_TYPES = frozenset({"application/yaml", "text/yaml", "application/x-yaml"})


def decode(raw: bytes, content_type: str | None, accepted: list[str] | None = None) -> Any:
    """Decode a JSON, YAML or Kubernetes protobuf body; no Content-Type means JSON (as
    upstream)."""
    ctype = media_type(content_type) or JSON
    if ctype in _YAML_TYPES:
        ctype = "application/yaml"
    accepted = accepted or BODY_TYPES
    if ctype not in accepted:
        raise _unsupported(ctype, accepted)
    if ctype == PROTOBUF:
        value = _decode_protobuf(raw)
        # Its embedded JSON (RawExtension) was read by the json module.
        jsonfast.note_non_finite(value)
        return value
    if not raw.strip():
        raise bad_request("the body of the request was empty")
    try:
        value = _within_max_depth(raw, _decode_text(raw, ctype))
    except RecursionError:
        raise _too_deep() from None
    return _without_lone_surrogates(value) if _SURROGATE_ESCAPE.search(raw) else value


# `\ud800` without its pair decodes to a str that cannot be encoded (stored, echoed);
# Go's decoder turns it into U+FFFD, and so do we. Paired escapes decode to one code point.
_SURROGATE_ESCAPE = re.compile(rb"\\[uU][dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _without_lone_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_without_lone_surrogates(k): _without_lone_surrogates(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_without_lone_surrogates(v) for v in value]
    return value


def _decode_text(raw: bytes, ctype: str) -> Any:
    if ctype.endswith("yaml"):
        return _from_yaml(raw)
    try:
        return _from_json(raw)
    except (ValueError, UnicodeDecodeError) as e:
        # Clients sometimes send YAML with a JSON type; YAML is a superset of JSON. The
        # YAML loader keeps the same limits.
        try:
            value, _ = yamlload.load(raw)
        except yamlload.YAMLTooLarge as limit:
            raise StatusError(413, "RequestEntityTooLarge",
                              f"error converting YAML to JSON: {limit}") from None
        except yamlload.YAMLLimitError as limit:
            raise bad_request(f"error converting YAML to JSON: {limit}") from None
        except yaml.YAMLError:
            raise bad_request(f"couldn't get version/kind; json parse error: {e}") from None
        jsonfast.note_non_finite(value)
        if isinstance(value, (dict, list)):
            return value
        raise bad_request(f"couldn't get version/kind; json parse error: {e}") from None


class _IntegerTooLong(Exception):
    pass


def _bounded_int(text: str) -> int:
    if len(text) > MAX_INT_DIGITS + 1 and len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _IntegerTooLong(text)
    return int(text)


def _from_json(raw: bytes) -> Any:
    try:
        return jsonfast.loads(raw, parse_int=_bounded_int)
    except _IntegerTooLong as e:
        raise _integer_too_long(raw, str(e)) from None


def _integer_too_long(raw: bytes, text: str) -> StatusError:
    """The field that holds the first too long integer, found by a second parse that
    marks it (only bodies that have one pay for it)."""
    marker = object()

    def mark(digits: str) -> Any:
        return marker if len(digits.lstrip("-")) > MAX_INT_DIGITS else 0

    path = _path_of(json.loads(raw, parse_int=mark), marker)
    message = (f"json: cannot unmarshal number {text[:20]}... into Go value of type "
               f"int64 or float64: it has {len(text.lstrip('-'))} digits, at most "
               f"{MAX_INT_DIGITS} are allowed")
    where = f" (field {path})" if path else ""
    return StatusError(400, "BadRequest", f"{message}{where}",
                       {"causes": [{"reason": "FieldValueInvalid", "message": message,
                                    "field": path}]})


def _path_of(value: Any, marker: object) -> str:
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if item is marker:
            return path
        if isinstance(item, dict):
            stack.extend((v, f"{path}.{k}" if path else k) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(item))
    return ""


def _from_yaml(raw: bytes) -> Any:
    try:
        value, _ = yamlload.load(raw)
    except yamlload.YAMLTooLarge as e:
        raise StatusError(413, "RequestEntityTooLarge", f"error converting YAML to JSON: {e}") \
            from None
    except yaml.YAMLError as e:
        raise bad_request(f"error converting YAML to JSON: {e}") from None
    jsonfast.note_non_finite(value)  # .nan, .inf
    return value


def duplicate_fields(raw: bytes, content_type: str | None) -> list[str]:
    """Paths of the object keys `raw` (a body `decode` accepted) has more than once, for
    fieldValidation's `duplicate field` errors: a second parse, in the json module with a
    hook per object (orjson keeps the last value silently)."""
    ctype = media_type(content_type) or JSON
    if ctype == PROTOBUF:
        return []
    if ctype in _YAML_TYPES or ctype.endswith("yaml"):
        return yamlload.load(raw)[1]
    if _no_duplicates(raw):
        return []
    twice: list[tuple[dict[str, Any], str]] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(items)
        if len(obj) != len(items):
            seen: set[str] = set()
            for key, _ in items:
                if key in seen:
                    twice.append((obj, key))
                seen.add(key)
        return obj

    try:
        value = json.loads(raw, object_pairs_hook=pairs, parse_int=_bounded_int)
    except (ValueError, UnicodeDecodeError, _IntegerTooLong, RecursionError):
        return yamlload.load(raw)[1] if ctype == JSON else []
    if not twice:
        return []
    where = _paths_of_objects(value, {id(obj) for obj, _ in twice})
    return [f"{where[id(obj)]}.{key}" if where.get(id(obj)) else key for obj, key in twice]


def _no_duplicates(raw: bytes) -> bool:
    """Whether the JSON text `raw` surely has no key twice in one object, in C: a colon
    outside a string separates a key from its value, so the text has as many colons as
    its members plus those in its strings. Decoded and encoded again, each object keeps
    one member per distinct key and every string of the members kept: a key given twice
    drops a member, and so at least one colon. Without \\u escapes (one could spell a
    colon, or make two spellings of one key) the colons are equal exactly when nothing
    was dropped. False: not known (the json module's parse decides)."""
    if b"\\u" in raw:
        return False
    try:
        again = jsonfast.dumps(jsonfast.loads(raw))
    except (ValueError, TypeError, RecursionError):
        return False
    return again.count(b":") == raw.count(b":")


def _paths_of_objects(value: Any, wanted: set[int]) -> dict[int, str]:
    found: dict[int, str] = {}
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack and len(found) < len(wanted):
        item, path = stack.pop()
        if isinstance(item, dict):
            if id(item) in wanted:
                found[id(item)] = path
            stack.extend((v, f"{path}.{k}" if path else k) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(item))
    return found


# Go's decoder stops at 10000 levels; Python's recursive code (copies, validation,
# encoding) would hit its recursion limit long before, so bodies nest at most this deep.
MAX_DEPTH = 100


def _too_deep() -> StatusError:
    return bad_request(f"couldn't get version/kind; json parse error: exceeded max depth "
                       f"(objects and arrays may nest at most {MAX_DEPTH} levels deep)")


def _within_max_depth(raw: bytes, value: Any) -> Any:
    # Counting brackets is C-fast and bounds the depth from above: most bodies skip the walk.
    if raw.count(b"{") + raw.count(b"[") + raw.count(b"\n") <= MAX_DEPTH:
        return value
    level: list[Any] = [value]
    for _ in range(MAX_DEPTH + 1):
        level = [child for node in level
                 for child in (node.values() if isinstance(node, dict) else node)
                 if isinstance(child, (dict, list))]
        if not level:
            return value
    raise _too_deep()


def _decode_protobuf(raw: bytes) -> Any:
    """kubectl >= 1.32 and client-go send built-in kinds as protobuf; the envelope names
    the kind, which the handlers then check against the URL as for JSON bodies.
    Imported here: its schemas cost a tenth of the apiserver's start-up, and most clients
    never send protobuf."""
    from draemu.apiserver.wire.protobuf import ProtobufError, decode_body

    try:
        return decode_body(raw)
    except ProtobufError as e:
        raise bad_request(str(e)) from None


@dataclass(frozen=True)
class Accept:
    """What the client asked to receive."""

    table: str = ""  # "v1" or "v1beta1" when a meta.k8s.io Table is wanted
    discovery_v2: bool = False
    partial_metadata: str = ""  # version when PartialObjectMetadata(List) is wanted


def not_acceptable() -> StatusError:
    return StatusError(406, "NotAcceptable", "only the following media types are accepted: "
                       "application/json, application/yaml, application/vnd.kubernetes.protobuf")


def negotiate(accept_header: str | None, *, table: bool = True, strict: bool = False
              ) -> Accept:
    """Walk the Accept list in order; the first range we can serve decides. `table`:
    whether the endpoint prints Tables (upstream's have a table convertor; reviews,
    bindings, evictions and tokens do not). `strict` (resource requests): an Accept
    nothing of which can be served is a 406, as upstream answers; else JSON."""
    for item in (accept_header or "").split(","):
        parts = [p.strip() for p in item.split(";")]
        mtype = parts[0].lower()
        params: dict[str, str] = {}
        for p in parts[1:]:
            k, _, v = p.partition("=")
            params[k.strip().lower()] = v.strip()
        if mtype not in (JSON, "*/*", "application/*", PROTOBUF, "application/yaml"):
            continue
        if mtype == PROTOBUF:
            # Protobuf-first Accepts get JSON (clients decode it): skip to the next range,
            # JSON when there is none.
            strict = strict and bool(params.get("as"))
            continue
        as_ = params.get("as", "")
        if not as_:
            return Accept()
        if as_ == "Table" and params.get("g") == "meta.k8s.io" \
                and params.get("v") in ("v1", "v1beta1") and table:
            return Accept(table=params["v"])
        if as_ == "APIGroupDiscoveryList" and params.get("g") == "apidiscovery.k8s.io" \
                and params.get("v") == "v2" and not params.get("profile"):
            return Accept(discovery_v2=True)
        if as_ in ("PartialObjectMetadata", "PartialObjectMetadataList") \
                and params.get("g") == "meta.k8s.io" and params.get("v") in ("v1", "v1beta1"):
            return Accept(partial_metadata=params["v"])
    if strict and (accept_header or "").strip():
        raise not_acceptable()
    return Accept()

