"""`jsonfast` answers as the json module: the same values from `loads`, the same bytes
from `dumps` (floats aside: their text may differ, never their value), the same errors."""

from __future__ import annotations

import datetime
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from draemu.api import jsonfast

pytestmark = [pytest.mark.slow, pytest.mark.unit]

SETTINGS = settings(max_examples=200, deadline=None, derandomize=True, database=None)
ANY_TEXT = st.text(st.characters(codec=None), max_size=8)  # lone surrogates included
KEYS = st.text(max_size=6)
INTEGERS = st.one_of(st.integers(-1000, 1000), st.integers(-2**70, 2**70))


def values(scalars: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(scalars, lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4)), max_leaves=20)


WITHOUT_FLOATS = values(st.one_of(st.none(), st.booleans(), INTEGERS, st.text(max_size=8)))
WITH_FLOATS = values(st.one_of(st.none(), INTEGERS, st.text(max_size=8),
                               st.floats(allow_nan=False, allow_infinity=False)))


@pytest.fixture(autouse=True)
def no_non_finite_seen(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts as a process that has seen no NaN (other tests may have)."""
    monkeypatch.setattr(jsonfast, "_non_finite_seen", False)


def reference(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def same(a: Any, b: Any) -> bool:
    """Equal with the same types and the same key order all the way down."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


@SETTINGS
@given(values(st.one_of(st.none(), st.booleans(), INTEGERS, ANY_TEXT,
                        st.floats(allow_nan=False, allow_infinity=False))),
       st.booleans(), st.booleans())
def test_loads_gives_what_json_loads_gives(value: Any, ascii_only: bool, compact: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only,
                      separators=(",", ":") if compact else (", ", ": "))
    raw = text.encode("utf-8", "surrogatepass")
    assert same(jsonfast.loads(raw), json.loads(raw))


@SETTINGS
@given(WITHOUT_FLOATS)
def test_dumps_writes_the_bytes_json_writes(value: Any) -> None:
    assert jsonfast.dumps(value) == reference(value)


@SETTINGS
@given(WITH_FLOATS)
def test_dumps_writes_floats_json_reads_back_as_the_same_value(value: Any) -> None:
    assert same(json.loads(jsonfast.dumps(value)), json.loads(reference(value)))


@pytest.mark.parametrize("text", [b"12345678901234567890123", b"-9223372036854775809",
                                  b'{"a":[18446744073709551616]}'])
def test_loads_reads_integers_beyond_64_bits_exactly(text: bytes) -> None:
    assert same(jsonfast.loads(text), json.loads(text))


@pytest.mark.parametrize("text", [b'"\\ud800"', b'"\\udc00x"', b"\xef\xbb\xbf{}",
                                  '{"a":"é"}'.encode("utf-16"), b'"\xed\xa0\x80"'])
def test_loads_reads_what_only_json_accepts(text: bytes) -> None:
    assert same(jsonfast.loads(text), json.loads(text))


@pytest.mark.parametrize("text", [b"{", b"[1,]", b"", b'{"a" 1}', b"nul"])
def test_loads_raises_json_errors_with_json_messages(text: bytes) -> None:
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    with pytest.raises(json.JSONDecodeError) as got:
        jsonfast.loads(text)
    assert str(got.value) == str(expected.value)


def test_loads_raises_unicode_errors_as_json_does() -> None:
    with pytest.raises(UnicodeDecodeError):
        jsonfast.loads(b'"\xff"')


def test_loads_keeps_the_last_of_duplicate_keys_at_the_first_position() -> None:
    text = b'{"a":1,"b":2,"a":3}'
    assert same(jsonfast.loads(text), json.loads(text))


@pytest.mark.parametrize("value", [2**64, -2**63 - 1, {1: "a", None: "b", 2.5: "c"}])
def test_dumps_writes_what_only_json_writes(value: Any) -> None:
    assert jsonfast.dumps(value) == reference(value)


def test_dumps_nests_as_deep_as_json() -> None:
    value: Any = 1
    for _ in range(300):
        value = [value]
    assert jsonfast.dumps(value) == reference(value)


def test_dumps_refuses_lone_surrogates_as_json_does() -> None:
    with pytest.raises(UnicodeEncodeError):
        jsonfast.dumps({"a": "\ud800"})


@pytest.mark.parametrize("value", [datetime.datetime(2024, 1, 1), object()])
def test_dumps_refuses_what_json_cannot_hold(value: Any) -> None:
    with pytest.raises(TypeError):
        jsonfast.dumps({"a": value})


@pytest.mark.parametrize("text", [b"NaN", b"[Infinity]", b'{"a":-Infinity}', b"[1e400]"])
def test_non_finite_numbers_read_and_write_as_json_does(text: bytes) -> None:
    value = jsonfast.loads(text)
    assert same(value, json.loads(text))
    assert jsonfast.dumps(value) == reference(value)


def test_non_finite_numbers_noted_elsewhere_write_as_json_does() -> None:
    value = {"a": [1.5, {"b": float("inf")}]}
    jsonfast.note_non_finite(value)
    assert jsonfast.dumps(value) == b'{"a":[1.5,{"b":Infinity}]}'


def test_finite_numbers_noted_keep_the_fast_path() -> None:
    jsonfast.note_non_finite({"a": [1.5, None, "NaN"]})
    assert jsonfast._non_finite_seen is False
