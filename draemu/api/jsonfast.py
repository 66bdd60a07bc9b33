"""JSON to and from bytes on the hot paths: orjson where it gives the json module's exact
answer, the json module where it would not.

What a caller sees is `json.loads` and compact `json.dumps(..., ensure_ascii=False)`
encoded as UTF-8, only 2.5 (loads) to 15 (dumps) times faster on API objects. orjson
refuses some of what json takes: in text lone surrogates, NaN and Infinity, a byte-order
mark, UTF-16 and UTF-32; in values integers beyond 64 bits, keys that are not strings,
nesting deeper than 254 levels. Those take the json path, which also raises json's own
errors. Two silent differences are handled here:

- orjson reads integers beyond 64 bits as floats: text holding a run of 19 digits
  (2**63 has 19) is read by json instead.
- orjson writes NaN and Infinity as null, json as NaN and Infinity. Such values enter
  only through the json path of `loads` or through `note_non_finite` (YAML, embedded
  JSON); once one was seen, `dumps` uses json for the rest of the process.

One difference stays, because both forms are valid and equal JSON: orjson writes the
exponent of floats below 1e-4 without a leading zero (1e-7, where json writes 1e-07).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import orjson

# Digits become "0", everything else a space: a run of 19 zeros marks a long number.
_DIGITS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_NUMBER = b"0" * 19
# Types orjson would write but json refuses: they go to json, which raises its TypeError.
_OPTIONS = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME

_non_finite_seen = False


def loads(data: bytes | bytearray, parse_int: Callable[[str], Any] | None = None) -> Any:
    """`json.loads(data)`; `parse_int` as json's, for the integers orjson cannot read
    (request bodies bound their length with it)."""
    if data.translate(_DIGITS).find(_LONG_NUMBER) < 0:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(data, parse_constant=_constant, parse_float=_float, parse_int=parse_int)


def dumps(obj: Any) -> bytes:
    """`json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()`: raises
    TypeError for what JSON cannot hold and UnicodeEncodeError for lone surrogates."""
    if not _non_finite_seen:
        try:
            return orjson.dumps(obj, option=_OPTIONS)
        except orjson.JSONEncodeError:
            pass
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def dumps_kept(obj: Any) -> bytes:
    """`dumps(obj)` for bytes kept long (stored values, caches): orjson hands out its
    whole output buffer, about ten times the JSON's size (28 KiB for 3 KB), which a copy
    trims (for a sixth more time)."""
    return bytes(memoryview(dumps(obj)))


def note_non_finite(value: Any) -> None:
    """Look for NaN and Infinity in a value decoded elsewhere (YAML, JSON read with the
    json module), so that `dumps` writes them as json does."""
    if _has_non_finite(value):
        _saw_non_finite()


def _has_non_finite(value: Any) -> bool:
    # Iterative: the value may nest deeper than Python's recursion limit.
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _saw_non_finite() -> None:
    global _non_finite_seen
    _non_finite_seen = True


def _constant(name: str) -> float:
    """NaN, Infinity and -Infinity."""
    _saw_non_finite()
    return float(name)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400
        _saw_non_finite()
    return value
