"""The key and prefix checks (a regular-expression scan and substring tests) reject
exactly what a character-by-character, segment-by-segment reading rejects, with the
same message."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from draemu.store.errors import InvalidKeyError
from draemu.store.validation import MAX_KEY_BYTES, check_key, check_prefix

pytestmark = pytest.mark.unit

SETTINGS = settings(max_examples=500, deadline=None, derandomize=True, database=None)
PIECES = st.sampled_from(["/", ".", "..", "a", "registry", "é", "\x00", "\x1f", "\x7f", " ",
                          "\ud800", "\udfff", "\ue000", "\U0001f600", "x" * 700])
KEYS = st.lists(PIECES, max_size=12).map("".join)


def reference_problem(text: str) -> str | None:
    for ch in text:
        code = ord(ch)
        if code < 0x20 or code == 0x7F:
            return f"control character {code:#04x}"
        if 0xD800 <= code < 0xE000:
            return f"unpaired surrogate {code:#06x}"
    return None


def reference_key_error(key: str) -> str | None:
    if not key.startswith("/") or key == "/":
        return f"invalid key {key!r}: must be a path such as '/registry/pods/default/p1'"
    problem = reference_problem(key)
    if problem:
        return f"invalid key {key!r}: contains {problem}"
    segments = key[1:].split("/")
    if any(not segment for segment in segments):
        return f"invalid key {key!r}: empty path segment"
    if any(segment in (".", "..") for segment in segments):
        return f"invalid key {key!r}: '.' and '..' are not allowed as segments"
    if len(key.encode()) > MAX_KEY_BYTES:
        return f"invalid key {key[:64]!r}...: longer than {MAX_KEY_BYTES} bytes"
    return None


def error_of(check: object, text: str) -> str | None:
    try:
        check(text)  # type: ignore[operator]
    except InvalidKeyError as e:
        return str(e)
    return None


@SETTINGS
@given(KEYS)
def test_check_key_rejects_as_a_segment_by_segment_reading(key: str) -> None:
    assert error_of(check_key, key) == reference_key_error(key)


@SETTINGS
@given(KEYS)
def test_check_prefix_names_the_first_bad_character(prefix: str) -> None:
    problem = reference_problem(prefix)
    error = error_of(check_prefix, prefix)
    if prefix.startswith("/") and problem:
        assert error == f"invalid prefix {prefix!r}: contains {problem}"
    elif prefix.startswith("/"):
        assert error is None or "longer than" in error


@pytest.mark.parametrize("key", ["/a/" + "é" * 1100, "/a/" + "\U0001f600" * 600])
def test_check_key_counts_bytes_not_characters(key: str) -> None:
    assert error_of(check_key, key) == reference_key_error(key) is not None
