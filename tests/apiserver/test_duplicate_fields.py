"""`codec.duplicate_fields` answers bodies without duplicates from a colon count in C and
the others from the json module's parse: both ways give the same paths."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from draemu.apiserver.wire import codec

pytestmark = pytest.mark.unit

SETTINGS = settings(max_examples=200, deadline=None, derandomize=True, database=None)
# Few, short keys (so that objects repeat them) with colons, quotes and escapes.
KEYS = st.sampled_from(["a", "b", "a:b", ":", 'q"', "\\", "é", "\u2028", "a\u003ab"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                    st.floats(allow_nan=False, allow_infinity=False),
                    st.text(st.sampled_from("ab:\"\\/é\n"), max_size=5))


def texts() -> st.SearchStrategy[str]:
    """JSON texts whose objects may give a key twice, in any spacing and escaping."""
    def obj(members: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.lists(st.tuples(KEYS, members, st.sampled_from(["", " ", "\n "]),
                                  st.booleans()), max_size=5).map(
            lambda items: "{" + ",".join(
                f"{json.dumps(k, ensure_ascii=ascii)}{space}:{space}{v}"
                for k, v, space, ascii in items) + "}")

    scalar = SCALARS.map(lambda v: json.dumps(v, ensure_ascii=False))
    return st.recursive(scalar, lambda inner: st.one_of(
        obj(inner), st.lists(inner, max_size=3).map(lambda vs: "[" + ",".join(vs) + "]")),
        max_leaves=12).filter(lambda text: text.startswith(("{", "[")))


def slow(raw: bytes, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    with monkeypatch.context() as m:
        m.setattr(codec, "_no_duplicates", lambda raw: False)
        return codec.duplicate_fields(raw, "application/json")


@SETTINGS
@given(texts())
def test_the_fast_answer_is_the_json_modules(text: str) -> None:
    raw = text.encode()
    with pytest.MonkeyPatch.context() as m:
        assert codec.duplicate_fields(raw, None) == slow(raw, m)


@pytest.mark.parametrize("raw", [
    b'{"a":1,"a":2}',
    b'{"a":{"b":"x:y","b":"z"}}',
    b'{"a":"\\u003a","a":1}',            # an escaped colon would hide the dropped one
    b'{"a":1,"\\u0061":2}',              # two spellings of one key
    b'{"metadata":{"name":"x"},"spec":{"c":[{"n":1,"n":1}]}}',
    b'{"a" : 1 , "a" : 1}',
])
def test_bodies_with_a_key_twice_name_it(raw: bytes, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    found = codec.duplicate_fields(raw, "application/json")
    assert found and found == slow(raw, monkeypatch)


@pytest.mark.parametrize("raw", [
    b'{"image":"busybox:1.36","time":"2026-01-01T00:00:00Z","a":{"b:c":[1,{"d":":"}]}}',
    b'{ "a" : 1,\n "b" : { "c" : "::" } }',
    b'[{"a":1},{"a":1}]',                # the same key in two objects is no duplicate
])
def test_bodies_without_duplicates_are_answered_without_the_json_module(
        raw: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the json module parsed the body")

    monkeypatch.setattr(codec.json, "loads", refuse)
    assert codec.duplicate_fields(raw, "application/json") == []
