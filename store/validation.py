"""Checks of keys, prefixes and values before they reach the database."""

from __future__ import annotations

import re

from draemu.store.errors import InvalidKeyError, ValueTooLargeError

# Kubernetes keys are /registry/<group>/<resource>/<namespace>/<name>: a few hundred bytes
# at most. The bound keeps index entries small and rejects garbage early.
MAX_KEY_BYTES = 2048

_SURROGATES = range(0xD800, 0xE000)
_BAD_CHARACTER = re.compile("[\x00-\x1f\x7f\ud800-\udfff]")


def _bad_character(text: str) -> str | None:
    found = _BAD_CHARACTER.search(text)  # every key of every write: a C-speed scan
    if found is None:
        return None
    code = ord(found.group())
    if code in _SURROGATES:
        return f"unpaired surrogate {code:#06x}"
    return f"control character {code:#04x}"


def check_prefix(prefix: str) -> None:
    """A prefix for range and watch: an absolute path, possibly ending in '/'."""
    if not isinstance(prefix, str):
        raise InvalidKeyError(f"prefix must be a string, not {type(prefix).__name__}")
    if not prefix.startswith("/"):
        raise InvalidKeyError(f"invalid prefix {prefix!r}: must start with '/'")
    problem = _bad_character(prefix)
    if problem:
        raise InvalidKeyError(f"invalid prefix {prefix!r}: contains {problem}")
    if len(prefix.encode()) > MAX_KEY_BYTES:
        raise InvalidKeyError(f"invalid prefix: longer than {MAX_KEY_BYTES} bytes")


def check_key(key: str) -> None:
    """A key: an absolute path of non-empty segments, not ending in '/'."""
    if not isinstance(key, str):
        raise InvalidKeyError(f"key must be a string, not {type(key).__name__}")
    if not key.startswith("/") or key == "/":
        raise InvalidKeyError(f"invalid key {key!r}: must be a path such as "
                              "'/registry/pods/default/p1'")
    problem = _bad_character(key)
    if problem:
        raise InvalidKeyError(f"invalid key {key!r}: contains {problem}")
    # Every segment between two slashes: the key starts with one, add one at the end.
    delimited = key + "/"
    if "//" in delimited:
        raise InvalidKeyError(f"invalid key {key!r}: empty path segment")
    if "/./" in delimited or "/../" in delimited:
        raise InvalidKeyError(f"invalid key {key!r}: '.' and '..' are not allowed as segments")
    if len(key) * 4 > MAX_KEY_BYTES and len(key.encode()) > MAX_KEY_BYTES:
        raise InvalidKeyError(f"invalid key {key[:64]!r}...: longer than {MAX_KEY_BYTES} bytes")


def check_value(key: str, value: bytes, limit: int) -> bytes:
    """The value as immutable bytes, or an error if it is too large."""
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"value for {key!r} must be bytes, not {type(value).__name__}")
    data = bytes(value)
    if len(data) > limit:
        raise ValueTooLargeError(f"value of {len(data)} bytes for key {key!r} exceeds the "
                                 f"limit of {limit} bytes")
    return data


def prefix_end(prefix: str) -> str:
    """The smallest string greater than every string starting with `prefix`."""
    text = prefix
    while text:
        code = ord(text[-1]) + 1
        if code in _SURROGATES:
            code = _SURROGATES.stop
        if code <= 0x10FFFF:
            return text[:-1] + chr(code)
        text = text[:-1]
    raise InvalidKeyError(f"prefix {prefix!r} has no upper bound")
